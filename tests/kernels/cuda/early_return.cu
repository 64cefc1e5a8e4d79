// The guard idiom: threads past the end return at once. The tile is read across threads after
// a __syncthreads() every thread reaches, so a barrier that pairs wrongly shows in the output.
// In a super kernel the returned threads wait at libsk's next block barrier (barrier 15) while
// the others finish.
#include <sk_kernel.h>

SK_KERNEL_CUDA(early_return_pairs, "ptr,ptr,u32", 128)
extern "C" __device__ void early_return_pairs(const uint32_t *in, uint32_t *out, uint32_t n) {
  __shared__ uint32_t tile[128];
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0u;
  __syncthreads();
  if (i >= n) return;
  out[i] = tile[threadIdx.x] * 2u + tile[(threadIdx.x + 1u) % blockDim.x];
}
