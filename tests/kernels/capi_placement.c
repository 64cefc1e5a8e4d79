/* Kernels for the placement of steps on cores (test_capi_placement.c). */
#include <pthread.h>
#include <sk_kernel.h>

/* y = m * x for this block's share of the rows of an rows x cols matrix; who[block] records
 * the thread that ran the block (each core of the host device is a thread of its own). */
SK_KERNEL(place_matvec, "ptr,ptr,ptr,u32,u32,ptr")
void place_matvec(const float *m, const float *x, float *y, uint32_t rows, uint32_t cols, uint64_t *who) {
  uint32_t begin, end;
  sk_block_range(rows, &begin, &end);
  for (uint32_t r = begin; r < end; ++r) {
    float acc = 0.0f;
    for (uint32_t c = 0; c < cols; ++c) acc += m[r * cols + c] * x[c];
    y[r] = acc;
  }
  who[sk_block_idx()] = (uint64_t)pthread_self();
}

/* A meeting of `parties` kernels that can only complete if they all run at the same time:
 * each counts itself in *count and spins, bounded (about `spins` polls), until all have;
 * met[slot] records whether it saw them. */
SK_KERNEL(place_meet, "ptr,ptr,u32,u32,u32")
void place_meet(uint32_t *count, uint32_t *met, uint32_t slot, uint32_t parties, uint32_t spins) {
  __atomic_add_fetch(count, 1u, __ATOMIC_SEQ_CST);
  uint32_t seen = 0;
  for (uint32_t i = 0; i < spins && !seen; ++i) {
    seen = __atomic_load_n(count, __ATOMIC_SEQ_CST) >= parties;
    for (volatile uint32_t d = 0; d < 100; ++d) {
    }
  }
  met[slot] = seen;
}
