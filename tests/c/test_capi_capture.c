/* Public C API: stream capture (sk_stream_begin_capture / sk_stream_end_capture) and events.
 * A capture of ordinary launches must build the super kernel the same sk_add_kernel calls build:
 * the same explain JSON, the same results bit for bit (and those of the unfused launches). What
 * cannot be captured fails naming the call, invalidates the capture, and leaves the stream
 * usable. */
#include <pthread.h>

#include "test_util.h"

#define N 1024u

struct fixture {
  sk_device *dev;
  sk_module *mod;
  sk_kernel *fill, *axpb, *gather, *rotate;
  sk_stream *s0, *s1;
  uint32_t *a, *b, *c, *d;
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  f->dev = open_device("host:cores=2");
  f->mod = load_kernels(f->dev, TEST_VARIANT, "capi_chain");
  f->fill = get_kernel(f->mod, "capi_fill");
  f->axpb = get_kernel(f->mod, "capi_axpb");
  f->gather = get_kernel(f->mod, "capi_gather");
  f->rotate = get_kernel(f->mod, "capi_rotate");
  SK_CHECK(sk_stream_create(f->dev, &f->s0));
  SK_CHECK(sk_stream_create(f->dev, &f->s1));
  f->a = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->b = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->c = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->d = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t *bufs[] = {f->a, f->b, f->c, f->d};
  for (size_t i = 0; i < 4; ++i) sk_mem_free(f->dev, bufs[i]);
  sk_stream_destroy(f->s0);
  sk_stream_destroy(f->s1);
  sk_module_unload(f->mod);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

static void clear(struct fixture *f) {
  memset(f->a, 0, N * sizeof(uint32_t));
  memset(f->b, 0, N * sizeof(uint32_t));
  memset(f->c, 0, N * sizeof(uint32_t));
  memset(f->d, 0, N * sizeof(uint32_t));
}

/* The four buffers, concatenated, in malloc'ed memory. */
static uint32_t *snapshot(const struct fixture *f) {
  uint32_t *out = (uint32_t *)malloc(4 * N * sizeof(uint32_t));
  assert_non_null(out);
  memcpy(out, f->a, N * sizeof(uint32_t));
  memcpy(out + N, f->b, N * sizeof(uint32_t));
  memcpy(out + 2 * N, f->c, N * sizeof(uint32_t));
  memcpy(out + 3 * N, f->d, N * sizeof(uint32_t));
  return out;
}

/* Launches `sk` on cleared buffers and returns what they hold after. */
static uint32_t *run(struct fixture *f, sk_superkernel *sk) {
  clear(f);
  SK_CHECK(sk_launch(sk, f->s0));
  SK_CHECK(sk_stream_synchronize(f->s0));
  return snapshot(f);
}

/* The four buffers hold what `expected` (a snapshot, freed here) holds. */
static void expect_snapshot(const struct fixture *f, uint32_t *expected) {
  uint32_t *now = snapshot(f);
  assert_memory_equal(expected, now, 4 * N * sizeof(uint32_t));
  free(expected);
  free(now);
}

static void expect_same_superkernel(struct fixture *f, sk_superkernel *captured, sk_superkernel *built) {
  char *x = explain_text(captured), *y = explain_text(built);
  assert_string_equal(x, y);
  free(x);
  free(y);
  uint32_t *r1 = run(f, captured), *r2 = run(f, built);
  assert_memory_equal(r1, r2, 4 * N * sizeof(uint32_t));
  free(r1);
  free(r2);
}

/* The chain a decode step might be: fill a, scale a, gather a into b, rotate b into c. With
 * `scope` NULL the launches go to `stream` (captured or run), else they are added to it. */
static void chain(struct fixture *f, sk_scope *scope, sk_stream *stream) {
  uint32_t n = N, seed = 7, stride = 17;
  int32_t mul = 3, add = -5;
  void *fill_args[] = {&f->a, &n, &seed};
  void *axpb_args[] = {&f->a, &n, &mul, &add};
  void *gather_args[] = {&f->b, &f->a, &n, &stride};
  void *rotate_args[] = {&f->c, &f->b, &n};
  if (scope) {
    SK_CHECK(sk_add_kernel(scope, f->fill, 2, fill_args, NULL));
    SK_CHECK(sk_add_kernel(scope, f->axpb, 4, axpb_args, NULL));
    SK_CHECK(sk_add_kernel(scope, f->gather, 1, gather_args, NULL));
    SK_CHECK(sk_add_kernel(scope, f->rotate, 3, rotate_args, NULL));
  } else {
    SK_CHECK(sk_launch_kernel(f->fill, 2, fill_args, stream));
    SK_CHECK(sk_launch_kernel(f->axpb, 4, axpb_args, stream));
    SK_CHECK(sk_launch_kernel(f->gather, 1, gather_args, stream));
    SK_CHECK(sk_launch_kernel(f->rotate, 3, rotate_args, stream));
  }
}

static void test_capture_equals_scope(void **state) {
  struct fixture *f = (struct fixture *)*state;
  clear(f);
  SK_CHECK(sk_stream_begin_capture(f->s0, "decode", "early-start=1:debug-dcci-all=1"));
  chain(f, NULL, f->s0);
  sk_superkernel *captured = NULL;
  SK_CHECK(sk_stream_end_capture(f->s0, &captured));
  /* The launches were recorded, not run. */
  SK_CHECK(sk_stream_synchronize(f->s0));
  uint32_t *untouched = snapshot(f);
  for (uint32_t i = 0; i < 4 * N; ++i) assert_int_equal(untouched[i], 0);
  free(untouched);

  sk_scope *scope = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "decode", "early-start=1:debug-dcci-all=1", &scope));
  chain(f, scope, NULL);
  sk_superkernel *built = NULL;
  SK_CHECK(sk_finalize(scope, &built));
  expect_same_superkernel(f, captured, built);

  /* And both equal the unfused launches. */
  uint32_t *fused = run(f, captured);
  clear(f);
  chain(f, NULL, f->s1);
  SK_CHECK(sk_stream_synchronize(f->s1));
  expect_snapshot(f, fused);
  sk_superkernel_destroy(captured);
  sk_superkernel_destroy(built);
}

/* A super kernel launched during a capture is recorded inline: its steps with their names and
 * flags and the argument values it has now (after a set_arg), between the kernels around it. */
static void test_captured_superkernel_inline(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t n = N, seed = 11, stride = 5, new_stride = 9;
  int32_t mul = 7, add = 1;
  void *fill_args[] = {&f->a, &n, &seed};
  void *axpb_args[] = {&f->a, &n, &mul, &add};
  void *gather_args[] = {&f->b, &f->a, &n, &stride};
  void *gather_now[] = {&f->b, &f->a, &n, &new_stride};
  void *rotate_args[] = {&f->c, &f->b, &n};
  sk_kernel_options scale = SK_KERNEL_OPTIONS_INIT, mix = SK_KERNEL_OPTIONS_INIT;
  scale.name = "scale";
  scale.first_core = 1; /* a pin travels with the step it is inlined as */
  scale.core_count = 1;
  mix.name = "mix";
  mix.flags = SK_KERNEL_FLAG_TILING_SINK;

  sk_scope *scope = NULL;
  sk_superkernel *inner = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "inner", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->axpb, 2, axpb_args, &scale));
  SK_CHECK(sk_add_kernel(scope, f->gather, 3, gather_args, &mix));
  SK_CHECK(sk_finalize(scope, &inner));
  SK_CHECK(sk_superkernel_set_arg(inner, 1, 3, &new_stride));

  SK_CHECK(sk_stream_begin_capture(f->s0, "outer", NULL));
  SK_CHECK(sk_launch_kernel(f->fill, 2, fill_args, f->s0));
  SK_CHECK(sk_launch(inner, f->s0));
  SK_CHECK(sk_launch_kernel(f->rotate, 1, rotate_args, f->s0));
  sk_superkernel *captured = NULL;
  SK_CHECK(sk_stream_end_capture(f->s0, &captured));

  SK_CHECK(sk_scope_begin(f->dev, "outer", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 2, fill_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->axpb, 2, axpb_args, &scale));
  SK_CHECK(sk_add_kernel(scope, f->gather, 3, gather_now, &mix));
  SK_CHECK(sk_add_kernel(scope, f->rotate, 1, rotate_args, NULL));
  sk_superkernel *built = NULL;
  SK_CHECK(sk_finalize(scope, &built));
  SK_EXPECT_EXPLAIN(captured, "\"mix\"");
  SK_EXPECT_EXPLAIN(captured, "\"first_unit\":1,\"placement\":\"pinned\"");
  expect_same_superkernel(f, captured, built);
  /* After the capture the inner super kernel may be rebound again. */
  SK_CHECK(sk_superkernel_set_arg(inner, 1, 3, &stride));
  sk_superkernel_destroy(captured);
  sk_superkernel_destroy(built);
  sk_superkernel_destroy(inner);
}

/* Two streams joined by events: s1 waits on s0's first kernel, s0 goes on independently, then
 * waits for s1's work: the stream-fusion scope with the same events. */
static void multi_stream(struct fixture *f, sk_scope *scope, sk_event *e0, sk_event *e1) {
  uint32_t n = N, seed = 3, seed2 = 99, stride = 13;
  void *fill_a[] = {&f->a, &n, &seed};
  void *gather_b[] = {&f->b, &f->a, &n, &stride};
  void *fill_c[] = {&f->c, &n, &seed2};
  void *rotate_d[] = {&f->d, &f->b, &n};
  sk_kernel_options on1 = SK_KERNEL_OPTIONS_INIT;
  on1.stream = 1;
  if (scope) {
    SK_CHECK(sk_add_kernel(scope, f->fill, 2, fill_a, NULL));
    SK_CHECK(sk_scope_record_event(scope, 0, 0));
    SK_CHECK(sk_scope_wait_event(scope, 1, 0));
    SK_CHECK(sk_add_kernel(scope, f->gather, 1, gather_b, &on1));
    SK_CHECK(sk_add_kernel(scope, f->fill, 1, fill_c, NULL));
    SK_CHECK(sk_scope_record_event(scope, 1, 1));
    SK_CHECK(sk_scope_wait_event(scope, 0, 1));
    SK_CHECK(sk_add_kernel(scope, f->rotate, 2, rotate_d, NULL));
  } else {
    SK_CHECK(sk_launch_kernel(f->fill, 2, fill_a, f->s0));
    SK_CHECK(sk_event_record(e0, f->s0));
    SK_CHECK(sk_stream_wait_event(f->s1, e0));
    SK_CHECK(sk_launch_kernel(f->gather, 1, gather_b, f->s1));
    SK_CHECK(sk_launch_kernel(f->fill, 1, fill_c, f->s0));
    SK_CHECK(sk_event_record(e1, f->s1));
    SK_CHECK(sk_stream_wait_event(f->s0, e1));
    SK_CHECK(sk_launch_kernel(f->rotate, 2, rotate_d, f->s0));
  }
}

static void test_multi_stream_capture_equals_stream_fusion(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_event *e0 = NULL, *e1 = NULL;
  SK_CHECK(sk_event_create(f->dev, &e0));
  SK_CHECK(sk_event_create(f->dev, &e1));
  SK_CHECK(sk_stream_begin_capture(f->s0, "streams", "stream-fusion=1"));
  multi_stream(f, NULL, e0, e1);
  sk_superkernel *captured = NULL;
  SK_CHECK(sk_stream_end_capture(f->s0, &captured));
  /* s1 left the capture with it: it runs launches again. */
  uint32_t n = N, seed = 1;
  void *fill_args[] = {&f->d, &n, &seed};
  SK_CHECK(sk_launch_kernel(f->fill, 1, fill_args, f->s1));
  SK_CHECK(sk_stream_synchronize(f->s1));

  sk_scope *scope = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "streams", "stream-fusion=1", &scope));
  multi_stream(f, scope, NULL, NULL);
  sk_superkernel *built = NULL;
  SK_CHECK(sk_finalize(scope, &built));
  SK_EXPECT_EXPLAIN(captured, "\"waits_for_steps\":[0]");
  expect_same_superkernel(f, captured, built);

  /* The same launches outside a capture, ordered by the events, give the same results. */
  uint32_t *fused = run(f, captured);
  clear(f);
  multi_stream(f, NULL, e0, e1);
  SK_CHECK(sk_stream_synchronize(f->s0));
  SK_CHECK(sk_stream_synchronize(f->s1));
  expect_snapshot(f, fused);
  sk_superkernel_destroy(captured);
  sk_superkernel_destroy(built);
  sk_event_destroy(e0);
  sk_event_destroy(e1);
}

/* A stream-fused super kernel launched during a capture: its second stream gets a scope stream
 * of its own, after the launching stream's work, and the launching stream's next kernel waits
 * for it. Results equal running the same launches unfused. */
static void test_captured_stream_fused_superkernel(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *inner = NULL, *captured = NULL;
  uint32_t n = N, seed = 21, stride = 3;
  int32_t mul = 5, add = 2;
  void *fill_a[] = {&f->a, &n, &seed};
  void *axpb_a[] = {&f->a, &n, &mul, &add};
  void *gather_b[] = {&f->b, &f->a, &n, &stride};
  void *rotate_c[] = {&f->c, &f->b, &n};
  void *rotate_d[] = {&f->d, &f->a, &n};
  sk_kernel_options on1 = SK_KERNEL_OPTIONS_INIT;
  on1.stream = 1;
  SK_CHECK(sk_scope_begin(f->dev, "inner", "stream-fusion=1", &scope));
  SK_CHECK(sk_add_kernel(scope, f->gather, 2, gather_b, NULL));
  SK_CHECK(sk_add_kernel(scope, f->rotate, 1, rotate_d, &on1));
  SK_CHECK(sk_finalize(scope, &inner));

  /* Without stream fusion the capture cannot take it; the capture stays valid. */
  SK_CHECK(sk_stream_begin_capture(f->s0, "single", NULL));
  SK_EXPECT_ERR(sk_launch(inner, f->s0), SK_ERR_INCOMPATIBLE, "stream-fusion=1");
  SK_CHECK(sk_launch_kernel(f->fill, 1, fill_a, f->s0));
  SK_CHECK(sk_stream_end_capture(f->s0, &captured));
  sk_superkernel_destroy(captured);

  SK_CHECK(sk_stream_begin_capture(f->s0, "outer", "stream-fusion=1"));
  SK_CHECK(sk_launch_kernel(f->fill, 2, fill_a, f->s0));
  SK_CHECK(sk_launch_kernel(f->axpb, 1, axpb_a, f->s0));
  SK_CHECK(sk_launch(inner, f->s0));
  SK_CHECK(sk_launch_kernel(f->rotate, 2, rotate_c, f->s0));
  SK_CHECK(sk_stream_end_capture(f->s0, &captured));
  uint32_t *fused = run(f, captured);
  clear(f);
  SK_CHECK(sk_launch_kernel(f->fill, 2, fill_a, f->s1));
  SK_CHECK(sk_launch_kernel(f->axpb, 1, axpb_a, f->s1));
  SK_CHECK(sk_launch(inner, f->s1));
  SK_CHECK(sk_launch_kernel(f->rotate, 2, rotate_c, f->s1));
  SK_CHECK(sk_stream_synchronize(f->s1));
  expect_snapshot(f, fused);
  sk_superkernel_destroy(captured);
  sk_superkernel_destroy(inner);
}

/* After a failed capture the stream launches and synchronizes normally. */
static void expect_usable(struct fixture *f, sk_stream *s) {
  uint32_t n = N, seed = 5;
  void *args[] = {&f->a, &n, &seed};
  memset(f->a, 0, N * sizeof(uint32_t));
  SK_CHECK(sk_launch_kernel(f->fill, 2, args, s));
  SK_CHECK(sk_stream_synchronize(s));
  assert_int_equal(f->a[N - 1], (N - 1) * 2654435761u + seed);
}

/* The capture was invalidated by `call`: later launches fail, end-capture builds nothing. */
static void expect_invalidated(struct fixture *f, const char *call) {
  uint32_t n = N, seed = 5;
  void *args[] = {&f->a, &n, &seed};
  SK_EXPECT_ERR(sk_launch_kernel(f->fill, 1, args, f->s0), SK_ERR_STATE, "invalidated by");
  sk_superkernel *out = SENTINEL(sk_superkernel);
  SK_EXPECT_ERR(sk_stream_end_capture(f->s0, &out), SK_ERR_STATE, "capture 'bad' was invalidated by");
  SK_EXPECT_MSG(call);
  assert_ptr_equal(out, SENTINEL(sk_superkernel));
  expect_usable(f, f->s0);
}

static void begin_bad(struct fixture *f) {
  uint32_t n = N, seed = 5;
  void *args[] = {&f->a, &n, &seed};
  SK_CHECK(sk_stream_begin_capture(f->s0, "bad", NULL));
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, f->s0));
}

static void test_uncapturable_calls_invalidate(void **state) {
  struct fixture *f = (struct fixture *)*state;
  int done = 0;
  uint32_t word = 0;

  begin_bad(f);
  SK_EXPECT_ERR(sk_stream_synchronize(f->s0), SK_ERR_STATE, "sk_stream_synchronize");
  SK_EXPECT_MSG("'bad'");
  expect_invalidated(f, "sk_stream_synchronize");

  begin_bad(f);
  SK_EXPECT_ERR(sk_stream_query(f->dev, f->s0, &done), SK_ERR_STATE, "sk_stream_query");
  expect_invalidated(f, "sk_stream_query");

  begin_bad(f);
  SK_EXPECT_ERR(sk_device_synchronize(f->dev), SK_ERR_STATE, "sk_device_synchronize");
  SK_EXPECT_MSG("'bad'");
  expect_invalidated(f, "sk_device_synchronize");

  begin_bad(f);
  SK_EXPECT_ERR(sk_memcpy(f->dev, &word, f->a, sizeof word), SK_ERR_STATE, "sk_memcpy");
  expect_invalidated(f, "sk_memcpy");

  /* A kernel and a super kernel of another device. */
  sk_device *other = open_device("host:cores=1");
  sk_module *other_mod = load_kernels(other, TEST_VARIANT, "capi_chain");
  sk_kernel *other_fill = get_kernel(other_mod, "capi_fill");
  uint32_t *other_buf = (uint32_t *)mem_alloc(other, N * sizeof(uint32_t));
  uint32_t n = N, seed = 1;
  void *other_args[] = {&other_buf, &n, &seed};
  sk_scope *scope = NULL;
  sk_superkernel *other_sk = NULL;
  SK_CHECK(sk_scope_begin(other, "elsewhere", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, other_fill, 1, other_args, NULL));
  SK_CHECK(sk_finalize(scope, &other_sk));
  begin_bad(f);
  SK_EXPECT_ERR(sk_launch_kernel(other_fill, 1, other_args, f->s0), SK_ERR_STATE, "another device");
  SK_EXPECT_MSG("sk_launch_kernel");
  expect_invalidated(f, "sk_launch_kernel");
  begin_bad(f);
  SK_EXPECT_ERR(sk_launch(other_sk, f->s0), SK_ERR_STATE, "another device");
  expect_invalidated(f, "sk_launch");
  sk_superkernel_destroy(other_sk);
  sk_mem_free(other, other_buf);
  sk_module_unload(other_mod);
  sk_device_close(other);

  /* set_arg of a super kernel the capture recorded; other super kernels may still be rebound. */
  sk_superkernel *inner = NULL, *bystander = NULL;
  void *fill_args[] = {&f->b, &n, &seed};
  SK_CHECK(sk_scope_begin(f->dev, "inner", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 1, fill_args, NULL));
  SK_CHECK(sk_finalize(scope, &inner));
  SK_CHECK(sk_scope_begin(f->dev, "bystander", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 1, fill_args, NULL));
  SK_CHECK(sk_finalize(scope, &bystander));
  begin_bad(f);
  SK_CHECK(sk_launch(inner, f->s0));
  SK_CHECK(sk_superkernel_set_arg(bystander, 0, 2, &seed));
  SK_EXPECT_ERR(sk_superkernel_set_arg(inner, 0, 2, &seed), SK_ERR_STATE, "capture 'bad'");
  SK_EXPECT_MSG("sk_superkernel_set_arg");
  expect_invalidated(f, "sk_superkernel_set_arg");
  SK_CHECK(sk_superkernel_set_arg(inner, 0, 2, &seed));
  /* A repeat cannot be recorded (a stop flag's runs are known only when it runs); a bad n fails
     its own check first and leaves the capture valid. */
  begin_bad(f);
  SK_EXPECT_ERR(sk_launch_repeat(inner, 0, NULL, f->s0), SK_ERR_INVALID_ARGUMENT, "n is 0");
  SK_EXPECT_ERR(sk_launch_repeat(inner, 2, NULL, f->s0), SK_ERR_STATE, "sk_launch_repeat");
  SK_EXPECT_MSG("'bad'");
  expect_invalidated(f, "sk_launch_repeat");
  /* A super kernel destroyed during the capture is forgotten by it. */
  begin_bad(f);
  SK_CHECK(sk_launch(bystander, f->s0));
  sk_superkernel_destroy(bystander);
  sk_superkernel *out = NULL;
  SK_CHECK(sk_stream_end_capture(f->s0, &out));
  sk_superkernel_destroy(out);
  sk_superkernel_destroy(inner);
}

static void test_capture_misuse(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t n = N, seed = 5;
  void *args[] = {&f->a, &n, &seed};
  sk_superkernel *out = SENTINEL(sk_superkernel);

  SK_EXPECT_ERR(sk_stream_begin_capture(NULL, "x", NULL), SK_ERR_INVALID_ARGUMENT, "default stream");
  SK_EXPECT_ERR(sk_stream_begin_capture(f->s0, "x", "no-such-key=1"), SK_ERR_INVALID_ARGUMENT, "no-such-key");
  SK_EXPECT_ERR(sk_stream_end_capture(f->s0, &out), SK_ERR_STATE, "not capturing");
  SK_EXPECT_ERR(sk_stream_end_capture(NULL, &out), SK_ERR_INVALID_ARGUMENT, "sk_stream_end_capture");
  assert_ptr_equal(out, SENTINEL(sk_superkernel));

  SK_CHECK(sk_stream_begin_capture(f->s0, "twice", NULL));
  SK_EXPECT_ERR(sk_stream_begin_capture(f->s0, "again", NULL), SK_ERR_STATE, "already capturing into 'twice'");
  SK_EXPECT_ERR(sk_stream_end_capture(f->s0, NULL), SK_ERR_INVALID_ARGUMENT, "out is NULL");
  /* A launch that fails its own checks is not recorded and leaves the capture valid. */
  SK_EXPECT_ERR(sk_launch_kernel(f->fill, 0, args, f->s0), SK_ERR_INVALID_ARGUMENT, "block_dim");
  SK_EXPECT_ERR(sk_launch_kernel(f->fill, 1, NULL, f->s0), SK_ERR_INVALID_ARGUMENT, "sk_launch_kernel");
  SK_EXPECT_ERR(sk_stream_end_capture(f->s0, &out), SK_ERR_STATE, "recorded no launch");
  assert_ptr_equal(out, SENTINEL(sk_superkernel));
  expect_usable(f, f->s0);

  /* Another stream's launches run while s0 captures. */
  SK_CHECK(sk_stream_begin_capture(f->s0, "side", NULL));
  expect_usable(f, f->s1);
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, f->s0));
  out = NULL;
  SK_CHECK(sk_stream_end_capture(f->s0, &out));
  sk_superkernel_destroy(out);

  /* Destroying the capturing stream drops its capture (the asan stage checks nothing leaks). */
  sk_stream *doomed = NULL;
  SK_CHECK(sk_stream_create(f->dev, &doomed));
  SK_CHECK(sk_stream_begin_capture(doomed, "dropped", NULL));
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, doomed));
  sk_stream_destroy(doomed);
  SK_CHECK(sk_device_synchronize(f->dev)); /* no capture left on the device */
}

/* A captured launch is checked as the unfused launch is, at the call: a kernel that
 * synchronises its blocks on more blocks than the device's 2 cores is refused naming the call
 * and the kernel (no scope: none exists), and the capture stays valid. */
static void test_capture_checks_launch_as_unfused(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_module *sync = load_kernels(f->dev, TEST_VARIANT, "capi_sync");
  sk_kernel *sum = get_kernel(sync, "capi_sync_sum");
  uint32_t n = N, seed = 5;
  void *fill_args[] = {&f->a, &n, &seed};
  void *sum_args[] = {&f->a, &f->b, &f->c, &n};
  static const char expected[] =
      "sk_launch_kernel: kernel 'capi_sync_sum' synchronises its cores (sk_sync_all) on block_dim 3, more than "
      "the 2 vector cores of this device";

  SK_EXPECT_ERR(sk_launch_kernel(sum, 3, sum_args, f->s0), SK_ERR_INCOMPATIBLE, expected);
  assert_null(strstr(sk_last_error(), "scope"));

  SK_CHECK(sk_stream_begin_capture(f->s0, "checked", NULL));
  SK_CHECK(sk_launch_kernel(f->fill, 2, fill_args, f->s0));
  SK_EXPECT_ERR(sk_launch_kernel(sum, 3, sum_args, f->s0), SK_ERR_INCOMPATIBLE, expected);
  assert_null(strstr(sk_last_error(), "scope"));
  SK_CHECK(sk_launch_kernel(sum, 2, sum_args, f->s0));
  sk_superkernel *captured = NULL;
  SK_CHECK(sk_stream_end_capture(f->s0, &captured));

  /* What the capture built is the two launches it kept, run unfused. */
  uint32_t *fused = run(f, captured);
  clear(f);
  SK_CHECK(sk_launch_kernel(f->fill, 2, fill_args, f->s0));
  SK_CHECK(sk_launch_kernel(sum, 2, sum_args, f->s0));
  SK_CHECK(sk_stream_synchronize(f->s0));
  expect_snapshot(f, fused);
  sk_superkernel_destroy(captured);
  sk_module_unload(sync);
}

static void test_multi_stream_misuse(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t n = N, seed = 5;
  void *args[] = {&f->b, &n, &seed};
  sk_event *e = NULL, *back = NULL;
  sk_superkernel *out = SENTINEL(sk_superkernel);
  SK_CHECK(sk_event_create(f->dev, &e));
  SK_CHECK(sk_event_create(f->dev, &back));

  /* Joined but never joined back. */
  SK_CHECK(sk_stream_begin_capture(f->s0, "fork", "stream-fusion=1"));
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, f->s0));
  SK_CHECK(sk_event_record(e, f->s0));
  SK_CHECK(sk_stream_wait_event(f->s1, e));
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, f->s1));
  SK_EXPECT_ERR(sk_stream_end_capture(f->s1, &out), SK_ERR_STATE, "end it on that stream");
  SK_EXPECT_ERR(sk_stream_end_capture(f->s0, &out), SK_ERR_STATE, "was not joined back");
  SK_EXPECT_MSG("capture stream 1");
  assert_ptr_equal(out, SENTINEL(sk_superkernel));
  expect_usable(f, f->s0);
  expect_usable(f, f->s1);

  /* Joined back, then launched again: unjoined too. */
  SK_CHECK(sk_stream_begin_capture(f->s0, "fork", "stream-fusion=1"));
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, f->s0));
  SK_CHECK(sk_event_record(e, f->s0));
  SK_CHECK(sk_stream_wait_event(f->s1, e));
  SK_CHECK(sk_event_record(back, f->s1));
  SK_CHECK(sk_stream_wait_event(f->s0, back));
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, f->s1));
  SK_EXPECT_ERR(sk_stream_end_capture(f->s0, &out), SK_ERR_STATE, "was not joined back");

  /* Joining a capture without stream fusion. */
  SK_CHECK(sk_stream_begin_capture(f->s0, "bad", NULL));
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, f->s0));
  SK_CHECK(sk_event_record(e, f->s0));
  SK_EXPECT_ERR(sk_stream_wait_event(f->s1, e), SK_ERR_STATE, "stream-fusion=1");
  expect_usable(f, f->s1);
  expect_invalidated(f, "sk_stream_wait_event");

  /* A capturing stream waiting on an event recorded outside the capture. */
  SK_CHECK(sk_event_record(e, f->s1));
  begin_bad(f);
  SK_EXPECT_ERR(sk_stream_wait_event(f->s0, e), SK_ERR_STATE, "not recorded in that capture");
  expect_invalidated(f, "sk_stream_wait_event");
  /* The default stream cannot join. */
  SK_CHECK(sk_stream_begin_capture(f->s0, "bad", "stream-fusion=1"));
  SK_CHECK(sk_event_record(e, f->s0));
  SK_EXPECT_ERR(sk_stream_wait_event(NULL, e), SK_ERR_STATE, "default stream");
  expect_invalidated(f, "sk_stream_wait_event");
  /* An event of an ended capture cannot be waited on. */
  SK_EXPECT_ERR(sk_stream_wait_event(f->s1, e), SK_ERR_STATE, "capture that has ended");

  /* Destroying a joined stream invalidates the capture. */
  sk_stream *joined = NULL;
  SK_CHECK(sk_stream_create(f->dev, &joined));
  SK_CHECK(sk_stream_begin_capture(f->s0, "bad", "stream-fusion=1"));
  SK_CHECK(sk_event_record(e, f->s0));
  SK_CHECK(sk_stream_wait_event(joined, e));
  SK_CHECK(sk_launch_kernel(f->fill, 1, args, joined));
  sk_stream_destroy(joined);
  expect_invalidated(f, "sk_stream_destroy");

  /* Event calls check their arguments. */
  SK_EXPECT_ERR(sk_event_create(f->dev, NULL), SK_ERR_INVALID_ARGUMENT, "sk_event_create");
  SK_EXPECT_ERR(sk_event_record(NULL, f->s0), SK_ERR_INVALID_ARGUMENT, "sk_event_record");
  SK_EXPECT_ERR(sk_stream_wait_event(f->s0, NULL), SK_ERR_INVALID_ARGUMENT, "sk_stream_wait_event");
  sk_device *other = open_device("host:cores=1");
  sk_stream *other_stream = NULL;
  SK_CHECK(sk_stream_create(other, &other_stream));
  SK_EXPECT_ERR(sk_event_record(e, other_stream), SK_ERR_INCOMPATIBLE, "different devices");
  SK_EXPECT_ERR(sk_stream_wait_event(other_stream, e), SK_ERR_INCOMPATIBLE, "different devices");
  sk_stream_destroy(other_stream);
  sk_device_close(other);
  sk_event_destroy(e);
  sk_event_destroy(back);
  sk_event_destroy(e); /* ignored */
  SK_EXPECT_ERR(sk_event_record(e, f->s0), SK_ERR_STATE, "was destroyed");
}

/* The chain with the values a later decode step might have: another seed, another output. */
static void chain_with(struct fixture *f, sk_stream *stream, uint32_t seed, uint32_t *dst, uint32_t last_blocks,
                       sk_kernel *last) {
  uint32_t n = N, stride = 17;
  int32_t mul = 3, add = -5;
  void *fill_args[] = {&f->a, &n, &seed};
  void *axpb_args[] = {&f->a, &n, &mul, &add};
  void *gather_args[] = {&f->b, &f->a, &n, &stride};
  void *rotate_args[] = {&dst, &f->b, &n};
  void *gather_last[] = {&dst, &f->b, &n, &stride};
  SK_CHECK(sk_launch_kernel(f->fill, 2, fill_args, stream));
  SK_CHECK(sk_launch_kernel(f->axpb, 4, axpb_args, stream));
  SK_CHECK(sk_launch_kernel(f->gather, 1, gather_args, stream));
  if (last) SK_CHECK(sk_launch_kernel(last, last_blocks, last == f->gather ? gather_last : rotate_args, stream));
}

/* `sk` updated from a mismatching capture is unchanged: it still gives `expected`. */
static void expect_unchanged(struct fixture *f, sk_superkernel *sk, const uint32_t *expected) {
  uint32_t *now = run(f, sk);
  assert_memory_equal(now, expected, 4 * N * sizeof(uint32_t));
  free(now);
}

static void test_update_from_capture(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_superkernel *sk = NULL;
  SK_CHECK(sk_stream_begin_capture(f->s0, "decode", "early-start=1"));
  chain_with(f, f->s0, 7, f->c, 3, f->rotate);
  SK_CHECK(sk_stream_end_capture(f->s0, &sk));
  uint32_t *first = run(f, sk);

  /* The same launches with a new seed and output buffer rebind it in place. */
  SK_CHECK(sk_stream_begin_capture(f->s0, "decode again", "early-start=1"));
  chain_with(f, f->s0, 8, f->d, 3, f->rotate);
  SK_CHECK(sk_superkernel_update_from_capture(sk, f->s0));
  uint32_t *updated = run(f, sk);
  clear(f);
  chain_with(f, f->s1, 8, f->d, 3, f->rotate);
  SK_CHECK(sk_stream_synchronize(f->s1));
  uint32_t *unfused = snapshot(f);
  assert_memory_equal(updated, unfused, 4 * N * sizeof(uint32_t));
  assert_memory_not_equal(updated, first, 4 * N * sizeof(uint32_t));
  for (uint32_t i = 0; i < N; ++i) assert_int_equal(updated[2 * N + i], 0); /* c is no longer written */
  free(unfused);
  free(first);

  /* Each kind of difference is named; the super kernel keeps its values; the capture ended. */
  sk_superkernel *out = NULL;
  SK_CHECK(sk_stream_begin_capture(f->s0, "short", "early-start=1"));
  chain_with(f, f->s0, 9, f->c, 3, NULL);
  SK_EXPECT_ERR(sk_superkernel_update_from_capture(sk, f->s0), SK_ERR_INCOMPATIBLE,
                "3 steps captured, 4 in 'decode'");
  SK_EXPECT_MSG("unchanged");
  SK_EXPECT_ERR(sk_stream_end_capture(f->s0, &out), SK_ERR_STATE, "not capturing");
  expect_unchanged(f, sk, updated);

  SK_CHECK(sk_stream_begin_capture(f->s0, "other kernel", "early-start=1"));
  chain_with(f, f->s0, 9, f->c, 3, f->gather);
  SK_EXPECT_ERR(sk_superkernel_update_from_capture(sk, f->s0), SK_ERR_INCOMPATIBLE,
                "step 3: kernel 'capi_rotate' where 'capi_gather' was captured");
  expect_unchanged(f, sk, updated);

  SK_CHECK(sk_stream_begin_capture(f->s0, "other blocks", "early-start=1"));
  chain_with(f, f->s0, 9, f->c, 2, f->rotate);
  SK_EXPECT_ERR(sk_superkernel_update_from_capture(sk, f->s0), SK_ERR_INCOMPATIBLE,
                "step 3 'capi_rotate': block_dim 3 where 2 was captured");
  expect_unchanged(f, sk, updated);

  SK_CHECK(sk_stream_begin_capture(f->s0, "other options", "early-start=0"));
  chain_with(f, f->s0, 9, f->c, 3, f->rotate);
  SK_EXPECT_ERR(sk_superkernel_update_from_capture(sk, f->s0), SK_ERR_INCOMPATIBLE,
                "capture options \"early-start=0\" where 'decode' has \"early-start=1\"");
  expect_unchanged(f, sk, updated);

  /* Events: a stream-fused super kernel, updated from a capture whose second stream waits on
   * nothing. */
  sk_event *e0 = NULL, *e1 = NULL;
  sk_superkernel *fused = NULL;
  SK_CHECK(sk_event_create(f->dev, &e0));
  SK_CHECK(sk_event_create(f->dev, &e1));
  SK_CHECK(sk_stream_begin_capture(f->s0, "streams", "stream-fusion=1"));
  multi_stream(f, NULL, e0, e1);
  SK_CHECK(sk_stream_end_capture(f->s0, &fused));
  SK_CHECK(sk_stream_begin_capture(f->s0, "streams", "stream-fusion=1"));
  multi_stream(f, NULL, e0, e1);
  SK_CHECK(sk_superkernel_update_from_capture(fused, f->s0));
  SK_CHECK(sk_stream_begin_capture(f->s0, "streams", "stream-fusion=1"));
  {
    /* multi_stream's launches, but s0 joins s1 back before its second kernel, not after. */
    uint32_t n = N, seed = 3, seed2 = 99, stride = 13;
    void *fill_a[] = {&f->a, &n, &seed};
    void *gather_b[] = {&f->b, &f->a, &n, &stride};
    void *fill_c[] = {&f->c, &n, &seed2};
    void *rotate_d[] = {&f->d, &f->b, &n};
    SK_CHECK(sk_launch_kernel(f->fill, 2, fill_a, f->s0));
    SK_CHECK(sk_event_record(e0, f->s0));
    SK_CHECK(sk_stream_wait_event(f->s1, e0));
    SK_CHECK(sk_launch_kernel(f->gather, 1, gather_b, f->s1));
    SK_CHECK(sk_event_record(e1, f->s1));
    SK_CHECK(sk_stream_wait_event(f->s0, e1));
    SK_CHECK(sk_launch_kernel(f->fill, 1, fill_c, f->s0));
    SK_CHECK(sk_launch_kernel(f->rotate, 2, rotate_d, f->s0));
  }
  SK_EXPECT_ERR(sk_superkernel_update_from_capture(fused, f->s0), SK_ERR_INCOMPATIBLE,
                "step 2 'capi_fill': waits for steps [] where [1] was captured");
  sk_superkernel_destroy(fused);
  sk_event_destroy(e0);
  sk_event_destroy(e1);

  SK_EXPECT_ERR(sk_superkernel_update_from_capture(sk, f->s0), SK_ERR_STATE, "not capturing");
  SK_EXPECT_ERR(sk_superkernel_update_from_capture(NULL, f->s0), SK_ERR_INVALID_ARGUMENT,
                "sk_superkernel_update_from_capture");
  expect_unchanged(f, sk, updated);
  free(updated);
  sk_superkernel_destroy(sk);
}

/* A pin is part of the structure: a capture that inlines a super kernel whose step is pinned
 * does not update one whose step was placed by the plan. */
static void test_update_compares_pins(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t n = N;
  void *rotate_args[] = {&f->c, &f->b, &n};
  sk_kernel_options pin = SK_KERNEL_OPTIONS_INIT;
  pin.first_core = 1;
  pin.core_count = 1;
  sk_scope *scope = NULL;
  sk_superkernel *placed = NULL, *pinned = NULL, *sk = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "placed", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->rotate, 1, rotate_args, NULL));
  SK_CHECK(sk_finalize(scope, &placed));
  SK_CHECK(sk_scope_begin(f->dev, "pinned", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->rotate, 1, rotate_args, &pin));
  SK_CHECK(sk_finalize(scope, &pinned));
  SK_CHECK(sk_stream_begin_capture(f->s0, "decode", NULL));
  SK_CHECK(sk_launch(placed, f->s0));
  SK_CHECK(sk_stream_end_capture(f->s0, &sk));
  SK_CHECK(sk_stream_begin_capture(f->s0, "decode", NULL));
  SK_CHECK(sk_launch(pinned, f->s0));
  SK_EXPECT_ERR(sk_superkernel_update_from_capture(sk, f->s0), SK_ERR_INCOMPATIBLE,
                "step 0 'capi_rotate': cores placed by the plan where pinned to core 1 was captured");
  SK_CHECK(sk_stream_begin_capture(f->s0, "decode", NULL));
  SK_CHECK(sk_launch(placed, f->s0));
  SK_CHECK(sk_superkernel_update_from_capture(sk, f->s0));
  sk_superkernel_destroy(sk);
  sk_superkernel_destroy(pinned);
  sk_superkernel_destroy(placed);
}

/* Another thread launches (and synchronizes) on its own stream during a capture: its launches
 * run, and the capture records only the capturing stream's. Runs under TSan (scripts/test). */
struct worker {
  struct fixture *f;
  sk_stream *stream;
  uint32_t *buf;
  int ok;
};

static void *work(void *p) {
  struct worker *w = (struct worker *)p;
  uint32_t n = N;
  w->ok = 1;
  for (uint32_t round = 0; round < 50 && w->ok; ++round) {
    void *args[] = {&w->buf, &n, &round};
    if (sk_launch_kernel(w->f->fill, 2, args, w->stream) != SK_OK || sk_stream_synchronize(w->stream) != SK_OK ||
        w->buf[N - 1] != (N - 1) * 2654435761u + round)
      w->ok = 0;
  }
  return NULL;
}

static void test_other_thread_runs_during_capture(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct worker w = {f, f->s1, NULL, 0};
  w.buf = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  pthread_t thread;
  for (int round = 0; round < 5; ++round) {
    clear(f);
    SK_CHECK(sk_stream_begin_capture(f->s0, "decode", NULL));
    assert_int_equal(pthread_create(&thread, NULL, work, &w), 0);
    chain(f, NULL, f->s0);
    sk_superkernel *captured = NULL;
    SK_CHECK(sk_stream_end_capture(f->s0, &captured));
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_true(w.ok);
    uint32_t *fused = run(f, captured);
    clear(f);
    chain(f, NULL, f->s0);
    SK_CHECK(sk_stream_synchronize(f->s0));
    expect_snapshot(f, fused);
    sk_superkernel_destroy(captured);
  }
  sk_mem_free(f->dev, w.buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_capture_equals_scope, setup, teardown),
      cmocka_unit_test_setup_teardown(test_captured_superkernel_inline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_multi_stream_capture_equals_stream_fusion, setup, teardown),
      cmocka_unit_test_setup_teardown(test_captured_stream_fused_superkernel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_uncapturable_calls_invalidate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_capture_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_capture_checks_launch_as_unfused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_multi_stream_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_update_from_capture, setup, teardown),
      cmocka_unit_test_setup_teardown(test_update_compares_pins, setup, teardown),
      cmocka_unit_test_setup_teardown(test_other_thread_runs_during_capture, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
