/* Public C API across fork(): a host device opened before the fork has no core threads in the
 * child. There its launches and the synchronizes of its streams fail with SK_ERR_STATE at once
 * (they hung), sk_stream_synchronize(NULL) leaves it out, closing it returns (it joined threads
 * the child does not have), and a device opened in the child computes what the parent's does.
 * The parent's device is untouched, even with a launch running through the fork. Each child
 * reports by its exit status; alarm() turns a hang into a failure. (A fork while another thread
 * holds one of libsk's locks: tests/cpp/common/fork_guard_test.cpp.) */
#define _GNU_SOURCE /* fork, alarm */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define N 1024u
#define CHILD_ALARM_S 60

/* In a child, a failed check exits with `code` (cmocka's asserts would go on running the other
 * tests in the child). */
#define CHILD_CHECK(cond, code)                                                                                  \
  do {                                                                                                           \
    if (!(cond)) {                                                                                               \
      fprintf(stderr, "child: %s:%d: %s failed (last error: %s)\n", __FILE__, __LINE__, #cond, sk_last_error()); \
      _exit(code);                                                                                               \
    }                                                                                                            \
  } while (0)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* capi_fill then capi_axpb over `buf`: what the super kernel below computes. */
static uint32_t expected(uint32_t i, uint32_t seed) { return (i * 2654435761u + seed) * 3u + 7u; }

static sk_status build_fill_axpb(sk_device *dev, sk_module *mod, uint32_t *buf, uint32_t seed,
                                 sk_superkernel **out) {
  sk_kernel *fill = NULL, *axpb = NULL;
  sk_scope *scope = NULL;
  uint32_t n = N;
  int32_t a = 3, b = 7;
  void *fill_args[] = {&buf, &n, &seed};
  void *axpb_args[] = {&buf, &n, &a, &b};
  sk_status st;
  if ((st = sk_module_get_kernel(mod, "capi_fill", &fill)) != SK_OK) return st;
  if ((st = sk_module_get_kernel(mod, "capi_axpb", &axpb)) != SK_OK) return st;
  if ((st = sk_scope_begin(dev, "fork", NULL, &scope)) != SK_OK) return st;
  if ((st = sk_add_kernel(scope, fill, 2, fill_args, NULL)) != SK_OK ||
      (st = sk_add_kernel(scope, axpb, 2, axpb_args, NULL)) != SK_OK) {
    sk_scope_abort(scope);
    return st;
  }
  return sk_finalize(scope, out);
}

static int buffer_is(const uint32_t *buf, uint32_t seed) {
  uint32_t i;
  for (i = 0; i < N; ++i)
    if (buf[i] != expected(i, seed)) return 0;
  return 1;
}

#if !defined(SK_TEST_EMULATED)
/* In a forked child: a device opened there computes what the parent's did (exits on failure). */
static void child_opens_its_own_device(void) {
  sk_device *own = NULL;
  sk_module *own_mod = NULL;
  uint32_t *own_buf = NULL;
  sk_superkernel *own_sk = NULL;
  char path[1024];
  sk_stream *own_stream = NULL;
  CHILD_CHECK(sk_device_open("host:cores=2", &own) == SK_OK, 9);
  CHILD_CHECK(sk_stream_create(own, &own_stream) == SK_OK, 16);
  sk_stream_destroy(own_stream);
  kernel_path(path, sizeof path, TEST_VARIANT, "capi_chain");
  CHILD_CHECK(sk_module_load_file(own, path, &own_mod) == SK_OK, 10);
  CHILD_CHECK(sk_mem_alloc(own, N * sizeof(uint32_t), (void **)&own_buf) == SK_OK, 11);
  CHILD_CHECK(build_fill_axpb(own, own_mod, own_buf, 9, &own_sk) == SK_OK, 12);
  CHILD_CHECK(sk_launch(own_sk, NULL) == SK_OK && sk_stream_synchronize(NULL) == SK_OK, 13);
  CHILD_CHECK(buffer_is(own_buf, 9), 14);
  sk_superkernel_destroy(own_sk);
  sk_mem_free(own, own_buf);
  sk_module_unload(own_mod);
  sk_device_close(own);
}
#endif

/* Waits for the child; fails the test unless it exited with 0. */
static void expect_child_passed(pid_t pid) {
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status))
    fail_msg("child killed by signal %d%s", WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0) fail_msg("child failed its check %d (its stderr says which)", WEXITSTATUS(status));
}

static void test_a_forked_child_gets_errors_then_opens_its_own_device(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_chain");
  uint32_t *buf = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
  sk_superkernel *sk = NULL;
  sk_stream *stream = NULL;
  sk_kernel *fill = get_kernel(mod, "capi_fill");
  uint32_t n = N, seed = 11;
  void *fill_args[] = {&buf, &n, &seed};
  pid_t pid;
  (void)state;
  SK_CHECK(build_fill_axpb(dev, mod, buf, 5, &sk));
  SK_CHECK(sk_stream_create(dev, &stream));
  SK_CHECK(sk_launch(sk, stream));
  SK_CHECK(sk_stream_synchronize(stream));
  assert_true(buffer_is(buf, 5));

  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    double t0 = now_s();
    alarm(CHILD_ALARM_S);
    /* The parent's device: errors that say what happened and what to do, at once. */
    CHILD_CHECK(sk_launch(sk, NULL) == SK_ERR_STATE, 1);
    CHILD_CHECK(strstr(sk_last_error(), "launch of 'fork'") && strstr(sk_last_error(), "forked") &&
                    strstr(sk_last_error(), "Open a new device"),
                2);
    CHILD_CHECK(sk_launch_kernel(fill, 2, fill_args, NULL) == SK_ERR_STATE, 3);
    CHILD_CHECK(strstr(sk_last_error(), "launch of 'capi_fill'") != NULL, 4);
    CHILD_CHECK(sk_stream_synchronize(stream) == SK_ERR_STATE, 5);
    CHILD_CHECK(strstr(sk_last_error(), "sk_stream_synchronize") != NULL, 6);
    /* "every open device" leaves it out: nothing of it runs here. */
    CHILD_CHECK(sk_stream_synchronize(NULL) == SK_OK, 7);
    CHILD_CHECK(buffer_is(buf, 5), 8); /* the refused launch of capi_fill wrote nothing */
#if !defined(SK_TEST_EMULATED)
    /* qemu-user cannot start threads in the fork child of a threaded process (it aborts on an
     * assertion of its own): the device of its own is checked natively only. */
    child_opens_its_own_device(); /* beside the parent's */
#endif
    /* The parent's objects come apart without waiting for threads that are not here. */
    sk_stream_destroy(stream);
    sk_superkernel_destroy(sk);
    sk_mem_free(dev, buf);
    sk_module_unload(mod);
    sk_device_close(dev);
    CHILD_CHECK(now_s() - t0 < 10.0, 15);
    _exit(0);
  }
  expect_child_passed(pid);
  /* The parent's device never noticed. */
  SK_CHECK(sk_superkernel_set_arg(sk, 0, 2, &seed));
  SK_CHECK(sk_launch(sk, stream));
  SK_CHECK(sk_stream_synchronize(stream));
  assert_true(buffer_is(buf, 11));
  sk_stream_destroy(stream);
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, buf);
  sk_module_unload(mod);
  sk_device_close(dev);
}

/* Forked while a launch runs: the child's synchronize returns at once instead of waiting for
 * cores it does not have; the parent's launch runs on to its end. */
static void test_a_launch_running_through_a_fork_ends_in_the_parent_only(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_streams");
  sk_kernel *handshake = get_kernel(mod, "stream_handshake");
  volatile uint32_t *flags = (volatile uint32_t *)mem_alloc(dev, 2 * sizeof(uint32_t));
  uint32_t *met = (uint32_t *)mem_alloc(dev, 2 * sizeof(uint32_t));
  uint32_t mine = 0, theirs = 1, epoch = 1, spins = 2000000000u;
  void *args[] = {&flags, &met, &mine, &theirs, &epoch, &spins};
  pid_t pid;
  (void)state;
  sk_stream *stream = NULL;
  flags[0] = flags[1] = 0;
  met[0] = 0;
  SK_CHECK(sk_stream_create(dev, &stream));
  /* Block 0 waits until flags[1] says `epoch`: until this thread writes it. */
  SK_CHECK(sk_launch_kernel(handshake, 1, args, stream));
  while (__atomic_load_n(&flags[0], __ATOMIC_SEQ_CST) != epoch) {
  }
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    double t0 = now_s();
    alarm(CHILD_ALARM_S);
    CHILD_CHECK(sk_stream_synchronize(stream) == SK_ERR_STATE, 1);
    CHILD_CHECK(sk_stream_synchronize(NULL) == SK_OK, 3); /* the parent's device left out */
    sk_stream_destroy(stream);
    sk_mem_free(dev, met);
    sk_mem_free(dev, (void *)flags);
    sk_module_unload(mod);
    sk_device_close(dev);
    CHILD_CHECK(now_s() - t0 < 5.0, 2);
    _exit(0);
  }
  expect_child_passed(pid);
  __atomic_store_n(&flags[1], epoch, __ATOMIC_SEQ_CST);
  SK_CHECK(sk_stream_synchronize(stream));
  assert_int_equal(met[0], 1);
  sk_stream_destroy(stream);
  sk_mem_free(dev, met);
  sk_mem_free(dev, (void *)flags);
  sk_module_unload(mod);
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_forked_child_gets_errors_then_opens_its_own_device),
      cmocka_unit_test(test_a_launch_running_through_a_fork_ends_in_the_parent_only),
  };
  return cmocka_run_group_tests_name("c_api_fork", tests, NULL, NULL);
}
