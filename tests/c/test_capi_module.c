/* Public C API: loading kernel objects (file and memory) and finding kernels in them. */
#include <unistd.h>

#include "test_util.h"

static const char *const all_variants[] = {
    "gcc-O0-pie",   "gcc-O0-pic",   "gcc-O0-nopic",   "gcc-O2-pie",   "gcc-O2-pic",   "gcc-O2-nopic",
    "gcc-O3-pie",   "gcc-O3-pic",   "gcc-O3-nopic",   "clang-O0-pie", "clang-O0-pic", "clang-O0-nopic",
    "clang-O2-pie", "clang-O2-pic", "clang-O2-nopic", "clang-O3-pie", "clang-O3-pic", "clang-O3-nopic"};

/* Writes `size` bytes to a fresh temporary file; returns its path in `path`. */
static void write_temp(char *path, size_t cap, const void *data, size_t size) {
  int fd;
  assert_true(cap > 32);
  snprintf(path, cap, "/tmp/sk_capi_test_XXXXXX");
  fd = mkstemp(path);
  assert_true(fd >= 0);
  if (size) assert_int_equal(write(fd, data, size), (ssize_t)size);
  close(fd);
}

static void test_load_file_missing(void **state) {
  sk_device *dev = (sk_device *)*state;
  sk_module *mod = SENTINEL(sk_module);
  const char *path = "/nonexistent/dir/capi_missing_object.o";
  SK_EXPECT_ERR(sk_module_load_file(dev, path, &mod), SK_ERR_NOT_FOUND, path);
  assert_ptr_equal(mod, SENTINEL(sk_module));
}

static void test_load_file_and_memory(void **state) {
  sk_device *dev = (sk_device *)*state;
  char path[1024];
  unsigned char *bytes;
  size_t size = 0;
  sk_module *a = NULL, *b = NULL, *c = NULL;
  sk_kernel *noargs, *read_a, *read_b;
  uint32_t *counter = (uint32_t *)mem_alloc(dev, sizeof(uint32_t));
  void *args[1];
  args[0] = &counter;

  kernel_path(path, sizeof path, TEST_VARIANT, "capi_misc");
  bytes = read_whole_file(path, &size);
  assert_true(size > 64);
  /* The same bytes twice: both loads work and give usable modules. */
  SK_CHECK(sk_module_load(dev, bytes, size, &a));
  SK_CHECK(sk_module_load(dev, bytes, size, &b));
  SK_CHECK(sk_module_load_file(dev, path, &c));
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  /* The bytes are copied: the caller may drop its buffer right away. */
  memset(bytes, 0, size);
  free(bytes);
  noargs = get_kernel(a, "capi_noargs");
  read_a = get_kernel(a, "capi_read_counter");
  read_b = get_kernel(b, "capi_read_counter");
  /* Linked once: the module state (a static counter) is shared by both loads. */
  SK_CHECK(sk_launch_kernel(noargs, 5, NULL, NULL));
  SK_CHECK(sk_launch_kernel(read_b, 1, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(*counter, 5);
  sk_module_unload(b);
  SK_CHECK(sk_launch_kernel(noargs, 2, NULL, NULL));
  SK_CHECK(sk_launch_kernel(read_a, 1, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(*counter, 7);
  /* The file's bytes are the same too. */
  SK_CHECK(sk_launch_kernel(get_kernel(c, "capi_read_counter"), 1, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(*counter, 7);
  sk_module_unload(a);
  sk_module_unload(c);
  sk_mem_free(dev, counter);
}

static void test_load_bad_bytes(void **state) {
  sk_device *dev = (sk_device *)*state;
  sk_module *mod = SENTINEL(sk_module);
  unsigned char garbage[512];
  char path[1024], tmp[64];
  unsigned char *bytes;
  size_t size = 0, i;
  for (i = 0; i < sizeof garbage; ++i) garbage[i] = (unsigned char)(i * 37 + 11);
  SK_EXPECT_ERR(sk_module_load(dev, garbage, sizeof garbage, &mod), SK_ERR_BAD_BINARY, "512 bytes");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  SK_EXPECT_ERR(sk_module_load(dev,
                               "\x7f"
                               "ELF",
                               4, &mod),
                SK_ERR_BAD_BINARY, "4 bytes");
  assert_ptr_equal(mod, SENTINEL(sk_module));

  kernel_path(path, sizeof path, TEST_VARIANT, "capi_chain");
  bytes = read_whole_file(path, &size);
  /* Truncated: inside the ELF header, then without the section header table (at the end). */
  SK_EXPECT_ERR(sk_module_load(dev, bytes, 40, &mod), SK_ERR_BAD_BINARY, "40 bytes");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  SK_EXPECT_ERR(sk_module_load(dev, bytes, size / 2, &mod), SK_ERR_BAD_BINARY, "bytes");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  SK_EXPECT_ERR(sk_module_load(dev, bytes, size - 1, &mod), SK_ERR_BAD_BINARY, "bytes");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  /* The same from a file: the message names the path. */
  write_temp(tmp, sizeof tmp, bytes, size / 2);
  SK_EXPECT_ERR(sk_module_load_file(dev, tmp, &mod), SK_ERR_BAD_BINARY, tmp);
  assert_ptr_equal(mod, SENTINEL(sk_module));
  unlink(tmp);
  write_temp(tmp, sizeof tmp, bytes, 0);
  SK_EXPECT_ERR(sk_module_load_file(dev, tmp, &mod), SK_ERR_BAD_BINARY, tmp);
  assert_ptr_equal(mod, SENTINEL(sk_module));
  unlink(tmp);
  write_temp(tmp, sizeof tmp, garbage, sizeof garbage);
  SK_EXPECT_ERR(sk_module_load_file(dev, tmp, &mod), SK_ERR_BAD_BINARY, tmp);
  assert_ptr_equal(mod, SENTINEL(sk_module));
  unlink(tmp);
  /* Another machine (e_machine AArch64 = 183, or x86-64 = 62 on an AArch64 host): well-formed
   * but not loadable here. */
#if defined(__aarch64__)
  bytes[18] = 62;
  bytes[19] = 0;
  SK_EXPECT_ERR(sk_module_load(dev, bytes, size, &mod), SK_ERR_UNSUPPORTED, "e_machine 62");
#else
  bytes[18] = 183;
  bytes[19] = 0;
  SK_EXPECT_ERR(sk_module_load(dev, bytes, size, &mod), SK_ERR_UNSUPPORTED, "183");
#endif
  assert_ptr_equal(mod, SENTINEL(sk_module));
  free(bytes);
  /* The device is still fine after all of that. */
  sk_module_unload(load_kernels(dev, TEST_VARIANT, "capi_chain"));
}

static void test_load_unsupported_and_unresolved(void **state) {
  sk_device *dev = (sk_device *)*state;
  sk_module *mod = SENTINEL(sk_module);
  char path[1024];
  size_t i;
  for (i = 0; i < sizeof all_variants / sizeof all_variants[0]; ++i) {
    kernel_path(path, sizeof path, all_variants[i], "capi_undef");
    SK_EXPECT_ERR(sk_module_load_file(dev, path, &mod), SK_ERR_NOT_FOUND, "capi_no_such_function_anywhere");
    assert_ptr_equal(mod, SENTINEL(sk_module));
    kernel_path(path, sizeof path, all_variants[i], "capi_badtype");
    SK_EXPECT_ERR(sk_module_load_file(dev, path, &mod), SK_ERR_BAD_BINARY, "warp9");
    assert_ptr_equal(mod, SENTINEL(sk_module));
  }
}

static void test_get_kernel(void **state) {
  sk_device *dev = (sk_device *)*state;
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_chain");
  sk_kernel *k = SENTINEL(sk_kernel), *k2 = NULL;
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "capi_no_such_kernel", &k), SK_ERR_NOT_FOUND, "capi_no_such_kernel");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "", &k), SK_ERR_NOT_FOUND, "sk_module_get_kernel");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  SK_EXPECT_ERR(sk_module_get_kernel(mod, NULL, &k), SK_ERR_INVALID_ARGUMENT, "name");
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "capi_fill", NULL), SK_ERR_INVALID_ARGUMENT, "out");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, NULL, "ptr", &k), SK_ERR_INVALID_ARGUMENT, "name");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_fill", NULL, &k), SK_ERR_INVALID_ARGUMENT,
                "signature");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_fill", "ptr,u32,u32", NULL), SK_ERR_INVALID_ARGUMENT,
                "out");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  /* A symbol defined in another object only. */
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "capi_sync_sum", &k), SK_ERR_NOT_FOUND, "capi_sync_sum");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  /* Metadata and a given signature must agree. */
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_fill", "ptr,u32", &k), SK_ERR_INCOMPATIBLE,
                "capi_fill");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_fill", "ptr,u32,i32", &k), SK_ERR_INCOMPATIBLE,
                "capi_fill");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  /* A bad token is named. */
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_fill", "ptr,uint32,u32", &k), SK_ERR_INVALID_ARGUMENT,
                "uint32");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  /* Good ones. */
  SK_CHECK(sk_module_get_kernel(mod, "capi_fill", &k));
  assert_non_null(k);
  assert_ptr_not_equal(k, SENTINEL(sk_kernel));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "capi_fill", "ptr,u32,u32", &k2));
  assert_non_null(k2);
  k = get_kernel(mod, "capi_axpb");
  k = get_kernel(mod, "capi_gather");
  k = get_kernel(mod, "capi_rotate");
  (void)k;
  sk_module_unload(mod);
}

static void test_kernel_without_metadata(void **state) {
  sk_device *dev = (sk_device *)*state;
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_misc");
  sk_kernel *k = SENTINEL(sk_kernel);
  uint32_t *buf = (uint32_t *)mem_alloc(dev, 100 * sizeof(uint32_t));
  uint32_t n = 100, v = 7, i;
  void *args[3];
  args[0] = &buf;
  args[1] = &n;
  args[2] = &v;
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "capi_plain_add", &k), SK_ERR_NOT_FOUND, "capi_plain_add");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_plain_add", "ptr,u32,float", &k),
                SK_ERR_INVALID_ARGUMENT, "float");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_plain_add", "ptr,,u32", &k), SK_ERR_INVALID_ARGUMENT,
                "capi_plain_add");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "capi_plain_add", "ptr,u32,u32", &k));
  assert_ptr_not_equal(k, SENTINEL(sk_kernel));
  for (i = 0; i < n; ++i) buf[i] = i;
  SK_CHECK(sk_launch_kernel(k, 3, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < n; ++i) assert_int_equal(buf[i], i + 7);
  /* "" is the signature of a kernel without parameters, and agrees with its metadata. */
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "capi_noargs", "", &k));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "capi_types", "ptr,i8,u16,i64,f32,f64,u8", &k));
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_noargs", "ptr", &k), SK_ERR_INCOMPATIBLE,
                "capi_noargs");
  sk_module_unload(mod);
  sk_mem_free(dev, buf);
}

static void test_bad_metadata_signature(void **state) {
  sk_device *dev = (sk_device *)*state;
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_badsig");
  sk_kernel *k = SENTINEL(sk_kernel);
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "capi_badsig", &k), SK_ERR_BAD_BINARY, "capi_badsig");
  SK_EXPECT_MSG("float");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  sk_module_unload(mod);
}

static void test_every_variant_loads(void **state) {
  static const char *const objects[][5] = {
      {"capi_chain", "capi_fill", "capi_axpb", "capi_gather", "capi_rotate"},
      {"capi_sync", "capi_sync_sum", "capi_hang_half", NULL, NULL},
      {"capi_overlap", "capi_ov_produce", "capi_ov_consume", NULL, NULL},
      {"capi_misc", "capi_noargs", "capi_read_counter", "capi_types", NULL},
  };
  sk_device *dev = (sk_device *)*state;
  size_t v, o, k;
  for (v = 0; v < sizeof all_variants / sizeof all_variants[0]; ++v) {
    for (o = 0; o < sizeof objects / sizeof objects[0]; ++o) {
      sk_module *mod = load_kernels(dev, all_variants[v], objects[o][0]);
      for (k = 1; k < 5 && objects[o][k]; ++k) (void)get_kernel(mod, objects[o][k]);
      sk_module_unload(mod);
    }
  }
}

/* A thread-local is one per thread that runs the kernel: core 1's thread counts its own
 * launches from the initial value, whatever the model the variant's code uses, and no two cores
 * share the variable. */
static void test_thread_locals_per_core(void **state) {
  sk_device *dev = (sk_device *)*state;
  size_t v;
  for (v = 0; v < sizeof all_variants / sizeof all_variants[0]; ++v) {
    sk_module *mod = load_kernels(dev, all_variants[v], "capi_tls");
    sk_kernel *k = get_kernel(mod, "capi_tls_kernel");
    uint32_t *out = (uint32_t *)mem_alloc(dev, 2 * sizeof(uint32_t));
    uint64_t *where = (uint64_t *)mem_alloc(dev, 2 * sizeof(uint64_t));
    void *args[2];
    uint32_t launch;
    args[0] = &out, args[1] = &where;
    for (launch = 1; launch <= 3; ++launch) {
      SK_CHECK(sk_launch_kernel(k, 2, args, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      if (out[1] != launch) fail_msg("%s: core 1 counted %u at launch %u", all_variants[v], out[1], launch);
      assert_true(where[0] != where[1]);
    }
    sk_mem_free(dev, out);
    sk_mem_free(dev, where);
    sk_module_unload(mod);
  }
}

/* Every argument type reaches the kernel with its value (values are copied at the call). */
static void test_argument_types(void **state) {
  sk_device *dev = (sk_device *)*state;
  size_t v;
  for (v = 0; v < sizeof all_variants / sizeof all_variants[0]; ++v) {
    sk_module *mod = load_kernels(dev, all_variants[v], "capi_misc");
    sk_kernel *k = get_kernel(mod, "capi_types");
    int64_t *out = (int64_t *)mem_alloc(dev, 6 * sizeof(int64_t));
    int8_t a = -5;
    uint16_t b = 65000;
    int64_t c = -1234567890123LL;
    float d = 2.75f;
    double e = -1.125;
    uint8_t f = 250;
    void *args[7];
    args[0] = &out;
    args[1] = &a;
    args[2] = &b;
    args[3] = &c;
    args[4] = &d;
    args[5] = &e;
    args[6] = &f;
    SK_CHECK(sk_launch_kernel(k, 2, args, NULL));
    a = 0, b = 0, c = 0, d = 0, e = 0, f = 0; /* copied: changing them now changes nothing */
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_int_equal(out[0], -5);
    assert_int_equal(out[1], 65000);
    assert_true(out[2] == -1234567890123LL);
    assert_int_equal(out[3], 11);
    assert_int_equal(out[4], -9);
    assert_int_equal(out[5], 250);
    sk_mem_free(dev, out);
    sk_module_unload(mod);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_file_missing),
      cmocka_unit_test(test_load_file_and_memory),
      cmocka_unit_test(test_load_bad_bytes),
      cmocka_unit_test(test_load_unsupported_and_unresolved),
      cmocka_unit_test(test_get_kernel),
      cmocka_unit_test(test_kernel_without_metadata),
      cmocka_unit_test(test_bad_metadata_signature),
      cmocka_unit_test(test_every_variant_loads),
      cmocka_unit_test(test_argument_types),
      cmocka_unit_test(test_thread_locals_per_core),
  };
  return cmocka_run_group_tests_name("c_api_module", tests, test_setup_host_device, test_teardown_device);
}
