// A kernel for sk_launch_repeat's early stop: counts the runs and sets the stop flag in run
// `stop_at` (1: the first), as a decode step that read an end-of-sequence token would.
#include <sk_kernel.h>

SK_KERNEL_CUDA(count_and_stop, "ptr,ptr,u32", 128)
extern "C" __device__ void count_and_stop(uint32_t *runs, uint32_t *stop_flag, uint32_t stop_at) {
  if (sk_block_idx() == 0 && threadIdx.x == 0) {
    const uint32_t run = *runs + 1;
    *runs = run;
    if (run == stop_at) *stop_flag = 1;
  }
}
