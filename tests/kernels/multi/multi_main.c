/* Multi-object module (sk_module_load_files): a kernel calling a helper of another object
 * (multi_helper.c) and an archive member (libmulti.a), with weak definitions on both sides. */
#include <sk_kernel.h>

int multi_scale(int v);  /* multi_helper.c */
int multi_offset(int v); /* libmulti.a(multi_offset.o), which needs multi_base.o */

/* multi_helper.c's strong definition beats this one. */
__attribute__((weak)) int multi_pick(void) { return 1; }
/* Weak here and in multi_helper.c: the first object's wins. */
__attribute__((weak)) int multi_first_weak(void) { return 7; }

/* buf[i] = (3 * buf[i] + 100) * 2 + 7 when linked with multi_helper.o and libmulti.a */
SK_KERNEL(multi_kernel, "ptr,u32")
void multi_kernel(int32_t *buf, uint32_t n) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num())
    buf[i] = multi_offset(multi_scale(buf[i])) * multi_pick() + multi_first_weak();
}
