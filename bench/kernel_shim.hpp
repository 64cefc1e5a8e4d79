// The device API for kernels linked straight into sk-bench (the baselines): each baseline sets
// the calling thread's block and supplies the barrier sk_sync_all means for it.
#pragma once
#include <cstdint>

namespace bench {

struct ShimBlock {
  uint32_t idx = 0, num = 1;
};
extern thread_local ShimBlock t_block;
extern void (*g_sync_all)();

// One step of a chain as the baselines run it: thunk(args) calls the kernel with its arguments.
struct Step {
  void (*thunk)(const void *args) = nullptr;
  const void *args = nullptr;
  uint32_t block_dim = 1;
};

}  // namespace bench
