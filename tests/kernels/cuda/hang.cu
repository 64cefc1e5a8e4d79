// A barrier that only some blocks reach: with `syncing` below the kernel's blocks, the
// sk_sync_all of the others waits past the device's deadline (a hang, on purpose).
#include <sk_kernel.h>

SK_KERNEL_CUDA(partial_sync, "ptr,u32", 128)
extern "C" __device__ void partial_sync(uint32_t *count, uint32_t syncing) {
  if (sk_block_idx() < syncing) sk_sync_all();
  if (threadIdx.x == 0) atomicAdd(count, 1u);
}
