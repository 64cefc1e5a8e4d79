// bench_cuda's step as a libsk sub-kernel: bench_chain.cuh's body on the sub-kernel's own blocks
// (sk_block_idx()/sk_block_num(), not blockIdx/gridDim). The benchmark runs the same body as
// __global__ kernels for its baselines (bench/cuda/bench_cuda.cu).
#include <sk_kernel.h>

#include "bench_chain.cuh"

SK_KERNEL_CUDA(bench_chain_step, "ptr,u32,u32", 128)
extern "C" __device__ void bench_chain_step(uint32_t *buf, uint32_t n, uint32_t step) {
  bench_chain_body(buf, n, step, sk_block_idx(), sk_block_num());
}
