/* The kernel guide's port of a serial rmsnorm (llama2.c's): every block sums in the original
 * order, so the result is the serial loop's at any block_dim, and a barrier separates the reads
 * from the writes, so the kernel may run in place (o == x). */
#include <math.h>
#include <sk_kernel.h>

SK_KERNEL(port_rmsnorm, "ptr,ptr,ptr,u32")
void port_rmsnorm(float *o, const float *x, const float *w, uint32_t n) {
  float ss = 0.0f;
  for (uint32_t j = 0; j < n; j++) ss += x[j] * x[j];
  ss = 1.0f / sqrtf(ss / n + 1e-5f);
  sk_sync_all();
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);
  for (uint32_t j = begin; j < end; j++) o[j] = w[j] * (ss * x[j]);
}
