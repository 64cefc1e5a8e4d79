/* Kernels for the fused-vs-unfused chains: element-wise ops split over blocks, a reduction
 * that syncs all its blocks, task-overlap kernels, and every parameter type. Each element is
 * written by exactly one block, so results do not depend on how blocks map to cores. */
#include <sk_kernel.h>

SK_KERNEL(axpy, "ptr,ptr,f32,u32")
void axpy(const float *x, float *y, float a, uint32_t n) {
  uint32_t lo, hi;
  sk_block_range(n, &lo, &hi);
  for (uint32_t i = lo; i < hi; ++i) y[i] = a * x[i] + y[i];
}

SK_KERNEL(mul_add, "ptr,ptr,ptr,u32")
void mul_add(const float *a, const float *b, float *out, uint32_t n) {
  uint32_t lo, hi;
  sk_block_range(n, &lo, &hi);
  for (uint32_t i = lo; i < hi; ++i) out[i] = a[i] * b[i] + out[i] * 0.5f;
}

/* Strided (block i takes i, i+B, ...): exercises a different mapping with the same result. */
SK_KERNEL(relu_strided, "ptr,u32")
void relu_strided(float *x, uint32_t n) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) x[i] = x[i] > 0.0f ? x[i] : 0.01f * x[i];
}

/* Two-phase normalisation: every block sums its part, all blocks meet, every block reads all
 * partials in index order (deterministic) and scales its part. Needs block_dim <= cores. */
SK_KERNEL(normalize_sync, "ptr,ptr,u32")
void normalize_sync(float *x, float *partials, uint32_t n) {
  uint32_t lo, hi;
  sk_block_range(n, &lo, &hi);
  float s = 0.0f;
  for (uint32_t i = lo; i < hi; ++i) s += x[i] * x[i];
  partials[sk_block_idx()] = s;
  sk_sync_all();
  float total = 0.0f;
  for (uint32_t b = 0; b < sk_block_num(); ++b) total += partials[b];
  float scale = 1.0f / (1.0f + total / (float)n);
  sk_sync_all(); /* everyone has read the partials before anyone may reuse them */
  for (uint32_t i = lo; i < hi; ++i) x[i] *= scale;
}

/* Task overlap, producer side: writes its output, releases the next kernel, then does work
 * the next kernel does not read (a private scratch update). */
SK_KERNEL(produce_then_release, "ptr,ptr,u32")
void produce_then_release(float *x, float *scratch, uint32_t n) {
  uint32_t lo, hi;
  sk_block_range(n, &lo, &hi);
  for (uint32_t i = lo; i < hi; ++i) x[i] = x[i] * 0.75f + 1.0f;
  sk_set_next_task_start();
  for (uint32_t i = lo; i < hi; ++i) scratch[i] += 1.0f;
}

/* Task overlap, consumer side: a prologue that reads nothing the previous kernel writes,
 * then waits for it before touching x. */
SK_KERNEL(prologue_then_wait, "ptr,ptr,u32")
void prologue_then_wait(float *x, float *coeffs, uint32_t n) {
  uint32_t lo, hi;
  sk_block_range(n, &lo, &hi);
  float c = 0.0f;
  for (uint32_t i = 0; i < 16; ++i) c += (float)i * 0.001f;
  coeffs[sk_block_idx()] = c;
  sk_wait_pre_task_end();
  for (uint32_t i = lo; i < hi; ++i) x[i] = x[i] - c;
}

/* Every parameter type through the call interface. */
SK_KERNEL(all_types, "ptr,i8,u8,i16,u16,i32,u32,i64,u64,f32,f64")
void all_types(double *out, int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f,
               int64_t g, uint64_t h, float i, double j) {
  if (sk_block_idx() != 0) return;
  out[0] = a; out[1] = b; out[2] = c; out[3] = d; out[4] = e;
  out[5] = f; out[6] = (double)g; out[7] = (double)h; out[8] = i; out[9] = j;
}

/* Narrow integers only: called directly (no libffi), so they must arrive extended as the ABI
 * says: stored as 32-bit values, clang's code writes the registers as they came. */
SK_KERNEL(narrow_ints, "ptr,i8,i16,u8,u16,i32")
void narrow_ints(int32_t *out, int8_t a, int16_t b, uint8_t c, uint16_t d, int32_t e) {
  if (sk_block_idx() != 0) return;
  out[0] = a; out[1] = b; out[2] = c; out[3] = d; out[4] = e;
  out[5] = a + b + c + d + e;
}
