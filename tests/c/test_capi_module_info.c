/* Public C API: the kernels a module declares (sk_module_kernel_count, sk_module_kernel_name) and
 * what a kernel takes (sk_kernel_signature, sk_kernel_core_type), with their buffer protocol. */
#include "test_util.h"

typedef sk_status (*kernel_string_fn)(sk_kernel *, char *, size_t, size_t *);

/* The string a kernel call returns, after a size query; the caller frees it. */
static char *kernel_string(kernel_string_fn fn, sk_kernel *k) {
  size_t size = 0;
  char *text;
  SK_CHECK(fn(k, NULL, 0, &size));
  assert_true(size >= 1);
  text = (char *)malloc(size);
  assert_non_null(text);
  SK_CHECK(fn(k, text, size, NULL));
  assert_int_equal(strlen(text) + 1, size);
  return text;
}

static char *kernel_name(sk_module *mod, size_t index) {
  size_t size = 0;
  char *text;
  SK_CHECK(sk_module_kernel_name(mod, index, NULL, 0, &size));
  text = (char *)malloc(size);
  assert_non_null(text);
  SK_CHECK(sk_module_kernel_name(mod, index, text, size, NULL));
  assert_int_equal(strlen(text) + 1, size);
  return text;
}

static void expect_kernel(sk_module *mod, const char *name, const char *signature, const char *core_type) {
  sk_kernel *k = get_kernel(mod, name);
  char *sig = kernel_string(sk_kernel_signature, k), *type = kernel_string(sk_kernel_core_type, k);
  assert_string_equal(sig, signature);
  assert_string_equal(type, core_type);
  free(sig);
  free(type);
}

static void test_declared_kernels(void **state) {
  sk_module *mod = load_kernels((sk_device *)*state, TEST_VARIANT, "capi_misc");
  static const char *const expected[] = {"capi_noargs", "capi_read_counter", "capi_types"};
  int seen[3] = {0, 0, 0};
  size_t count = 0, i, j;
  SK_CHECK(sk_module_kernel_count(mod, &count));
  /* capi_plain_add has no SK_KERNEL record: defined, but not declared. */
  assert_int_equal(count, 3);
  for (i = 0; i < count; ++i) { /* in the section's order, which is the compiler's */
    char *name = kernel_name(mod, i);
    for (j = 0; j < 3; ++j) seen[j] += strcmp(name, expected[j]) == 0;
    free(name);
  }
  assert_true(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
  sk_module_unload(mod);
}

static void test_signatures_and_core_types(void **state) {
  sk_module *misc = load_kernels((sk_device *)*state, TEST_VARIANT, "capi_misc");
  sk_module *mixed = load_kernels((sk_device *)*state, TEST_VARIANT, "capi_mixed");
  sk_kernel *plain = NULL;
  char *text;
  expect_kernel(misc, "capi_noargs", "", "vector");
  expect_kernel(misc, "capi_types", "ptr,i8,u16,i64,f32,f64,u8", "vector");
  expect_kernel(mixed, "cube_tag", "ptr,u32", "cube");
  expect_kernel(mixed, "mix_tile_scale", "ptr,ptr,ptr,ptr,u32", "mix_1_1");
  expect_kernel(mixed, "mix12_where", "ptr", "mix_1_2");
  /* Without metadata: the signature given (without its spaces), the default core type. */
  SK_CHECK(sk_module_get_kernel_with_signature(misc, "capi_plain_add", "ptr, u32,u32", &plain));
  text = kernel_string(sk_kernel_signature, plain);
  assert_string_equal(text, "ptr,u32,u32");
  free(text);
  text = kernel_string(sk_kernel_core_type, plain);
  assert_string_equal(text, "vector");
  free(text);
  sk_module_unload(mixed);
  sk_module_unload(misc);
}

/* sk_module_get_kernel_desc on the host: a signature is taken as with _with_signature, the
 * GPU launch facts are refused by name, a NULL desc is sk_module_get_kernel. */
static void test_kernel_desc(void **state) {
  sk_module *misc = load_kernels((sk_device *)*state, TEST_VARIANT, "capi_misc");
  sk_kernel *plain = NULL, *again = NULL, *types = NULL, *bad = (sk_kernel *)0x1;
  sk_kernel_desc desc;
  char *text;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.signature = "ptr,u32,u32";
  SK_CHECK(sk_module_get_kernel_desc(misc, "capi_plain_add", &desc, &plain));
  SK_CHECK(sk_module_get_kernel_with_signature(misc, "capi_plain_add", "ptr,u32,u32", &again));
  assert_ptr_equal(plain, again); /* one handle per name and signature */
  text = kernel_string(sk_kernel_signature, plain);
  assert_string_equal(text, "ptr,u32,u32");
  free(text);
  SK_CHECK(sk_module_get_kernel_desc(misc, "capi_types", NULL, &types));
  assert_ptr_equal(types, get_kernel(misc, "capi_types"));
  desc.signature = NULL;
  desc.threads = 128;
  assert_int_equal(sk_module_get_kernel_desc(misc, "capi_types", &desc, &bad), SK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(sk_last_error(), "capi_types"));
  assert_non_null(strstr(sk_last_error(), "threads, dynamic_shared, block and cluster"));
  desc.threads = 0;
  desc.dynamic_shared = 64;
  assert_int_equal(sk_module_get_kernel_desc(misc, "capi_types", &desc, &bad), SK_ERR_INVALID_ARGUMENT);
  desc.dynamic_shared = 0;
  desc.block[1] = 4;
  assert_int_equal(sk_module_get_kernel_desc(misc, "capi_types", &desc, &bad), SK_ERR_INVALID_ARGUMENT);
  desc.block[1] = 0;
  desc.cluster[0] = 2; /* a host block is one call: no cluster */
  assert_int_equal(sk_module_get_kernel_desc(misc, "capi_types", &desc, &bad), SK_ERR_INVALID_ARGUMENT);
  desc.cluster[0] = 0;
  desc.struct_size = 4;
  assert_int_equal(sk_module_get_kernel_desc(misc, "capi_types", &desc, &bad), SK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(sk_last_error(), "struct_size"));
  assert_ptr_equal(bad, (sk_kernel *)0x1);
  sk_module_unload(misc);
}

static void test_buffer_protocol(void **state) {
  sk_module *mod = load_kernels((sk_device *)*state, TEST_VARIANT, "capi_misc");
  sk_kernel *k = get_kernel(mod, "capi_types");
  char small[4] = "xyz", exact[26], message[64], *first = kernel_name(mod, 0);
  size_t needed = 0, count = 7;
  /* A cap too small fails, says the size, and leaves the buffer alone. */
  SK_EXPECT_ERR(sk_kernel_signature(k, small, sizeof small, &needed), SK_ERR_INVALID_ARGUMENT, "needs 26 bytes");
  assert_int_equal(needed, 26);
  assert_string_equal(small, "xyz");
  SK_EXPECT_ERR(sk_kernel_signature(k, NULL, 8, &needed), SK_ERR_INVALID_ARGUMENT, "buf is NULL");
  SK_EXPECT_ERR(sk_kernel_signature(k, NULL, 0, NULL), SK_ERR_INVALID_ARGUMENT, "sk_kernel_signature");
  SK_EXPECT_ERR(sk_kernel_core_type(k, small, 0, &needed), SK_ERR_INVALID_ARGUMENT, "core type");
  assert_int_equal(needed, 7);
  SK_CHECK(sk_kernel_signature(k, exact, sizeof exact, &needed));
  assert_string_equal(exact, "ptr,i8,u16,i64,f32,f64,u8");
  /* Names: an index past the count, then the out-parameter checks. */
  SK_EXPECT_ERR(sk_module_kernel_name(mod, 3, exact, sizeof exact, &needed), SK_ERR_INVALID_ARGUMENT,
                "declares 3 kernels; index 3");
  snprintf(message, sizeof message, "the name of kernel 0 needs %zu bytes", strlen(first) + 1);
  SK_EXPECT_ERR(sk_module_kernel_name(mod, 0, small, sizeof small, &needed), SK_ERR_INVALID_ARGUMENT, message);
  assert_int_equal(needed, strlen(first) + 1);
  free(first);
  SK_EXPECT_ERR(sk_module_kernel_count(mod, NULL), SK_ERR_INVALID_ARGUMENT, "out is NULL");
  sk_module_unload(mod);
  /* Stale handles are refused, the out-parameters untouched. */
  SK_EXPECT_ERR(sk_module_kernel_count(mod, &count), SK_ERR_STATE, "sk_module_kernel_count");
  assert_int_equal(count, 7);
  SK_EXPECT_ERR(sk_kernel_core_type(k, exact, sizeof exact, NULL), SK_ERR_STATE, "unloaded");
  SK_EXPECT_ERR(sk_kernel_signature((sk_kernel *)(void *)*state, exact, sizeof exact, NULL), SK_ERR_INVALID_ARGUMENT,
                "kernel");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_declared_kernels, test_setup_host_device, test_teardown_device),
      cmocka_unit_test_setup_teardown(test_signatures_and_core_types, test_setup_host_device, test_teardown_device),
      cmocka_unit_test_setup_teardown(test_buffer_protocol, test_setup_host_device, test_teardown_device),
      cmocka_unit_test_setup_teardown(test_kernel_desc, test_setup_host_device, test_teardown_device),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
