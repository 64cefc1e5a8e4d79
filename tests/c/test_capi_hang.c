/* Public C API: a launch that can never finish (a barrier that only some blocks reach) is
 * aborted at the device's deadline and reported by sk_stream_synchronize as SK_ERR_HANG, with a
 * message naming the super kernel, the kernel, the core and the sync point; the device, the
 * stream and even the super kernel stay usable. A kernel that never returns is reported the
 * same way, and loses the device: launches, allocations and loads on it fail with
 * SK_ERR_DEVICE, closing it does not wait, and a new device works. */
#include <dirent.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define N 256u

struct fixture {
  sk_device *dev;
  sk_module *chain, *sync;
  sk_kernel *fill, *axpb, *hang, *sync_sum;
  uint32_t *a, *b, *out, *partials;
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  if (sk_device_open(SK_TEST_HANG_DEVICE, &f->dev) != SK_OK) return -1;
  f->chain = load_kernels(f->dev, TEST_VARIANT, "capi_chain");
  f->sync = load_kernels(f->dev, "clang-O2-pic", "capi_sync");
  f->fill = get_kernel(f->chain, "capi_fill");
  f->axpb = get_kernel(f->chain, "capi_axpb");
  f->hang = get_kernel(f->sync, "capi_hang_half");
  f->sync_sum = get_kernel(f->sync, "capi_sync_sum");
  f->a = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->b = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->out = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->partials = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_mem_free(f->dev, f->a);
  sk_mem_free(f->dev, f->b);
  sk_mem_free(f->dev, f->out);
  sk_mem_free(f->dev, f->partials);
  sk_module_unload(f->chain);
  sk_module_unload(f->sync);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

/* fill(a); hang_half(out) on 2 blocks; then, with `tail`, axpb(a) (whose cores wait for the
 * hanging step: the report must still point at the barrier that never completes). */
static sk_superkernel *build_hanging(struct fixture *f, const char *name, int tail) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N, seed = 4;
  int32_t mul = 2, add = 1;
  void *fill_args[3], *hang_args[1], *axpb_args[4];
  fill_args[0] = &f->a;
  fill_args[1] = &n;
  fill_args[2] = &seed;
  hang_args[0] = &f->out;
  axpb_args[0] = &f->a;
  axpb_args[1] = &n;
  axpb_args[2] = &mul;
  axpb_args[3] = &add;
  SK_CHECK(sk_scope_begin(f->dev, name, NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 2, fill_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->hang, 2, hang_args, NULL));
  if (tail) SK_CHECK(sk_add_kernel(scope, f->axpb, 3, axpb_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

/* fill(a); sync_sum(a -> b) on 2 blocks; axpb(b): every value checked. */
static sk_superkernel *build_good(struct fixture *f) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N, seed = 21;
  int32_t mul = 3, add = -4;
  void *fill_args[3], *sync_args[4], *axpb_args[4];
  fill_args[0] = &f->a;
  fill_args[1] = &n;
  fill_args[2] = &seed;
  sync_args[0] = &f->a;
  sync_args[1] = &f->partials;
  sync_args[2] = &f->b;
  sync_args[3] = &n;
  axpb_args[0] = &f->b;
  axpb_args[1] = &n;
  axpb_args[2] = &mul;
  axpb_args[3] = &add;
  SK_CHECK(sk_scope_begin(f->dev, "good_after_hang", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 5, fill_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->sync_sum, 2, sync_args, NULL));
  SK_CHECK(sk_add_kernel(scope, f->axpb, 2, axpb_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

static void check_good(const struct fixture *f) {
  uint32_t i, j, total = 0;
  for (j = 0; j < 2; ++j) {
    uint32_t part = 0;
    for (i = j; i < N; i += 2) part += (i * 2654435761u + 21u) * (i | 1u);
    total += part * (j + 1);
  }
  for (i = 0; i < N; ++i) assert_int_equal(f->b[i], ((i * 2654435761u + 21u) + total) * 3u + (uint32_t)-4);
}

static void run_good(struct fixture *f, sk_stream *stream) {
  sk_superkernel *good = build_good(f);
  memset(f->b, 0, N * sizeof(uint32_t));
  SK_CHECK(sk_launch(good, stream));
  SK_CHECK(sk_stream_synchronize(stream));
  check_good(f);
  sk_superkernel_destroy(good);
}

static void expect_hang_report(const char *super_kernel_name) {
  SK_EXPECT_MSG(super_kernel_name);
  SK_EXPECT_MSG("capi_hang_half");
  SK_EXPECT_MSG("core");
  SK_EXPECT_MSG("sk_sync_all");
}

static void test_hang_default_stream(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_superkernel *sk = build_hanging(f, "hanging_scope", 0);
  sk_status st;
  SK_CHECK(sk_launch(sk, NULL)); /* asynchronous: the failure shows at synchronize */
  st = sk_stream_synchronize(NULL);
  if (st != SK_ERR_HANG)
    fail_msg("sk_stream_synchronize returned %s (%s), expected SK_ERR_HANG", sk_status_name(st), sk_last_error());
  expect_hang_report("hanging_scope");
  /* Reported once. */
  SK_CHECK(sk_stream_synchronize(NULL));
  /* The device still runs good work, fused and unfused. */
  run_good(f, NULL);
  {
    uint32_t n = N, seed = 8, i;
    void *args[3];
    args[0] = &f->a;
    args[1] = &n;
    args[2] = &seed;
    SK_CHECK(sk_launch_kernel(f->fill, 3, args, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    for (i = 0; i < N; ++i) assert_int_equal(f->a[i], i * 2654435761u + 8u);
  }
  /* The hanging super kernel itself can be launched again: it hangs again, the same way. */
  SK_CHECK(sk_launch(sk, NULL));
  assert_int_equal(sk_stream_synchronize(NULL), SK_ERR_HANG);
  expect_hang_report("hanging_scope");
  sk_superkernel_destroy(sk);
  run_good(f, NULL);
}

static void test_hang_on_stream(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_superkernel *sk = build_hanging(f, "hang_on_stream", 0);
  sk_stream *stream = NULL;
  SK_CHECK(sk_stream_create(f->dev, &stream));
  SK_CHECK(sk_launch(sk, stream));
  /* A later launch on the same stream waits its turn; the stream reports the first failure. */
  SK_CHECK(sk_launch(sk, stream));
  SK_EXPECT_ERR(sk_stream_synchronize(stream), SK_ERR_HANG, "hang_on_stream");
  expect_hang_report("hang_on_stream");
  SK_CHECK(sk_stream_synchronize(stream));
  run_good(f, stream);
  sk_stream_destroy(stream);
  sk_superkernel_destroy(sk);
}

/* Steps after the hanging one: their cores wait for it and pass their own deadlines too; the
 * report still names the sync point that never completes. */
static void test_hang_report_with_later_steps(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_superkernel *sk = build_hanging(f, "hang_then_more", 1);
  static const char *const needles[] = {"hang_then_more", "capi_hang_half", "core", "sk_sync_all"};
  char report[3][512];
  sk_status st[3];
  int round;
  size_t i;
  for (round = 0; round < 3; ++round) {
    SK_CHECK(sk_launch(sk, NULL));
    st[round] = sk_stream_synchronize(NULL);
    snprintf(report[round], sizeof report[round], "%s", sk_last_error());
  }
  sk_superkernel_destroy(sk); /* before any check can fail: nothing leaks */
  run_good(f, NULL);
  for (round = 0; round < 3; ++round) {
    if (st[round] != SK_ERR_HANG)
      fail_msg("launch %d: sk_stream_synchronize returned %s (%s), expected SK_ERR_HANG", round,
               sk_status_name(st[round]), report[round]);
    for (i = 0; i < sizeof needles / sizeof needles[0]; ++i)
      if (!strstr(report[round], needles[i]))
        fail_msg("launch %d: hang report \"%s\" does not name \"%s\"", round, report[round], needles[i]);
  }
}

/* The same kernel launched unfused hangs the same way. */
static void test_hang_unfused(void **state) {
  struct fixture *f = (struct fixture *)*state;
  void *args[1];
  args[0] = &f->out;
  SK_CHECK(sk_launch_kernel(f->hang, 2, args, NULL));
  SK_EXPECT_ERR(sk_stream_synchronize(NULL), SK_ERR_HANG, "capi_hang_half");
  SK_EXPECT_MSG("sk_sync_all");
  SK_EXPECT_MSG("core");
  run_good(f, NULL);
}

/* One block only: the barrier is over the kernel's own cores and completes. */
static void test_no_hang_single_block(void **state) {
  struct fixture *f = (struct fixture *)*state;
  void *args[1];
  args[0] = &f->out;
  f->out[0] = 0;
  SK_CHECK(sk_launch_kernel(f->hang, 1, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(f->out[0], 1);
}

/* A device with one block of capi_spin or capi_spin_sync stuck until *release is set. */
struct lost {
  sk_device *dev;
  sk_module *mod;
  sk_kernel *kernel;
  uint32_t *release, *out;
  uint32_t stuck;
  void *args[3];
};

static void lost_open(struct lost *l, const char *kernel, uint32_t stuck, uint32_t *release) {
  l->dev = open_device(SK_TEST_HANG_DEVICE);
  l->mod = load_kernels(l->dev, TEST_VARIANT, "capi_spin");
  l->kernel = get_kernel(l->mod, kernel);
  l->out = (uint32_t *)mem_alloc(l->dev, 2 * sizeof(uint32_t));
  l->release = release;
  l->stuck = stuck;
  l->args[0] = &l->release;
  l->args[1] = &l->out;
  l->args[2] = &l->stuck;
}

/* The report of the launch that lost the device names the kernel and the core in it. */
static void expect_lost_report(const char *kernel, uint32_t core) {
  char needle[64];
  SK_EXPECT_MSG(kernel);
  SK_EXPECT_MSG("never came back");
  snprintf(needle, sizeof needle, "core %u in step", core);
  SK_EXPECT_MSG(needle);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Threads of this process named as libsk's cores are ("sk-core-N") that are running, not
 * asleep: a core that finished its work sleeps once its idle spin ran out. */
static int running_core_threads(void) {
  DIR *dir = opendir("/proc/self/task");
  struct dirent *e;
  int n = 0;
  assert_non_null(dir);
  while ((e = readdir(dir)) != NULL) {
    char path[300], name[32] = "", stat[512] = "";
    const char *end;
    FILE *f;
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    if (!(f = fopen(path, "r"))) continue; /* it exited meanwhile */
    if (!fgets(name, sizeof name, f)) name[0] = '\0';
    fclose(f);
    if (strncmp(name, "sk-core-", 8) != 0) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    if (!(f = fopen(path, "r"))) continue;
    if (fgets(stat, sizeof stat, f) && (end = strrchr(stat, ')')) != NULL && end[1] == ' ' && end[2] == 'R') ++n;
    fclose(f);
  }
  closedir(dir);
  return n;
}

/* Everything after the hang: refused with SK_ERR_DEVICE naming the loss, the kernel and the
 * core; close returns; a new device runs work; the stuck block, let go, finds its memory, and
 * its core completes the launch (writing its failure into the stream's state, which must still
 * be there) before it goes to sleep. */
static void check_lost(struct lost *l, const char *kernel, uint32_t *release) {
  char path[1024];
  sk_module *mod = SENTINEL(sk_module);
  void *p = SENTINEL(void);
  int done = 0;
  SK_EXPECT_ERR(sk_launch_kernel(l->kernel, 2, l->args, NULL), SK_ERR_DEVICE, "lost");
  expect_lost_report(kernel, l->stuck);
  SK_EXPECT_ERR(sk_mem_alloc(l->dev, 64, &p), SK_ERR_DEVICE, "lost");
  assert_ptr_equal(p, SENTINEL(void));
  kernel_path(path, sizeof path, TEST_VARIANT, "capi_chain");
  SK_EXPECT_ERR(sk_module_load_file(l->dev, path, &mod), SK_ERR_DEVICE, "lost");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  SK_EXPECT_ERR(sk_device_synchronize(l->dev), SK_ERR_DEVICE, "lost");
  SK_EXPECT_ERR(sk_stream_query(l->dev, NULL, &done), SK_ERR_DEVICE, "lost");
  sk_mem_free(l->dev, l->out); /* kept: the stuck block still writes it */
  sk_module_unload(l->mod);
  sk_device_close(l->dev);
  {
    sk_device *dev = open_device("host:cores=2");
    sk_module *chain = load_kernels(dev, TEST_VARIANT, "capi_chain");
    uint32_t *a = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t)), n = N, seed = 3, i;
    void *args[3];
    args[0] = &a;
    args[1] = &n;
    args[2] = &seed;
    SK_CHECK(sk_launch_kernel(get_kernel(chain, "capi_fill"), 4, args, NULL));
    SK_CHECK(sk_device_synchronize(dev));
    for (i = 0; i < N; ++i) assert_int_equal(a[i], i * 2654435761u + 3u);
    sk_mem_free(dev, a);
    sk_module_unload(chain);
    sk_device_close(dev);
  }
  /* Let the stuck block go: it returns into state its device kept (ASan would see a use after
   * free) and writes its mark. */
  {
    const double deadline = now_s() + 30.0;
    __atomic_store_n(release, 1u, __ATOMIC_RELEASE);
    while (__atomic_load_n(&l->out[l->stuck], __ATOMIC_ACQUIRE) != l->stuck + 1) sched_yield();
    while (running_core_threads() > 0) {
      if (now_s() > deadline) fail_msg("a core still runs 30 s after the stuck block was let go");
      usleep(1000);
    }
  }
}

/* Block 1 never returns; sk_device_synchronize (whose thread runs core 0) reports it. */
static void test_lost_kernel_never_returns(void **state) {
  static uint32_t release;
  struct lost l;
  sk_status st;
  (void)state;
  lost_open(&l, "capi_spin", 1, &release);
  SK_CHECK(sk_launch_kernel(l.kernel, 2, l.args, NULL));
  st = sk_device_synchronize(l.dev);
  if (st != SK_ERR_HANG)
    fail_msg("sk_device_synchronize returned %s (%s), expected SK_ERR_HANG", sk_status_name(st), sk_last_error());
  expect_lost_report("capi_spin", 1);
  SK_EXPECT_MSG("lost");
  check_lost(&l, "capi_spin", &release);
}

/* Block 1 never reaches sk_sync_all, where block 0 waits for it: the report names both, in a
 * super kernel, on a stream. */
static void test_lost_with_others_in_sync_all(void **state) {
  static uint32_t release;
  struct lost l;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_stream *stream = NULL;
  sk_status st;
  (void)state;
  lost_open(&l, "capi_spin_sync", 1, &release);
  SK_CHECK(sk_scope_begin(l.dev, "spin_scope", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, l.kernel, 2, l.args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_stream_create(l.dev, &stream));
  SK_CHECK(sk_launch(sk, stream));
  st = sk_stream_synchronize(stream);
  if (st != SK_ERR_HANG)
    fail_msg("sk_stream_synchronize returned %s (%s), expected SK_ERR_HANG", sk_status_name(st), sk_last_error());
  expect_lost_report("capi_spin_sync", 1);
  SK_EXPECT_MSG("spin_scope");
  SK_EXPECT_MSG("core 0 is in step 0 'capi_spin_sync', at sk_sync_all");
  SK_EXPECT_ERR(sk_launch(sk, stream), SK_ERR_DEVICE, "lost");
  /* The stuck launch still reads its arguments: a rebind would write under it. */
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 0, 0, l.args[0]), SK_ERR_DEVICE, "sk_superkernel_set_arg");
  SK_EXPECT_ERR(sk_stream_synchronize(stream), SK_ERR_DEVICE, "capi_spin_sync");
  sk_stream_destroy(stream);
  sk_superkernel_destroy(sk); /* kept: the stuck block runs in its program */
  check_lost(&l, "capi_spin_sync", &release);
}

/* Block 0 never returns. Polled with sk_stream_query, which runs no kernel itself, so core 0's
 * own thread is the one held, and the poll reports it. */
static void test_lost_core0_polled(void **state) {
  static uint32_t release;
  struct lost l;
  sk_status st;
  int done = 0;
  (void)state;
  lost_open(&l, "capi_spin", 0, &release);
  SK_CHECK(sk_launch_kernel(l.kernel, 2, l.args, NULL));
  while ((st = sk_stream_query(l.dev, NULL, &done)) == SK_OK && !done) usleep(1000);
  if (st != SK_ERR_HANG)
    fail_msg("sk_stream_query returned %s (%s, done %d), expected SK_ERR_HANG", sk_status_name(st), sk_last_error(),
             done);
  expect_lost_report("capi_spin", 0);
  check_lost(&l, "capi_spin", &release);
}

/* As above, on a stream of its own that is destroyed before the stuck block is let go: the
 * block's core then completes the launch and records its failure in the stream's state, which
 * must outlive the stream (ASan and TSan see a use after free otherwise). */
static void test_lost_core0_stream_destroyed_first(void **state) {
  static uint32_t release;
  struct lost l;
  sk_stream *stream = NULL;
  sk_status st;
  int done = 0;
  (void)state;
  lost_open(&l, "capi_spin", 0, &release);
  SK_CHECK(sk_stream_create(l.dev, &stream));
  SK_CHECK(sk_launch_kernel(l.kernel, 2, l.args, stream));
  while ((st = sk_stream_query(l.dev, stream, &done)) == SK_OK && !done) usleep(1000);
  if (st != SK_ERR_HANG)
    fail_msg("sk_stream_query returned %s (%s, done %d), expected SK_ERR_HANG", sk_status_name(st), sk_last_error(),
             done);
  expect_lost_report("capi_spin", 0);
  sk_stream_destroy(stream);
  check_lost(&l, "capi_spin", &release);
}

/* Both blocks, core 0's included, never return, and the caller synchronizes. The device was
 * opened with timeout_ms (SK_TEST_HANG_DEVICE), so core 0 runs on a thread of its own and the
 * synchronize reports the hang, naming both cores, within a few deadlines (it hung for ever
 * when the synchronizing thread ran core 0's block itself). */
static void test_lost_core0_synchronize_returns(void **state) {
  static uint32_t release;
  struct lost l;
  sk_status st;
  double start, took;
  (void)state;
  lost_open(&l, "capi_spin_all", 0, &release);
  SK_CHECK(sk_launch_kernel(l.kernel, 2, l.args, NULL));
  start = now_s();
  st = sk_stream_synchronize(NULL);
  took = now_s() - start;
  if (st != SK_ERR_HANG)
    fail_msg("sk_stream_synchronize returned %s (%s), expected SK_ERR_HANG", sk_status_name(st), sk_last_error());
  expect_lost_report("capi_spin_all", 0);
  SK_EXPECT_MSG("core 1 in step");
  SK_EXPECT_MSG("lost");
  /* The watch needs timeout_ms without progress, seen by a look every quarter of it. */
  if (took > 20.0) fail_msg("the hang was reported after %.1f s", took);
  check_lost(&l, "capi_spin_all", &release);
}

/* sk_stream_query on a healthy device: done once the launch ended, its failure reported once. */
static void test_query(void **state) {
  struct fixture *f = (struct fixture *)*state;
  void *args[1];
  int done = 0;
  sk_status st;
  args[0] = &f->out;
  SK_CHECK(sk_launch_kernel(f->hang, 2, args, NULL));
  while ((st = sk_stream_query(f->dev, NULL, &done)) == SK_OK && !done) usleep(1000);
  assert_int_equal(st, SK_ERR_HANG);
  SK_EXPECT_MSG("capi_hang_half");
  done = 0;
  SK_CHECK(sk_stream_query(f->dev, NULL, &done));
  assert_int_equal(done, 1);
  SK_EXPECT_ERR(sk_stream_query(f->dev, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "done");
  run_good(f, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hang_default_stream),
      cmocka_unit_test(test_hang_on_stream),
      cmocka_unit_test(test_hang_report_with_later_steps),
      cmocka_unit_test(test_hang_unfused),
      cmocka_unit_test(test_no_hang_single_block),
      cmocka_unit_test(test_query),
      cmocka_unit_test(test_lost_kernel_never_returns),
      cmocka_unit_test(test_lost_with_others_in_sync_all),
      cmocka_unit_test(test_lost_core0_polled),
      cmocka_unit_test(test_lost_core0_stream_destroyed_first),
      cmocka_unit_test(test_lost_core0_synchronize_returns),
  };
  return cmocka_run_group_tests_name("c_api_hang", tests, setup, teardown);
}
