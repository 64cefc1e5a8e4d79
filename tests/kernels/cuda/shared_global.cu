// __global__ kernels with large static __shared__ tiles (28000 and 24000 bytes): together past a
// block's 48 KiB, fused one after another they share the super kernel's shared overlay.
constexpr int kReverse = 7000, kRotate = 6000;

extern "C" __global__ void __launch_bounds__(128) sg_reverse(const float *in, float *out) {
  __shared__ float tile[kReverse];
  const float *src = in + blockIdx.x * kReverse;
  for (int i = (int)threadIdx.x; i < kReverse; i += 128) tile[i] = src[i];
  __syncthreads();
  for (int i = (int)threadIdx.x; i < kReverse; i += 128) out[blockIdx.x * kReverse + i] = tile[kReverse - 1 - i];
}

extern "C" __global__ void __launch_bounds__(128) sg_rotate(const float *in, float *out) {
  __shared__ float tile[kRotate];
  const float *src = in + blockIdx.x * kReverse;
  for (int i = (int)threadIdx.x; i < kRotate; i += 128) tile[i] = src[i] * 2.0f;
  __syncthreads();
  for (int i = (int)threadIdx.x; i < kRotate; i += 128) out[blockIdx.x * kReverse + i] = tile[(i + 17) % kRotate];
}
