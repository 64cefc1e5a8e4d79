// Hard sync across blocks by a cross-core flag: each block writes its part, arrives at the flag
// (sk_cross_core_set_flag_all), waits for every block's arrival (sk_cross_core_wait_flag_all),
// then reads the next block's part, through libsk's scalar accessor for one of its words.
#include <sk_kernel.h>

SK_KERNEL_CUDA(flag_rotate, "ptr,ptr,u32", 128)
extern "C" __device__ void flag_rotate(uint32_t *a, uint32_t *b, uint32_t round) {
  const uint32_t n = sk_block_num() * blockDim.x, i = sk_block_idx() * blockDim.x + threadIdx.x;
  a[i] = i * 2654435761u + round;
  sk_cross_core_set_flag_all(2);
  sk_cross_core_wait_flag_all(2);
  b[i] = a[(i + blockDim.x) % n] ^ sk_gm_get_u32(&a[(i + 1) % n]);
}
