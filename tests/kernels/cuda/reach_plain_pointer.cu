// A call through a pointer in a cubin whose one function that syncs (a kernel) never has its
// address taken: the call cannot lead there, so the kernel making it does not sync.
#include <sk_kernel.h>

typedef void (*reach_plain_fn)(uint32_t *, uint32_t);

__device__ __noinline__ void reach_plain_double(uint32_t *out, uint32_t v) { out[sk_block_idx()] = 2 * v; }
__device__ __noinline__ void reach_plain_shift(uint32_t *out, uint32_t v) { out[sk_block_idx()] = v + 4; }

__device__ reach_plain_fn reach_plain_hook;

SK_KERNEL_CUDA(reach_plain_set_hook, "u32", 128)
extern "C" __device__ void reach_plain_set_hook(uint32_t shift) {
  reach_plain_hook = shift ? reach_plain_shift : reach_plain_double;
}

SK_KERNEL_CUDA(reach_plain_pointer_call, "ptr,u32", 128)
extern "C" __device__ void reach_plain_pointer_call(uint32_t *out, uint32_t v) { reach_plain_hook(out, v); }

SK_KERNEL_CUDA(reach_plain_sync, "ptr,u32", 128)
extern "C" __device__ void reach_plain_sync(uint32_t *out, uint32_t v) {
  if (threadIdx.x == 0) out[sk_block_idx()] = v;
  sk_sync_all();
}
