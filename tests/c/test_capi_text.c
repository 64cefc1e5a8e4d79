/* Names that are not UTF-8 or hold control characters (a symbol, a module path, a scope name, an
 * option): libsk loads, fuses and names them, and what it hands out stays valid UTF-8 JSON
 * (explain) and one-line UTF-8 messages (sk_last_error), bytes that are not UTF-8 written as the
 * text \xNN. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define SYMBOL "scale_\xff\xfe" /* tests/kernels/names_not_utf8.c */
#define N 1000u

/* Text libsk hands out: printable ASCII only here, since every name these tests give is ASCII
 * but for the bytes that must come out escaped (so valid UTF-8, one line, no control byte). */
static void expect_escaped_text(const char *text, const char *what) {
  for (const unsigned char *p = (const unsigned char *)text; *p; ++p)
    if (*p < 0x20 || *p >= 0x7f)
      fail_msg("%s: raw byte 0x%02x at offset %ld: %s", what, *p, (long)(p - (const unsigned char *)text), text);
}

static void expect_message(const char *needle) {
  expect_escaped_text(sk_last_error(), "sk_last_error()");
  SK_EXPECT_MSG(needle);
}

/* Runs `kernel` on x unfused and fused (in a scope named `scope_name`), compares the results bit
 * for bit and checks the explain JSON of the super kernel for each needle (NULL-terminated). */
static void fuse_and_compare(sk_device *dev, sk_kernel *kernel, const char *scope_name, const char *const *needles) {
  float *a = (float *)mem_alloc(dev, N * sizeof(float));
  float *b = (float *)mem_alloc(dev, N * sizeof(float));
  uint32_t n = N;
  for (uint32_t i = 0; i < N; ++i) a[i] = b[i] = (float)i * 0.25f - 7.0f;
  void *args_a[] = {&a, &n}, *args_b[] = {&b, &n};
  SK_CHECK(sk_launch_kernel(kernel, 3, args_a, NULL));
  SK_CHECK(sk_launch_kernel(kernel, 2, args_a, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  sk_scope *scope = NULL;
  sk_superkernel *fused = NULL;
  SK_CHECK(sk_scope_begin(dev, scope_name, NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, kernel, 3, args_b, NULL));
  SK_CHECK(sk_add_kernel(scope, kernel, 2, args_b, NULL));
  SK_CHECK(sk_finalize(scope, &fused));
  SK_CHECK(sk_launch(fused, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_memory_equal(a, b, N * sizeof(float));
  char *text = explain_text(fused);
  expect_escaped_text(text, "explain");
  for (; *needles; ++needles)
    if (!strstr(text, *needles)) fail_msg("explain does not contain %s: %s", *needles, text);
  free(text);
  sk_superkernel_destroy(fused);
  sk_mem_free(dev, a);
  sk_mem_free(dev, b);
}

static void test_symbol_not_utf8(void **state) {
  (void)state;
  static const char *const variants[] = {"gcc-O0-pie", "gcc-O2-pic", "clang-O2-pie", "clang-O3-nopic"};
  sk_device *dev = open_device("host:cores=3");
  for (size_t v = 0; v < sizeof variants / sizeof *variants; ++v) {
    sk_module *mod = load_kernels(dev, variants[v], "names_not_utf8");
    /* The C API hands the name back as the object has it: it is what sk_module_get_kernel takes. */
    char name[64];
    SK_CHECK(sk_module_kernel_name(mod, 0, name, sizeof name, NULL));
    assert_string_equal(name, SYMBOL);
    sk_kernel *kernel = get_kernel(mod, name);
    static const char *const needles[] = {"\"symbol\":\"scale_\\\\xff\\\\xfe\"", "\"name\":\"scale_\\\\xff\\\\xfe\"",
                                          "\"name\":\"scope\\\\xc0\\u000a\"", NULL};
    fuse_and_compare(dev, kernel, "scope\xc0\n", needles);
    sk_kernel *missing = NULL;
    SK_EXPECT_ERR(sk_module_get_kernel(mod, "scale_\xff\xfd\n", &missing), SK_ERR_NOT_FOUND, "scale_\\xff\\xfd\\n");
    expect_message("scale_\\xff\\xfd\\n");
    sk_module_unload(mod);
  }
  sk_device_close(dev);
}

static void test_module_path_not_utf8(void **state) {
  (void)state;
  char dir[] = "/tmp/sk_text_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char source[1024], path[1100];
  kernel_path(source, sizeof source, TEST_VARIANT, "names_not_utf8");
  snprintf(path, sizeof path, "%s/obj\xe9\nline.o", dir);
  size_t size = 0;
  unsigned char *image = read_whole_file(source, &size);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(image, 1, size, f), size);
  fclose(f);
  free(image);

  sk_device *dev = open_device("host:cores=3");
  sk_module *mod = NULL;
  SK_CHECK(sk_module_load_file(dev, path, &mod));
  static const char *const needles[] = {"obj\\\\xe9\\u000aline.o\"", NULL};
  fuse_and_compare(dev, get_kernel(mod, SYMBOL), "s", needles);
  sk_module_unload(mod);

  char missing[1100];
  snprintf(missing, sizeof missing, "%s/gone\xe9\r\n.o", dir);
  mod = SENTINEL(sk_module);
  SK_EXPECT_ERR(sk_module_load_file(dev, missing, &mod), SK_ERR_NOT_FOUND, "gone\\xe9\\r\\n.o");
  expect_message("No such file");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  sk_device_close(dev);
  unlink(path);
  rmdir(dir);
}

static void test_messages_stay_one_line(void **state) {
  (void)state;
  sk_device *dev = SENTINEL(sk_device);
  SK_EXPECT_ERR(sk_device_open("host:co\nres\xf8=2", &dev), SK_ERR_INVALID_ARGUMENT, "co\\nres\\xf8");
  expect_message("co\\nres\\xf8");
  dev = open_device("host:cores=2");
  sk_scope *scope = SENTINEL(sk_scope);
  /* The scope's name comes into the message through a prefix (sk_scope_begin 'NAME': ...). */
  SK_EXPECT_ERR(sk_scope_begin(dev, "a\nb\xed\xa0\x80", "early\u2028start=1\x7f", &scope), SK_ERR_INVALID_ARGUMENT,
                "a\\nb\\xed\\xa0\\x80");
  expect_message("early\\u2028start");
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_symbol_not_utf8),
      cmocka_unit_test(test_module_path_not_utf8),
      cmocka_unit_test(test_messages_stay_one_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
