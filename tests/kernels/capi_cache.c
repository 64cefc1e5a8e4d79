/* Cache-maintenance kernels for the C API tests: scalar global-memory traffic through the
 * sk_gm_* accessors and explicit sk_dcci_* flushes, read back by the next kernel on other
 * blocks (so a missing inter-kernel sync or a wrong copy changes the results). */
#include <sk_kernel.h>

/* buf[i] = hash(i) ^ seed through sk_gm_set_u32; wide[i] = buf[i] * 2^32 + i through u64 */
SK_KERNEL(capi_gm_write, "ptr,ptr,u32,u32")
void capi_gm_write(uint32_t *buf, uint64_t *wide, uint32_t n, uint32_t seed) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) {
    uint32_t v = i * 2654435761u ^ seed;
    sk_gm_set_u32(&buf[i], v);
    sk_gm_set_u64(&wide[i], ((uint64_t)v << 32) | i);
  }
  sk_dcci_all();
}

/* dst[i] = buf[(i + 1) % n] + low byte of it + high half of wide[(i + 1) % n], read back with
 * the accessors of every width after flushing the line */
SK_KERNEL(capi_gm_read, "ptr,ptr,ptr,u32")
void capi_gm_read(const uint32_t *buf, const uint64_t *wide, uint32_t *dst, uint32_t n) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) {
    uint32_t j = (i + 1) % n;
    sk_dcci_line(&buf[j]);
    uint32_t v = sk_gm_get_u32(&buf[j]);
    uint8_t low = sk_gm_get_u8((const volatile uint8_t *)&buf[j]);
    uint64_t w = sk_gm_get_u64(&wide[j]);
    float f = sk_gm_get_f32((const volatile float *)&buf[j]);
    (void)f;
    sk_gm_set_i32((volatile int32_t *)&dst[i], (int32_t)(v + low + (uint32_t)(w >> 32)));
  }
}
