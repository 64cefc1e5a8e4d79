/* Kernels for the C API tests: no parameters, module state, every argument type, no metadata. */
#include <sk_kernel.h>

static uint32_t capi_counter;

/* No parameters: counts its blocks in the module's own .bss. */
SK_KERNEL(capi_noargs, "")
void capi_noargs(void) { __atomic_fetch_add(&capi_counter, 1u, __ATOMIC_RELAXED); }

SK_KERNEL(capi_read_counter, "ptr")
void capi_read_counter(uint32_t *out) {
  if (sk_block_idx() == 0) *out = __atomic_load_n(&capi_counter, __ATOMIC_RELAXED);
}

/* Every scalar kind: out[0..5] = the values, widened (floats scaled to keep them exact). */
SK_KERNEL(capi_types, "ptr,i8,u16,i64,f32,f64,u8")
void capi_types(int64_t *out, int8_t a, uint16_t b, int64_t c, float d, double e, uint8_t f) {
  if (sk_block_idx() != 0) return;
  out[0] = a;
  out[1] = b;
  out[2] = c;
  out[3] = (int64_t)(d * 4.0f);
  out[4] = (int64_t)(e * 8.0);
  out[5] = f;
}

/* Built without SK_KERNEL: no .sk.kernels record; needs sk_module_get_kernel_with_signature
 * with "ptr,u32,u32". buf[i] += v */
void capi_plain_add(uint32_t *buf, uint32_t n, uint32_t v) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) buf[i] += v;
}
