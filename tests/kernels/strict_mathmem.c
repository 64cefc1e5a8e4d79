/* symbols=strict: what a kernel may still use (libm, libc memory/string functions), and a weak
 * reference to a libc function outside the list, which strict mode leaves unbound. */
#include <sk_kernel.h>
#include <math.h>
#include <string.h>

extern int system(const char *command) __attribute__((weak));

/* out[0] = expf(x) * 1000, out[1] = strlen(text), out[2] = whether `system` is reachable,
 * out[3..3+n) = in[0..n) copied with memcpy (n not a constant: a real call). */
SK_KERNEL(strict_mathmem, "ptr,ptr,u32,f32,ptr")
void strict_mathmem(int32_t *out, const int32_t *in, uint32_t n, float x, const char *text) {
  if (sk_block_idx() != 0) return;
  out[0] = (int32_t)lrintf(expf(x) * 1000.0f);
  out[1] = (int32_t)strlen(text);
  out[2] = system != 0;
  memcpy(out + 3, in, n * sizeof *in);
}
