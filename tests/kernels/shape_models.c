/* Kernels for the code-model tests: what -mcmodel=large and -mcmodel=medium address through
 * _GLOBAL_OFFSET_TABLE_ (GOTOFF64, GOTPC64, GOT64, PLTOFF64; on AArch64 MOVW_UABS_G0..G3):
 * arrays above the 64 KiB large-data threshold (.ldata, .lbss, .lrodata), a tentative
 * definition (a large common under -fcommon), a static helper, libm and the device API. Built in
 * the code-model and LTO variants of tests/kernels/CMakeLists.txt as well as in the matrix; every
 * build must compute the same values. */
#include <math.h>
#include <sk_kernel.h>

#define SHAPE_N 20000u /* 80 KiB arrays: above the large-data threshold */

uint32_t shape_scratch[SHAPE_N];                        /* common with -fcommon, else .lbss */
static uint32_t shape_weights[SHAPE_N] = {7, 11, 13};  /* .ldata */
static const uint32_t shape_table[SHAPE_N] = {3, 5, 8}; /* .lrodata */

static uint32_t shape_mix(uint32_t v, uint32_t i) {
  uint32_t k = i % SHAPE_N;
  return v * 2654435761u + shape_table[k % 4] + shape_weights[k % 3] + k;
}

/* buf[i] = mix(i) + floor(sqrt(i)): the scratch array is this block's own index only. */
SK_KERNEL(shape_fill, "ptr,u32")
void shape_fill(uint32_t *buf, uint32_t n) {
  if (sk_block_idx() == 0) shape_weights[SHAPE_N - 1] = n; /* written: .ldata, not .lrodata */
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) {
    shape_scratch[i % SHAPE_N] = shape_mix(i, i);
    buf[i] = shape_scratch[i % SHAPE_N] + (uint32_t)floor(sqrt((double)i));
  }
}

/* dst[i] = mix(src[n - 1 - i]): reads what other blocks of the previous step wrote. */
SK_KERNEL(shape_reverse, "ptr,ptr,u32")
void shape_reverse(uint32_t *dst, const uint32_t *src, uint32_t n) {
  for (uint32_t i = sk_block_idx(); i < n; i += sk_block_num()) dst[i] = shape_mix(src[n - 1 - i], i);
}
