// A kernel that indexes arrays in a by-value struct parameter with values known only at run
// time, as PyTorch's multi-tensor (foreach) kernels read their TensorListMetadata: block b finds
// its tensor and chunk in the parameter, then that tensor's addresses and size. nvcc reads the
// parameter's bytes through a computed parameter-space address (`mov.b64 %rd, P; add.s64 %rd2,
// %rd, %rd1; ld.param.u64 [%rd2]`), which fused become loads through the generic address of
// the bytes.
#include <cstdint>

constexpr int kTensors = 4, kBlocks = 16;

struct TensorListMetadata {
  const float *addresses[2][kTensors];  // sources, destinations
  int numel[kTensors];
  unsigned char block_to_tensor[kBlocks];
  int block_to_chunk[kBlocks];
};

// out = in * scale + bias, chunk by chunk: block b scales chunk block_to_chunk[b] of tensor
// block_to_tensor[b]. 128 threads per block.
extern "C" __global__ void __launch_bounds__(128)
    multi_tensor_scale(int chunk_size, TensorListMetadata tl, float scale, float bias) {
  const int tensor = tl.block_to_tensor[blockIdx.x];
  const int chunk = tl.block_to_chunk[blockIdx.x];
  const int n = tl.numel[tensor] - chunk * chunk_size;
  const float *in = tl.addresses[0][tensor] + chunk * chunk_size;
  float *out = const_cast<float *>(tl.addresses[1][tensor]) + chunk * chunk_size;
  for (int i = threadIdx.x; i < n && i < chunk_size; i += blockDim.x) out[i] = in[i] * scale + bias;
}

// PyTorch's cat: the inputs' metadata by value, input blockIdx.y of it per row of blocks.
struct CatMetadata {
  const float *input[8];
  int64_t offset[8], nelem[8];
};

extern "C" __global__ void __launch_bounds__(256) cat_rows(float *out, CatMetadata m, int64_t stride) {
  const int t = blockIdx.y;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < m.nelem[t]; i += gridDim.x * blockDim.x)
    out[m.offset[t] + i * stride] = m.input[t][i];
}

// A grid-constant table read by a helper through its generic address and indexed at run time
// by the kernel itself: both the followed and the computed address of one parameter.
struct Table {
  float v[32];
};

__device__ __noinline__ float pick(const Table *t, int i) { return t->v[i & 31]; }

extern "C" __global__ void __launch_bounds__(64) table_lookup(const __grid_constant__ Table t, const int *idx, float *out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = pick(&t, idx[i]) + t.v[idx[i] & 7];
}
