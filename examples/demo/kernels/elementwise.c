/* Element-wise kernels: each block handles a contiguous chunk (any block_dim works). */
#include <math.h>
#include <sk_kernel.h>

/* x += bias */
SK_KERNEL(bias_add, "ptr,ptr,u32")
void bias_add(float *x, const float *bias, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) x[i] += bias[i];
}

/* x = x * sigmoid(x) (SiLU); expf comes from the process (libm), bound when the object is linked */
SK_KERNEL(silu, "ptr,u32")
void silu(float *x, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) x[i] = x[i] / (1.0f + expf(-x[i]));
}

/* x *= alpha (keeps the residual stream bounded over many steps) */
SK_KERNEL(scale, "ptr,f32,u32")
void scale(float *x, float alpha, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) x[i] *= alpha;
}
