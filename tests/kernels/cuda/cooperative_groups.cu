// __global__ kernels that use cooperative groups within a block or a cluster, which a linked
// cubin records as it records a grid sync (EIATTR_COOP_GROUP_INSTR_OFFSETS), and one whose
// grid sync is in a device function of its own: launched as compiled, only the last needs a
// cooperative launch.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#if __CUDA_ARCH__ >= 900
#include "cluster_rotate.cuh"
#endif

namespace cg = cooperative_groups;

// Each block reverses its 128 values through shared memory.
extern "C" __global__ void __launch_bounds__(128) cg_block_reverse(const float *in, float *out) {
  __shared__ float s[128];
  const unsigned i = blockIdx.x * 128 + threadIdx.x;
  s[threadIdx.x] = in[i];
  cg::this_thread_block().sync();
  out[i] = s[127 - threadIdx.x];
}

// Each warp's sum, written by every lane.
extern "C" __global__ void __launch_bounds__(128) cg_warp_sum(const float *in, float *out) {
  const unsigned i = blockIdx.x * 128 + threadIdx.x;
  auto warp = cg::tiled_partition<32>(cg::this_thread_block());
  out[i] = cg::reduce(warp, in[i], cg::plus<float>());
}

// Each block of a cluster reads its neighbour's values (a cluster of one: its own).
extern "C" __global__ void __launch_bounds__(128) cg_cluster_rotate(const float *in, float *out) {
#if __CUDA_ARCH__ >= 900
  rotate_in_cluster(in, out);
#endif
}

__device__ __noinline__ void cg_sync_grid() { cg::this_grid().sync(); }

// Every block writes, the grid syncs in a call, then each reads the next block's value.
extern "C" __global__ void __launch_bounds__(128) cg_grid_sync_call(float *data, float *out) {
  const unsigned i = blockIdx.x * 128 + threadIdx.x;
  data[i] = static_cast<float>(i);
  cg_sync_grid();
  out[i] = data[(i + 128) % (gridDim.x * 128)];
}
