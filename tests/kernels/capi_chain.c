/* Kernels for the C API tests (tests/c): deterministic integer work over uint32 buffers, each
 * element handled by exactly one block (strided by sk_block_num), with reads across blocks so
 * that a missing inter-kernel sync changes the results. */
#include <sk_kernel.h>

/* out[i] = hash(i) + seed */
SK_KERNEL(capi_fill, "ptr,u32,u32")
void capi_fill(uint32_t *out, uint32_t n, uint32_t seed) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) out[i] = i * 2654435761u + seed;
}

/* buf[i] = buf[i] * a + b (wrapping) */
SK_KERNEL(capi_axpb, "ptr,u32,i32,i32")
void capi_axpb(uint32_t *buf, uint32_t n, int32_t a, int32_t b) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num())
    buf[i] = buf[i] * (uint32_t)a + (uint32_t)b;
}

/* dst[i] += src[(i * stride + 1) % n] ^ i: reads what other blocks of the previous step wrote */
SK_KERNEL(capi_gather, "ptr,ptr,u32,u32")
void capi_gather(uint32_t *dst, const uint32_t *src, uint32_t n, uint32_t stride) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num())
    dst[i] += src[(uint32_t)(((uint64_t)i * stride + 1) % n)] ^ i;
}

/* dst[i] = rotl(src[(i + 1) % n], 5) ^ sk_block_num() */
SK_KERNEL(capi_rotate, "ptr,ptr,u32")
void capi_rotate(uint32_t *dst, const uint32_t *src, uint32_t n) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) {
    uint32_t v = src[(i + 1) % n];
    dst[i] = ((v << 5) | (v >> 27)) ^ sk_block_num();
  }
}
