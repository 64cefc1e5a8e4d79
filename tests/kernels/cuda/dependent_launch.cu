// CUDA C++ `extern "C" __global__` kernels written for programmatic dependent launch (PDL), as
// llama.cpp's CUDA kernels are for sm_90: each lets the next kernel launch early
// (cudaTriggerProgrammaticLaunchCompletion, griddepcontrol.launch_dependents) and waits for the
// kernel before it only where it reads that kernel's output (cudaGridDependencySynchronize,
// griddepcontrol.wait), after an early return of the threads past the end. Fused from their PTX
// (dependent_launch.ptx), both instructions are taken out.
#include <cstdint>

// A helper that waits: the wait may sit in any function the kernel calls.
__device__ __noinline__ float wait_then_load(const float *p, int i) {
  cudaGridDependencySynchronize();
  return p[i];
}

// out[i] = 2 * in[i] + 1; the next kernel may launch at once.
extern "C" __global__ void __launch_bounds__(128) pdl_scale(const float *in, float *out, int n) {
  cudaTriggerProgrammaticLaunchCompletion();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  cudaGridDependencySynchronize();
  out[i] = 2.0f * in[i] + 1.0f;
}

// out[i] = in[i] * in[n - 1 - i], in being what pdl_scale wrote: every block reads another's.
extern "C" __global__ void __launch_bounds__(128) pdl_mirror(const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float a = wait_then_load(in, i);
  out[i] = a * in[n - 1 - i];
  cudaTriggerProgrammaticLaunchCompletion();
}
