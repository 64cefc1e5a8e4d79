/* A call through a pointer in an object whose one function that synchronises (a kernel) never
 * has its address taken: the call cannot lead there, so the kernel making it is not taken for a
 * syncing one. */
#include <sk_kernel.h>

typedef void (*reach_plain_fn)(float *, float *);

__attribute__((noinline)) void reach_plain_double(float *p, float *o) { o[sk_block_idx()] = p[sk_block_idx()] * 2.0f; }
__attribute__((noinline)) void reach_plain_shift(float *p, float *o) { o[sk_block_idx()] = p[sk_block_idx()] + 4.0f; }

reach_plain_fn reach_plain_hook;
SK_KERNEL(reach_plain_set_hook, "u32")
void reach_plain_set_hook(uint32_t shift) { reach_plain_hook = shift ? reach_plain_shift : reach_plain_double; }

SK_KERNEL(reach_plain_pointer_call, "ptr,ptr")
void reach_plain_pointer_call(float *p, float *o) { reach_plain_hook(p, o); }

SK_KERNEL(reach_plain_sync, "ptr,ptr")
void reach_plain_sync(float *p, float *o) {
  uint32_t b = sk_block_idx();
  p[b] = (float)b + 0.5f;
  sk_sync_all();
  o[b] = p[(b + 1) % sk_block_num()];
}
