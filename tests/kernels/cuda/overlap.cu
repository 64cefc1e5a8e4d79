// Task overlap: a producer lets the next kernel start before its tail; a consumer overlaps its
// head with the previous kernel and waits before reading what it wrote.
#include <sk_kernel.h>

SK_KERNEL_CUDA(overlap_produce, "ptr,ptr,u32", 128)
extern "C" __device__ void overlap_produce(uint32_t *data, uint32_t *scratch, uint32_t n) {
  for (uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x; i < n; i += sk_block_num() * blockDim.x)
    data[i] = i + 1;
  sk_set_next_task_start();
  // The tail touches only scratch, which the next kernel does not read.
  for (uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x; i < n; i += sk_block_num() * blockDim.x)
    scratch[i] += 1;
}

SK_KERNEL_CUDA(overlap_consume, "ptr,ptr,u32", 128)
extern "C" __device__ void overlap_consume(const uint32_t *data, uint32_t *out, uint32_t n) {
  uint32_t bias = sk_core_type() + sk_sub_block_idx() + sk_sub_block_num() - 1;  // 0 on CUDA
  sk_wait_pre_task_end();
  for (uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x; i < n; i += sk_block_num() * blockDim.x)
    out[i] = data[i] * 2 + bias;
}
