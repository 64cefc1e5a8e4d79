// Shared memory: two kernels with a 24 KiB static __shared__ tile each (their sum is the 48 KiB
// a block may hold without opting in), one whose tile lives in a __noinline__ helper, and
// kernels with an extern __shared__ array, declared (SK_KERNEL_CUDA_SHARED) or not.
#include <sk_kernel.h>

constexpr uint32_t kTile = 6144;  // floats: 24 KiB

SK_KERNEL_CUDA(tile_a, "ptr,u32", 128)
extern "C" __device__ void tile_a(float *x, uint32_t n) {
  __shared__ float tile[kTile];
  for (uint32_t i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = x[i % n];
  __syncthreads();
  x[sk_block_idx() * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 7) % kTile];
}

SK_KERNEL_CUDA(tile_b, "ptr,u32", 128)
extern "C" __device__ void tile_b(float *x, uint32_t n) {
  __shared__ float tile[kTile];
  for (uint32_t i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = x[i % n] * 2.0f;
  __syncthreads();
  x[sk_block_idx() * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 5) % kTile];
}

__device__ __noinline__ float reverse_in_shared(float v) {
  __shared__ float line[1024];  // 4 KiB, reached only through the call graph
  line[threadIdx.x] = v;
  __syncthreads();
  return line[blockDim.x - 1 - threadIdx.x];
}

SK_KERNEL_CUDA(tile_in_helper, "ptr", 128)
extern "C" __device__ void tile_in_helper(float *x) {
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  x[i] = reverse_in_shared(x[i]);
}

SK_KERNEL_CUDA_SHARED(dyn_big, "ptr", 128, 65536)
extern "C" __device__ void dyn_big(float *x) {
  extern __shared__ float dyn[];
  for (uint32_t i = threadIdx.x; i < 16384; i += blockDim.x) dyn[i] = x[i];
  __syncthreads();
  x[threadIdx.x] = dyn[16383 - threadIdx.x];
}

SK_KERNEL_CUDA_SHARED(dyn_small, "ptr", 128, 4096)
extern "C" __device__ void dyn_small(float *x) {
  extern __shared__ float dyn[];
  dyn[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = dyn[127 - threadIdx.x];
}

SK_KERNEL_CUDA(dyn_undeclared, "ptr", 128)
extern "C" __device__ void dyn_undeclared(float *x) {
  extern __shared__ float dyn[];
  dyn[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = dyn[127 - threadIdx.x];
}
