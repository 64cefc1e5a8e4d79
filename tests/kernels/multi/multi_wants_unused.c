/* An object that needs libmulti.a(multi_unused.o): its set fails on multi_no_such_symbol. */
#include <sk_kernel.h>

int multi_unused(void);

SK_KERNEL(multi_wants_unused, "ptr")
void multi_wants_unused(int32_t *out) { *out = multi_unused(); }
