/* The README's kernel: y = a * x + y, split over the kernel's blocks. Build: cc -O2 -c -I include */
#include <sk_kernel.h>

SK_KERNEL(saxpy, "f32,ptr,ptr,u32")
void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t per = (n + sk_block_num() - 1) / sk_block_num();
  for (uint32_t i = sk_block_idx() * per; i < n && i < (sk_block_idx() + 1) * per; ++i)
    y[i] = a * x[i] + y[i];
}
