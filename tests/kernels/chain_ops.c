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

/* Every parameter type through the call interface (a register-map call with stack
 * parameters: more integers than x86-64 has registers for). */
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

/* Integer and floating-point parameters interleaved, more of each than there are registers:
 * a register-map call whose stack words mix both classes, in parameter order. */
SK_KERNEL(wide_mixed, "ptr,f32,i8,f64,u16,f32,i32,f64,u64,f32,f64,f32,f64,f32,f64,f32,i64,f64,u8,f32")
void wide_mixed(double *out, float f1, int8_t i1, double d1, uint16_t i2, float f2, int32_t i3, double d2,
                uint64_t i4, float f3, double d3, float f4, double d4, float f5, double d5, float f6,
                int64_t i5, double d6, uint8_t i6, float f7) {
  if (sk_block_idx() != 0) return;
  const double v[] = {f1, i1, d1, i2, f2, i3, d2, (double)i4, f3, d3, f4, d4, f5, d5, f6, (double)i5, d6, i6, f7};
  for (int k = 0; k < 19; ++k) out[k] = v[k];
}

/* Too many floating-point parameters for a register-map call (8 in registers, 9 on the
 * stack): libffi calls it. */
SK_KERNEL(too_wide, "ptr,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64")
void too_wide(double *out, double a0, double a1, double a2, double a3, double a4, double a5, double a6,
              double a7, double a8, double a9, double a10, double a11, double a12, double a13, double a14,
              double a15, double a16) {
  if (sk_block_idx() != 0) return;
  const double v[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16};
  for (int k = 0; k < 17; ++k) out[k] = v[k];
}
