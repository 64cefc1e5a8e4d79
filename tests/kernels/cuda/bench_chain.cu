// bench_cuda's steps as libsk sub-kernels: bench_chain.cuh's bodies on the sub-kernel's own blocks
// (sk_block_idx()/sk_block_num(), not blockIdx/gridDim). The benchmark runs the same bodies as
// __global__ kernels for its baselines (bench/cuda/bench_cuda.cu).
#include <sk_kernel.h>

#include "bench_chain.cuh"

SK_KERNEL_CUDA(bench_chain_step, "ptr,u32,u32", 128)
extern "C" __device__ void bench_chain_step(uint32_t *buf, uint32_t n, uint32_t step) {
  bench_chain_body(buf, n, step, sk_block_idx(), sk_block_num());
}

// The block-local chain's step.
SK_KERNEL_CUDA(bench_chain_local_step, "ptr,u32,u32", 128)
extern "C" __device__ void bench_chain_local_step(uint32_t *buf, uint32_t n, uint32_t step) {
  bench_chain_local_body(buf, n, step, sk_block_idx());
}

// The two-branch step's join of chain a with chain b.
SK_KERNEL_CUDA(bench_chain_join, "ptr,ptr,u32,u32", 128)
extern "C" __device__ void bench_chain_join(uint32_t *a, const uint32_t *b, uint32_t n, uint32_t step) {
  bench_chain_join_body(a, b, n, step, sk_block_idx(), sk_block_num());
}
