/*
 * The ends of a decode step: the token's embedding in, the next token out (greedy argmax), and
 * the position advanced. Token and position live in device memory, so the whole step (and the
 * step after it) runs without the host reading anything back.
 */
#include <stddef.h>

#include <sk_kernel.h>

/* x = table[*token] (n floats). */
SK_KERNEL(embed, "ptr,ptr,ptr,u32")
void embed(float *restrict x, const float *restrict table, const uint32_t *restrict token,
           uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  const float *row = table + (size_t)*token * n;
  for (uint32_t i = begin; i < end; ++i) x[i] = row[i];
}

/* *token = argmax(logits[0..vocab)) (first maximum), then ++*pos. One block: it is a single
 * value, and a single writer keeps it deterministic. */
SK_KERNEL(argmax_advance, "ptr,u32,ptr,ptr")
void argmax_advance(const float *logits, uint32_t vocab, uint32_t *token, uint32_t *pos) {
  if (sk_block_idx() != 0) return;
  uint32_t best = 0;
  for (uint32_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = i;
  *token = best;
  *pos += 1;
}
