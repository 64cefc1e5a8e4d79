/* Kernels whose sk_sync_all is in another object of their module (multi_reach_helper.c):
 * reached by a tail jump, and through a hook that object's constructor sets. */
#include <sk_kernel.h>

typedef void (*multi_reach_fn)(float *, float *);
void multi_reach_sync_sum(float *p, float *o);
extern multi_reach_fn multi_reach_hook;

SK_KERNEL(multi_reach_tail, "ptr,ptr")
void multi_reach_tail(float *p, float *o) { multi_reach_sync_sum(p, o); }

SK_KERNEL(multi_reach_hook_call, "ptr,ptr")
void multi_reach_hook_call(float *p, float *o) { multi_reach_hook(p, o); }

/* Does not synchronise: each block works on its own element. */
SK_KERNEL(multi_reach_own, "ptr,ptr")
void multi_reach_own(float *p, float *o) { o[sk_block_idx()] = p[sk_block_idx()] * 2.0f - 1.0f; }
