/* split.h — how the demo's kernels share work between their blocks: contiguous chunks. */
#ifndef SK_DEMO_SPLIT_H
#define SK_DEMO_SPLIT_H
#include <sk_kernel.h>

/* [*begin, *end) is this block's share of n items. */
static inline void demo_split(uint32_t n, uint32_t *begin, uint32_t *end) {
  uint32_t nb = sk_block_num(), per = (n + nb - 1) / nb;
  uint32_t b = sk_block_idx() * per;
  *begin = b < n ? b : n;
  *end = b + per < n ? b + per : n;
}
#endif
