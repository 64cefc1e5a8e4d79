/* A kernel whose recorded signature lists a struct's members where the function takes the
 * struct by value, and a function without metadata: `sk inspect` of an object built with -g
 * compares the records with the debug information and names the parameter. */
#include <sk_kernel.h>

struct misdescribed_f2 {
  float x, y;
};

/* Should be "ptr,{f32,f32},u32": called as recorded, it would get wrong values. */
SK_KERNEL(misdescribed, "ptr,f32,f32,u32")
void misdescribed(float *out, struct misdescribed_f2 p, uint32_t n) {
  if (sk_block_idx() == 0) out[n] = p.x * p.y;
}

/* No SK_KERNEL: the host gives its signature, which the debug information suggests. */
void undescribed(double *out, struct misdescribed_f2 p, int16_t k) {
  if (sk_block_idx() == 0) *out = p.x + p.y + k;
}
