/* C API tests: a call to a function no one defines; loading fails with SK_ERR_NOT_FOUND naming it. */
#include <sk_kernel.h>

void capi_no_such_function_anywhere(uint32_t *out);

SK_KERNEL(capi_undef_kernel, "ptr")
void capi_undef_kernel(uint32_t *out) { capi_no_such_function_anywhere(out); }
