/* C API tests: a thread-local counter, one per thread that runs the kernel (each core). */
#include <sk_kernel.h>

__thread uint32_t capi_tls_counter;

/* out[b] = the count of block b's thread; where[b] = the address of its counter. */
SK_KERNEL(capi_tls_kernel, "ptr,ptr")
void capi_tls_kernel(uint32_t *out, uint64_t *where) {
  uint32_t b = sk_block_idx();
  out[b] = ++capi_tls_counter;
  where[b] = (uint64_t)(uintptr_t)&capi_tls_counter;
}
