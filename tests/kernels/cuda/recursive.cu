// A call stack ptxas cannot bound: the sub-kernel's helper recurses, as deep as an argument says
// (the linked entry's EIATTR_MIN_STACK_SIZE is 0xffffffff, and nvJitLink warns "Stack size ...
// cannot be statically determined"). Each level has a frame of its own.
#include <sk_kernel.h>

extern "C" __device__ __noinline__ uint32_t recurse_mix(uint32_t depth, uint32_t v) {
  volatile uint32_t pad[8];
  for (uint32_t i = 0; i < 8; ++i) pad[i] = v + i;
  return depth == 0 ? v : pad[depth & 7] ^ recurse_mix(depth - 1, v * 3u + 1u);
}

SK_KERNEL_CUDA(recurse_sum, "ptr,u32,u32", 128)
extern "C" __device__ void recurse_sum(uint32_t *x, uint32_t n, uint32_t depth) {
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  if (i < n) x[i] = recurse_mix(depth, x[i]);
}
