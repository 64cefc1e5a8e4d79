/* Public C API: a kernel that calls fork() on a core. The parent's launch completes as any
 * other; a child that _exits itself does so with its own status; a child that returns from the
 * kernel (whose other cores, and the host call waiting for the launch, stayed in the parent)
 * ends at once with status 70 and a line on stderr naming the kernel, instead of waiting for
 * them for ever. On a worker core, on core 0 run by the synchronizing thread, on core 0's own
 * thread (core0=thread), and inside a super kernel. */
#define _GNU_SOURCE /* mkstemp, kill */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define BLOCKS 2u
#define CHILD_DEADLINE_S 30.0
#define RETURNED_CHILD_STATUS 70 /* documented in docs/conventions.md, "fork()" */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* What the child left: its exit status (or signal) and what it wrote to stderr. */
struct child_result {
  int status;
  char err[2048];
};

/* Waits for `pid` until the deadline; a child still running then is killed and fails the test. */
static int wait_with_deadline(pid_t pid) {
  const double start = now_s();
  int status = 0;
  for (;;) {
    const pid_t got = waitpid(pid, &status, WNOHANG);
    assert_true(got == 0 || got == pid);
    if (got == pid) return status;
    if (now_s() - start > CHILD_DEADLINE_S) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fail_msg("the child forked by the kernel (pid %d) did not exit within %.0f s (it hung)", (int)pid,
               CHILD_DEADLINE_S);
    }
    usleep(2000);
  }
}

/* Launches `kernel` (capi_fork_return or capi_fork_exit with `exit_status`) on BLOCKS blocks
 * with block `forker` forking, unfused or (`fused`) after capi_fill in a super kernel, on a
 * device opened with `spec`; checks the parent's launch and every block's mark, then waits for
 * the child. Its stderr goes to a file while the launch runs, to be read back. */
static void run_forking(const char *spec, const char *kernel, uint32_t forker, int fused, uint32_t exit_status,
                        struct child_result *result) {
  sk_device *dev = open_device(spec);
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_fork");
  sk_module *chain = load_kernels(dev, TEST_VARIANT, "capi_chain");
  sk_kernel *k = get_kernel(mod, kernel);
  int32_t *pid = (int32_t *)mem_alloc(dev, sizeof(int32_t));
  uint32_t *out = (uint32_t *)mem_alloc(dev, BLOCKS * sizeof(uint32_t));
  uint32_t *a = (uint32_t *)mem_alloc(dev, 64 * sizeof(uint32_t)), n = 64, seed = 1, b;
  void *args[4], *fill_args[3];
  sk_superkernel *sk = NULL;
  char path[] = "/tmp/sk-kernel-fork-XXXXXX";
  const int file = mkstemp(path);
  const int saved = dup(STDERR_FILENO);
  ssize_t got;
  sk_status st;
  assert_true(file >= 0 && saved >= 0);
  unlink(path);
  args[0] = &pid;
  args[1] = &out;
  args[2] = &forker;
  args[3] = &exit_status;
  fill_args[0] = &a;
  fill_args[1] = &n;
  fill_args[2] = &seed;
  *pid = 0;
  memset(out, 0, BLOCKS * sizeof(uint32_t));
  if (fused) {
    sk_scope *scope = NULL;
    SK_CHECK(sk_scope_begin(dev, "forking_scope", NULL, &scope));
    SK_CHECK(sk_add_kernel(scope, get_kernel(chain, "capi_fill"), BLOCKS, fill_args, NULL));
    SK_CHECK(sk_add_kernel(scope, k, BLOCKS, args, NULL));
    SK_CHECK(sk_finalize(scope, &sk));
  }
  fflush(stderr);
  assert_true(dup2(file, STDERR_FILENO) == STDERR_FILENO);
  st = fused ? sk_launch(sk, NULL) : sk_launch_kernel(k, BLOCKS, args, NULL);
  if (st == SK_OK) st = sk_stream_synchronize(NULL);
  dup2(saved, STDERR_FILENO);
  close(saved);
  if (st != SK_OK)
    fail_msg("%s on %s: the parent's launch returned %s: %s", kernel, spec, sk_status_name(st), sk_last_error());
  for (b = 0; b < BLOCKS; ++b) assert_int_equal(out[b], b + 1);
  if (*pid <= 0) fail_msg("%s: fork() in the kernel failed", kernel);
  result->status = wait_with_deadline(*pid);
  got = pread(file, result->err, sizeof result->err - 1, 0);
  result->err[got > 0 ? got : 0] = '\0';
  close(file);
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, pid);
  sk_mem_free(dev, out);
  sk_mem_free(dev, a);
  sk_module_unload(mod);
  sk_module_unload(chain);
  sk_device_close(dev);
}

/* The child of capi_fork_return ended with the documented status and a line naming the kernel
 * (and `also`, when not NULL). */
static void expect_returned_child_ended(const struct child_result *r, const char *also) {
  if (WIFSIGNALED(r->status)) fail_msg("the child was killed by signal %d; stderr: %s", WTERMSIG(r->status), r->err);
  assert_true(WIFEXITED(r->status));
  if (WEXITSTATUS(r->status) != RETURNED_CHILD_STATUS)
    fail_msg("the child exited with %d, expected %d; stderr: %s", WEXITSTATUS(r->status), RETURNED_CHILD_STATUS,
             r->err);
  if (!strstr(r->err, "capi_fork_return") || !strstr(r->err, "returned from the kernel") ||
      !strstr(r->err, "status 70") || (also && !strstr(r->err, also)))
    fail_msg("the child's stderr does not name the kernel and what happened: \"%s\"", r->err);
}

static void test_child_returning_on_a_worker_core_exits(void **state) {
  struct child_result r;
  (void)state;
  run_forking("host:cores=2,core0=caller", "capi_fork_return", 1, 0, 0, &r);
  expect_returned_child_ended(&r, "core 1");
}

static void test_child_returning_on_core0_exits(void **state) {
  struct child_result r;
  (void)state;
  run_forking("host:cores=2,core0=caller", "capi_fork_return", 0, 0, 0, &r);
  expect_returned_child_ended(&r, "core 0");
}

static void test_child_returning_on_core0_thread_exits(void **state) {
  struct child_result r;
  (void)state;
  run_forking("host:cores=2,core0=thread", "capi_fork_return", 0, 0, 0, &r);
  expect_returned_child_ended(&r, "core 0");
}

static void test_child_returning_in_a_super_kernel_exits(void **state) {
  struct child_result r;
  (void)state;
  run_forking("host:cores=2", "capi_fork_return", 1, 1, 0, &r);
  expect_returned_child_ended(&r, "forking_scope");
}

/* A child that ends itself is left alone: its own status, nothing on stderr from libsk. */
static void test_child_that_exits_itself_keeps_its_status(void **state) {
  struct child_result r;
  uint32_t forker;
  (void)state;
  for (forker = 0; forker < BLOCKS; ++forker) {
    run_forking("host:cores=2", "capi_fork_exit", forker, 0, 3 + forker, &r);
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 3 + forker);
    if (strstr(r.err, "libsk")) fail_msg("libsk wrote to the child's stderr: \"%s\"", r.err);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_child_returning_on_a_worker_core_exits),
      cmocka_unit_test(test_child_returning_on_core0_exits),
      cmocka_unit_test(test_child_returning_on_core0_thread_exits),
      cmocka_unit_test(test_child_returning_in_a_super_kernel_exits),
      cmocka_unit_test(test_child_that_exits_itself_keeps_its_status),
  };
  return cmocka_run_group_tests_name("c_api_kernel_fork", tests, NULL, NULL);
}
