/* Public C API: scopes, options, sk_add_kernel, sk_finalize, argument rebinding, explain, and
 * the lifetimes of super kernels against their modules and device. */
#include "test_util.h"

#define N 512u

struct fixture {
  sk_device *dev;
  sk_module *chain, *sync, *overlap, *misc;
  sk_kernel *fill, *axpb, *gather, *sync_sum, *produce, *consume, *noargs;
  uint32_t *a, *b, *c;
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  /* 3 cores: block dims above 3 are multiplexed. */
  if (sk_device_open("host:cores=3", &f->dev) != SK_OK) return -1;
  f->chain = load_kernels(f->dev, TEST_VARIANT, "capi_chain");
  f->sync = load_kernels(f->dev, TEST_VARIANT, "capi_sync");
  f->overlap = load_kernels(f->dev, TEST_VARIANT, "capi_overlap");
  f->misc = load_kernels(f->dev, TEST_VARIANT, "capi_misc");
  f->fill = get_kernel(f->chain, "capi_fill");
  f->axpb = get_kernel(f->chain, "capi_axpb");
  f->gather = get_kernel(f->chain, "capi_gather");
  f->sync_sum = get_kernel(f->sync, "capi_sync_sum");
  f->produce = get_kernel(f->overlap, "capi_ov_produce");
  f->consume = get_kernel(f->overlap, "capi_ov_consume");
  f->noargs = get_kernel(f->misc, "capi_noargs");
  f->a = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->b = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->c = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_mem_free(f->dev, f->a);
  sk_mem_free(f->dev, f->b);
  sk_mem_free(f->dev, f->c);
  sk_module_unload(f->chain);
  sk_module_unload(f->sync);
  sk_module_unload(f->overlap);
  sk_module_unload(f->misc);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

static uint32_t fill_value(uint32_t i, uint32_t seed) { return i * 2654435761u + seed; }

/* ---- options ------------------------------------------------------------------------------- */

static void expect_bad_options(sk_device *dev, const char *options, const char *needle) {
  sk_scope *scope = SENTINEL(sk_scope);
  sk_status st = sk_scope_begin(dev, "opt_scope", options, &scope);
  if (st != SK_ERR_INVALID_ARGUMENT)
    fail_msg("sk_scope_begin(\"%s\") returned %s (%s), expected SK_ERR_INVALID_ARGUMENT", options,
             sk_status_name(st), sk_last_error());
  if (!strstr(sk_last_error(), needle))
    fail_msg("sk_scope_begin(\"%s\"): message \"%s\" does not name \"%s\"", options, sk_last_error(), needle);
  assert_ptr_equal(scope, SENTINEL(sk_scope));
}

static void test_scope_options(void **state) {
  struct fixture *f = (struct fixture *)*state;
  static const char *const good[] = {
      NULL,
      "",
      "early-start=0:debug-sync-all=1:strict-scope-check=abort:dcci-disable-on-kernel=foo,ba.*",
      "early-start=1",
      "strict-scope-check=bypass:feed-sync-all=0:stream-fusion=1",
      "debug-aic-num=4:debug-aiv-num=8:profiling=0:debug-dcci-all=1",
      "dcci-before-kernel-start=capi_fill:dcci-after-kernel-end=capi_.*",
      "max-registers=0",
      "max-registers=16",
      "max-registers=255",
      "whole-program=0:max-registers=64"};
  size_t i;
  for (i = 0; i < sizeof good / sizeof good[0]; ++i) {
    sk_scope *scope = NULL;
    sk_status st = sk_scope_begin(f->dev, "opt_scope", good[i], &scope);
    if (st != SK_OK)
      fail_msg("sk_scope_begin(\"%s\") returned %s: %s", good[i] ? good[i] : "(null)", sk_status_name(st),
               sk_last_error());
    assert_non_null(scope);
    sk_scope_abort(scope);
  }
  expect_bad_options(f->dev, "early_start=1", "early_start"); /* unknown key */
  expect_bad_options(f->dev, "early-start=1:bogus-knob=3", "bogus-knob");
  expect_bad_options(f->dev, "early-start=1:early-start=0", "early-start"); /* repeated */
  expect_bad_options(f->dev, "debug-sync-all=1:early-start=0:debug-sync-all=1", "debug-sync-all");
  expect_bad_options(f->dev, "early-start=2", "early-start"); /* bad values */
  expect_bad_options(f->dev, "early-start=yes", "yes");
  expect_bad_options(f->dev, "strict-scope-check=maybe", "maybe");
  expect_bad_options(f->dev, "debug-aic-num=-3", "debug-aic-num");
  expect_bad_options(f->dev, "max-registers=15", "max-registers"); /* below ptxas's least */
  expect_bad_options(f->dev, "max-registers=256", "'256' is not 0 or in [16, 255]");
  expect_bad_options(f->dev, "max-registers=many", "max-registers");
  expect_bad_options(f->dev, "whole-program=on", "whole-program");
  expect_bad_options(f->dev, "dcci-disable-on-kernel=(", "dcci-disable-on-kernel"); /* bad regex */
  expect_bad_options(f->dev, "dcci-disable-on-kernel=a,,b", "dcci-disable-on-kernel");
  expect_bad_options(f->dev, "early-start", "early-start"); /* not key=value */
  expect_bad_options(f->dev, "=1", "=1");
}

/* ---- sk_add_kernel ------------------------------------------------------------------------ */

static void test_add_kernel_errors(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  uint32_t n = N, seed = 3;
  void *args[3];
  void *holes[3];
  sk_kernel_options bad_opts = SK_KERNEL_OPTIONS_INIT;
  args[0] = &f->a;
  args[1] = &n;
  args[2] = &seed;
  holes[0] = &f->a;
  holes[1] = NULL;
  holes[2] = &seed;
  bad_opts.struct_size = 0;
  SK_CHECK(sk_scope_begin(f->dev, "add_errors", NULL, &scope));
  SK_EXPECT_ERR(sk_add_kernel(scope, NULL, 1, args, NULL), SK_ERR_INVALID_ARGUMENT, "kernel");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 0, args, NULL), SK_ERR_INVALID_ARGUMENT, "capi_fill");
  SK_EXPECT_MSG("block_dim");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, (1u << 24) + 1, args, NULL), SK_ERR_INVALID_ARGUMENT, "capi_fill");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 2, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "capi_fill");
  SK_EXPECT_MSG("args");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 2, holes, NULL), SK_ERR_INVALID_ARGUMENT, "args[1]");
  SK_EXPECT_MSG("capi_fill");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 2, args, &bad_opts), SK_ERR_INVALID_ARGUMENT, "capi_fill");
  /* A kernel without parameters takes NULL args. */
  SK_CHECK(sk_add_kernel(scope, f->noargs, 2, NULL, NULL));
  SK_CHECK(sk_add_kernel(scope, f->fill, 2, args, NULL));
  /* A kernel loaded on another device. */
  {
    sk_device *other = open_device("host:cores=1");
    sk_module *mod = load_kernels(other, TEST_VARIANT, "capi_chain");
    sk_kernel *foreign = get_kernel(mod, "capi_fill");
    SK_EXPECT_ERR(sk_add_kernel(scope, foreign, 1, args, NULL), SK_ERR_INCOMPATIBLE, "capi_fill");
    sk_module_unload(mod);
    sk_device_close(other);
  }
  /* Dropping a scope with kernels in it leaks nothing. */
  sk_scope_abort(scope);
}

/* Values are copied by sk_add_kernel: the caller's variables may change right after. */
static void test_add_kernel_copies_values(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N, seed = 77, i;
  uint32_t *target = f->a;
  void *args[3];
  sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
  args[0] = &target;
  args[1] = &n;
  args[2] = &seed;
  opts.name = "first_fill";
  SK_CHECK(sk_scope_begin(f->dev, "copies", "", &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 5, args, &opts));
  seed = 1;
  target = f->b;
  n = 1;
  SK_CHECK(sk_finalize(scope, &sk));
  memset(f->a, 0, N * sizeof(uint32_t));
  memset(f->b, 0, N * sizeof(uint32_t));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < N; ++i) assert_int_equal(f->a[i], fill_value(i, 77));
  for (i = 0; i < N; ++i) assert_int_equal(f->b[i], 0);
  sk_superkernel_destroy(sk);
}

/* ---- sk_finalize ------------------------------------------------------------------------- */

static void test_finalize_errors(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *sk = SENTINEL(sk_superkernel);
  uint32_t n = N;
  void *args[4];
  sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
  args[0] = &f->a;
  args[1] = &f->b;
  args[2] = &f->c;
  args[3] = &n;

  /* Empty scope: SK_ERR_STATE naming the scope; the scope is consumed (no leak, no abort). */
  SK_CHECK(sk_scope_begin(f->dev, "empty_scope", NULL, &scope));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_STATE, "empty_scope");
  assert_ptr_equal(sk, SENTINEL(sk_superkernel));

  /* NULL out: the scope is consumed all the same. */
  SK_CHECK(sk_scope_begin(f->dev, "no_out", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->noargs, 1, NULL, NULL));
  SK_EXPECT_ERR(sk_finalize(scope, NULL), SK_ERR_INVALID_ARGUMENT, "out");

  /* sk_sync_all with more blocks than the device's 3 cores cannot be multiplexed. */
  SK_CHECK(sk_scope_begin(f->dev, "too_wide", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->noargs, 64, NULL, NULL)); /* no sync: fine multiplexed */
  SK_CHECK(sk_add_kernel(scope, f->sync_sum, 4, args, NULL));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE, "capi_sync_sum");
  SK_EXPECT_MSG("too_wide");
  assert_ptr_equal(sk, SENTINEL(sk_superkernel));
  /* Named by its sk_kernel_options name when it has one. */
  opts.name = "wide_sync_step";
  SK_CHECK(sk_scope_begin(f->dev, "too_wide2", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->sync_sum, 3, args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->sync_sum, 7, args, &opts));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE, "wide_sync_step");
  assert_ptr_equal(sk, SENTINEL(sk_superkernel));
  /* block_dim == cores is fine. */
  SK_CHECK(sk_scope_begin(f->dev, "just_fits", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->sync_sum, 3, args, NULL));
  sk = NULL;
  SK_CHECK(sk_finalize(scope, &sk));
  assert_non_null(sk);
  sk_superkernel_destroy(sk);
}

/* ---- sk_superkernel_set_arg -------------------------------------------------------------- */

static void test_set_arg(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N, seed = 5, i, round;
  int32_t mul = 3, add = 1;
  uint32_t *other = f->b;
  void *fill_args[3], *axpb_args[4];
  fill_args[0] = &f->a;
  fill_args[1] = &n;
  fill_args[2] = &seed;
  axpb_args[0] = &f->a;
  axpb_args[1] = &n;
  axpb_args[2] = &mul;
  axpb_args[3] = &add;
  SK_CHECK(sk_scope_begin(f->dev, "rebind", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 4, fill_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->axpb, 2, axpb_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));

  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 2, 0, &seed), SK_ERR_INVALID_ARGUMENT, "step 2");
  SK_EXPECT_MSG("rebind");
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 0, 3, &seed), SK_ERR_INVALID_ARGUMENT, "index 3");
  SK_EXPECT_MSG("capi_fill");
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 1, 4, &seed), SK_ERR_INVALID_ARGUMENT, "capi_axpb");
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 0, 0, NULL), SK_ERR_INVALID_ARGUMENT, "value");

  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < N; ++i) assert_int_equal(f->a[i], fill_value(i, 5) * 3u + 1u);

  /* Rebind the seed and the multiplier: the next launch sees both. */
  seed = 1000;
  mul = -2;
  SK_CHECK(sk_superkernel_set_arg(sk, 0, 2, &seed));
  SK_CHECK(sk_superkernel_set_arg(sk, 1, 2, &mul));
  seed = 0, mul = 0; /* copied */
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < N; ++i) assert_int_equal(f->a[i], fill_value(i, 1000) * (uint32_t)-2 + 1u);

  /* Rebind the buffer of both steps while launches are queued: they finish with the old value. */
  memset(f->b, 0, N * sizeof(uint32_t));
  for (round = 0; round < 20; ++round) SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_superkernel_set_arg(sk, 0, 0, &other));
  SK_CHECK(sk_superkernel_set_arg(sk, 1, 0, &other));
  memset(f->a, 0, N * sizeof(uint32_t)); /* the queued launches have ended: a is ours again */
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < N; ++i) assert_int_equal(f->a[i], 0);
  for (i = 0; i < N; ++i) assert_int_equal(f->b[i], fill_value(i, 1000) * (uint32_t)-2 + 1u);
  sk_superkernel_destroy(sk);
}

/* ---- sk_superkernel_explain --------------------------------------------------------------- */

static void test_explain(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N, seed = 9;
  void *fill_args[3], *sync_args[4], *prod_args[4], *cons_args[4];
  sk_kernel_options named = SK_KERNEL_OPTIONS_INIT;
  size_t needed = 0, needed2 = 0, small_needed = 0;
  char *json, tiny[4] = "abc";
  static const char *const expected[] = {
      "\"explain_scope\"",    "capi_fill",     "capi_sync_sum", "capi_ov_produce", "capi_ov_consume",
      "capi_noargs",          "my_named_step", "block_dim",     "sk_sync_all",     "sk_set_next_task_start",
      "sk_wait_pre_task_end", "sk_block_idx",  "sk_block_num",  "early-start"};
  size_t i;
  fill_args[0] = &f->a;
  fill_args[1] = &n;
  fill_args[2] = &seed;
  sync_args[0] = &f->a;
  sync_args[1] = &f->c;
  sync_args[2] = &f->b;
  sync_args[3] = &n;
  prod_args[0] = &f->a;
  prod_args[1] = &f->b;
  prod_args[2] = &n;
  prod_args[3] = &seed;
  cons_args[0] = &f->a;
  cons_args[1] = &f->c;
  cons_args[2] = &f->b;
  cons_args[3] = &n;
  named.name = "my_named_step";
  SK_CHECK(sk_scope_begin(f->dev, "explain_scope", "early-start=1", &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 17, fill_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->sync_sum, 2, sync_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->produce, 3, prod_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->consume, 1, cons_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->noargs, 1, NULL, &named));
  SK_CHECK(sk_finalize(scope, &sk));

  /* Size query. */
  SK_CHECK(sk_superkernel_explain(sk, NULL, 0, &needed));
  assert_true(needed > 2);
  /* Too small: INVALID_ARGUMENT, *needed set, the buffer untouched. */
  SK_EXPECT_ERR(sk_superkernel_explain(sk, tiny, sizeof tiny, &small_needed), SK_ERR_INVALID_ARGUMENT,
                "explain_scope");
  assert_int_equal(small_needed, needed);
  assert_string_equal(tiny, "abc");
  json = (char *)malloc(needed);
  assert_non_null(json);
  SK_EXPECT_ERR(sk_superkernel_explain(sk, json, needed - 1, NULL), SK_ERR_INVALID_ARGUMENT, "explain_scope");
  SK_EXPECT_ERR(sk_superkernel_explain(sk, NULL, 10, &needed2), SK_ERR_INVALID_ARGUMENT, "buf");
  /* A buffer with cap 0 is no size query: too small, *needed set, the buffer untouched. */
  small_needed = 0;
  SK_EXPECT_ERR(sk_superkernel_explain(sk, tiny, 0, &small_needed), SK_ERR_INVALID_ARGUMENT, "cap is 0");
  assert_int_equal(small_needed, needed);
  assert_string_equal(tiny, "abc");
  /* Nor is buf NULL, cap 0 without needed: nothing would learn the size. */
  SK_EXPECT_ERR(sk_superkernel_explain(sk, NULL, 0, NULL), SK_ERR_INVALID_ARGUMENT, "explain_scope");
  /* Exactly the size asked for. */
  SK_CHECK(sk_superkernel_explain(sk, json, needed, &needed2));
  assert_int_equal(needed2, needed);
  assert_int_equal(strlen(json) + 1, needed);
  assert_int_equal(json[0], '{');
  assert_int_equal(json[needed - 2], '}');
  for (i = 0; i < sizeof expected / sizeof expected[0]; ++i)
    if (!strstr(json, expected[i])) fail_msg("explain JSON lacks %s:\n%s", expected[i], json);
  /* A larger buffer and no needed pointer work too. */
  {
    char *big = (char *)malloc(needed + 100);
    assert_non_null(big);
    SK_CHECK(sk_superkernel_explain(sk, big, needed + 100, NULL));
    assert_string_equal(big, json);
    free(big);
  }
  free(json);
  sk_superkernel_destroy(sk);
}

/* ---- lifetimes ------------------------------------------------------------------------------- */

static sk_superkernel *build_fill_axpb(sk_device *dev, sk_module *chain, uint32_t *buf, uint32_t seed) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N;
  int32_t mul = 5, add = -7;
  void *fill_args[3], *axpb_args[4];
  fill_args[0] = &buf;
  fill_args[1] = &n;
  fill_args[2] = &seed;
  axpb_args[0] = &buf;
  axpb_args[1] = &n;
  axpb_args[2] = &mul;
  axpb_args[3] = &add;
  SK_CHECK(sk_scope_begin(dev, "lifetime", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, get_kernel(chain, "capi_fill"), 7, fill_args, NULL));
  SK_CHECK(sk_add_kernel(scope, get_kernel(chain, "capi_axpb"), 2, axpb_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

static void check_fill_axpb(const uint32_t *buf, uint32_t seed) {
  uint32_t i;
  for (i = 0; i < N; ++i) assert_int_equal(buf[i], fill_value(i, seed) * 5u + (uint32_t)-7);
}

static void test_unload_before_launch(void **state) {
  struct fixture *f = (struct fixture *)*state;
  size_t v;
  static const char *const variants[] = {"gcc-O0-pie", "clang-O2-nopic", "gcc-O3-pic"};
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    sk_module *mod = load_kernels(f->dev, variants[v], "capi_chain");
    sk_superkernel *sk = build_fill_axpb(f->dev, mod, f->a, 41);
    int round;
    sk_module_unload(mod); /* the super kernel keeps the code it needs */
    for (round = 0; round < 3; ++round) {
      memset(f->a, 0, N * sizeof(uint32_t));
      SK_CHECK(sk_launch(sk, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      check_fill_axpb(f->a, 41);
    }
    sk_superkernel_destroy(sk);
  }
}

static void test_device_close_with_superkernel_alive(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_chain");
  uint32_t *buf = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
  sk_superkernel *sk = build_fill_axpb(dev, mod, buf, 3);
  sk_stream *stream = NULL;
  (void)state;
  SK_CHECK(sk_stream_create(dev, &stream));
  SK_CHECK(sk_launch(sk, stream));
  SK_CHECK(sk_stream_synchronize(stream));
  check_fill_axpb(buf, 3);
  sk_stream_destroy(stream);
  sk_module_unload(mod);
  memset(buf, 0, N * sizeof(uint32_t));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  check_fill_axpb(buf, 3);
  sk_mem_free(dev, buf); /* no launch uses it any more */
  sk_device_close(dev);  /* the super kernel is still alive */
  sk_superkernel_destroy(sk);
}

/* A second variant: close the device with the memory still allocated and the super kernel not yet
 * destroyed; the device's allocations go with its last user. */
static void test_device_close_then_destroy(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_chain");
  uint32_t *buf = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
  sk_superkernel *sk = build_fill_axpb(dev, mod, buf, 8);
  (void)state;
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  check_fill_axpb(buf, 8);
  sk_module_unload(mod);
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_launch(sk, NULL));
  sk_device_close(dev); /* waits for both launches; buf goes with the device */
  sk_superkernel_destroy(sk);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scope_options),
      cmocka_unit_test(test_add_kernel_errors),
      cmocka_unit_test(test_add_kernel_copies_values),
      cmocka_unit_test(test_finalize_errors),
      cmocka_unit_test(test_set_arg),
      cmocka_unit_test(test_explain),
      cmocka_unit_test(test_unload_before_launch),
  };
  const struct CMUnitTest lifetime_tests[] = {
      cmocka_unit_test(test_device_close_with_superkernel_alive),
      cmocka_unit_test(test_device_close_then_destroy),
  };
  int failed = cmocka_run_group_tests_name("c_api_scope", tests, setup, teardown);
  failed += cmocka_run_group_tests_name("c_api_lifetime", lifetime_tests, NULL, NULL);
  return failed;
}
