/* Kernels that reach the device API along different paths, all in one object (and, without
 * -ffunction-sections, one .text): the planner must see each kernel's own use only. */
#include <sk_kernel.h>

SK_KERNEL(uses_nothing, "ptr")
void uses_nothing(float *x) { x[0] += 1.0f; }

__attribute__((noinline)) static void helper_sync(float *x) {
  x[1] += 1.0f;
  sk_sync_all();
}

SK_KERNEL(uses_via_static_helper, "ptr")
void uses_via_static_helper(float *x) { helper_sync(x); }

static void release_next(void) { sk_set_next_task_start(); }
static void wait_previous(void) { sk_wait_pre_task_end(); }
typedef void (*hook_fn)(void);
static hook_fn const hooks[2] = {release_next, wait_previous};

SK_KERNEL(uses_via_pointer_table, "ptr,u32")
void uses_via_pointer_table(float *x, uint32_t which) {
  hooks[which & 1]();
  x[2] += 1.0f;
}

SK_KERNEL(uses_block_idx, "ptr")
void uses_block_idx(float *x) { x[sk_block_idx()] = 0.0f; }
