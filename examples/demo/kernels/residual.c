/*
 * residual: x += gate * u, using the task-overlap calls.
 *
 * Before sk_wait_pre_task_end() the kernel touches only `gate` (constant weights no kernel
 * writes), so that part may run while the previous sub-kernel (which produces u) still runs.
 * After sk_set_next_task_start() it only writes its own slots of `stats` (read by nobody in the
 * launch), so that tail may run while the next sub-kernel starts. Unfused, both calls are no-ops.
 */
#include <sk_kernel.h>

#define CHUNK 256 /* gate values staged per pass; the first pass is fetched before the wait */

SK_KERNEL(residual, "ptr,ptr,ptr,ptr,u32")
void residual(float *x, const float *u, const float *gate, float *stats, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);

  float staged[CHUNK];
  uint32_t first = end - begin < CHUNK ? end - begin : CHUNK;
  for (uint32_t i = 0; i < first; ++i) staged[i] = gate[begin + i]; /* "prologue": weights only */

  sk_wait_pre_task_end(); /* u is ready from here on */

  float sum = 0.0f, sumsq = 0.0f;
  for (uint32_t base = begin; base < end; base += CHUNK) {
    uint32_t m = end - base < CHUNK ? end - base : CHUNK;
    if (base != begin)
      for (uint32_t i = 0; i < m; ++i) staged[i] = gate[base + i];
    for (uint32_t i = 0; i < m; ++i) {
      float v = x[base + i] + staged[i] * u[base + i];
      x[base + i] = v;
      sum += v;
      sumsq += v * v;
    }
  }

  sk_set_next_task_start(); /* the next sub-kernel may start: x and u are done with */

  stats[2 * sk_block_idx()] = sum;
  stats[2 * sk_block_idx() + 1] = sumsq;
}
