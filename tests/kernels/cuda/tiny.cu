// The benchmark's tiny kernel: one add per thread, so launch cost dominates. The same source
// is compiled as a __global__ kernel for the plain-launch and CUDA Graph baselines
// (bench/cuda/bench_cuda.cu).
#include <sk_kernel.h>

SK_KERNEL_CUDA(tiny_add, "ptr,u32", 128)
extern "C" __device__ void tiny_add(uint32_t *x, uint32_t n) {
  uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}
