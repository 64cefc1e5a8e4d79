/* Helpers shared by the cmocka tests of the public C API (tests/c/test_*.c). Header only:
 * every helper is static inline, so a test that does not use one does not warn. */
#ifndef SK_TEST_UTIL_H
#define SK_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sk.h>

#ifndef SK_TEST_KERNEL_DIR
#error "SK_TEST_KERNEL_DIR must name the folder of the compiled test kernels"
#endif

/* The variant the tests that do not loop over variants use. */
#define TEST_VARIANT "gcc-O2-pie"

/* A two-core host device with a short deadline, for the tests of hangs and lost devices. Under
 * qemu-user, with another test beside it, a core thread can go without a CPU for longer than
 * 200 ms, and the device would take it for one that never came back from its kernel. */
#if defined(SK_TEST_EMULATED)
#define SK_TEST_HANG_DEVICE "host:cores=2,timeout_ms=1000"
#else
#define SK_TEST_HANG_DEVICE "host:cores=2,timeout_ms=200"
#endif

/* A call that must succeed; on failure the test fails with the status and sk_last_error(). */
#define SK_CHECK(call)                                                                                        \
  do {                                                                                                        \
    sk_status st_ = (call);                                                                                   \
    if (st_ != SK_OK)                                                                                         \
      fail_msg("%s:%d: %s returned %s: %s", __FILE__, __LINE__, #call, sk_status_name(st_), sk_last_error()); \
  } while (0)

/* A call that must fail with `status` and leave a last-error message that contains `needle`. */
#define SK_EXPECT_ERR(call, status, needle)                                                                  \
  do {                                                                                                       \
    sk_status st_ = (call);                                                                                  \
    if (st_ != (status))                                                                                     \
      fail_msg("%s:%d: %s returned %s (%s), expected %s", __FILE__, __LINE__, #call, sk_status_name(st_),    \
               sk_last_error(), sk_status_name(status));                                                     \
    if (strstr(sk_last_error(), (needle)) == NULL)                                                           \
      fail_msg("%s:%d: %s: message \"%s\" does not name \"%s\"", __FILE__, __LINE__, #call, sk_last_error(), \
               (needle));                                                                                    \
  } while (0)

/* The message of the last failure must also contain `needle`. */
#define SK_EXPECT_MSG(needle)                                                                                \
  do {                                                                                                       \
    if (strstr(sk_last_error(), (needle)) == NULL)                                                           \
      fail_msg("%s:%d: message \"%s\" does not name \"%s\"", __FILE__, __LINE__, sk_last_error(), (needle)); \
  } while (0)

/* A recognisable non-NULL value for out-parameters that must stay untouched on failure. */
static inline void *test_sentinel(void) {
  static char storage;
  return &storage;
}
#define SENTINEL(type) ((type *)test_sentinel())

static inline void kernel_path(char *buf, size_t cap, const char *variant, const char *name) {
  int n = snprintf(buf, cap, "%s/%s/%s.o", SK_TEST_KERNEL_DIR, variant, name);
  assert_true(n > 0 && (size_t)n < cap);
}

static inline sk_module *load_kernels(sk_device *dev, const char *variant, const char *name) {
  char path[1024];
  sk_module *mod = NULL;
  kernel_path(path, sizeof path, variant, name);
  SK_CHECK(sk_module_load_file(dev, path, &mod));
  assert_non_null(mod);
  return mod;
}

static inline sk_kernel *get_kernel(sk_module *mod, const char *name) {
  sk_kernel *k = NULL;
  SK_CHECK(sk_module_get_kernel(mod, name, &k));
  assert_non_null(k);
  return k;
}

/* The whole file in malloc'ed memory (the caller frees it). */
static inline unsigned char *read_whole_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *data = NULL;
  size_t cap = 0, len = 0, n;
  if (!f) fail_msg("cannot open %s", path);
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 65536;
      data = (unsigned char *)realloc(data, cap);
      assert_non_null(data);
    }
    n = fread(data + len, 1, cap - len, f);
    if (n == 0) break;
    len += n;
  }
  fclose(f);
  *size = len;
  return data;
}

static inline sk_device *open_device(const char *spec) {
  sk_device *dev = NULL;
  SK_CHECK(sk_device_open(spec, &dev));
  assert_non_null(dev);
  return dev;
}

/* cmocka fixtures: a "host:cores=2" device in *state, closed after the test or group. */
static inline int test_setup_host_device(void **state) {
  sk_device *dev = NULL;
  if (sk_device_open("host:cores=2", &dev) != SK_OK) return -1;
  *state = dev;
  return 0;
}

static inline int test_teardown_device(void **state) {
  sk_device_close((sk_device *)*state);
  return 0;
}

static inline void *mem_alloc(sk_device *dev, size_t size) {
  void *p = NULL;
  SK_CHECK(sk_mem_alloc(dev, size, &p));
  assert_non_null(p);
  return p;
}

/* sk_superkernel_explain's JSON in malloc'ed memory (the caller frees it). */
static inline char *explain_text(sk_superkernel *sk) {
  size_t size = 0;
  char *text;
  SK_CHECK(sk_superkernel_explain(sk, NULL, 0, &size));
  text = (char *)malloc(size);
  assert_non_null(text);
  SK_CHECK(sk_superkernel_explain(sk, text, size, NULL));
  return text;
}

/* The explain JSON of `sk` must contain `needle`. */
#define SK_EXPECT_EXPLAIN(sk, needle)                                                          \
  do {                                                                                         \
    char *text_ = explain_text(sk);                                                            \
    if (strstr(text_, (needle)) == NULL)                                                       \
      fail_msg("%s:%d: explain does not contain %s: %s", __FILE__, __LINE__, (needle), text_); \
    free(text_);                                                                               \
  } while (0)

#endif /* SK_TEST_UTIL_H */
