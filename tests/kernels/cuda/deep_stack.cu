// A call stack ptxas bounds, above the 1 KiB per thread a context starts with: a helper with a
// 6 KiB local array that it indexes with loaded values, so that it stays in local memory.
#include <sk_kernel.h>

extern "C" __device__ __noinline__ uint32_t deep_frame_mix(const uint32_t *x, uint32_t i, uint32_t n) {
  uint32_t local[1536];
  for (uint32_t k = 0; k < 1536; ++k) local[k] = x[(i + k) % n] * (k | 1u);
  uint32_t s = 0;
  for (uint32_t k = 0; k < 1536; k += 1 + (local[k] & 3u)) s += local[(k * 7u + i) % 1536u];
  return s;
}

SK_KERNEL_CUDA(deep_frame, "ptr,ptr,u32", 128)
extern "C" __device__ void deep_frame(const uint32_t *in, uint32_t *out, uint32_t n) {
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  if (i < n) out[i] = deep_frame_mix(in, i, n);
}
