/* Kernels for the Python binding's tests (compiled by tests/python/conftest.py with cc -c). */
#include <sk_kernel.h>

/* y = a * x + y over n floats. */
SK_KERNEL(axpy, "f32,ptr,ptr,u32")
void axpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) y[i] = a * x[i] + y[i];
}

/* y[i] = y[i] * y[i] + 1: nonlinear, so a wrong order of kernels changes the result. */
SK_KERNEL(square_plus_one, "ptr,u32")
void square_plus_one(float *y, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) y[i] = y[i] * y[i] + 1.0f;
}

/* out[0] = sum of x over all blocks: per-block partials, sk_sync_all, then block 0 adds them
 * in block order (deterministic). partials must hold block_dim floats. */
SK_KERNEL(block_sum, "ptr,ptr,ptr,u32")
void block_sum(const float *x, float *partials, float *out, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  float s = 0.0f;
  for (uint32_t i = begin; i < end; ++i) s += x[i];
  partials[sk_block_idx()] = s;
  sk_sync_all();
  if (sk_block_idx() == 0) {
    float total = 0.0f;
    for (uint32_t b = 0; b < sk_block_num(); ++b) total += partials[b];
    out[0] = total;
  }
}

/* Every scalar type once: writes them to out[0..9] as doubles (the binding's conversions). */
SK_KERNEL(all_types, "i8,u8,i16,u16,i32,u32,i64,u64,f32,f64,ptr")
void all_types(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f, int64_t g,
               uint64_t h, float i, double j, double *out) {
  if (sk_block_idx() != 0) return;
  out[0] = a, out[1] = b, out[2] = c, out[3] = d, out[4] = e;
  out[5] = f, out[6] = (double)g, out[7] = (double)h, out[8] = i, out[9] = j;
}

/* No parameters (args NULL). */
SK_KERNEL(nothing, "")
void nothing(void) {}

/* No SK_KERNEL record: callers give the signature (sk_module_get_kernel_with_signature). */
void no_metadata_fill(float *y, float v, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) y[i] = v;
}

/* Hidden state: out[0] = how often this kernel ran before (a global in the object, shared by
 * fused and unfused launches). `sk run` must report such a kernel's outputs as different. */
static uint32_t calls;
SK_KERNEL(call_counter, "ptr")
void call_counter(uint32_t *out) {
  if (sk_block_idx() == 0) out[0] = calls++;
}

/* A bug on purpose: only block 0 reaches the barrier, so the launch passes its deadline. */
SK_KERNEL(half_sync, "")
void half_sync(void) {
  if (sk_block_idx() == 0) sk_sync_all();
}

/* Block 0 counts its runs in count[0] and sets stop[0] once it has run `at` times (0: never):
 * the end-of-sequence token of SuperKernel.launch_repeat's tests. */
SK_KERNEL(count_and_stop, "ptr,ptr,u32")
void count_and_stop(uint32_t *count, uint32_t *stop, uint32_t at) {
  if (sk_block_idx() != 0) return;
  count[0] += 1;
  if (at && count[0] >= at) stop[0] = 1;
}
