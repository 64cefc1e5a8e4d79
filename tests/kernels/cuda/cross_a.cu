// A kernel that calls a __device__ function and reads a __device__ variable of another file
// (cross_b.cu), as a project built with separable compilation (nvcc -dc, CMake's
// CUDA_SEPARABLE_COMPILATION) splits its code: fused from the objects given together, or from
// their static library (nvcc -lib). Rounded operations: no contraction across the call.
extern __device__ float cross_activation(float x);
extern __device__ float cross_bias[4];

extern "C" __global__ void __launch_bounds__(128) cross_apply(const float *x, float *y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __fadd_rn(cross_activation(x[i]), cross_bias[i % 4]);
}
