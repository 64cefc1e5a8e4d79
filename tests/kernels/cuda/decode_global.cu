// A decode step's kernels as ordinary CUDA C++ `extern "C" __global__` kernels, written as an
// engine writes them (no sk_kernel.h): libsk fuses them from the PTX nvcc writes
// (decode_global.ptx, and the fatbinaries holding only PTX). The same six operations as the Triton
// fixtures (tests/kernels/triton/decode_step.py, whose NumPy references describe the results);
// fp32 throughout, 1-D grids and blocks. The constructs vary on purpose: blockIdx.x / blockDim.x /
// gridDim.x, grid-stride loops, __launch_bounds__ (with and without a minimum of blocks per SM),
// static __shared__ reduction arrays, an extern __shared__ array sized at launch, a struct
// parameter passed by value, warp shuffles.
#include <cmath>
#include <cstdint>

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), in every thread:
// warp sums, then the first warp sums the warps' partials from a static __shared__ array.
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
    s = warp_sum(s);
    if (threadIdx.x == 0) total = s;
  }
  __syncthreads();
  float result = total;
  __syncthreads();  // partial and total are reused by the next call
  return result;
}

__device__ float block_max(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  v = warp_max(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : -INFINITY;
    s = warp_max(s);
    if (threadIdx.x == 0) total = s;
  }
  __syncthreads();
  float result = total;
  __syncthreads();
  return result;
}

}  // namespace

// RMSNorm: block b normalises row b of x (n_cols wide): out = x / sqrt(mean(x^2) + eps) * w.
// Launch: one block per row, 256 threads (any multiple of 32 up to 256).
extern "C" __global__ void __launch_bounds__(256, 2)
    rmsnorm_global(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ out, int n_cols,
                   float eps) {
  const float *row = x + static_cast<size_t>(blockIdx.x) * n_cols;
  float sq = 0.0f;
  for (int i = threadIdx.x; i < n_cols; i += blockDim.x) sq += row[i] * row[i];
  float inv = rsqrtf(block_sum(sq) / n_cols + eps);
  for (int i = threadIdx.x; i < n_cols; i += blockDim.x)
    out[static_cast<size_t>(blockIdx.x) * n_cols + i] = row[i] * inv * w[i];
}

// The shape of a rotary embedding, passed by value.
struct RopeShape {
  int n_heads;
  int head_dim;  // even
  int tokens;
};

// RoPE (rotate-half): block b rotates the (token b / n_heads, head b % n_heads) row of x
// ([tokens, n_heads, head_dim]): out[i] = x1*cos - x2*sin, out[i + half] = x2*cos + x1*sin with
// x1 = x[i], x2 = x[i + half], cos/sin rows of head_dim / 2 values per token. Launch:
// tokens * n_heads blocks, head_dim / 2 threads or fewer (strided).
extern "C" __global__ void rope_global(const float *x, const float *cos_table, const float *sin_table, float *out,
                                       RopeShape shape) {
  if (blockIdx.x >= static_cast<unsigned>(shape.tokens * shape.n_heads)) return;
  int token = blockIdx.x / shape.n_heads;
  int half = shape.head_dim / 2;
  const float *in = x + static_cast<size_t>(blockIdx.x) * shape.head_dim;
  float *o = out + static_cast<size_t>(blockIdx.x) * shape.head_dim;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    float c = cos_table[token * half + i], s = sin_table[token * half + i];
    float x1 = in[i], x2 = in[i + half];
    o[i] = x1 * c - x2 * s;
    o[i + half] = x2 * c + x1 * s;
  }
}

// Decode attention: block b attends the (sequence b / n_heads, head b % n_heads) query row
// (q [batch, n_heads, head_dim]) against the first seq_len entries of that sequence's K/V cache
// ([batch, kv_len, n_heads, head_dim]): out = softmax(scale * K q) V. The seq_len scores live in
// the extern __shared__ array: launch with seq_len * sizeof(float) bytes of dynamic shared
// memory, one block per (sequence, head), blockDim.x = head_dim (a multiple of 32, at most 1024).
extern "C" __global__ void __launch_bounds__(128)
    decode_attention_global(const float *q, const float *k_cache, const float *v_cache, float *out, int seq_len,
                            int n_heads, int head_dim, int kv_len, float scale) {
  extern __shared__ float scores[];
  int seq = blockIdx.x / n_heads, head = blockIdx.x % n_heads;
  size_t row_stride = static_cast<size_t>(n_heads) * head_dim;
  size_t cache = static_cast<size_t>(seq) * kv_len * row_stride + static_cast<size_t>(head) * head_dim;
  int d = threadIdx.x;
  float qd = d < head_dim ? q[static_cast<size_t>(blockIdx.x) * head_dim + d] : 0.0f;
  for (int l = 0; l < seq_len; ++l) {
    float kd = d < head_dim ? k_cache[cache + l * row_stride + d] : 0.0f;
    float s = block_sum(qd * kd);
    if (threadIdx.x == 0) scores[l] = s * scale;
  }
  __syncthreads();
  float m = -INFINITY;
  for (int l = threadIdx.x; l < seq_len; l += blockDim.x) m = fmaxf(m, scores[l]);
  m = block_max(m);
  float denom = 0.0f;
  for (int l = threadIdx.x; l < seq_len; l += blockDim.x) {
    scores[l] = __expf(scores[l] - m);
    denom += scores[l];
  }
  denom = block_sum(denom);  // its barriers also publish the exponentials
  if (d < head_dim) {
    float acc = 0.0f;
    for (int l = 0; l < seq_len; ++l) acc += scores[l] * v_cache[cache + l * row_stride + d];
    out[static_cast<size_t>(blockIdx.x) * head_dim + d] = acc / denom;
  }
}

// SiLU-and-multiply: out[i] = gate[i] / (1 + exp(-gate[i])) * up[i] for i < n, in a grid-stride
// loop (any grid, any block size).
extern "C" __global__ void silu_mul_global(const float *gate, const float *up, float *out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float g = gate[i];
    out[i] = g / (1.0f + __expf(-g)) * up[i];
  }
}

// Residual add: out[i] = x[i] + res[i], one element per thread (launch ceil(n / blockDim.x)
// blocks of at most 256 threads).
extern "C" __global__ void __launch_bounds__(256)
    residual_add_global(const float *x, const float *res, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + res[i];
}

// GEMV: out = W x, W row-major [n_rows, n_cols]; one warp per output row, a grid-stride loop over
// the rows (warps of all blocks), lanes striding the columns, then a warp-shuffle sum. Launch:
// any grid of blocks of 128 threads.
extern "C" __global__ void __launch_bounds__(128)
    gemv_global(const float *__restrict__ w, const float *__restrict__ x, float *__restrict__ out, int n_rows,
                int n_cols) {
  int lane = threadIdx.x % 32;
  int warps = gridDim.x * (blockDim.x / 32);
  for (int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; row < n_rows; row += warps) {
    const float *wr = w + static_cast<size_t>(row) * n_cols;
    float acc = 0.0f;
    for (int c = lane; c < n_cols; c += 32) acc += wr[c] * x[c];
    acc = warp_sum(acc);
    if (lane == 0) out[row] = acc;
  }
}
