// __global__ kernels whose threads return before a __syncthreads() the others reach, as an
// engine writes them: launched alone, a returned thread exits and the barrier stops waiting for
// it; fused, libsk keeps it in step (ptx_early_return.hpp). And kernels that need nothing of
// that: a return all of a block takes alike, a loop no thread returns from.
extern "C" __global__ void __launch_bounds__(128) er_guard(const float *in, float *out, int n) {
  __shared__ float tile[128];
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;  // part of the last block
  tile[threadIdx.x] = in[i];
  __syncthreads();
  const int live = min(128, n - (int)(blockIdx.x * blockDim.x));
  const float v = tile[(threadIdx.x + 1) % live];
  const int any = __syncthreads_or(v > 4.0f);
  const int all = __syncthreads_and(v > -8.0f);
  const int count = __syncthreads_count(v > 0.0f);
  out[i] = v * 2.0f + (float)any + 2.0f * (float)all + 4.0f * (float)count;
}

__device__ __noinline__ float er_rotate(float *tile, float v, int live) {
  tile[threadIdx.x] = v;
  __syncthreads();
  const float r = tile[(threadIdx.x + 1) % live];
  __syncthreads();
  return r;
}

// The barriers in a helper; the returns in a loop, one per round. Every slot of the tile is
// written before the first round: a thread may return at once, and its neighbour reads its slot.
extern "C" __global__ void __launch_bounds__(128) er_rounds(float *data, const int *rounds) {
  __shared__ float tile[128];
  const int mine = rounds[blockIdx.x * blockDim.x + threadIdx.x];
  float v = data[blockIdx.x * blockDim.x + threadIdx.x];
  tile[threadIdx.x] = v;
  __syncthreads();
  int live = 128;
  for (int r = 0;; ++r) {
    if (r >= mine) {
      data[blockIdx.x * blockDim.x + threadIdx.x] = v;
      return;
    }
    v = er_rotate(tile, v, live) + 1.0f;
    live = __syncthreads_count(r + 1 < mine);
  }
}

extern "C" __global__ void __launch_bounds__(128) er_block_uniform(float *data, int blocks) {
  __shared__ float tile[128];
  if ((int)blockIdx.x >= blocks) return;
  tile[threadIdx.x] = data[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  data[blockIdx.x * blockDim.x + threadIdx.x] = tile[127 - threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(128) er_strided(float *data, int n) {
  __shared__ float part[128];
  float sum = 0.0f;
  for (int i = (int)threadIdx.x; i < n; i += 128) sum += data[blockIdx.x * n + i];
  part[threadIdx.x] = sum;
  __syncthreads();
  data[blockIdx.x * n + threadIdx.x % n] = part[(threadIdx.x + 1) % 128];
}

// After the return, a __syncthreads() and a barrier 0 of 64 threads: the returned threads' wait
// would arrive at the second, so the kernel is refused.
extern "C" __global__ void __launch_bounds__(128) er_counted(float *data, int n) {
  if ((int)threadIdx.x >= n) return;
  data[threadIdx.x] += 1.0f;
  __syncthreads();
  asm volatile("bar.sync 0, 64;");
  data[threadIdx.x] *= 2.0f;
}

// After the return, only a barrier of 64 threads (a warpgroup's own): the returned threads do
// not hold it up, fused or not, and the kernel is left as written.
extern "C" __global__ void __launch_bounds__(128) er_group(float *data, int n) {
  if ((int)threadIdx.x >= n) return;
  data[threadIdx.x] += 1.0f;
  asm volatile("bar.sync 0, 64;");
  data[threadIdx.x] *= 2.0f;
}

// Twice the threads of the kernels above, so that they run on the first half of a fused block.
extern "C" __global__ void __launch_bounds__(256) er_wide(float *data, int n) {
  const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) data[i] = data[i] * 0.5f + 1.0f;
}
