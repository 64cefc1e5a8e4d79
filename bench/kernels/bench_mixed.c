/* The mixed chain (norm, mat-vec, softmax), as in a decode step: reductions sync all blocks;
 * partial results are combined in block order, so every run gives the same bits. */
#include <math.h>
#include <stddef.h>
#include <sk_kernel.h>

/* y = x / rms(x) * w; partials has one float per block. */
SK_KERNEL(bench_rmsnorm, "ptr,ptr,ptr,ptr,u32")
void bench_rmsnorm(const float *x, const float *w, float *y, float *partials, uint32_t n) {
  uint32_t lo, hi;
  sk_block_range(n, &lo, &hi);
  float s = 0.0f;
  for (uint32_t i = lo; i < hi; ++i) s += x[i] * x[i];
  partials[sk_block_idx()] = s;
  sk_sync_all();
  float total = 0.0f;
  for (uint32_t b = 0; b < sk_block_num(); ++b) total += partials[b];
  float inv = 1.0f / sqrtf(total / (float)n + 1e-6f);
  for (uint32_t i = lo; i < hi; ++i) y[i] = x[i] * inv * w[i];
  sk_sync_all(); /* partials are reused by the next reduction */
}

/* y[r] = sum_c m[r*cols + c] * x[c], rows split over blocks. */
SK_KERNEL(bench_matvec, "ptr,ptr,ptr,u32,u32")
void bench_matvec(const float *m, const float *x, float *y, uint32_t rows, uint32_t cols) {
  uint32_t lo, hi;
  sk_block_range(rows, &lo, &hi);
  for (uint32_t r = lo; r < hi; ++r) {
    float acc = 0.0f;
    for (uint32_t c = 0; c < cols; ++c) acc += m[(size_t)r * cols + c] * x[c];
    y[r] = acc;
  }
}

/* In-place softmax over n values: block maxima, then block sums, each combined in block order. */
SK_KERNEL(bench_softmax, "ptr,ptr,u32")
void bench_softmax(float *x, float *partials, uint32_t n) {
  uint32_t lo, hi;
  sk_block_range(n, &lo, &hi);
  float m = -INFINITY;
  for (uint32_t i = lo; i < hi; ++i) m = x[i] > m ? x[i] : m;
  partials[sk_block_idx()] = m;
  sk_sync_all();
  float gmax = -INFINITY;
  for (uint32_t b = 0; b < sk_block_num(); ++b) gmax = partials[b] > gmax ? partials[b] : gmax;
  sk_sync_all();
  float s = 0.0f;
  for (uint32_t i = lo; i < hi; ++i) {
    x[i] = expf(x[i] - gmax);
    s += x[i];
  }
  partials[sk_block_idx()] = s;
  sk_sync_all();
  float total = 0.0f;
  for (uint32_t b = 0; b < sk_block_num(); ++b) total += partials[b];
  for (uint32_t i = lo; i < hi; ++i) x[i] /= total;
  sk_sync_all();
}
