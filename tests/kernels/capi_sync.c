/* sk_sync_all kernels for the C API tests. */
#include <sk_kernel.h>

/* Each block sums its part of in into partials[block]; after the barrier every block reads all
 * partials: out[i] = in[i] + total. Needs partials of at least sk_block_num() elements. */
SK_KERNEL(capi_sync_sum, "ptr,ptr,ptr,u32")
void capi_sync_sum(const uint32_t *in, uint32_t *partials, uint32_t *out, uint32_t n) {
  uint32_t idx = sk_block_idx(), num = sk_block_num(), s = 0, total = 0;
  for (uint32_t i = idx; i < n; i += num) s += in[i] * (i | 1u);
  partials[idx] = s;
  sk_sync_all();
  for (uint32_t j = 0; j < num; ++j) total += partials[j] * (j + 1);
  for (uint32_t i = idx; i < n; i += num) out[i] = in[i] + total;
}

/* Only block 0 reaches the barrier: with two or more blocks it can never complete. */
SK_KERNEL(capi_hang_half, "ptr")
void capi_hang_half(uint32_t *out) {
  if (sk_block_idx() == 0) sk_sync_all();
  out[sk_block_idx()] = sk_block_idx() + 1;
}

/* capi_hang_half when `hang` is non-zero; otherwise every block writes its mark. */
SK_KERNEL(capi_hang_if, "ptr,u32")
void capi_hang_if(uint32_t *out, uint32_t hang) {
  if (hang && sk_block_idx() == 0) sk_sync_all();
  out[sk_block_idx()] = sk_block_idx() + 1;
}

/* A grid barrier of its own, as a kernel written for a cooperative launch has one (no
 * sk_sync_all): each block writes its word of mid, counts itself in *arrived and spins until
 * every block of this launch has (launch `round`, from 1, is complete at round * blocks), then
 * reads the next block's word. Its blocks must all run at once (SK_KERNEL_DESC_COOPERATIVE). */
SK_KERNEL(capi_own_barrier_rotate, "ptr,ptr,ptr,ptr,u32")
void capi_own_barrier_rotate(const uint32_t *in, uint32_t *mid, uint32_t *out, uint32_t *arrived, uint32_t round) {
  const uint32_t idx = sk_block_idx(), num = sk_block_num();
  mid[idx] = in[idx] * 2654435761u + round;
  __atomic_fetch_add(arrived, 1u, __ATOMIC_RELEASE);
  while (__atomic_load_n(arrived, __ATOMIC_ACQUIRE) < round * num) {
  }
  out[idx] = mid[(idx + 1) % num] ^ idx;
}
