/* C API tests: metadata whose signature has a bad token; sk_module_get_kernel fails with
 * SK_ERR_BAD_BINARY, the object itself loads. */
#include <sk_kernel.h>

SK_KERNEL(capi_badsig, "ptr,float")
void capi_badsig(uint32_t *out) { out[0] = 1; }
