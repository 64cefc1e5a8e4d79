// CUDA C++ `extern "C" __global__` kernels written for programmatic dependent launch (PDL), as
// llama.cpp's CUDA kernels are for sm_90: each lets the next kernel launch early
// (cudaTriggerProgrammaticLaunchCompletion, griddepcontrol.launch_dependents) and waits for the
// kernel before it only where it reads that kernel's output (cudaGridDependencySynchronize,
// griddepcontrol.wait), after an early return of the threads past the end. Fused from their PTX
// (dependent_launch.ptx), the wait is the step's early start: what comes before it runs while
// the step before ends; the early launch is taken out.
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

// out[i] = w[i] * in[n - 1 - i]: w, which no kernel of the chain writes, loaded before the wait
// (the head PDL overlaps with the kernel before); in, that kernel's output, after it.
extern "C" __global__ void __launch_bounds__(128) pdl_weighted(const float *w, const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float a = w[i];
  cudaGridDependencySynchronize();
  out[i] = a * in[n - 1 - i];
}

// out[b] = the sum of in's block b, in a fixed order: thread 0 alone waits, the others read what
// the kernel before wrote after the __syncthreads() that follows its wait.
extern "C" __global__ void __launch_bounds__(128) pdl_one_waits(const float *in, float *out, int n) {
  __shared__ float part[128];
  if (threadIdx.x == 0) cudaGridDependencySynchronize();
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int t = 0; t < 128; ++t) s += part[t];
    out[blockIdx.x] = s;
  }
}

// out[i] = 3 * acc[n - 1 - i]: it reads acc, another block's part, before it lets the next
// kernel launch; that one may then write acc in its head.
extern "C" __global__ void __launch_bounds__(128) pdl_read_acc(const float *acc, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3.0f * acc[n - 1 - i];
  cudaTriggerProgrammaticLaunchCompletion();
}

// acc[i] = in[i] - 1 before the wait (PDL starts this head once every block of the kernel before
// has passed its trigger, so after every read of acc), then out[i] = acc[i] + prev[n - 1 - i].
extern "C" __global__ void __launch_bounds__(128) pdl_refill_acc(const float *in, float *acc, const float *prev,
                                                                 float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  acc[i] = in[i] - 1.0f;
  cudaGridDependencySynchronize();
  out[i] = acc[i] + prev[n - 1 - i];
}
