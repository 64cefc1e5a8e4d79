// CUDA C++ `extern "C" __global__` kernels, each with one construct libsk must refuse when it
// fuses kernels from their PTX (refuse_global.ptx): a fused kernel runs as a sub-function of
// one super kernel, so nothing may depend on the kernel's own launch, grid or block shape
// beyond a 1-D block and a 1-D grid. Compiled with -rdc=true (the child launch needs it).
#include <cooperative_groups.h>
#include <cstdint>

namespace cg = cooperative_groups;

// Thread block clusters: blocks of a pair exchange a value through distributed shared memory.
extern "C" __global__ void __cluster_dims__(2, 1, 1) refuse_cluster(float *out) {
  __shared__ float value;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) value = static_cast<float>(blockIdx.x);
  cluster.sync();
  float *peer = cluster.map_shared_rank(&value, cluster.block_rank() ^ 1);
  if (threadIdx.x == 0) out[blockIdx.x] = *peer;
  cluster.sync();  // the peer's shared memory stays alive until it was read
}

// Dynamic parallelism: a child grid launched from the device.
extern "C" __global__ void refuse_child(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += 1.0f;
}

extern "C" __global__ void refuse_dynamic_parallelism(float *out, int n) {
  if (blockIdx.x == 0 && threadIdx.x == 0) refuse_child<<<(n + 127) / 128, 128>>>(out, n);
}


// Named barrier 15, libsk's own between steps (CUTLASS numbers user barriers from 8 up): two
// warps of the block pass it apart from the rest, in a helper the kernel calls.
static __device__ __noinline__ void refuse_pair_barrier() { asm volatile("bar.sync 15, 64;" ::: "memory"); }

extern "C" __global__ void refuse_named_barrier(float *out) {
  out[threadIdx.x] = static_cast<float>(threadIdx.x);
  if (threadIdx.x < 64) refuse_pair_barrier();
  out[threadIdx.x] += out[threadIdx.x ^ 32];
}
