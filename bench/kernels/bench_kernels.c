/* Kernels for sk-bench. Each is built twice: as an object that libsk loads (the fused and
 * unfused runs) and linked into sk-bench itself with a shim device API (the OpenMP, thread-pool
 * and spin-barrier baselines), so that every method runs the very same code. */
#include <sk_kernel.h>

/* The overhead chain: nothing but the call. */
SK_KERNEL(bench_empty, "")
void bench_empty(void) {}

/* The overhead chain with task overlap: releases the next kernel at once. */
SK_KERNEL(bench_empty_overlap, "")
void bench_empty_overlap(void) { sk_set_next_task_start(); }

/* The small-ops chain: y = a*x + y over this block's part. */
SK_KERNEL(bench_axpy, "ptr,ptr,f32,u32")
void bench_axpy(const float *x, float *y, float a, uint32_t n) {
  uint32_t lo, hi;
  sk_block_range(n, &lo, &hi);
  for (uint32_t i = lo; i < hi; ++i) y[i] = a * x[i] + y[i];
}
