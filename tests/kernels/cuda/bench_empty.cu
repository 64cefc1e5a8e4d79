// bench_cuda's empty step: a sub-kernel that does nothing, so a super kernel of its calls costs
// only libsk's step loop and barriers, set against a grid.sync() kernel with nothing between its
// syncs (bench/cuda/bench_cuda.cu).
#include <sk_kernel.h>

SK_KERNEL_CUDA(bench_empty_step, "", 128)
extern "C" __device__ void bench_empty_step(void) {}
