/* symbols=strict: getenv is outside the allowed list, so loading fails naming it. Under the
 * default policy (symbols=process) it loads and runs. */
#include <sk_kernel.h>
#include <stdlib.h>

SK_KERNEL(bad_getenv, "ptr")
void bad_getenv(uint32_t *out) {
  if (sk_block_idx() == 0) *out = getenv("PATH") != 0;
}
