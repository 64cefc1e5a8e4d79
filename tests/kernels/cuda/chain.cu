// Chain kernels for fused == unfused checks: each step reads what the previous one wrote.
#include <sk_kernel.h>

// x[i] = x[i] * 3 + step, over n items split across the sub-kernel's blocks.
SK_KERNEL_CUDA(chain_step, "ptr,u32,u32", 128)
extern "C" __device__ void chain_step(uint32_t *x, uint32_t n, uint32_t step) {
  for (uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x; i < n; i += sk_block_num() * blockDim.x)
    x[i] = x[i] * 3u + step;
}

// y[i] = x[i] + a * y[i] (floats, a narrow scalar argument between pointers).
SK_KERNEL_CUDA(chain_axpy, "ptr,f32,ptr,u32", 128)
extern "C" __device__ void chain_axpy(const float *x, float a, float *y, uint32_t n) {
  for (uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x; i < n; i += sk_block_num() * blockDim.x)
    y[i] = x[i] + a * y[i];
}

// One arrival per block in out[sk_block_idx()]: shows which blocks ran.
SK_KERNEL_CUDA(mark_blocks, "ptr,u8,i64", 128)
extern "C" __device__ void mark_blocks(uint32_t *out, uint8_t tag, int64_t bias) {
  if (threadIdx.x == 0) out[sk_block_idx()] = (uint32_t)(tag + bias) + sk_block_num() * 1000u;
}
