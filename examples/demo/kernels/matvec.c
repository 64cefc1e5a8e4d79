/*
 * matvec: y = W x with W row-major (rows x cols), row-parallel: each block owns a chunk of rows,
 * so every y[r] is computed by exactly one block (deterministic). The dot product is a SIMD
 * reduction (-fopenmp-simd): its partial sums are added in an order the compiled code fixes,
 * the same bits on every run of the same object.
 */
#include <stddef.h>

#include <sk_kernel.h>

SK_KERNEL(matvec, "ptr,ptr,ptr,u32,u32")
void matvec(const float *restrict w, const float *restrict x, float *restrict y, uint32_t rows,
            uint32_t cols) {
  uint32_t begin, end;
  sk_block_range(rows, &begin, &end);
  for (uint32_t r = begin; r < end; ++r) {
    const float *row = w + (size_t)r * cols;
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (uint32_t c = 0; c < cols; ++c) acc += row[c] * x[c];
    y[r] = acc;
  }
}
