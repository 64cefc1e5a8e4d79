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
