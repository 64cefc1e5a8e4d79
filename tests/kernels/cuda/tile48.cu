// A sub-kernel with a 48 KiB static __shared__ tile, the most a block's static shared memory may
// hold (sm_90 reserves 1 KiB of every block on top of it): fused, the tile is the shared overlay,
// and libsk's block state goes to dynamic shared memory past the 48 KiB. And a kernel with a
// 180 KiB extern __shared__ array, legal alone, which cannot share a block with the tile.
#include <sk_kernel.h>

constexpr uint32_t kTile48 = 12288;  // floats: 48 KiB

SK_KERNEL_CUDA(tile48, "ptr,u32", 128)
extern "C" __device__ void tile48(float *x, uint32_t n) {
  __shared__ float tile[kTile48];
  for (uint32_t i = threadIdx.x; i < kTile48; i += blockDim.x) tile[i] = x[i % n] + (float)(i / n);
  __syncthreads();
  x[sk_block_idx() * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 97u + 11u) % kTile48];
}

SK_KERNEL_CUDA_SHARED(dyn_huge, "ptr", 128, 184320)
extern "C" __device__ void dyn_huge(float *x) {
  extern __shared__ float dyn[];
  for (uint32_t i = threadIdx.x; i < 46080; i += blockDim.x) dyn[i] = x[i % 128];
  __syncthreads();
  x[threadIdx.x] = dyn[46079 - threadIdx.x];
}
