/* The other object of multi_reach_main.c's module: a helper that synchronises all blocks, and
 * the hook its constructor points at it. */
#include <sk_kernel.h>

typedef void (*multi_reach_fn)(float *, float *);

/* Every block publishes a value, waits for all, then sums what all published. */
__attribute__((noinline)) void multi_reach_sync_sum(float *p, float *o) {
  uint32_t b = sk_block_idx();
  p[b] = (float)b * 4.0f + 1.0f;
  sk_sync_all();
  float s = 0.0f;
  for (uint32_t i = 0; i < sk_block_num(); ++i) s += p[i] * (float)(i + 2);
  o[b] = s;
}

multi_reach_fn multi_reach_hook;
__attribute__((constructor)) static void multi_reach_install(void) { multi_reach_hook = multi_reach_sync_sum; }
