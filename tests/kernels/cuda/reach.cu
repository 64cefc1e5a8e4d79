// sk_sync_all reached through a tail call and through a pointer: .nv.callgraph lists the first
// as a call; of the second it says only that the kernel calls through a pointer, and which
// functions have their address taken.
#include <sk_kernel.h>

__device__ __noinline__ void reach_tail_helper(uint32_t *partial, uint32_t v) {
  if (threadIdx.x == 0) partial[1 + sk_block_idx()] = v;
  sk_sync_all();
  if (sk_block_idx() == 0 && threadIdx.x == 0) {
    uint32_t total = 0;
    for (uint32_t b = 0; b < sk_block_num(); ++b) total += partial[1 + b];
    partial[0] = total;
  }
}

SK_KERNEL_CUDA(reach_tail, "ptr,u32", 128)
extern "C" __device__ void reach_tail(uint32_t *partial, uint32_t v) { reach_tail_helper(partial, v + sk_block_idx()); }

typedef void (*reach_fn)(uint32_t *, uint32_t);

// Its static shared array must not overlap that of a kernel that calls it through a pointer.
__device__ __noinline__ void reach_hook_plain(uint32_t *partial, uint32_t v) {
  __shared__ uint32_t staged[256];
  staged[threadIdx.x] = v + threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) partial[1 + sk_block_idx()] = staged[127];
}

// Set by a kernel the host runs first: no compiler can tell which function it holds.
__device__ reach_fn reach_hook;

SK_KERNEL_CUDA(reach_set_hook, "u32", 128)
extern "C" __device__ void reach_set_hook(uint32_t sync) { reach_hook = sync ? reach_tail_helper : reach_hook_plain; }

SK_KERNEL_CUDA(reach_hook_call, "ptr,u32", 128)
extern "C" __device__ void reach_hook_call(uint32_t *partial, uint32_t v) {
  __shared__ uint32_t before[512];
  before[threadIdx.x] = v + threadIdx.x;
  __syncthreads();
  reach_hook(partial, before[(threadIdx.x + 1) % 128] + before[threadIdx.x]);
}

// Calls nothing through a pointer: it does not sync.
SK_KERNEL_CUDA(reach_plain, "ptr,u32", 128)
extern "C" __device__ void reach_plain(uint32_t *partial, uint32_t v) { reach_hook_plain(partial, v * 2); }
