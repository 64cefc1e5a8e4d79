// A kernel that calls a __device__ function and reads a __device__ variable of another file
// (cross_b.cu), as a project built with separable compilation (nvcc -dc, CMake's
// CUDA_SEPARABLE_COMPILATION) splits its code: fused from the objects given together, or from
// their static library (nvcc -lib). Rounded operations: no contraction across the call.
extern __device__ float cross_activation(float x);
extern __device__ float cross_bias[4];
extern __device__ float cross_block_sum(float v);

extern "C" __global__ void __launch_bounds__(128) cross_apply(const float *x, float *y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __fadd_rn(cross_activation(x[i]), cross_bias[i % 4]);
}

// Each value plus its block's sum of squares (cross_b.cu's reduction, whose shared array lies in
// the super kernel's overlay beside this kernel's own).
extern "C" __global__ void __launch_bounds__(128) cross_normalize(const float *x, float *y, int n) {
  __shared__ float block_total;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float v = i < n ? x[i] : 0.0f;
  const float total = cross_block_sum(__fmul_rn(v, v));
  if (threadIdx.x == 0) block_total = total;
  __syncthreads();
  if (i < n) y[i] = __fadd_rn(v, block_total);
}
