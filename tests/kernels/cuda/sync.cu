// sk_sync_all on fewer blocks than the super kernel: each block writes a partial sum, all the
// sub-kernel's blocks meet, block 0 adds the partials.
#include <sk_kernel.h>

SK_KERNEL_CUDA(sync_sum, "ptr,ptr,u32", 128)
extern "C" __device__ void sync_sum(const uint32_t *in, uint32_t *partial, uint32_t n) {
  __shared__ uint32_t acc;
  if (threadIdx.x == 0) acc = 0;
  __syncthreads();
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  uint32_t sum = 0;
  for (uint32_t i = begin + threadIdx.x; i < end; i += blockDim.x) sum += in[i];
  atomicAdd(&acc, sum);
  __syncthreads();
  if (threadIdx.x == 0) partial[1 + sk_block_idx()] = acc;
  sk_sync_all();
  if (sk_block_idx() == 0 && threadIdx.x == 0) {
    uint32_t total = 0;
    for (uint32_t b = 0; b < sk_block_num(); ++b) total += partial[1 + b];
    partial[0] = total;
  }
}
