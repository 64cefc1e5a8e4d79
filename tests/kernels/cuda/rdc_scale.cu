// Each value scaled by its warp's sum, plus a weight (rdc_shared.cuh's template and table, as
// rdc_sum.cu has them too).
#include "rdc_shared.cuh"

extern "C" __global__ void rdc_scale(const float *x, float *out) {
  const unsigned i = blockIdx.x * 32 + threadIdx.x;
  const float sum = rdc_warp_sum(x[i]);
  out[i] = x[i] * sum + kRdcWeights[threadIdx.x % 4];
}
