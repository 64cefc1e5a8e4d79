/* C API tests: thread-local storage is not supported by the host linker (SK_ERR_UNSUPPORTED). */
#include <sk_kernel.h>

__thread uint32_t capi_tls_counter;

SK_KERNEL(capi_tls_kernel, "ptr")
void capi_tls_kernel(uint32_t *out) { out[0] = ++capi_tls_counter; }
