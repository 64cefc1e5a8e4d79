/* Kernels for block-local edges (test_capi_block_local.c). */
#include <sk_kernel.h>

/* Block 1 polls *flag (at most `polls` times) until another kernel's block 0 raises it, and
 * records in seen[1] whether it did; block 0 passes. With a block-local edge to bl_raise after
 * it, block 0 of bl_raise runs on core 0 while block 1 still polls here: the test that the
 * edge waits for no other block (the pair breaks the block-local contract on purpose). */
SK_KERNEL(bl_wait_peer, "ptr,ptr,u32")
void bl_wait_peer(uint32_t *flag, uint32_t *seen, uint32_t polls) {
  if (sk_block_idx() != 1) return;
  uint32_t up = 0;
  for (uint32_t i = 0; i < polls && !up; ++i) up = __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
  seen[1] = up;
}

/* Block 0 raises *flag. */
SK_KERNEL(bl_raise, "ptr,ptr,u32")
void bl_raise(uint32_t *flag, uint32_t *seen, uint32_t polls) {
  (void)seen;
  (void)polls;
  if (sk_block_idx() == 0) __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
}
