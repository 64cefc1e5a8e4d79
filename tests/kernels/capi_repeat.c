/* Kernels for the sk_launch_repeat tests (tests/c/test_capi_repeat.c): they count the runs that
 * reached each block, so that a test knows exactly how many iterations every core ran. */
#include <sk_kernel.h>

/* counts[b] += 1 for each block b. */
SK_KERNEL(capi_count_runs, "ptr")
void capi_count_runs(uint32_t *counts) { counts[sk_block_idx()] += 1; }

/* Block 0 sets *stop once counts[0] (counted by an earlier step) reaches stop_at (0: never). */
SK_KERNEL(capi_stop_at, "ptr,ptr,u32")
void capi_stop_at(const uint32_t *counts, uint32_t *stop, uint32_t stop_at) {
  if (sk_block_idx() == 0 && stop_at != 0 && counts[0] >= stop_at) *stop = 1;
}

/* In the run where counts[0] equals hang_at only block 0 reaches the barrier: with two or more
 * blocks that run can never complete. */
SK_KERNEL(capi_hang_at, "ptr,u32")
void capi_hang_at(const uint32_t *counts, uint32_t hang_at) {
  if (sk_block_idx() == 0 && counts[0] == hang_at) sk_sync_all();
}

/* In the run where counts[1] equals at, block 1 never returns until *release is set; then it
 * sets *done. */
SK_KERNEL(capi_spin_at, "ptr,ptr,ptr,u32")
void capi_spin_at(const uint32_t *counts, const uint32_t *release, uint32_t *done, uint32_t at) {
  if (sk_block_idx() != 1 || counts[1] != at) return;
  while (__atomic_load_n(release, __ATOMIC_ACQUIRE) == 0) {
  }
  __atomic_store_n(done, 1u, __ATOMIC_RELEASE);
}
