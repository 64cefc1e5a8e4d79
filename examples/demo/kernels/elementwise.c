/* Element-wise kernels: each block handles a contiguous chunk (any block_dim works). */
#include <math.h>
#include <sk_kernel.h>

/* h = silu(gate) * up: the SiLU-gated MLP's activation; expf comes from the process (libm). */
SK_KERNEL(silu_mul, "ptr,ptr,ptr,u32")
void silu_mul(const float *restrict gate, const float *restrict up, float *restrict h,
              uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) h[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}
