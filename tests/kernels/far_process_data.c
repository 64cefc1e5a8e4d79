/* A kernel compiled the distribution's way (-fPIE) that reads and writes process data: `stderr`
 * and the test executable's `far_host_counter` (copy-relocated into, or defined by, the
 * executable) and libc's `stdin` and `optind` (left in libc when the executable does not use
 * them). The executable and libc lie far apart: only rewritten references reach both. */
#include <sk_kernel.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

extern int far_host_counter;

/* out[0..3] = stderr, stdin, optind, far_host_counter as the kernel sees them; then it writes
 * optind += 5 and far_host_counter = far_host_counter * 2 + 1. */
SK_KERNEL(far_process_data, "ptr")
void far_process_data(int64_t *out) {
  if (sk_block_idx() != 0) return;
  out[0] = (int64_t)(intptr_t)stderr;
  out[1] = (int64_t)(intptr_t)stdin;
  out[2] = optind;
  out[3] = far_host_counter;
  optind += 5;
  far_host_counter = far_host_counter * 2 + 1;
}
