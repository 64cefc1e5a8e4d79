/* Public C API: where a step's blocks run. With stream fusion, kernels of streams that may run
 * at the same time get distinct cores (three 1-block mat-vecs on three streams run on three
 * cores, not one after another on core 0); sk_kernel_options.first_core / core_count pin a
 * kernel's blocks, and pins that cannot hold are refused naming the kernel and the field. */
#include <stddef.h>

#include "test_util.h"

#define ROWS 48u
#define COLS 64u
#define MAX_BLOCKS 4u
/* Polls of the meeting: LONG_WAIT where the parties must meet (it returns as soon as they do),
 * SHORT_WAIT where they must not (always spent). */
#define LONG_WAIT 20000000u
#define SHORT_WAIT 300000u

struct matvec {
  float *m, *x, *y;
  uint64_t *who; /* the thread of each block */
};

struct fixture {
  sk_device *dev;
  sk_module *mod, *sync, *mixed;
  sk_kernel *matvec, *meet, *sync_sum, *hard_sum, *cube_tag, *vector_tag;
  struct matvec mv[3];
  uint32_t *count, *met, *scratch;
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  f->dev = open_device("host:cores=3");
  f->mod = load_kernels(f->dev, TEST_VARIANT, "capi_placement");
  f->sync = load_kernels(f->dev, TEST_VARIANT, "capi_sync");
  f->mixed = load_kernels(f->dev, TEST_VARIANT, "capi_mixed");
  f->matvec = get_kernel(f->mod, "place_matvec");
  f->meet = get_kernel(f->mod, "place_meet");
  f->sync_sum = get_kernel(f->sync, "capi_sync_sum");
  f->hard_sum = get_kernel(f->mixed, "hard_sync_sum");
  f->cube_tag = get_kernel(f->mixed, "cube_tag");
  f->vector_tag = get_kernel(f->mixed, "vector_tag");
  for (uint32_t k = 0; k < 3; ++k) {
    struct matvec *v = &f->mv[k];
    v->m = (float *)mem_alloc(f->dev, ROWS * COLS * sizeof(float));
    v->x = (float *)mem_alloc(f->dev, COLS * sizeof(float));
    v->y = (float *)mem_alloc(f->dev, ROWS * sizeof(float));
    v->who = (uint64_t *)mem_alloc(f->dev, MAX_BLOCKS * sizeof(uint64_t));
    for (uint32_t i = 0; i < ROWS * COLS; ++i) v->m[i] = (float)((i * 37u + k * 11u) % 101u) / 7.0f - 6.5f;
    for (uint32_t i = 0; i < COLS; ++i) v->x[i] = (float)((i * 13u + k) % 29u) / 3.0f - 4.0f;
  }
  f->count = (uint32_t *)mem_alloc(f->dev, sizeof(uint32_t));
  f->met = (uint32_t *)mem_alloc(f->dev, 3 * sizeof(uint32_t));
  f->scratch = (uint32_t *)mem_alloc(f->dev, 1024 * sizeof(uint32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  for (uint32_t k = 0; k < 3; ++k) {
    sk_mem_free(f->dev, f->mv[k].m);
    sk_mem_free(f->dev, f->mv[k].x);
    sk_mem_free(f->dev, f->mv[k].y);
    sk_mem_free(f->dev, f->mv[k].who);
  }
  sk_mem_free(f->dev, f->count);
  sk_mem_free(f->dev, f->met);
  sk_mem_free(f->dev, f->scratch);
  sk_module_unload(f->mod);
  sk_module_unload(f->sync);
  sk_module_unload(f->mixed);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

static sk_kernel_options placed(uint32_t stream, uint32_t first_core, uint32_t core_count) {
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  o.stream = stream;
  o.first_core = first_core;
  o.core_count = core_count;
  return o;
}

static void add_matvec(struct fixture *f, sk_scope *scope, uint32_t k, uint32_t block_dim, sk_kernel_options o) {
  uint32_t rows = ROWS, cols = COLS;
  void *args[] = {&f->mv[k].m, &f->mv[k].x, &f->mv[k].y, &rows, &cols, &f->mv[k].who};
  SK_CHECK(sk_add_kernel(scope, f->matvec, block_dim, args, &o));
}

/* The mat-vecs' results of unfused launches of the same kernels (`count` of them, one block
 * dim), which the fused run must reproduce bit for bit. */
static void unfused_results(struct fixture *f, uint32_t count, uint32_t block_dim, float want[3][ROWS]) {
  uint32_t rows = ROWS, cols = COLS;
  for (uint32_t k = 0; k < count; ++k) {
    void *args[] = {&f->mv[k].m, &f->mv[k].x, &f->mv[k].y, &rows, &cols, &f->mv[k].who};
    memset(f->mv[k].y, 0, ROWS * sizeof(float));
    SK_CHECK(sk_launch_kernel(f->matvec, block_dim, args, NULL));
  }
  SK_CHECK(sk_stream_synchronize(NULL));
  for (uint32_t k = 0; k < count; ++k) memcpy(want[k], f->mv[k].y, ROWS * sizeof(float));
}

static void run_and_compare(struct fixture *f, sk_superkernel *sk, uint32_t count, float want[3][ROWS]) {
  for (uint32_t k = 0; k < count; ++k) {
    memset(f->mv[k].y, 0, ROWS * sizeof(float));
    memset(f->mv[k].who, 0, MAX_BLOCKS * sizeof(uint64_t));
  }
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (uint32_t k = 0; k < count; ++k) assert_memory_equal(f->mv[k].y, want[k], ROWS * sizeof(float));
}

/* Three 1-block kernels on three streams: on three distinct cores (explain, and the threads
 * that ran them), with the unfused results. */
static void test_three_streams_on_three_cores(void **state) {
  struct fixture *f = (struct fixture *)*state;
  float want[3][ROWS];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  unfused_results(f, 3, 1, want);
  SK_CHECK(sk_scope_begin(f->dev, "three-streams", "stream-fusion=1", &scope));
  for (uint32_t k = 0; k < 3; ++k) add_matvec(f, scope, k, 1, placed(k, 0, 0));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"max_block_dim\":1,\"cores\":3");
  SK_EXPECT_EXPLAIN(sk, "\"first_unit\":0,\"placement\":\"default\"");
  SK_EXPECT_EXPLAIN(sk, "\"first_unit\":1,\"placement\":\"packed\"");
  SK_EXPECT_EXPLAIN(sk, "\"first_unit\":2,\"placement\":\"packed\"");
  SK_EXPECT_EXPLAIN(sk, "cores widened from 1 to 3");
  for (int launch = 0; launch < 5; ++launch) {
    run_and_compare(f, sk, 3, want);
    assert_true(f->mv[0].who[0] != 0 && f->mv[1].who[0] != 0 && f->mv[2].who[0] != 0);
    assert_true(f->mv[0].who[0] != f->mv[1].who[0]);
    assert_true(f->mv[0].who[0] != f->mv[2].who[0]);
    assert_true(f->mv[1].who[0] != f->mv[2].who[0]);
  }
  sk_superkernel_destroy(sk);

  /* Without stream fusion the same kernels follow each other from core 0. */
  SK_CHECK(sk_scope_begin(f->dev, "one-stream", NULL, &scope));
  for (uint32_t k = 0; k < 3; ++k) add_matvec(f, scope, k, 1, placed(0, 0, 0));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"max_block_dim\":1,\"cores\":1");
  run_and_compare(f, sk, 3, want);
  assert_true(f->mv[0].who[0] == f->mv[1].who[0] && f->mv[1].who[0] == f->mv[2].who[0]);
  sk_superkernel_destroy(sk);
}

/* Three kernels that only complete together when they run at the same time: packed on three
 * cores they meet; pinned to one core they run one after another, and only the last sees all. */
static void test_packed_streams_run_at_once(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t parties = 3;
  const uint32_t want_pinned[3] = {0, 0, 1};
  for (int pinned = 0; pinned <= 1; ++pinned) {
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    uint32_t spins = pinned ? SHORT_WAIT : LONG_WAIT;
    SK_CHECK(sk_scope_begin(f->dev, pinned ? "meet-pinned" : "meet-packed", "stream-fusion=1", &scope));
    for (uint32_t k = 0; k < 3; ++k) {
      uint32_t slot = k;
      void *args[] = {&f->count, &f->met, &slot, &parties, &spins};
      sk_kernel_options o = placed(k, 0, pinned ? 1 : 0);
      SK_CHECK(sk_add_kernel(scope, f->meet, 1, args, &o));
    }
    SK_CHECK(sk_finalize(scope, &sk));
    for (int launch = 0; launch < (pinned ? 1 : 5); ++launch) {
      *f->count = 0;
      f->met[0] = f->met[1] = f->met[2] = 7;
      SK_CHECK(sk_launch(sk, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      for (uint32_t k = 0; k < 3; ++k) assert_int_equal(f->met[k], pinned ? want_pinned[k] : 1);
    }
    sk_superkernel_destroy(sk);
  }
}

/* Pins are honoured: three streams pinned to core 1 share its thread; a pin past the kernels'
 * own cores widens the super kernel; a pin narrower than block_dim multiplexes the blocks over
 * the pinned cores. Results as unfused. */
static void test_pins_honoured(void **state) {
  struct fixture *f = (struct fixture *)*state;
  float want[3][ROWS];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  unfused_results(f, 3, 1, want);
  SK_CHECK(sk_scope_begin(f->dev, "pinned-core-1", "stream-fusion=1", &scope));
  for (uint32_t k = 0; k < 3; ++k) add_matvec(f, scope, k, 1, placed(k, 1, 1));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"index\":2,\"name\":\"place_matvec\"");
  SK_EXPECT_EXPLAIN(sk, "\"first_unit\":1,\"placement\":\"pinned\"");
  SK_EXPECT_EXPLAIN(sk, "\"max_block_dim\":1,\"cores\":2");
  run_and_compare(f, sk, 3, want);
  assert_true(f->mv[0].who[0] == f->mv[1].who[0] && f->mv[1].who[0] == f->mv[2].who[0]);
  sk_superkernel_destroy(sk);

  /* One stream: kernel 0 from core 0, kernel 1 pinned to core 2, on another thread. */
  SK_CHECK(sk_scope_begin(f->dev, "pinned-core-2", NULL, &scope));
  add_matvec(f, scope, 0, 1, placed(0, 0, 0));
  add_matvec(f, scope, 1, 1, placed(0, 2, 1));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"max_block_dim\":1,\"cores\":3");
  SK_EXPECT_EXPLAIN(sk, "\"first_unit\":2,\"placement\":\"pinned\"");
  run_and_compare(f, sk, 2, want);
  assert_true(f->mv[0].who[0] != f->mv[1].who[0]);
  sk_superkernel_destroy(sk);

  /* Four blocks on cores 1 and 2: blocks 0 and 2 on core 1, blocks 1 and 3 on core 2. */
  unfused_results(f, 1, MAX_BLOCKS, want);
  SK_CHECK(sk_scope_begin(f->dev, "multiplexed", NULL, &scope));
  add_matvec(f, scope, 0, MAX_BLOCKS, placed(0, 1, 2));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"units\":2,\"cores\":2,\"first_unit\":1,\"placement\":\"pinned\"");
  SK_EXPECT_EXPLAIN(sk, "\"blocks_per_core\":2");
  run_and_compare(f, sk, 1, want);
  const uint64_t *who = f->mv[0].who;
  assert_true(who[0] == who[2] && who[1] == who[3] && who[0] != who[1]);
  sk_superkernel_destroy(sk);
}

/* A caller built against an older sk.h passes a shorter struct: what lies past its struct_size
 * is not read (here a first_core that, read, would be refused). */
static void test_old_struct_size_ignores_the_pin(void **state) {
  struct fixture *f = (struct fixture *)*state;
  float want[3][ROWS];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_kernel_options o = placed(0, 5, 0);
  o.struct_size = (uint32_t)offsetof(sk_kernel_options, first_core);
  unfused_results(f, 1, 1, want);
  SK_CHECK(sk_scope_begin(f->dev, "old-caller", NULL, &scope));
  add_matvec(f, scope, 0, 1, o);
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"first_unit\":0,\"placement\":\"default\"");
  run_and_compare(f, sk, 1, want);
  sk_superkernel_destroy(sk);
}

/* sk_finalize of a scope with one kernel added as `o` must fail naming `needle`. */
static void expect_finalize_refused(struct fixture *f, sk_kernel *kernel, uint32_t block_dim, void **args,
                                    sk_kernel_options o, const char *options, const char *needle) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = SENTINEL(sk_superkernel);
  SK_CHECK(sk_scope_begin(f->dev, "bad-pin", options, &scope));
  SK_CHECK(sk_add_kernel(scope, kernel, block_dim, args, &o));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE, needle);
  SK_EXPECT_MSG("scope 'bad-pin'");
  assert_ptr_equal(sk, SENTINEL(sk_superkernel));
}

static void test_bad_pins_refused(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t rows = ROWS, cols = COLS, n = 64, tag = 5;
  void *mv_args[] = {&f->mv[0].m, &f->mv[0].x, &f->mv[0].y, &rows, &cols, &f->mv[0].who};
  void *sum_args[] = {&f->scratch, &f->scratch, &f->scratch, &n};
  void *tag_args[] = {&f->scratch, &tag};
  float want[3][ROWS];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;

  /* A first core without a count: refused at sk_add_kernel; the scope keeps what it had. */
  unfused_results(f, 1, 1, want);
  SK_CHECK(sk_scope_begin(f->dev, "no-count", NULL, &scope));
  add_matvec(f, scope, 0, 1, placed(0, 0, 0));
  sk_kernel_options o = placed(0, 1, 0);
  o.name = "mv-bad";
  SK_EXPECT_ERR(sk_add_kernel(scope, f->matvec, 1, mv_args, &o), SK_ERR_INVALID_ARGUMENT,
                "kernel 'mv-bad': opts->first_core is 1 but opts->core_count is 0");
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"index\":0,");
  run_and_compare(f, sk, 1, want);
  char *text = explain_text(sk);
  assert_null(strstr(text, "\"index\":1,"));
  free(text);
  sk_superkernel_destroy(sk);

  /* Beyond the device's 3 cores, an overflowing range included. */
  o = placed(0, 2, 2);
  o.name = "mv-wide";
  expect_finalize_refused(f, f->matvec, 1, mv_args, o, NULL,
                          "kernel 0 'mv-wide' is pinned to first_core 2, core_count 2, beyond the 3 vector cores");
  SK_EXPECT_MSG("(the device's)");
  expect_finalize_refused(f, f->matvec, 1, mv_args, placed(0, 0xffffffffu, 2), NULL,
                          "is pinned to first_core 4294967295, core_count 2");
  expect_finalize_refused(f, f->matvec, 1, mv_args, placed(0, 1, 0xffffffffu), "stream-fusion=1",
                          "is pinned to first_core 1, core_count 4294967295");

  /* A kernel that synchronises its blocks on fewer cores than its block_dim. */
  expect_finalize_refused(f, f->sync_sum, 2, sum_args, placed(0, 0, 1), NULL,
                          "kernel 0 'capi_sync_sum' synchronises its cores (sk_sync_all) on block_dim 2, but its "
                          "core_count is 1");
  /* A hard-sync kernel, which counts the super kernel's cores from the first, off core 0. */
  expect_finalize_refused(f, f->hard_sum, 2, sum_args, placed(0, 1, 2), NULL,
                          "kernel 0 'hard_sync_sum' uses hard cross-core sync, which counts the super kernel's "
                          "vector cores from the first: its first_core must be 0, not 1");
  /* Forced core counts do not widen. */
  expect_finalize_refused(f, f->matvec, 1, mv_args, placed(0, 1, 1), "debug-aiv-num=1",
                          "beyond the 1 vector cores it can run on (this dispatch's layout, which cannot widen)");

  /* A 1:1 layout (one group: a cube core and a vector core) does not widen either. */
  SK_CHECK(sk_scope_begin(f->dev, "bad-pin", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->cube_tag, 1, tag_args, NULL));
  o = placed(0, 1, 1);
  SK_CHECK(sk_add_kernel(scope, f->vector_tag, 1, tag_args, &o));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE,
                "kernel 1 'vector_tag' is pinned to first_core 1, core_count 1, beyond the 1 vector cores it can "
                "run on (this dispatch's layout, which cannot widen)");

  /* The device is left as it was: a packed scope still runs. */
  unfused_results(f, 3, 1, want);
  SK_CHECK(sk_scope_begin(f->dev, "after-errors", "stream-fusion=1", &scope));
  for (uint32_t k = 0; k < 3; ++k) add_matvec(f, scope, k, 1, placed(k, 0, 0));
  SK_CHECK(sk_finalize(scope, &sk));
  run_and_compare(f, sk, 3, want);
  sk_superkernel_destroy(sk);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_three_streams_on_three_cores),
      cmocka_unit_test(test_packed_streams_run_at_once),
      cmocka_unit_test(test_pins_honoured),
      cmocka_unit_test(test_old_struct_size_ignores_the_pin),
      cmocka_unit_test(test_bad_pins_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
