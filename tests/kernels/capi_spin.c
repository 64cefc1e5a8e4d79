/* Kernels that never return on one block, for the lost-device tests (tests/c/test_capi_hang.c).
 * The spin ends only when *release becomes non-zero, so that the test can let the stuck thread
 * go at its end and run into whatever it was left. */
#include <sk_kernel.h>

static void spin_until(const uint32_t *release) {
  while (__atomic_load_n(release, __ATOMIC_ACQUIRE) == 0) {
  }
}

/* Block `stuck` spins; every other block writes its mark. */
SK_KERNEL(capi_spin, "ptr,ptr,u32")
void capi_spin(const uint32_t *release, uint32_t *out, uint32_t stuck) {
  if (sk_block_idx() == stuck) spin_until(release);
  __atomic_store_n(&out[sk_block_idx()], sk_block_idx() + 1, __ATOMIC_RELEASE);
}

/* Block `stuck` spins before the barrier: the other blocks wait for it in sk_sync_all. */
SK_KERNEL(capi_spin_sync, "ptr,ptr,u32")
void capi_spin_sync(const uint32_t *release, uint32_t *out, uint32_t stuck) {
  if (sk_block_idx() == stuck) spin_until(release);
  sk_sync_all();
  __atomic_store_n(&out[sk_block_idx()], sk_block_idx() + 1, __ATOMIC_RELEASE);
}

/* Every block spins: core 0's too, whichever thread runs it. */
SK_KERNEL(capi_spin_all, "ptr,ptr,u32")
void capi_spin_all(const uint32_t *release, uint32_t *out, uint32_t stuck) {
  (void)stuck;
  spin_until(release);
  __atomic_store_n(&out[sk_block_idx()], sk_block_idx() + 1, __ATOMIC_RELEASE);
}
