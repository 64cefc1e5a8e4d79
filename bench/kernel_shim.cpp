#include "kernel_shim.hpp"

namespace bench {
thread_local ShimBlock t_block;
void (*g_sync_all)() = [] {};
}  // namespace bench

extern "C" {
uint32_t sk_block_idx(void) { return bench::t_block.idx; }
uint32_t sk_block_num(void) { return bench::t_block.num; }
void sk_sync_all(void) { bench::g_sync_all(); }
// Each baseline runs kernels strictly one after another: overlap calls have nothing to do.
void sk_set_next_task_start(void) {}
void sk_wait_pre_task_end(void) {}
}
