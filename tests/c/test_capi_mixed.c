/* Public C API: core types and mixed ratios, hard cross-core sync and scope splitting, and the
 * vendor guide's three hang stories, all ending well (docs/semantics.md: "Whole-core sync",
 * "Core types and layouts", "Hard cross-core sync and scope splitting"). Fused results are
 * compared with unfused launches of the same kernels. */
#include "test_util.h"

#define N 96u /* divisible by every group count used and by 2 sub-blocks */

struct fixture {
  sk_device *dev; /* 6 cores: two 1:2 groups */
  sk_module *mixed, *sync;
  sk_kernel *tile, *tile_wrong, *where, *cube_tag, *vector_tag, *hard_sum, *vec_group_flag, *bad_flag, *sync_sum;
  uint32_t *in, *part, *sums, *out, *ref, *scratch;
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  f->dev = open_device("host:cores=6,timeout_ms=300");
  f->mixed = load_kernels(f->dev, TEST_VARIANT, "capi_mixed");
  f->sync = load_kernels(f->dev, TEST_VARIANT, "capi_sync");
  f->tile = get_kernel(f->mixed, "mix_tile_scale");
  f->tile_wrong = get_kernel(f->mixed, "mix_tile_scale_wrong");
  f->where = get_kernel(f->mixed, "mix12_where");
  f->cube_tag = get_kernel(f->mixed, "cube_tag");
  f->vector_tag = get_kernel(f->mixed, "vector_tag");
  f->hard_sum = get_kernel(f->mixed, "hard_sync_sum");
  f->vec_group_flag = get_kernel(f->mixed, "vector_uses_group_flag");
  f->bad_flag = get_kernel(f->mixed, "mix_bad_flag");
  f->sync_sum = get_kernel(f->sync, "capi_sync_sum");
  f->in = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->part = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->sums = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->out = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->ref = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->scratch = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  for (uint32_t i = 0; i < N; ++i) f->in[i] = i * 7 + 3;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t *bufs[] = {f->in, f->part, f->sums, f->out, f->ref, f->scratch};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) sk_mem_free(f->dev, bufs[i]);
  sk_module_unload(f->mixed);
  sk_module_unload(f->sync);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

static sk_superkernel *finalize(sk_scope *scope) {
  sk_superkernel *sk = NULL;
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

static void run(sk_superkernel *sk) {
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
}

static void add_tile(struct fixture *f, sk_scope *scope, sk_kernel *k, uint32_t groups, uint32_t *out) {
  uint32_t n = N;
  void *args[] = {&f->in, &f->part, &f->sums, &out, &n};
  SK_CHECK(sk_add_kernel(scope, k, groups, args, NULL));
}

static void add_where(struct fixture *f, sk_scope *scope, uint32_t groups) {
  void *args[] = {&f->scratch};
  SK_CHECK(sk_add_kernel(scope, f->where, groups, args, NULL));
}

/* out[i] = in[i] * (sum of in over i's tile): what mix_tile_scale computes, written plainly. */
static void expect_tile_scaled(const struct fixture *f, const uint32_t *out, uint32_t groups) {
  uint32_t tile = N / groups;
  for (uint32_t g = 0; g < groups; ++g) {
    uint32_t s = 0;
    for (uint32_t i = g * tile; i < (g + 1) * tile; ++i) s += f->in[i];
    for (uint32_t i = g * tile; i < (g + 1) * tile; ++i) assert_int_equal(out[i], f->in[i] * s);
  }
}

/* A 1:2 kernel runs on groups of one cube and two vector cores, each seeing its place. */
static void test_mix_1_2_groups_see_their_cores(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "where", NULL, &scope));
  memset(f->scratch, 0, N * sizeof(uint32_t));
  add_where(f, scope, 2);
  sk_superkernel *sk = finalize(scope);
  run(sk);
  for (uint32_t g = 0; g < 2; ++g) {
    assert_int_equal(f->scratch[3 * g], 0x1000u * (g + 1) | (1u << 8) | 2u);     /* cube, sub 0 of 2 */
    assert_int_equal(f->scratch[3 * g + 1], 0x1000u * (g + 1) | 2u);             /* vector 0 of 2 */
    assert_int_equal(f->scratch[3 * g + 2], 0x1000u * (g + 1) | (1u << 4) | 2u); /* vector 1 of 2 */
  }
  SK_EXPECT_EXPLAIN(sk, "\"ratio\":\"1:2\"");
  SK_EXPECT_EXPLAIN(sk, "\"groups\":2");
  sk_superkernel_destroy(sk);
}

/* Story 3, written the guide's way: a 1:1 kernel with per-vector-core hard sync completes in a
 * 1:2 super kernel (a 1:2 kernel beside it sets the ratio) and matches its unfused 1:1 run. */
static void test_mix_1_1_in_1_2_written_right_completes(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t n = N, groups = 2;
  void *args[] = {&f->in, &f->part, &f->sums, &f->ref, &n};
  SK_CHECK(sk_launch_kernel(f->tile, groups, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  expect_tile_scaled(f, f->ref, groups);

  sk_scope *scope = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "mixed", NULL, &scope));
  add_where(f, scope, groups);
  add_tile(f, scope, f->tile, groups, f->out);
  sk_superkernel *sk = finalize(scope);
  for (int launch = 0; launch < 20; ++launch) {
    memset(f->out, 0, N * sizeof(uint32_t));
    run(sk);
    assert_memory_equal(f->out, f->ref, N * sizeof(uint32_t));
  }
  SK_EXPECT_EXPLAIN(sk, "\"ratio\":\"1:2\"");
  sk_superkernel_destroy(sk);
}

/* Story 3, written the wrong way: fine alone (1:1), but in a 1:2 super kernel the cube core
 * waits for vector core 1's flag forever: SK_ERR_HANG with a report, and the device, the stream
 * and the right-way super kernel stay usable. */
static void test_mix_1_1_written_wrong_hangs_with_report(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t n = N, groups = 2;
  void *args[] = {&f->in, &f->part, &f->sums, &f->out, &n};
  SK_CHECK(sk_launch_kernel(f->tile_wrong, groups, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  expect_tile_scaled(f, f->out, groups);

  sk_scope *scope = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "wrong", NULL, &scope));
  add_where(f, scope, groups);
  add_tile(f, scope, f->tile_wrong, groups, f->out);
  sk_superkernel *wrong = finalize(scope);
  SK_CHECK(sk_launch(wrong, NULL));
  SK_EXPECT_ERR(sk_stream_synchronize(NULL), SK_ERR_HANG, "super kernel 'wrong'");
  SK_EXPECT_MSG("step 1 'mix_tile_scale_wrong'");
  SK_EXPECT_MSG("(cube core of group 0)");
  SK_EXPECT_MSG("waits on flag 0 of group 0");
  SK_EXPECT_MSG("for vector core 1 of the group: no core set it");

  SK_CHECK(sk_scope_begin(f->dev, "right", NULL, &scope));
  add_where(f, scope, groups);
  add_tile(f, scope, f->tile, groups, f->out);
  sk_superkernel *right = finalize(scope);
  memset(f->out, 0, N * sizeof(uint32_t));
  run(right);
  expect_tile_scaled(f, f->out, groups);
  sk_superkernel_destroy(right);
  sk_superkernel_destroy(wrong);
}

/* The ratio rules: cube-only + a smaller vector-only kernel give 1:1; a vector demand above the
 * cube demand gives 1:2 with groups = max(cube, ceil(vector / 2)); pure scopes stay pure. Every
 * block of every kernel runs once, on a core of its type. */
static void test_ratio_rules_and_core_types(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct {
    uint32_t cube_blocks, vector_blocks;
    const char *ratio, *groups;
  } cases[] = {
      {3, 2, "\"ratio\":\"1:1\"", "\"groups\":3"},
      {2, 4, "\"ratio\":\"1:2\"", "\"groups\":2"},
      {0, 6, "\"ratio\":\"vector-only\"", "\"vector_cores\":6"},
      {5, 0, "\"ratio\":\"cube-only\"", "\"cube_cores\":5"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    sk_scope *scope = NULL;
    uint32_t tag_c = 100, tag_v = 200;
    uint32_t *cube_out = f->out, *vec_out = f->ref;
    void *cargs[] = {&cube_out, &tag_c}, *vargs[] = {&vec_out, &tag_v};
    memset(f->out, 0, N * sizeof(uint32_t));
    memset(f->ref, 0, N * sizeof(uint32_t));
    SK_CHECK(sk_scope_begin(f->dev, "ratio", NULL, &scope));
    if (cases[c].cube_blocks) SK_CHECK(sk_add_kernel(scope, f->cube_tag, cases[c].cube_blocks, cargs, NULL));
    if (cases[c].vector_blocks) SK_CHECK(sk_add_kernel(scope, f->vector_tag, cases[c].vector_blocks, vargs, NULL));
    sk_superkernel *sk = finalize(scope);
    run(sk);
    for (uint32_t b = 0; b < cases[c].cube_blocks; ++b) assert_int_equal(f->out[b], 100 + b + (1u << 16));
    for (uint32_t b = 0; b < cases[c].vector_blocks; ++b) assert_int_equal(f->ref[b], 200 + b);
    SK_EXPECT_EXPLAIN(sk, cases[c].ratio);
    SK_EXPECT_EXPLAIN(sk, cases[c].groups);
    sk_superkernel_destroy(sk);
  }
}

/* sk_kernel_options.core_type overrides the metadata; a bad value names the kernel. */
static void test_core_type_option(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  uint32_t tag = 5;
  void *args[] = {&f->out, &tag};
  sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
  opts.core_type = "cube";
  SK_CHECK(sk_scope_begin(f->dev, "as-cube", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->vector_tag, 2, args, &opts));
  opts.core_type = "tensor";
  SK_EXPECT_ERR(sk_add_kernel(scope, f->vector_tag, 2, args, &opts), SK_ERR_INVALID_ARGUMENT, "'tensor'");
  SK_EXPECT_MSG("vector_tag");
  sk_superkernel *sk = finalize(scope);
  run(sk);
  assert_int_equal(f->out[0], 5 + (1u << 16));
  assert_int_equal(f->out[1], 6 + (1u << 16));
  SK_EXPECT_EXPLAIN(sk, "\"ratio\":\"cube-only\"");
  sk_superkernel_destroy(sk);
}

/* debug-aic-num / debug-aiv-num force counts within the kernels' limits; a ratio the kernels
 * cannot use is an error naming the options. */
static void test_debug_core_counts(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t tag = 0;
  void *args[] = {&f->out, &tag};
  SK_CHECK(sk_scope_begin(f->dev, "forced", "debug-aiv-num=2", &scope));
  SK_CHECK(sk_add_kernel(scope, f->vector_tag, 6, args, NULL));
  sk = finalize(scope);
  memset(f->out, 0, N * sizeof(uint32_t));
  run(sk);
  for (uint32_t b = 0; b < 6; ++b) assert_int_equal(f->out[b], b); /* multiplexed on 2 cores */
  SK_EXPECT_EXPLAIN(sk, "\"vector_cores\":2");
  SK_EXPECT_EXPLAIN(sk, "forced by debug-aic-num/debug-aiv-num");
  sk_superkernel_destroy(sk);

  SK_CHECK(sk_scope_begin(f->dev, "bad-ratio", "debug-aic-num=1:debug-aiv-num=3", &scope));
  add_where(f, scope, 2);
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE, "debug-aic-num=1, debug-aiv-num=3");
}

/* Story 2: a kernel with whole-core hard sync on fewer cores than the kernels around it. With
 * strict-scope-check=bypass (the default) the scope is split before it and after it into three
 * dispatches, run in order by one sk_launch, matching the unfused run; explain gives the
 * reasons. With abort, finalize fails naming the kernel. */
static void test_hard_sync_on_fewer_cores_splits_or_fails(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t n = N, tag = 9;
  uint32_t *partials = f->part, *sum_out = f->sums;
  void *tag_args[] = {&f->scratch, &tag};
  void *sum_args[] = {&f->in, &partials, &sum_out, &n};

  SK_CHECK(sk_launch_kernel(f->hard_sum, 2, sum_args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  memcpy(f->ref, f->sums, N * sizeof(uint32_t));
  uint32_t total = 0;
  for (uint32_t i = 0; i < N; ++i) total += f->in[i];
  for (uint32_t i = 0; i < N; ++i) assert_int_equal(f->ref[i], f->in[i] + total);

  const char *modes[] = {NULL, "strict-scope-check=abort"};
  for (int m = 0; m < 2; ++m) {
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    SK_CHECK(sk_scope_begin(f->dev, "split", modes[m], &scope));
    SK_CHECK(sk_add_kernel(scope, f->vector_tag, 4, tag_args, NULL));
    SK_CHECK(sk_add_kernel(scope, f->hard_sum, 2, sum_args, NULL));
    SK_CHECK(sk_add_kernel(scope, f->vector_tag, 4, tag_args, NULL));
    if (m == 1) {
      SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE,
                    "kernel 1 'hard_sync_sum' uses hard cross-core sync");
      SK_EXPECT_MSG("strict-scope-check=abort");
      continue;
    }
    sk = finalize(scope);
    for (int launch = 0; launch < 10; ++launch) {
      memset(f->sums, 0, N * sizeof(uint32_t));
      run(sk);
      assert_memory_equal(f->sums, f->ref, N * sizeof(uint32_t));
    }
    SK_EXPECT_EXPLAIN(sk, "\"dispatches\":3");
    SK_EXPECT_EXPLAIN(sk,
                      "kernel 1 'hard_sync_sum' uses hard cross-core sync on 2 vector cores, but with the "
                      "kernels before it the super kernel has 4");
    SK_EXPECT_EXPLAIN(sk,
                      "kernel 2 'vector_tag' needs 4 vector cores, but kernel 1 'hard_sync_sum' before it uses "
                      "hard cross-core sync on 2");
    sk_superkernel_destroy(sk);
  }

  /* On the super kernel's own core count it fuses in one dispatch. */
  sk_scope *scope = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "no-split", "strict-scope-check=abort", &scope));
  SK_CHECK(sk_add_kernel(scope, f->vector_tag, 2, tag_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->hard_sum, 2, sum_args, NULL));
  sk_superkernel *sk = finalize(scope);
  memset(f->sums, 0, N * sizeof(uint32_t));
  run(sk);
  assert_memory_equal(f->sums, f->ref, N * sizeof(uint32_t));
  SK_EXPECT_EXPLAIN(sk, "\"dispatches\":1");
  sk_superkernel_destroy(sk);
}

/* Story 1: a sub-kernel on fewer cores than the super kernel calls whole-core sync
 * (sk_sync_all): it completes, since the barrier counts the sub-kernel's own cores. */
static void test_sync_all_on_fewer_cores_completes(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t n = N, tag = 1;
  void *tag_args[] = {&f->scratch, &tag};
  void *sum_args[] = {&f->in, &f->part, &f->out, &n};
  SK_CHECK(sk_launch_kernel(f->sync_sum, 2, (void *[]){&f->in, &f->part, &f->ref, &n}, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  sk_scope *scope = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "soft", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->vector_tag, 6, tag_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->sync_sum, 2, sum_args, NULL));
  sk_superkernel *sk = finalize(scope);
  memset(f->out, 0, N * sizeof(uint32_t));
  run(sk);
  assert_memory_equal(f->out, f->ref, N * sizeof(uint32_t));
  SK_EXPECT_EXPLAIN(sk, "\"dispatches\":1");
  sk_superkernel_destroy(sk);
}

/* Bad uses of core types and flags fail clearly. */
static void test_bad_core_type_uses(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  void *args[] = {&f->out};
  /* Group flags pair a cube core with its vector cores: a vector-only kernel has none. */
  SK_CHECK(sk_scope_begin(f->dev, "vec-flags", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->vec_group_flag, 1, args, NULL));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE,
                "kernel 0 'vector_uses_group_flag' is a vector kernel");
  /* A flag id out of range aborts the launch with a report naming the call; the device and the
   * super kernel stay usable (the next launch fails the same way, not worse). */
  SK_CHECK(sk_scope_begin(f->dev, "bad-flag", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->bad_flag, 1, args, NULL));
  sk = finalize(scope);
  for (int launch = 0; launch < 2; ++launch) {
    SK_CHECK(sk_launch(sk, NULL));
    SK_EXPECT_ERR(sk_stream_synchronize(NULL), SK_ERR_INVALID_ARGUMENT,
                  "a kernel made an invalid device-API call; launch aborted");
    SK_EXPECT_MSG("step 0 'mix_bad_flag', sk_cross_core_set_flag(99): flag ids are 0..15");
  }
  sk_superkernel_destroy(sk);
  /* A mixed kernel on a device with fewer cores than one group. */
  sk_device *small = open_device("host:cores=2");
  sk_module *mod = load_kernels(small, TEST_VARIANT, "capi_mixed");
  sk_kernel *where = get_kernel(mod, "mix12_where");
  SK_CHECK(sk_scope_begin(small, "too-small", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, where, 1, args, NULL));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE, "needs groups of 3 cores");
  SK_EXPECT_MSG("host:cores=3");
  sk_module_unload(mod);
  sk_device_close(small);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mix_1_2_groups_see_their_cores),
      cmocka_unit_test(test_mix_1_1_in_1_2_written_right_completes),
      cmocka_unit_test(test_mix_1_1_written_wrong_hangs_with_report),
      cmocka_unit_test(test_ratio_rules_and_core_types),
      cmocka_unit_test(test_core_type_option),
      cmocka_unit_test(test_debug_core_counts),
      cmocka_unit_test(test_hard_sync_on_fewer_cores_splits_or_fails),
      cmocka_unit_test(test_sync_all_on_fewer_cores_completes),
      cmocka_unit_test(test_bad_core_type_uses),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
