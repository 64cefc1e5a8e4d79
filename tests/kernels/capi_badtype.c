/* C API tests: a .sk.kernels record with an unknown core type; loading fails with
 * SK_ERR_BAD_BINARY naming it. */
#include <sk_kernel.h>

SK_KERNEL_TYPED(capi_badtype, "ptr", "warp9")
void capi_badtype(uint32_t *out) { out[0] = 1; }
