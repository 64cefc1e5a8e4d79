/* Kernels for stream fusion (test_capi_streams.c). */
#include <sk_kernel.h>

/* out[i] = in[i] * mul + add over this block's share. */
SK_KERNEL(stream_axpb, "ptr,ptr,u32,u32,u32")
void stream_axpb(const uint32_t *in, uint32_t *out, uint32_t n, uint32_t mul, uint32_t add) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t i = begin; i < end; ++i) out[i] = in[i] * mul + add;
}

/* A handshake between two kernels that can only complete if they run at the same time: block
 * `mine` (so each side runs on its own core) sets flags[mine] to `epoch` and spins, bounded
 * (about `spins` polls), until flags[theirs] holds it too; met[mine] records whether it did. */
SK_KERNEL(stream_handshake, "ptr,ptr,u32,u32,u32,u32")
void stream_handshake(volatile uint32_t *flags, uint32_t *met, uint32_t mine, uint32_t theirs, uint32_t epoch,
                      uint32_t spins) {
  if (sk_block_idx() != mine) return;
  __atomic_store_n(&flags[mine], epoch, __ATOMIC_SEQ_CST);
  uint32_t seen = 0;
  for (uint32_t i = 0; i < spins && !seen; ++i) {
    seen = __atomic_load_n(&flags[theirs], __ATOMIC_SEQ_CST) == epoch;
    for (volatile uint32_t d = 0; d < 100; ++d) {
    }
  }
  met[mine] = seen;
}
