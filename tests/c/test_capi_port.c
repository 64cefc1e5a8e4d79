/* Public C API: the porting pattern of the kernel guide ("In-place kernels need a barrier"). A
 * serial rmsnorm ported so that every block sums in the original order gives the serial loop's
 * bits (the one-block launch) on any block_dim, in place, unfused and fused, for every compiler
 * and optimisation level of the kernel. */
#include "test_util.h"

#define N 4099u /* not a multiple of any block count: the last block's range is shorter */
#define MAX_BLOCKS 4u

static const char *const variants[] = {"gcc-O0-pie",   "gcc-O2-pie",   "gcc-O3-nopic",
                                       "clang-O0-pic", "clang-O2-pie", "clang-O3-pic"};

/* Deterministic inputs of mixed magnitudes, so that the summation order shows in the last bits. */
static void fill(float *x, float *w) {
  uint32_t s = 12345u;
  for (uint32_t i = 0; i < N; ++i) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / (float)(1u << 24) * (i % 7 == 0 ? 1000.0f : 1.0f) - 0.5f;
    w[i] = 0.5f + (float)(i % 13) / 16.0f;
  }
}

/* x normed in place twice by `blocks` blocks: unfused launches, or one super kernel of both. */
static void norm_twice(sk_device *dev, sk_kernel *k, uint32_t blocks, int fused, float *x, float *w, float *out) {
  uint32_t n = N;
  void *args[] = {&x, &x, &w, &n};
  fill(x, w);
  if (fused) {
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    SK_CHECK(sk_scope_begin(dev, "port", NULL, &scope));
    SK_CHECK(sk_add_kernel(scope, k, blocks, args, NULL));
    SK_CHECK(sk_add_kernel(scope, k, blocks, args, NULL));
    SK_CHECK(sk_finalize(scope, &sk));
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    sk_superkernel_destroy(sk);
  } else {
    SK_CHECK(sk_launch_kernel(k, blocks, args, NULL));
    SK_CHECK(sk_launch_kernel(k, blocks, args, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
  }
  memcpy(out, x, N * sizeof(float));
}

static void test_in_place_port_matches_serial(void **state) {
  (void)state;
  sk_device *dev = open_device("host:cores=4");
  float *x = (float *)mem_alloc(dev, N * sizeof(float)), *w = (float *)mem_alloc(dev, N * sizeof(float));
  float *serial = (float *)malloc(N * sizeof(float)), *got = (float *)malloc(N * sizeof(float));
  assert_non_null(serial);
  assert_non_null(got);
  for (size_t v = 0; v < sizeof variants / sizeof *variants; ++v) {
    sk_module *mod = load_kernels(dev, variants[v], "port_rmsnorm");
    sk_kernel *k = get_kernel(mod, "port_rmsnorm");
    norm_twice(dev, k, 1, 0, x, w, serial); /* one block: the original serial loop */
    for (uint32_t blocks = 1; blocks <= MAX_BLOCKS; ++blocks)
      for (int fused = 0; fused <= 1; ++fused) {
        norm_twice(dev, k, blocks, fused, x, w, got);
        if (memcmp(serial, got, N * sizeof(float)) != 0)
          fail_msg("%s: %u blocks %s differ from the serial run", variants[v], blocks, fused ? "fused" : "unfused");
      }
    sk_module_unload(mod);
  }
  free(serial);
  free(got);
  sk_mem_free(dev, x);
  sk_mem_free(dev, w);
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_in_place_port_matches_serial),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
