// Static shared memory in the overlay (docs/cuda.md, "Shared memory"), a second module beside
// shared.cu: a third 24 KiB tile, a kernel with two static arrays that must stay apart, two
// kernels that reach one helper's variable, a kernel whose call reaches shared.cu's helper
// (another module's variable, which must stay apart from its own tile), and a namespace-scope
// (global) variable, which other objects could reference by name and so stays in place.
#include <sk_kernel.h>

constexpr uint32_t kTile = 6144;  // floats: 24 KiB

SK_KERNEL_CUDA(tile_c, "ptr,u32", 128)
extern "C" __device__ void tile_c(float *x, uint32_t n) {
  __shared__ float tile[kTile];
  for (uint32_t i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = x[i % n] + 3.0f;
  __syncthreads();
  x[sk_block_idx() * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 3) % kTile];
}

// 16 KiB and 8 KiB, written before either is read: an overlap would change the sums.
SK_KERNEL_CUDA(two_arrays, "ptr,u32", 128)
extern "C" __device__ void two_arrays(float *x, uint32_t n) {
  __shared__ float p[4096];
  __shared__ float q[2048];
  for (uint32_t i = threadIdx.x; i < 4096; i += blockDim.x) p[i] = x[i % n];
  for (uint32_t i = threadIdx.x; i < 2048; i += blockDim.x) q[i] = -2.0f * x[(i + 1) % n];
  __syncthreads();
  const uint32_t t = threadIdx.x;
  x[sk_block_idx() * blockDim.x + t] = p[4095 - t] + q[2047 - t] + p[t] * q[t];
}

__device__ __noinline__ float rotate_in_shared(float v) {
  __shared__ float ring[512];  // 2 KiB, reached from ring_a and ring_b
  ring[threadIdx.x] = v;
  __syncthreads();
  const float r = ring[(threadIdx.x + 1) % blockDim.x];
  __syncthreads();
  return r;
}

SK_KERNEL_CUDA(ring_a, "ptr", 128)
extern "C" __device__ void ring_a(float *x) {
  __shared__ float own[2048];  // 8 KiB, live across the helper's call
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  for (uint32_t k = threadIdx.x; k < 2048; k += blockDim.x) own[k] = x[i] + (float)k;
  __syncthreads();
  const float r = rotate_in_shared(x[i]);
  x[i] = r + own[2047 - threadIdx.x];
}

SK_KERNEL_CUDA(ring_b, "ptr", 128)
extern "C" __device__ void ring_b(float *x) {
  __shared__ float own[3072];  // 12 KiB
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  for (uint32_t k = threadIdx.x; k < 3072; k += blockDim.x) own[k] = 2.0f * x[i] - (float)k;
  __syncthreads();
  const float r = rotate_in_shared(x[i]);
  x[i] = r * own[3071 - threadIdx.x];
}

// shared.cu's __noinline__ helper, with its 4 KiB line: linked only beside a kernel of shared.cu.
__device__ float reverse_in_shared(float v);

SK_KERNEL_CUDA(tile_then_reverse, "ptr", 128)
extern "C" __device__ void tile_then_reverse(float *x) {
  __shared__ float tile[kTile];
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  for (uint32_t k = threadIdx.x; k < kTile; k += blockDim.x) tile[k] = x[i] * (float)(k & 7);
  __syncthreads();
  const float r = reverse_in_shared(x[i]);
  x[i] = r + tile[kTile - 1 - threadIdx.x];
}

__shared__ float g_scratch[256];  // 1 KiB, global: the linker places it

SK_KERNEL_CUDA(global_scratch, "ptr", 128)
extern "C" __device__ void global_scratch(float *x) {
  const uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x;
  g_scratch[threadIdx.x] = x[i];
  __syncthreads();
  x[i] = g_scratch[blockDim.x - 1 - threadIdx.x];
}
