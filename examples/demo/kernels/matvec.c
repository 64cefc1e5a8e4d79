/*
 * matvec: y = W x with W row-major (rows x cols), row-parallel: each block owns a chunk of rows,
 * so every y[r] is computed by exactly one block in a fixed order (deterministic).
 */
#include <stddef.h>

#include <sk_kernel.h>

SK_KERNEL(matvec, "ptr,ptr,ptr,u32,u32")
void matvec(const float *w, const float *x, float *y, uint32_t rows, uint32_t cols) {
  uint32_t begin, end;
  sk_block_range(rows, &begin, &end);
  for (uint32_t r = begin; r < end; ++r) {
    const float *row = w + (size_t)r * cols;
    /* Four independent accumulators: shorter dependency chains, same order every run. */
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    uint32_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      a0 += row[c] * x[c];
      a1 += row[c + 1] * x[c + 1];
      a2 += row[c + 2] * x[c + 2];
      a3 += row[c + 3] * x[c + 3];
    }
    for (; c < cols; ++c) a0 += row[c] * x[c];
    y[r] = (a0 + a1) + (a2 + a3);
  }
}
