/* Helpers of multi_main.c in a translation unit of their own, with a kernel of its own. */
#include <sk_kernel.h>

int multi_scale(int v) { return 3 * v; }
int multi_pick(void) { return 2; }
__attribute__((weak)) int multi_first_weak(void) { return 8; }

/* buf[i] = 3 * buf[i] */
SK_KERNEL(multi_helper_kernel, "ptr,u32")
void multi_helper_kernel(int32_t *buf, uint32_t n) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) buf[i] = multi_scale(buf[i]);
}
