// Each block of a cluster writes its 128 values to shared memory, then reads those of the next
// block of its cluster from that block's shared memory (a cluster of one: its own).
#pragma once
#include <cooperative_groups.h>

__device__ inline void rotate_in_cluster(const float *in, float *out) {
  __shared__ float s[128];
  const unsigned i = blockIdx.x * 128 + threadIdx.x;
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  s[threadIdx.x] = in[i];
  cluster.sync();
  const float *next = cluster.map_shared_rank(s, (cluster.block_rank() + 1) % cluster.num_blocks());
  out[i] = next[threadIdx.x];
  cluster.sync();  // the next block's shared memory lives until it has been read
}
