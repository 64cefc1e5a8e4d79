// Compiled to LTO-IR (nvcc -dc -dlto -ltoir): linked with -lto by nvJitLink.
#include <sk_kernel.h>

SK_KERNEL_CUDA(lto_scale, "ptr,u32,u32", 128)
extern "C" __device__ void lto_scale(uint32_t *x, uint32_t n, uint32_t k) {
  for (uint32_t i = sk_block_idx() * blockDim.x + threadIdx.x; i < n; i += sk_block_num() * blockDim.x)
    x[i] *= k;
}
