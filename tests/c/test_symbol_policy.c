/* Public C API: the device spec key symbols=strict limits what kernel objects bind to (the
 * device API, libm, the libc memory/string functions listed in docs/conventions.md);
 * symbols=process (the default) binds anything the process defines. */
#include "test_util.h"

static void expect_refused(sk_device *dev, const char *variant, const char *object, const char *symbol) {
  char path[1024];
  sk_module *mod = SENTINEL(sk_module);
  sk_status st;
  kernel_path(path, sizeof path, variant, object);
  st = sk_module_load_file(dev, path, &mod);
  if (st != SK_ERR_UNSUPPORTED)
    fail_msg("%s under symbols=strict: %s (%s), expected SK_ERR_UNSUPPORTED", path, sk_status_name(st),
             sk_last_error());
  SK_EXPECT_MSG(symbol);
  SK_EXPECT_MSG(path);
  SK_EXPECT_MSG("symbols=strict");
  assert_ptr_equal(mod, SENTINEL(sk_module));
}

/* Runs strict_mathmem and checks what it computed; returns whether `system` was reachable. */
static int run_mathmem(sk_device *dev, const char *variant) {
  sk_module *mod = load_kernels(dev, variant, "strict_mathmem");
  sk_kernel *k = get_kernel(mod, "strict_mathmem");
  int32_t out[8] = {0}, in[4] = {5, -6, 7, -8}, *pout = out, *pin = in;
  uint32_t n = 4;
  float x = 1.0f;
  const char *text = "strict";
  void *args[5];
  int reachable;
  args[0] = &pout;
  args[1] = &pin;
  args[2] = &n;
  args[3] = &x;
  args[4] = &text;
  SK_CHECK(sk_launch_kernel(k, 2, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(out[0], 2718);
  assert_int_equal(out[1], 6);
  assert_memory_equal(out + 3, in, sizeof in);
  reachable = out[2];
  sk_module_unload(mod);
  return reachable;
}

static void test_strict_allows_math_and_memory(void **state) {
  static const char *const variants[] = {"gcc-O0-pie", "gcc-O2-pic", "clang-O2-pie", "clang-O3-pic"};
  sk_device *strict = open_device("host:cores=2,symbols=strict");
  sk_device *process = open_device("host:cores=2,symbols=process");
  size_t i;
  (void)state;
  for (i = 0; i < sizeof variants / sizeof variants[0]; ++i) {
    /* A weak reference to a function outside the list stays unbound under strict. */
    assert_int_equal(run_mathmem(strict, variants[i]), 0);
    assert_int_equal(run_mathmem(process, variants[i]), 1);
  }
  sk_device_close(strict);
  sk_device_close(process);
}

static void test_strict_refuses_the_rest(void **state) {
  sk_device *strict = open_device("host:cores=1,symbols=strict");
  sk_device *process = open_device("host:cores=1");
  sk_module *mod = NULL;
  char path[1024];
  (void)state;
  expect_refused(strict, TEST_VARIANT, "bad_getenv", "'getenv'");
  expect_refused(strict, "clang-O0-pie", "bad_getenv", "'getenv'");
  expect_refused(strict, TEST_VARIANT, "thirdparty_calc", "'snprintf'");
  /* An undefined symbol no one defines is refused by the policy before it is looked up. */
  expect_refused(strict, TEST_VARIANT, "capi_undef", "'capi_no_such_function_anywhere'");
  /* The same bytes load under the default policy (another device, another link). */
  kernel_path(path, sizeof path, TEST_VARIANT, "bad_getenv");
  SK_CHECK(sk_module_load_file(process, path, &mod));
  sk_module_unload(mod);
  /* Kernels that use only the device API load under strict. */
  sk_module_unload(load_kernels(strict, TEST_VARIANT, "capi_chain"));
  sk_module_unload(load_kernels(strict, "clang-O0-nopic", "capi_sync"));
  sk_device_close(strict);
  sk_device_close(process);
}

/* libsk's host API is refused under every policy: sk_stream_synchronize from a kernel would wait
 * on the launch running it. The message names the symbol and the object. */
static void test_host_api_refused(void **state) {
  static const char *const specs[] = {"host:cores=1", "host:cores=1,symbols=process", "host:cores=1,symbols=strict"};
  static const char *const variants[] = {"gcc-O0-pie", "gcc-O2-nopic", "clang-O3-pic"};
  size_t i, j;
  (void)state;
  for (i = 0; i < sizeof specs / sizeof specs[0]; ++i) {
    sk_device *dev = open_device(specs[i]);
    for (j = 0; j < sizeof variants / sizeof variants[0]; ++j) {
      char path[1024];
      sk_module *mod = SENTINEL(sk_module);
      sk_status st;
      kernel_path(path, sizeof path, variants[j], "host_api_call");
      st = sk_module_load_file(dev, path, &mod);
      if (st != SK_ERR_UNSUPPORTED)
        fail_msg("%s on %s: %s (%s), expected SK_ERR_UNSUPPORTED", path, specs[i], sk_status_name(st),
                 sk_last_error());
      SK_EXPECT_MSG("'sk_stream_synchronize'");
      SK_EXPECT_MSG("host API");
      SK_EXPECT_MSG(path);
      assert_ptr_equal(mod, SENTINEL(sk_module));
    }
    sk_device_close(dev);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strict_allows_math_and_memory),
      cmocka_unit_test(test_strict_refuses_the_rest),
      cmocka_unit_test(test_host_api_refused),
  };
  return cmocka_run_group_tests_name("c_symbol_policy", tests, NULL, NULL);
}
