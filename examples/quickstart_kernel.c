/* The README's kernel: y = a * x + y, split over the kernel's blocks. Build: cc -O2 -c -I include */
#include <sk_kernel.h>

SK_KERNEL(saxpy, "f32,ptr,ptr,u32")
void saxpy(float a, const float *x, float *y, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end); /* this block's share of the n items */
  for (uint32_t i = begin; i < end; ++i) y[i] = a * x[i] + y[i];
}
