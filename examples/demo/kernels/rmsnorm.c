/*
 * rmsnorm: out = x / sqrt(mean(x^2) + eps) * gain, over all blocks of the kernel.
 *
 * A two-phase reduction that stays deterministic (no float atomics): every block writes the
 * partial sum of squares of its chunk, sk_sync_all() waits for all of them, and then every
 * block adds the partials in the same order 0..n-1, so all blocks see the same bits.
 * Needs block_dim <= the device's cores (sk_sync_all) and partials[block_dim].
 */
#include <math.h>
#include <sk_kernel.h>

SK_KERNEL(rmsnorm, "ptr,ptr,ptr,ptr,u32,f32")
void rmsnorm(const float *restrict x, const float *restrict gain, float *restrict out,
             float *restrict partials, uint32_t n, float eps) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  float ss = 0.0f;
#pragma omp simd reduction(+ : ss) /* vectorised; a fixed order per object (see matvec.c) */
  for (uint32_t i = begin; i < end; ++i) ss += x[i] * x[i];
  partials[sk_block_idx()] = ss;

  sk_sync_all();

  float total = 0.0f;
  for (uint32_t b = 0; b < sk_block_num(); ++b) total += partials[b];
  float inv = 1.0f / sqrtf(total / (float)n + eps);
  for (uint32_t i = begin; i < end; ++i) out[i] = x[i] * inv * gain[i];
}
