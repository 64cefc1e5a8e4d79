/* Public C API: a kernel compiled the distribution's way (-fPIE, gcc and clang, -O0 to -O3)
 * reads and writes process data that lies far apart: `stderr` (copy-relocated into this
 * executable, which uses it) and `far_host_counter` (this executable's own, exported), and
 * libc's `stdin` and `optind` (left in libc: this file never names them). The variables are
 * shared: the host sees the kernel's stores and the kernel the host's. */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"

int far_host_counter;

static const char *const variants[] = {"gcc-O0-pie",   "gcc-O2-pie",    "gcc-O3-pie", "clang-O0-pie",
                                       "clang-O2-pie", "clang-O3-pie",  "gcc-O2-pic", "clang-O2-pic",
                                       "gcc-O2-nopic", "clang-O2-nopic"};

static void launch(sk_kernel *k, int64_t *out) {
  int64_t *p = out;
  void *args[1];
  args[0] = &p;
  memset(out, 0, 4 * sizeof *out);
  SK_CHECK(sk_launch_kernel(k, 1, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
}

static void test_process_data_is_shared(void **state) {
  sk_device *dev = open_device("host:cores=2");
  void *const *libc_stdin = (void *const *)dlsym(RTLD_DEFAULT, "stdin");
  int *libc_optind = (int *)dlsym(RTLD_DEFAULT, "optind");
  const int saved_optind = libc_optind ? *libc_optind : 0;
  uintptr_t a = (uintptr_t)&stderr, b = (uintptr_t)libc_stdin;
  size_t i;
  (void)state;
  assert_non_null(libc_stdin);
  assert_non_null(libc_optind);
  print_message("stderr's copy at %p, libc's stdin at %p: %s\n", (void *)&stderr, (void *)libc_stdin,
                (a > b ? a - b : b - a) > ((uintptr_t)1 << 32) ? "beyond 4 GiB of each other" : "close");
  for (i = 0; i < sizeof variants / sizeof variants[0]; ++i) {
    sk_module *mod = load_kernels(dev, variants[i], "far_process_data");
    sk_kernel *k = get_kernel(mod, "far_process_data");
    int64_t out[4];
    far_host_counter = 10;
    *libc_optind = 1;
    launch(k, out);
    assert_true(out[0] == (int64_t)(intptr_t)stderr);
    assert_true(out[1] == (int64_t)(intptr_t)*libc_stdin);
    assert_int_equal(out[2], 1);
    assert_int_equal(out[3], 10);
    assert_int_equal(*libc_optind, 6); /* the kernel's stores, seen by the host */
    assert_int_equal(far_host_counter, 21);
    far_host_counter = 100; /* the host's stores, seen by the kernel */
    *libc_optind = 3;
    launch(k, out);
    assert_int_equal(out[2], 3);
    assert_int_equal(out[3], 100);
    assert_int_equal(*libc_optind, 8);
    assert_int_equal(far_host_counter, 201);
    sk_module_unload(mod);
  }
  *libc_optind = saved_optind;
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_process_data_is_shared),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
