// Compiled to LTO-IR (nvcc -dc -dlto -ltoir): an IR holding both kinds of kernel, a libsk
// sub-kernel (linked as the IR) and an ordinary __global__ kernel (fused from the PTX the IR
// links to), which one super kernel cannot link together.
#include <sk_kernel.h>

__device__ uint32_t lto_calls;  // one variable the two kinds would each define

SK_KERNEL_CUDA(lto_add, "ptr,u32,u32", 128)
extern "C" __device__ void lto_add(uint32_t *x, uint32_t n, uint32_t k) {
  for (uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x; i < n; i += sk_block_num() * blockDim.x) x[i] += k;
  if (sk_block_idx() == 0 && threadIdx.x == 0) atomicAdd(&lto_calls, 1u);
}

extern "C" __global__ void __launch_bounds__(128) lto_double_global(uint32_t *x, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2;
  if (i == 0) atomicAdd(&lto_calls, 1u);
}
