// sk_sync_all reached only through a __noinline__ helper: the kernel's own EIATTR_EXTERNS does
// not name it, the cubin's .nv.callgraph does.
#include <sk_kernel.h>

__device__ __noinline__ void publish_then_sync(uint32_t *partial, uint32_t v) {
  if (threadIdx.x == 0) partial[1 + sk_block_idx()] = v;
  sk_sync_all();
}

SK_KERNEL_CUDA(sync_in_helper, "ptr,u32", 128)
extern "C" __device__ void sync_in_helper(uint32_t *partial, uint32_t v) {
  publish_then_sync(partial, v + sk_block_idx());
  if (sk_block_idx() == 0 && threadIdx.x == 0) {
    uint32_t total = 0;
    for (uint32_t b = 0; b < sk_block_num(); ++b) total += partial[1 + b];
    partial[0] = total;
  }
}
