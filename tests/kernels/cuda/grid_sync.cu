// __global__ kernels that sync their grid with cooperative groups (a cooperative launch gives
// the grid workspace in %envreg1/%envreg2): fused, each step's grid syncs in a word of the super
// kernel's sync buffer, and the planner gives every block of such a step its own block. And one
// with a grid barrier of its own, which the caller names (SK_KERNEL_DESC_COOPERATIVE).
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Each block sums its 128 inputs; the grid syncs; every element is divided by the total of all.
extern "C" __global__ void __launch_bounds__(128) gs_normalize(const float *in, float *partial, float *out) {
  __shared__ float part[128];
  const unsigned i = blockIdx.x * 128 + threadIdx.x;
  part[threadIdx.x] = in[i];
  __syncthreads();
  for (unsigned s = 64; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
  cg::this_grid().sync();
  float total = 0.0f;
  for (unsigned b = 0; b < gridDim.x; ++b) total += partial[b];
  out[i] = in[i] / total;
}

// Every block writes, the grid syncs twice (the word's top bit flips back), then each reads a
// neighbour block's value.
extern "C" __global__ void __launch_bounds__(128) gs_neighbour(float *data, float *out) {
  const unsigned i = blockIdx.x * 128 + threadIdx.x;
  data[i] = static_cast<float>(i);
  cg::this_grid().sync();
  data[i] += 1.0f;
  cg::this_grid().sync();
  out[i] = data[(i + 128) % (gridDim.x * 128)];
}

// A grid barrier of its own, as a kernel written for a cooperative launch may have one instead of
// cooperative groups: thread 0 of each block counts it in *arrived and spins until every block of
// launch `round` (from 1) has; then the block reads the next block's words of mid. Nothing in its
// code tells libsk; taken with SK_KERNEL_DESC_COOPERATIVE, its blocks all run at once.
extern "C" __global__ void __launch_bounds__(128)
    own_barrier_rotate(const unsigned *in, unsigned *mid, unsigned *out, unsigned *arrived, unsigned round) {
  const unsigned b = blockIdx.x, n = gridDim.x, i = b * blockDim.x + threadIdx.x;
  mid[i] = in[i] * 2654435761u + round;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(arrived, 1u);
    while (*(volatile unsigned *)arrived < round * n) __nanosleep(32);
    __threadfence();
  }
  __syncthreads();
  out[i] = mid[((b + 1) % n) * blockDim.x + threadIdx.x] ^ i;
}

// Nothing but `count` grid syncs: the floor of a fused step's synchronisation, as bench_cuda's
// sync-empty kernel.
extern "C" __global__ void __launch_bounds__(128) gs_syncs(int count) {
  for (int i = 0; i < count; ++i) cg::this_grid().sync();
}
