// CUDA C++ `extern "C" __global__` kernels launched with two-dimensional blocks and no
// __launch_bounds__, as llama.cpp's mul_mat_vec_q and RoPE are: their PTX reads %tid.y and
// %ntid.y but does not give the block's shape. Fused from their PTX (block2d.ptx), the caller
// gives the shape (sk_kernel_desc.block) and each thread's index is rebuilt from it.

// A row of 32 columns per block row: out[r][c] = in[r][c] * (1 + threadIdx.y) + blockDim.y,
// rows blockIdx.x * blockDim.y + threadIdx.y, columns threadIdx.x of blockDim.x.
extern "C" __global__ void scale_rows_2d(const float *in, float *out, int n_cols) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y, col = threadIdx.x;
  if (col < n_cols) out[row * n_cols + col] = in[row * n_cols + col] * (1.0f + threadIdx.y) + blockDim.y;
}

// The thread's place in its block, x fastest, as a helper computes it.
__device__ __noinline__ unsigned flat_thread() {
  return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}

// Each warp of a (32, k) or (32, k, m) block sums its block's slice of a row through shared
// memory: sums[b] = the sum of in[b * threads + t] over the block's threads t, in a fixed order.
extern "C" __global__ void sum_blocks_2d(const float *in, float *sums) {
  __shared__ float partial[1024];
  const unsigned t = flat_thread(), threads = blockDim.x * blockDim.y * blockDim.z;
  partial[t] = in[blockIdx.x * threads + t];
  __syncthreads();
  if (t == 0) {
    float s = 0.0f;
    for (unsigned i = 0; i < threads; ++i) s += partial[i];
    sums[blockIdx.x] = s;
  }
}

// A one-dimensional kernel sharing the helper: threadIdx.y is 0 there.
extern "C" __global__ void copy_1d(const float *in, float *out) {
  const unsigned i = blockIdx.x * blockDim.x + flat_thread();
  out[i] = in[i];
}
