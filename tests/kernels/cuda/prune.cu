// A module of which a super kernel takes one kernel: what the link keeps of it.
__device__ __noinline__ float prune_shared(float x) { return x * 2.0f + 1.0f; }
__device__ __noinline__ float prune_only_other(float x) { return x * x - 3.0f; }
__device__ __noinline__ float prune_pointed(float x) { return x + 7.0f; }
__device__ float (*prune_table)(float) = prune_pointed;  // a variable holding a function's address

extern "C" __global__ void prune_taken(float *p) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  p[i] = prune_table(prune_shared(p[i]));
}

__device__ __noinline__ float prune_late(float x);  // defined after its caller: PTX declares it first

extern "C" __global__ void prune_other(float *p) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  p[i] = prune_late(prune_only_other(prune_shared(p[i])));
}

__device__ __noinline__ float prune_late(float x) { return x - 0.5f; }
