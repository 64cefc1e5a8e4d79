/* Public C API: a kernel whose blocks wait for each other by means of their own
 * (SK_KERNEL_DESC_COOPERATIVE), as a kernel written for a cooperative launch does. Fused after a
 * kernel whose blocks are multiplexed, each of its blocks runs on a core of its own, all at once,
 * and the chain computes bit for bit what its launches compute one by one; on more blocks than
 * cores it is refused at sk_finalize and sk_launch_kernel, naming it and its barrier; a flag
 * that is no SK_KERNEL_DESC_* bit is refused naming the field. */
#include "test_util.h"

#define BLOCKS 2u /* the device's cores: every block of the barrier kernel at once */
#define N 64u

struct fixture {
  sk_device *dev;
  sk_module *chain, *sync;
  sk_kernel *fill, *rotate;
};

static sk_kernel *cooperative(sk_module *mod, const char *name) {
  sk_kernel_desc desc = {sizeof desc, NULL, 0, 0, {0, 0, 0}, SK_KERNEL_DESC_COOPERATIVE, {0, 0, 0}};
  sk_kernel *k = NULL;
  SK_CHECK(sk_module_get_kernel_desc(mod, name, &desc, &k));
  assert_non_null(k);
  return k;
}

static void open_fixture(struct fixture *f) {
  f->dev = open_device("host:cores=2");
  f->chain = load_kernels(f->dev, TEST_VARIANT, "capi_chain");
  f->sync = load_kernels(f->dev, TEST_VARIANT, "capi_sync");
  f->fill = get_kernel(f->chain, "capi_fill");
  f->rotate = cooperative(f->sync, "capi_own_barrier_rotate");
}

static void close_fixture(struct fixture *f) {
  sk_module_unload(f->chain);
  sk_module_unload(f->sync);
  sk_device_close(f->dev);
}

/* in (filled on 8 multiplexed blocks), then two rounds of the barrier kernel, each on a counter
 * of its own: fused in one scope, or launched one by one. */
static void run_chain(struct fixture *f, int fused, uint32_t *in, uint32_t *mid, uint32_t *out1, uint32_t *out2,
                      uint32_t *arrived) {
  uint32_t n = N, seed = 12345u, round = 1u;
  uint32_t *counter2 = arrived + 1;
  void *fill[] = {&in, &n, &seed};
  void *first[] = {&in, &mid, &out1, &arrived, &round};
  void *second[] = {&out1, &mid, &out2, &counter2, &round};
  if (fused) {
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    SK_CHECK(sk_scope_begin(f->dev, "cooperative", NULL, &scope));
    SK_CHECK(sk_add_kernel(scope, f->fill, 8, fill, NULL));
    SK_CHECK(sk_add_kernel(scope, f->rotate, BLOCKS, first, NULL));
    SK_CHECK(sk_add_kernel(scope, f->rotate, BLOCKS, second, NULL));
    SK_CHECK(sk_finalize(scope, &sk));
    SK_EXPECT_EXPLAIN(sk, "\"sync_all_scope\":\"own cores\"");
    SK_EXPECT_EXPLAIN(sk, "\"constructs\":[\"SK_KERNEL_DESC_COOPERATIVE\"]");
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    sk_superkernel_destroy(sk);
    return;
  }
  SK_CHECK(sk_launch_kernel(f->fill, 8, fill, NULL));
  SK_CHECK(sk_launch_kernel(f->rotate, BLOCKS, first, NULL));
  SK_CHECK(sk_launch_kernel(f->rotate, BLOCKS, second, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
}

static void test_fused_equals_its_launches(void **state) {
  struct fixture f;
  uint32_t *buf[2][6];
  int way, i;
  (void)state;
  open_fixture(&f);
  for (way = 0; way < 2; ++way) {
    for (i = 0; i < 6; ++i) {
      buf[way][i] = (uint32_t *)mem_alloc(f.dev, N * sizeof(uint32_t));
      memset(buf[way][i], 0, N * sizeof(uint32_t));
    }
    run_chain(&f, way, buf[way][0], buf[way][1], buf[way][2], buf[way][3], buf[way][4]);
  }
  for (i = 0; i < 4; ++i) assert_memory_equal(buf[0][i], buf[1][i], N * sizeof(uint32_t));
  /* The CPU's: the second round reads what the first wrote in the other block. */
  for (i = 0; i < (int)BLOCKS; ++i) {
    const uint32_t j = (uint32_t)(i + 1) % BLOCKS;
    const uint32_t mid_j = buf[1][0][j] * 2654435761u + 1u;
    assert_int_equal(buf[1][2][i], mid_j ^ (uint32_t)i);
  }
  assert_int_equal(buf[1][4][0], BLOCKS);
  assert_int_equal(buf[1][4][1], BLOCKS);
  for (way = 0; way < 2; ++way)
    for (i = 0; i < 6; ++i) sk_mem_free(f.dev, buf[way][i]);
  close_fixture(&f);
}

static void test_more_blocks_than_cores_are_refused(void **state) {
  struct fixture f;
  uint32_t *p;
  uint32_t round = 1u;
  void *args[5];
  sk_scope *scope = NULL;
  sk_superkernel *sk = SENTINEL(sk_superkernel);
  sk_kernel *plain = NULL;
  sk_kernel_desc bad = {sizeof bad, NULL, 0, 0, {0, 0, 0}, 0x6u, {0, 0, 0}};
  (void)state;
  open_fixture(&f);
  p = (uint32_t *)mem_alloc(f.dev, N * sizeof(uint32_t));
  args[0] = &p, args[1] = &p, args[2] = &p, args[3] = &p, args[4] = &round;
  SK_CHECK(sk_scope_begin(f.dev, "too_wide", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f.rotate, 4, args, NULL));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE,
                "'capi_own_barrier_rotate' synchronises its cores (a grid barrier of its own, "
                "SK_KERNEL_DESC_COOPERATIVE) on block_dim 4");
  assert_ptr_equal(sk, SENTINEL(sk_superkernel));
  SK_EXPECT_ERR(sk_launch_kernel(f.rotate, 4, args, NULL), SK_ERR_INCOMPATIBLE,
                "a grid barrier of its own, SK_KERNEL_DESC_COOPERATIVE");
  /* Taken without the flag it is another handle, which says nothing of a barrier. */
  plain = get_kernel(f.sync, "capi_own_barrier_rotate");
  assert_ptr_not_equal(plain, f.rotate);
  assert_ptr_equal(cooperative(f.sync, "capi_own_barrier_rotate"), f.rotate);
  SK_EXPECT_ERR(sk_module_get_kernel_desc(f.sync, "capi_own_barrier_rotate", &bad, &plain), SK_ERR_INVALID_ARGUMENT,
                "desc->flags 0x6 has bits that are no SK_KERNEL_DESC_* flag (0x6)");
  sk_mem_free(f.dev, p);
  close_fixture(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fused_equals_its_launches),
      cmocka_unit_test(test_more_blocks_than_cores_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
