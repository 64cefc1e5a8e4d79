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
void residual(float *restrict x, const float *restrict u, const float *restrict gate,
              float *restrict stats, uint32_t n) {
  uint32_t begin, end;
  sk_block_range(n, &begin, &end);

  float staged[CHUNK];
  uint32_t first = end - begin < CHUNK ? end - begin : CHUNK;
  const float *g = gate + begin; /* offsets in pointers: a u32 index sum could wrap (no vectors) */
  for (uint32_t i = 0; i < first; ++i) staged[i] = g[i]; /* "prologue": weights only */

  sk_wait_pre_task_end(); /* u is ready from here on */

  float sum = 0.0f, sumsq = 0.0f;
  for (uint32_t base = begin; base < end; base += CHUNK) {
    uint32_t m = end - base < CHUNK ? end - base : CHUNK;
    float *xs = x + base;
    const float *us = u + base, *gs = gate + base;
    if (base != begin)
      for (uint32_t i = 0; i < m; ++i) staged[i] = gs[i];
#pragma omp simd reduction(+ : sum, sumsq) /* a fixed order per object (see matvec.c) */
    for (uint32_t i = 0; i < m; ++i) {
      float v = xs[i] + staged[i] * us[i];
      xs[i] = v;
      sum += v;
      sumsq += v * v;
    }
  }

  sk_set_next_task_start(); /* the next sub-kernel may start: x and u are done with */

  stats[2 * sk_block_idx()] = sum;
  stats[2 * sk_block_idx() + 1] = sumsq;
}
