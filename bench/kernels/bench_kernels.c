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

/* The kernel-call table: empty kernels whose parameters take each of the call's ways (see
 * src/host/executor/kernel_call.hpp): axpy's shape and 16 doubles by register map (the 16: 8 in FP
 * registers, 8 stack words, all the map passes), 17 doubles through libffi. */
SK_KERNEL(bench_call_axpy_shape, "ptr,ptr,f32,u32")
void bench_call_axpy_shape(const float *x, float *y, float a, uint32_t n) { (void)x, (void)y, (void)a, (void)n; }

SK_KERNEL(bench_call_16d, "ptr,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64")
void bench_call_16d(double *out, double a0, double a1, double a2, double a3, double a4, double a5, double a6,
                    double a7, double a8, double a9, double a10, double a11, double a12, double a13, double a14,
                    double a15) {
  (void)out, (void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7;
  (void)a8, (void)a9, (void)a10, (void)a11, (void)a12, (void)a13, (void)a14, (void)a15;
}

SK_KERNEL(bench_call_17d, "ptr,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64")
void bench_call_17d(double *out, double a0, double a1, double a2, double a3, double a4, double a5, double a6,
                    double a7, double a8, double a9, double a10, double a11, double a12, double a13, double a14,
                    double a15, double a16) {
  (void)out, (void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7;
  (void)a8, (void)a9, (void)a10, (void)a11, (void)a12, (void)a13, (void)a14, (void)a15, (void)a16;
}
