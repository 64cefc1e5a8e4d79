/* sk_sync_all in helpers that the kernels reach through a tail jump, a jump table or a function
 * pointer (one set by another kernel, one in a constant table): the planner must take each of
 * those kernels for a syncing one, and the others (a switch over helpers that do not sync) for
 * what they are, in one object. */
#include <sk_kernel.h>

typedef void (*reach_fn)(float *, float *);

/* Every block publishes a value, waits for all the others, then sums what all published: with
 * blocks multiplexed on fewer cores the sums would be wrong (or the barrier never met). */
__attribute__((noinline)) void reach_sync_sum(float *p, float *o) {
  uint32_t b = sk_block_idx();
  p[b] = (float)b + 1.0f;
  sk_sync_all();
  float s = 0.0f;
  for (uint32_t i = 0; i < sk_block_num(); ++i) s += p[i];
  o[b] = s;
}

/* The same with other weights, so that no compiler folds the two into one. */
__attribute__((noinline)) static void sync_sum_static(float *p, float *o) {
  uint32_t b = sk_block_idx();
  p[b] = (float)b * 2.0f + 3.0f;
  sk_sync_all();
  float s = 0.0f;
  for (uint32_t i = 0; i < sk_block_num(); ++i) s += p[i] * (float)(i + 1);
  o[b] = s;
}

/* Helpers that do not synchronise: each block works on its own element. */
__attribute__((noinline)) void reach_own_add(float *p, float *o) { o[sk_block_idx()] = p[sk_block_idx()] + 1.0f; }
__attribute__((noinline)) void reach_own_mul(float *p, float *o) { o[sk_block_idx()] = p[sk_block_idx()] * 3.0f; }
__attribute__((noinline)) void reach_own_sub(float *p, float *o) { o[sk_block_idx()] = p[sk_block_idx()] - 5.0f; }
__attribute__((noinline)) void reach_own_neg(float *p, float *o) { o[sk_block_idx()] = -p[sk_block_idx()]; }
__attribute__((noinline)) void reach_own_half(float *p, float *o) { o[sk_block_idx()] = p[sk_block_idx()] * 0.5f; }

/* Set by a kernel the host runs first: the kernel that calls it cannot see which function it
 * holds, and no compiler can fold it into an initializer. */
reach_fn reach_hook;
SK_KERNEL(reach_set_hook, "u32")
void reach_set_hook(uint32_t sync) { reach_hook = sync ? reach_sync_sum : reach_own_add; }

static reach_fn const reach_table[2] = {reach_own_add, sync_sum_static};

/* gcc and clang compile these calls in tail position into jumps. */
SK_KERNEL(reach_tail_global, "ptr,ptr")
void reach_tail_global(float *p, float *o) { reach_sync_sum(p, o); }

SK_KERNEL(reach_tail_static, "ptr,ptr")
void reach_tail_static(float *p, float *o) { sync_sum_static(p, o); }

/* A dense switch: a jump table, whose cases jump on to the helpers. */
SK_KERNEL(reach_switch_sync, "ptr,ptr,u32")
void reach_switch_sync(float *p, float *o, uint32_t mode) {
  switch (mode) {
    case 0: reach_own_add(p, o); break;
    case 1: reach_own_mul(p, o); break;
    case 2: reach_sync_sum(p, o); break;
    case 3: reach_own_sub(p, o); break;
    case 4: reach_own_neg(p, o); break;
    case 5: reach_own_half(p, o); break;
    default: break;
  }
}

SK_KERNEL(reach_hook_call, "ptr,ptr")
void reach_hook_call(float *p, float *o) { reach_hook(p, o); }

SK_KERNEL(reach_table_call, "ptr,ptr,u32")
void reach_table_call(float *p, float *o, uint32_t which) { reach_table[which & 1](p, o); }

/* Not syncing, although the module has address-taken helpers that sync: its jump table leads
 * only into itself and on to helpers that do not. */
SK_KERNEL(reach_switch_plain, "ptr,ptr,u32")
void reach_switch_plain(float *p, float *o, uint32_t mode) {
  switch (mode) {
    case 0: reach_own_add(p, o); break;
    case 1: reach_own_mul(p, o); break;
    case 2: reach_own_sub(p, o); break;
    case 3: reach_own_neg(p, o); break;
    case 4: reach_own_half(p, o); break;
    case 5: reach_own_add(o, o); break;
    default: break;
  }
}

/* Not syncing either: a switch in a loop, whose jump table's address clang loads once, before
 * the loop, far from the jump. */
SK_KERNEL(reach_switch_loop, "ptr,ptr,u32")
void reach_switch_loop(float *p, float *o, uint32_t n) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) {
    float v = p[i];
    switch ((uint32_t)v & 7) {
      case 0: v = v * 2.0f; break;
      case 1: v = v + 3.0f; break;
      case 2: v = v - 1.5f; break;
      case 3: v = v * v; break;
      case 4: v = -v; break;
      case 5: v = v * 0.25f + 1.0f; break;
      default: break;
    }
    o[i] = v;
  }
}
