/* Public C API: sk_launch_repeat runs a super kernel up to n times in one launch. n runs equal n
 * sk_launch calls bit for bit; a kernel that sets the stop flag ends the loop after its run, on
 * every core (each block counts its runs); a flag set before the launch leaves one run, and one a
 * host thread sets ends the loop on every core alike; bad arguments are refused and queue
 * nothing; a hang or an exception ends the loop with the sk_launch report (the super kernel
 * stays usable), a kernel that never returns loses the device. On devices of 1, 2 and 4 cores. */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include <sched.h>
#include <time.h>

#include "test_util.h"

#define N 96u
#define BLOCKS 5u /* more blocks than cores: blocks are multiplexed */

static const char *const kSpecs[] = {"host:cores=1", "host:cores=2", "host:cores=4"};
#define SPECS (sizeof kSpecs / sizeof kSpecs[0])

struct device_kernels {
  sk_device *dev;
  sk_module *chain, *repeat;
  sk_kernel *fill, *axpb, *gather, *rotate, *count, *stop_at, *hang_at;
};

static void open_kernels(struct device_kernels *d, const char *spec) {
  memset(d, 0, sizeof *d);
  SK_CHECK(sk_device_open(spec, &d->dev));
  d->chain = load_kernels(d->dev, TEST_VARIANT, "capi_chain");
  d->repeat = load_kernels(d->dev, TEST_VARIANT, "capi_repeat");
  d->fill = get_kernel(d->chain, "capi_fill");
  d->axpb = get_kernel(d->chain, "capi_axpb");
  d->gather = get_kernel(d->chain, "capi_gather");
  d->rotate = get_kernel(d->chain, "capi_rotate");
  d->count = get_kernel(d->repeat, "capi_count_runs");
  d->stop_at = get_kernel(d->repeat, "capi_stop_at");
  d->hang_at = get_kernel(d->repeat, "capi_hang_at");
}

static void close_device(struct device_kernels *d) {
  sk_module_unload(d->chain);
  sk_module_unload(d->repeat);
  sk_device_close(d->dev);
}

/* The buffers one super kernel works on, in device memory. */
struct buffers {
  uint32_t *a, *b, *c, *counts, *stop;
};

static void alloc_buffers(sk_device *dev, struct buffers *m) {
  uint32_t **all[] = {&m->a, &m->b, &m->c, &m->counts, &m->stop};
  size_t i;
  for (i = 0; i < sizeof all / sizeof all[0]; ++i) {
    SK_CHECK(sk_mem_alloc(dev, N * sizeof(uint32_t), (void **)all[i]));
    memset(*all[i], 0, N * sizeof(uint32_t));
  }
}

static void free_buffers(sk_device *dev, struct buffers *m) {
  sk_mem_free(dev, m->a);
  sk_mem_free(dev, m->b);
  sk_mem_free(dev, m->c);
  sk_mem_free(dev, m->counts);
  sk_mem_free(dev, m->stop);
}

/* A decode-shaped step on m: a = a*3 + 7; b += gather(a); stop_at(counts, stop, stop_at);
 * c = rotate(b); counts[blk] += 1. Each run depends on the one before through a, b and c. */
static sk_superkernel *build_step(struct device_kernels *d, struct buffers *m, const char *name, const char *options,
                                  uint32_t stop_at) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N, stride = 7;
  int32_t mul = 3, add = 7;
  void *axpb_args[] = {&m->a, &n, &mul, &add};
  void *gather_args[] = {&m->b, &m->a, &n, &stride};
  void *stop_args[] = {&m->counts, &m->stop, &stop_at};
  void *rotate_args[] = {&m->c, &m->b, &n};
  void *count_args[] = {&m->counts};
  SK_CHECK(sk_scope_begin(d->dev, name, options, &scope));
  SK_CHECK(sk_add_kernel(scope, d->count, BLOCKS, count_args, NULL));
  SK_CHECK(sk_add_kernel(scope, d->axpb, 3, axpb_args, NULL));
  SK_CHECK(sk_add_kernel(scope, d->gather, BLOCKS, gather_args, NULL));
  SK_CHECK(sk_add_kernel(scope, d->stop_at, 2, stop_args, NULL));
  SK_CHECK(sk_add_kernel(scope, d->rotate, 4, rotate_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

static void seed(struct device_kernels *d, struct buffers *m) {
  uint32_t n = N, s = 11;
  void *fill_args[] = {&m->a, &n, &s};
  SK_CHECK(sk_launch_kernel(d->fill, 3, fill_args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
}

static void assert_same(const struct buffers *x, const struct buffers *y) {
  assert_memory_equal(x->a, y->a, N * sizeof(uint32_t));
  assert_memory_equal(x->b, y->b, N * sizeof(uint32_t));
  assert_memory_equal(x->c, y->c, N * sizeof(uint32_t));
  assert_memory_equal(x->counts, y->counts, N * sizeof(uint32_t));
}

static void assert_runs(const struct buffers *m, uint32_t runs) {
  uint32_t b;
  for (b = 0; b < BLOCKS; ++b) assert_int_equal(m->counts[b], runs);
}

/* n runs of sk_launch_repeat == n sk_launch calls, with no flag and with one never set. */
static void test_equals_launches(void **state) {
  size_t s;
  (void)state;
  for (s = 0; s < SPECS; ++s) {
    struct device_kernels d;
    struct buffers host_loop, device_loop;
    sk_superkernel *one, *rep;
    uint32_t i, never = 0;
    int done = 0;
    open_kernels(&d, kSpecs[s]);
    alloc_buffers(d.dev, &host_loop);
    alloc_buffers(d.dev, &device_loop);
    seed(&d, &host_loop);
    seed(&d, &device_loop);
    one = build_step(&d, &host_loop, "host_loop", NULL, 0);
    rep = build_step(&d, &device_loop, "device_loop", NULL, 0);
    for (i = 0; i < 7; ++i) SK_CHECK(sk_launch(one, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    SK_CHECK(sk_launch_repeat(rep, 7, NULL, NULL));
    /* sk_stream_query sees it end, as it does a launch. */
    while (!done) SK_CHECK(sk_stream_query(d.dev, NULL, &done));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_runs(&device_loop, 7);
    assert_same(&host_loop, &device_loop);
    /* A flag nobody sets; then the same runs once more through sk_launch: the counters of the
     * super kernel's launches go on from where its repeat left them. */
    for (i = 0; i < 5; ++i) SK_CHECK(sk_launch(one, NULL));
    SK_CHECK(sk_launch_repeat(rep, 4, &never, NULL));
    SK_CHECK(sk_launch(rep, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_runs(&device_loop, 12);
    assert_same(&host_loop, &device_loop);
    /* n = 1 is one launch. */
    SK_CHECK(sk_launch(one, NULL));
    SK_CHECK(sk_launch_repeat(rep, 1, NULL, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_same(&host_loop, &device_loop);
    sk_superkernel_destroy(one);
    sk_superkernel_destroy(rep);
    free_buffers(d.dev, &host_loop);
    free_buffers(d.dev, &device_loop);
    close_device(&d);
  }
}

/* A kernel of run k sets the flag: exactly k runs, on every block, equal to k launches; the
 * runs after it are skipped, and the next launches of the super kernel run normally. */
static void test_early_stop(void **state) {
  size_t s;
  (void)state;
  for (s = 0; s < SPECS; ++s) {
    struct device_kernels d;
    struct buffers host_loop, device_loop;
    sk_superkernel *one, *rep;
    uint32_t i;
    open_kernels(&d, kSpecs[s]);
    alloc_buffers(d.dev, &host_loop);
    alloc_buffers(d.dev, &device_loop);
    seed(&d, &host_loop);
    seed(&d, &device_loop);
    one = build_step(&d, &host_loop, "host_loop", NULL, 0);
    rep = build_step(&d, &device_loop, "device_loop", NULL, 3);
    for (i = 0; i < 3; ++i) SK_CHECK(sk_launch(one, NULL));
    SK_CHECK(sk_launch_repeat(rep, 10, device_loop.stop, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_int_equal(device_loop.stop[0], 1);
    assert_runs(&device_loop, 3);
    assert_same(&host_loop, &device_loop);
    /* The flag is still set: the next repeat stops after its first run. */
    SK_CHECK(sk_launch(one, NULL));
    SK_CHECK(sk_launch_repeat(rep, 10, device_loop.stop, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_runs(&device_loop, 4);
    assert_same(&host_loop, &device_loop);
    /* Cleared, with a later stop: two repeats and launches queued back to back. */
    device_loop.stop[0] = 0;
    SK_CHECK(sk_superkernel_set_arg(rep, 3, 2, &(uint32_t){9}));
    for (i = 0; i < 5 + 1 + 3; ++i) SK_CHECK(sk_launch(one, NULL));
    SK_CHECK(sk_launch_repeat(rep, 8, device_loop.stop, NULL)); /* runs 5..9 of 5..12: stops after 9 */
    SK_CHECK(sk_launch(rep, NULL));                             /* 10, which sets the flag again */
    SK_CHECK(sk_launch_repeat(rep, 3, NULL, NULL));             /* 11..13: no flag */
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_runs(&device_loop, 13);
    assert_same(&host_loop, &device_loop);
    sk_superkernel_destroy(one);
    sk_superkernel_destroy(rep);
    free_buffers(d.dev, &host_loop);
    free_buffers(d.dev, &device_loop);
    close_device(&d);
  }
}

/* The flag set before the launch: one run. A flag in memory libsk did not allocate (host
 * memory is the host device's memory) works too. */
static void test_flag_set_before(void **state) {
  size_t s;
  (void)state;
  for (s = 0; s < SPECS; ++s) {
    struct device_kernels d;
    struct buffers m;
    sk_superkernel *rep;
    uint32_t stack_flag = 5;
    open_kernels(&d, kSpecs[s]);
    alloc_buffers(d.dev, &m);
    rep = build_step(&d, &m, "preset", NULL, 0);
    m.stop[0] = 1;
    SK_CHECK(sk_launch_repeat(rep, 8, m.stop, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_runs(&m, 1);
    SK_CHECK(sk_launch_repeat(rep, 8, &stack_flag, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_runs(&m, 2);
    sk_superkernel_destroy(rep);
    free_buffers(d.dev, &m);
    close_device(&d);
  }
}

/* A host thread's atomic store to the flag ends a loop of SK_LAUNCH_REPEAT_MAX runs early. */
static void test_host_sets_the_flag(void **state) {
  size_t s;
  (void)state;
  for (s = 0; s < SPECS; ++s) {
    struct device_kernels d;
    struct buffers m;
    sk_superkernel *rep;
    const struct timespec pause = {0, 5 * 1000 * 1000};
    open_kernels(&d, kSpecs[s]);
    alloc_buffers(d.dev, &m);
    rep = build_step(&d, &m, "host_stops", NULL, 0);
    SK_CHECK(sk_launch_repeat(rep, SK_LAUNCH_REPEAT_MAX, m.stop, NULL));
    nanosleep(&pause, NULL);
    __atomic_store_n(m.stop, 1u, __ATOMIC_RELAXED);
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_true(m.counts[0] >= 1 && m.counts[0] < SK_LAUNCH_REPEAT_MAX);
    assert_runs(&m, m.counts[0]); /* every block ran the same runs */
    sk_superkernel_destroy(rep);
    free_buffers(d.dev, &m);
    close_device(&d);
  }
}

/* Bad arguments fail naming the call, the super kernel and the argument, and queue nothing. */
static void test_errors(void **state) {
  struct device_kernels d;
  sk_device *other;
  struct buffers m;
  sk_superkernel *rep, *gone;
  sk_stream *foreign = NULL;
  uint32_t flags[2] = {0, 0};
  (void)state;
  open_kernels(&d, "host:cores=2");
  SK_CHECK(sk_device_open("host:cores=1", &other));
  alloc_buffers(d.dev, &m);
  rep = build_step(&d, &m, "refused", NULL, 0);
  SK_EXPECT_ERR(sk_launch_repeat(rep, 0, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "n is 0");
  SK_EXPECT_MSG("super kernel 'refused'");
  SK_EXPECT_ERR(sk_launch_repeat(rep, SK_LAUNCH_REPEAT_MAX + 1, NULL, NULL), SK_ERR_INVALID_ARGUMENT,
                "it must be in [1, 4194304]");
  SK_EXPECT_ERR(sk_launch_repeat(rep, 3, (const uint32_t *)((const char *)flags + 1), NULL), SK_ERR_INVALID_ARGUMENT,
                "stop_flag");
  SK_EXPECT_MSG("not aligned to 4 bytes");
  SK_EXPECT_ERR(sk_launch_repeat(NULL, 3, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "sk_launch_repeat");
  SK_CHECK(sk_stream_create(other, &foreign));
  SK_EXPECT_ERR(sk_launch_repeat(rep, 3, NULL, foreign), SK_ERR_INCOMPATIBLE, "different devices");
  sk_stream_destroy(foreign);
  SK_EXPECT_ERR(sk_launch_repeat(rep, 3, NULL, foreign), SK_ERR_STATE, "sk_launch_repeat");
  gone = build_step(&d, &m, "gone", NULL, 0);
  sk_superkernel_destroy(gone);
  SK_EXPECT_ERR(sk_launch_repeat(gone, 3, NULL, NULL), SK_ERR_STATE, "destroyed");
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_runs(&m, 0); /* nothing ran */
  /* The largest n is accepted; its flag, set before, ends it after one run. */
  flags[0] = 1;
  SK_CHECK(sk_launch_repeat(rep, SK_LAUNCH_REPEAT_MAX, flags, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_runs(&m, 1);
  sk_superkernel_destroy(rep);
  free_buffers(d.dev, &m);
  close_device(&d);
  sk_device_close(other);
}

/* Run 3 of 10 can never complete: the deadline aborts the loop there with sk_launch's report
 * (naming the run as the launch), the runs after it are skipped, and the super kernel works
 * again afterwards. */
static void test_hang_ends_the_loop(void **state) {
  sk_device *dev;
  sk_module *mod;
  sk_kernel *count, *hang_at;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t *counts, at = 3, never = 0;
  void *count_args[1], *hang_args[2];
  (void)state;
  SK_CHECK(sk_device_open(SK_TEST_HANG_DEVICE, &dev));
  mod = load_kernels(dev, TEST_VARIANT, "capi_repeat");
  count = get_kernel(mod, "capi_count_runs");
  hang_at = get_kernel(mod, "capi_hang_at");
  SK_CHECK(sk_mem_alloc(dev, 2 * sizeof(uint32_t), (void **)&counts));
  counts[0] = counts[1] = 0;
  count_args[0] = &counts;
  hang_args[0] = &counts;
  hang_args[1] = &at;
  SK_CHECK(sk_scope_begin(dev, "hangs", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, count, 2, count_args, NULL));
  SK_CHECK(sk_add_kernel(scope, hang_at, 2, hang_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_launch_repeat(sk, 10, NULL, NULL));
  SK_EXPECT_ERR(sk_stream_synchronize(NULL), SK_ERR_HANG, "super kernel 'hangs' (launch 3)");
  SK_EXPECT_MSG("at sk_sync_all");
  assert_int_equal(counts[0], 3);
  assert_int_equal(counts[1], 3);
  /* Usable: launches 11.. (the aborted repeat took 1..10) run normally. */
  SK_CHECK(sk_superkernel_set_arg(sk, 1, 1, &never));
  SK_CHECK(sk_launch_repeat(sk, 4, NULL, NULL));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(counts[0], 8);
  assert_int_equal(counts[1], 8);
  /* A hang in a later run of a second repeat is named by its launch number. */
  at = 10;
  SK_CHECK(sk_superkernel_set_arg(sk, 1, 1, &at));
  SK_CHECK(sk_launch_repeat(sk, 5, NULL, NULL)); /* launches 16..20; counts 9, 10: hangs in 17 */
  SK_EXPECT_ERR(sk_stream_synchronize(NULL), SK_ERR_HANG, "super kernel 'hangs' (launch 17)");
  assert_int_equal(counts[0], 10);
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, counts);
  sk_module_unload(mod);
  sk_device_close(dev);
}

/* A kernel of run 3 never returns: the hang watch tells the runs apart, reports that run and
 * loses the device, as for sk_launch; the stuck block, let go, finds what it uses kept. */
static void test_kernel_that_never_returns(void **state) {
  static uint32_t release, done;
  sk_device *dev;
  sk_module *mod;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t *counts, at = 3, *prelease = &release, *pdone = &done;
  void *count_args[1], *spin_args[4];
  sk_status st;
  (void)state;
  SK_CHECK(sk_device_open(SK_TEST_HANG_DEVICE, &dev));
  mod = load_kernels(dev, TEST_VARIANT, "capi_repeat");
  SK_CHECK(sk_mem_alloc(dev, 2 * sizeof(uint32_t), (void **)&counts));
  counts[0] = counts[1] = 0;
  count_args[0] = &counts;
  spin_args[0] = &counts;
  spin_args[1] = &prelease;
  spin_args[2] = &pdone;
  spin_args[3] = &at;
  SK_CHECK(sk_scope_begin(dev, "never_returns", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, get_kernel(mod, "capi_count_runs"), 2, count_args, NULL));
  SK_CHECK(sk_add_kernel(scope, get_kernel(mod, "capi_spin_at"), 2, spin_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_launch_repeat(sk, 10, NULL, NULL));
  st = sk_device_synchronize(dev);
  if (st != SK_ERR_HANG)
    fail_msg("sk_device_synchronize returned %s (%s), expected SK_ERR_HANG", sk_status_name(st), sk_last_error());
  SK_EXPECT_MSG("super kernel 'never_returns' (launch 3)");
  SK_EXPECT_MSG("core 1 in step 1 'capi_spin_at'");
  SK_EXPECT_MSG("never came back");
  assert_int_equal(counts[0], 3);
  SK_EXPECT_ERR(sk_launch_repeat(sk, 2, NULL, NULL), SK_ERR_DEVICE, "lost");
  sk_superkernel_destroy(sk);
  sk_module_unload(mod);
  sk_device_close(dev);
  __atomic_store_n(&release, 1u, __ATOMIC_RELEASE);
  while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) == 0) sched_yield();
}

/* An exception that escapes a kernel ends the loop in its run: SK_ERR_KERNEL, as for sk_launch. */
static void test_exception_ends_the_loop(void **state) {
  sk_device *dev;
  sk_module *mod, *cxx;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t *counts;
  int32_t out[2] = {0, 0}, *pout = out, bad = 1;
  void *count_args[1], *escape_args[2];
  (void)state;
  SK_CHECK(sk_device_open("host:cores=2", &dev));
  mod = load_kernels(dev, TEST_VARIANT, "capi_repeat");
  cxx = load_kernels(dev, TEST_VARIANT, "cxx_features");
  SK_CHECK(sk_mem_alloc(dev, 2 * sizeof(uint32_t), (void **)&counts));
  counts[0] = counts[1] = 0;
  count_args[0] = &counts;
  escape_args[0] = &pout;
  escape_args[1] = &bad;
  SK_CHECK(sk_scope_begin(dev, "throws", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, get_kernel(mod, "capi_count_runs"), 2, count_args, NULL));
  SK_CHECK(sk_add_kernel(scope, get_kernel(cxx, "cxx_escape"), 2, escape_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_launch_repeat(sk, 6, NULL, NULL));
  SK_EXPECT_ERR(sk_stream_synchronize(NULL), SK_ERR_KERNEL, "super kernel 'throws' (launch 1)");
  SK_EXPECT_MSG("kernel 'cxx_escape'");
  assert_int_equal(counts[0], 1);
  assert_int_equal(counts[1], 1);
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, counts);
  sk_module_unload(mod);
  sk_module_unload(cxx);
  sk_device_close(dev);
}

/* profiling=1: the profile is the last run's, as complete as one launch's. */
static void test_profile_is_the_last_run(void **state) {
  size_t s;
  (void)state;
  for (s = 0; s < SPECS; ++s) {
    struct device_kernels d;
    struct buffers m;
    sk_superkernel *rep;
    size_t one_launch = 0, repeated = 0;
    open_kernels(&d, kSpecs[s]);
    alloc_buffers(d.dev, &m);
    rep = build_step(&d, &m, "profiled", "profiling=1", 4);
    SK_CHECK(sk_launch(rep, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    SK_CHECK(sk_superkernel_profile(rep, NULL, 0, &one_launch));
    SK_CHECK(sk_launch_repeat(rep, 9, m.stop, NULL)); /* runs 2, 3, 4: stops at 4 */
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_runs(&m, 4);
    SK_CHECK(sk_superkernel_profile(rep, NULL, 0, &repeated));
    assert_true(one_launch > 0);
    assert_int_equal(repeated, one_launch);
    sk_superkernel_destroy(rep);
    free_buffers(d.dev, &m);
    close_device(&d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equals_launches),
      cmocka_unit_test(test_early_stop),
      cmocka_unit_test(test_flag_set_before),
      cmocka_unit_test(test_host_sets_the_flag),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_hang_ends_the_loop),
      cmocka_unit_test(test_kernel_that_never_returns),
      cmocka_unit_test(test_exception_ends_the_loop),
      cmocka_unit_test(test_profile_is_the_last_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
