// What two files compiled with -rdc=true (CMake's CUDA_SEPARABLE_COMPILATION) both instantiate:
// nvcc writes a template function and an inline __device__ variable as weak definitions into
// each file's PTX, and a link keeps one of each (rdc_sum.cu, rdc_scale.cu).
#pragma once

inline __device__ float kRdcWeights[4] = {0.5f, 1.5f, 2.5f, 3.5f};

template <typename T>
__device__ __noinline__ T rdc_warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
