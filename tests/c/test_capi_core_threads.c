/* Public C API: the host device's core threads: which thread runs core 0 (device key core0, and
 * its default), and their stacks. Without stack_kb a core gets what
 * the main thread may grow to, the RLIMIT_STACK soft limit when the device opens, and 64 MiB
 * when that is unlimited (where glibc gives threads 2 MiB on x86-64); stack_kb=N sets it. A
 * kernel with a deep stack (a 3 MiB alloca, every page touched) then runs on every core as it
 * runs natively, and one deeper than stack_kb overflows, which crashes the process as natively
 * (checked in a forked child). A kernel whose parameters passed by value would not fit a core's
 * stack is refused when it is taken, and a thread whose own stack cannot hold them leaves core 0
 * to libsk's thread. The process runs with an unlimited soft limit from its start
 * (main() re-executes itself so) when the hard limit allows. */
#define _GNU_SOURCE /* execv, syscall */
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#define BLOCKS 2u
#define DEEP_KIB 3072u             /* above glibc's 2 MiB default, below any default here */
#define UNLIMITED_STACK_KIB 65536u /* documented in sk.h, "Host device keys", stack_kb */
#define REEXEC_MARK "SK_TEST_STACK_REEXECUTED"

/* Launches capi_thread_id `launches` times on a device opened with `spec` (each launch
 * synchronized right away); *on_caller: launches whose block 0 ran on this thread;
 * *core0_threads: distinct threads that ran block 0. Block 1 must never run here. */
static void who_runs_core0(const char *spec, int launches, int *on_caller, int *core0_threads) {
  sk_device *dev = open_device(spec);
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_thread");
  int64_t *tid = (int64_t *)mem_alloc(dev, BLOCKS * sizeof(int64_t)), seen[64];
  const int64_t me = (int64_t)syscall(SYS_gettid);
  void *args[1];
  int i, j, distinct = 0;
  assert_true(launches <= 64);
  args[0] = &tid;
  *on_caller = 0;
  for (i = 0; i < launches; ++i) {
    SK_CHECK(sk_launch_kernel(get_kernel(mod, "capi_thread_id"), BLOCKS, args, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_true(tid[1] != me);
    *on_caller += tid[0] == me;
    for (j = 0; j < distinct && seen[j] != tid[0]; ++j) {
    }
    if (j == distinct) seen[distinct++] = tid[0];
  }
  *core0_threads = distinct;
  sk_mem_free(dev, tid);
  sk_module_unload(mod);
  sk_device_close(dev);
}

/* The long idle spin keeps core 1 from calling core 0's thread for 10 s: in caller mode the
 * synchronizing thread is then the one that runs core 0. */
#define QUIET_CORE1 ",spin_us=10000000"
#define LAUNCHES 20

static void test_core0_caller_runs_on_the_synchronizing_thread(void **state) {
  int on_caller, threads;
  (void)state;
  who_runs_core0("host:cores=2,core0=caller" QUIET_CORE1, LAUNCHES, &on_caller, &threads);
  assert_int_equal(on_caller, LAUNCHES);
  /* The default without timeout_ms. */
  who_runs_core0("host:cores=2" QUIET_CORE1, LAUNCHES, &on_caller, &threads);
  assert_int_equal(on_caller, LAUNCHES);
}

/* core0=thread, and the default with timeout_ms given: one thread of libsk's runs core 0. */
static void test_core0_thread_never_runs_on_the_caller(void **state) {
  static const char *const specs[] = {"host:cores=2,core0=thread" QUIET_CORE1,
                                      "host:cores=2,timeout_ms=10000" QUIET_CORE1};
  int on_caller, threads;
  size_t i;
  (void)state;
  for (i = 0; i < sizeof specs / sizeof specs[0]; ++i) {
    who_runs_core0(specs[i], LAUNCHES, &on_caller, &threads);
    if (on_caller != 0 || threads != 1)
      fail_msg("%s: block 0 ran %d times of %d on the caller, on %d threads", specs[i], on_caller, LAUNCHES,
               threads);
  }
  /* Explicit caller mode wins over timeout_ms. */
  who_runs_core0("host:cores=2,timeout_ms=10000,core0=caller" QUIET_CORE1, LAUNCHES, &on_caller, &threads);
  assert_int_equal(on_caller, LAUNCHES);
}

/* The stack size in KiB of the thread running each block, as glibc reports it. */
static void stack_sizes(const char *spec, uint64_t *kib) {
  sk_device *dev = open_device(spec);
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_thread");
  uint64_t *out = (uint64_t *)mem_alloc(dev, BLOCKS * sizeof(uint64_t));
  void *args[1];
  args[0] = &out;
  SK_CHECK(sk_launch_kernel(get_kernel(mod, "capi_stack_kib"), BLOCKS, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  memcpy(kib, out, BLOCKS * sizeof(uint64_t));
  sk_mem_free(dev, out);
  sk_module_unload(mod);
  sk_device_close(dev);
}

/* glibc gives a thread at least the size asked for, and may give it the cached stack of a thread
 * that ended if that is at most four times larger. */
static void expect_stack(uint64_t got, uint64_t want, uint32_t block, const char *spec) {
  if (got < want || got > 4 * want + 64)
    fail_msg("%s: block %u ran on a thread with a %llu KiB stack, expected %llu KiB", spec, block,
             (unsigned long long)got, (unsigned long long)want);
}

/* In a forked child: capi_deep_stack(kib) on every block of a device opened with `spec`. Returns
 * the child's wait status: exit 0 when every block wrote the sum of its pages. */
static int deep_stack_in_child(const char *spec, uint32_t kib) {
  pid_t pid;
  int status = 0;
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    sk_device *dev = NULL;
    sk_module *mod = NULL;
    sk_kernel *k = NULL;
    uint32_t *out = NULL, b, page, want = 0;
    void *args[2];
    char path[1024];
    alarm(60);
    if (sk_device_open(spec, &dev) != SK_OK) _exit(10);
    kernel_path(path, sizeof path, TEST_VARIANT, "capi_thread");
    if (sk_module_load_file(dev, path, &mod) != SK_OK || sk_module_get_kernel(mod, "capi_deep_stack", &k) != SK_OK ||
        sk_mem_alloc(dev, BLOCKS * sizeof(uint32_t), (void **)&out) != SK_OK)
      _exit(11);
    args[0] = &out;
    args[1] = &kib;
    if (sk_launch_kernel(k, BLOCKS, args, NULL) != SK_OK || sk_stream_synchronize(NULL) != SK_OK) _exit(12);
    for (page = 0; page < kib / 4; ++page) want += page & 0xffu;
    for (b = 0; b < BLOCKS; ++b)
      if (out[b] != want) _exit(13);
    _exit(0);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

static void expect_deep_stack_runs(const char *spec) {
  const int status = deep_stack_in_child(spec, DEEP_KIB);
  if (WIFSIGNALED(status))
    fail_msg("%s: a kernel using %u KiB of stack was killed by signal %d (a core's stack is too small)", spec,
             DEEP_KIB, WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("%s: the child failed its check %d", spec, WEXITSTATUS(status));
}

static int stack_unlimited(void) {
  struct rlimit limit;
  return getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
}

/* With RLIMIT_STACK unlimited, every core's thread gets the cap, and a deep kernel runs on
 * every core: on core 0's own thread, and beside the caller running core 0. */
static void test_unlimited_stack_gets_the_cap(void **state) {
  uint64_t kib[BLOCKS];
  uint32_t b;
  (void)state;
  if (!stack_unlimited()) skip(); /* the hard limit is finite here */
  stack_sizes("host:cores=2,core0=thread", kib);
  for (b = 0; b < BLOCKS; ++b) expect_stack(kib[b], UNLIMITED_STACK_KIB, b, "host:cores=2,core0=thread");
  expect_deep_stack_runs("host:cores=2,core0=thread");
  expect_deep_stack_runs("host:cores=2,core0=caller");
}

/* A finite limit set after the process started (which glibc's default for threads does not
 * follow) is what the cores get. */
static void test_cores_follow_the_limit_when_the_device_opens(void **state) {
  struct rlimit saved, limit;
  uint64_t kib[BLOCKS], want;
  uint32_t b;
  (void)state;
  assert_int_equal(getrlimit(RLIMIT_STACK, &saved), 0);
  limit = saved;
  limit.rlim_cur = 12u << 20;
  if (saved.rlim_max != RLIM_INFINITY && limit.rlim_cur > saved.rlim_max) limit.rlim_cur = saved.rlim_max;
  want = limit.rlim_cur / 1024;
  assert_int_equal(setrlimit(RLIMIT_STACK, &limit), 0);
  /* qemu-user accepts setrlimit(RLIMIT_STACK) and keeps its own limit: nothing to measure. */
  if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur / 1024 != want) {
    assert_int_equal(setrlimit(RLIMIT_STACK, &saved), 0);
    skip();
  }
  stack_sizes("host:cores=2,core0=thread", kib);
  assert_int_equal(setrlimit(RLIMIT_STACK, &saved), 0);
  for (b = 0; b < BLOCKS; ++b) expect_stack(kib[b], want, b, "host:cores=2,core0=thread (12 MiB limit)");
}

/* stack_kb sets every core thread's stack, core 0's own thread included; a kernel deeper than it
 * overflows it, and the process crashes, as a native thread's would. */
static void test_stack_kb_sets_the_stack(void **state) {
  uint64_t kib[BLOCKS];
  uint32_t b;
  int status;
  (void)state;
  stack_sizes("host:cores=2,core0=thread,stack_kb=1024", kib);
  for (b = 0; b < BLOCKS; ++b) expect_stack(kib[b], 1024, b, "stack_kb=1024");
  stack_sizes("host:cores=2,core0=caller,stack_kb=4096", kib);
  expect_stack(kib[1], 4096, 1, "core0=caller,stack_kb=4096"); /* block 0 ran on the caller's stack */
  expect_deep_stack_runs("host:cores=2,core0=thread,stack_kb=4096");
  /* 512 KiB: no stack glibc may hand out for it holds DEEP_KIB. */
  /* A crash: SIGSEGV, or under a sanitizer (which handles the fault and reports it) its exit
   * status, never one of the child's own (0 or 10-13). */
  status = deep_stack_in_child("host:cores=2,core0=thread,stack_kb=512", DEEP_KIB);
  if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) &&
      !(WIFEXITED(status) && WEXITSTATUS(status) != 0 && (WEXITSTATUS(status) < 10 || WEXITSTATUS(status) > 13)))
    fail_msg("a kernel using %u KiB of stack with stack_kb=512: child status 0x%x, expected a crash", DEEP_KIB,
             status);
}

/* capi_big_args's three 32 KiB aggregates, each byte its index's low byte times the aggregate's
 * number, and the sum the kernel writes for them. */
static struct { uint8_t b[32768]; } big[3];
static int64_t big_sum(void) {
  int64_t sum = 0;
  size_t a, i;
  for (a = 0; a < 3; ++a)
    for (i = 0; i < sizeof big[a].b; ++i) {
      big[a].b[i] = (uint8_t)(i * (a + 1));
      sum += (int64_t)(a + 1) * big[a].b[i];
    }
  return sum;
}

/* Launches capi_big_args on `dev` over two blocks, synchronized at once, `launches` times from
 * the calling thread; writes the sum and the thread of block 0 of the last launch. */
struct big_run {
  sk_device *dev;
  sk_kernel *k;
  int launches;
  int64_t out[4], caller;
  sk_status st;
};
static void *run_big(void *arg) {
  struct big_run *r = (struct big_run *)arg;
  int64_t *out = (int64_t *)r->out;
  void *args[4];
  int i;
  args[0] = &out;
  args[1] = &big[0];
  args[2] = &big[1];
  args[3] = &big[2];
  r->caller = (int64_t)syscall(SYS_gettid);
  r->st = SK_OK;
  for (i = 0; i < r->launches && r->st == SK_OK; ++i) {
    memset(r->out, 0, sizeof r->out);
    r->st = sk_launch_kernel(r->k, 2, args, NULL);
    if (r->st == SK_OK) r->st = sk_stream_synchronize(NULL);
  }
  return NULL;
}

/* Runs run_big on a thread of `stack_kib` KiB of stack; checks each block's sum. Returns
 * whether block 0 ran on that thread. */
static int big_on_thread(sk_device *dev, sk_kernel *k, size_t stack_kib, int64_t want) {
  struct big_run r;
  pthread_attr_t attr;
  pthread_t thread;
  memset(&r, 0, sizeof r);
  r.dev = dev;
  r.k = k;
  r.launches = 5;
  assert_int_equal(pthread_attr_init(&attr), 0);
  assert_int_equal(pthread_attr_setstacksize(&attr, stack_kib * 1024), 0);
  assert_int_equal(pthread_create(&thread, &attr, run_big, &r), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  pthread_attr_destroy(&attr);
  if (r.st != SK_OK) fail_msg("a thread of %zu KiB: %s: %s", stack_kib, sk_status_name(r.st), sk_last_error());
  assert_int_equal(r.out[0], want);
  assert_int_equal(r.out[2], want);
  return r.out[1] == r.caller;
}

/* 96 KiB of aggregates by value (their copies: twice that on x86-64) do not fit a 128 KiB core
 * stack: refused when the kernel is taken, naming the kernel and the device key; 256 KiB holds
 * them on every core. */
static void test_parameters_larger_than_a_core_stack_are_refused(void **state) {
  const int64_t want = big_sum();
  sk_device *dev = open_device("host:cores=2,core0=thread,stack_kb=128");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_thread");
  sk_kernel *k = SENTINEL(sk_kernel);
  (void)state;
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "capi_big_args", &k), SK_ERR_INCOMPATIBLE, "kernel 'capi_big_args'");
  SK_EXPECT_MSG("device's 128 KiB per core (device key stack_kb): open the device with stack_kb=");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  sk_module_unload(mod);
  sk_device_close(dev);
  dev = open_device("host:cores=2,core0=thread,stack_kb=256");
  mod = load_kernels(dev, TEST_VARIANT, "capi_thread");
  assert_false(big_on_thread(dev, get_kernel(mod, "capi_big_args"), 1024, want));
  sk_module_unload(mod);
  sk_device_close(dev);
}

/* In caller mode the synchronizing thread runs core 0 (QUIET_CORE1), unless its own stack cannot
 * hold the parameters of the device's kernels: then libsk's core-0 thread runs the blocks and
 * the thread only waits, where it overflowed its stack. */
static void test_a_thread_with_too_small_a_stack_leaves_core0_to_libsk(void **state) {
  const int64_t want = big_sum();
  sk_device *dev = open_device("host:cores=2,core0=caller" QUIET_CORE1);
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_thread");
  sk_kernel *k = get_kernel(mod, "capi_big_args");
  (void)state;
  assert_false(big_on_thread(dev, k, 128, want));
  assert_true(big_on_thread(dev, k, 4096, want));
  sk_module_unload(mod);
  sk_device_close(dev);
}

static void test_bad_stack_keys(void **state) {
  static const char *const bad[] = {"host:stack_kb=0", "host:stack_kb=127", "host:stack_kb=1048577",
                                    "host:stack_kb=8M", "host:stack_kb="};
  sk_device *dev = SENTINEL(sk_device);
  size_t i;
  (void)state;
  for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    SK_EXPECT_ERR(sk_device_open(bad[i], &dev), SK_ERR_INVALID_ARGUMENT, "'stack_kb'");
    SK_EXPECT_MSG("[128, 1048576]");
    assert_ptr_equal(dev, SENTINEL(sk_device));
  }
  SK_EXPECT_ERR(sk_device_open("host:core0=both", &dev), SK_ERR_INVALID_ARGUMENT, "'core0'");
  SK_EXPECT_MSG("caller or thread");
  assert_ptr_equal(dev, SENTINEL(sk_device));
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_core0_caller_runs_on_the_synchronizing_thread),
      cmocka_unit_test(test_core0_thread_never_runs_on_the_caller),
      cmocka_unit_test(test_unlimited_stack_gets_the_cap),
      cmocka_unit_test(test_cores_follow_the_limit_when_the_device_opens),
      cmocka_unit_test(test_stack_kb_sets_the_stack),
      cmocka_unit_test(test_parameters_larger_than_a_core_stack_are_refused),
      cmocka_unit_test(test_a_thread_with_too_small_a_stack_leaves_core0_to_libsk),
      cmocka_unit_test(test_bad_stack_keys),
  };
#if !defined(SK_TEST_EMULATED)
  /* glibc sizes its threads by the limit at process start: start again with it unlimited, so
   * that libsk's cores are measured against what glibc would have given them. */
  struct rlimit limit;
  (void)argc;
  if (!getenv(REEXEC_MARK) && getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_max == RLIM_INFINITY) {
    limit.rlim_cur = RLIM_INFINITY;
    if (setrlimit(RLIMIT_STACK, &limit) == 0 && setenv(REEXEC_MARK, "1", 1) == 0) execv("/proc/self/exe", argv);
  }
#else
  (void)argc;
  (void)argv;
#endif
  return cmocka_run_group_tests_name("c_api_core_threads", tests, NULL, NULL);
}
