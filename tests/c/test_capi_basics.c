/* Public C API, the calls that need no kernel: status names, versions, last error, device specs,
 * device cores, memory, streams, and NULL handling of every entry point. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>

#include "test_util.h"

static void test_status_names(void **state) {
  static const char *const names[] = {"SK_OK",
                                      "SK_ERR_INVALID_ARGUMENT",
                                      "SK_ERR_BAD_BINARY",
                                      "SK_ERR_UNSUPPORTED",
                                      "SK_ERR_NOT_FOUND",
                                      "SK_ERR_INCOMPATIBLE",
                                      "SK_ERR_OUT_OF_MEMORY",
                                      "SK_ERR_DEVICE",
                                      "SK_ERR_HANG",
                                      "SK_ERR_STATE",
                                      "SK_ERR_KERNEL"};
  int i;
  (void)state;
  /* Stable numeric values. */
  assert_int_equal(SK_OK, 0);
  assert_int_equal(SK_ERR_INVALID_ARGUMENT, 1);
  assert_int_equal(SK_ERR_BAD_BINARY, 2);
  assert_int_equal(SK_ERR_UNSUPPORTED, 3);
  assert_int_equal(SK_ERR_NOT_FOUND, 4);
  assert_int_equal(SK_ERR_INCOMPATIBLE, 5);
  assert_int_equal(SK_ERR_OUT_OF_MEMORY, 6);
  assert_int_equal(SK_ERR_DEVICE, 7);
  assert_int_equal(SK_ERR_HANG, 8);
  assert_int_equal(SK_ERR_STATE, 9);
  assert_int_equal(SK_ERR_KERNEL, 10);
  for (i = 0; i < 11; ++i) {
    assert_non_null(sk_status_name((sk_status)i));
    assert_string_equal(sk_status_name((sk_status)i), names[i]);
  }
  assert_string_equal(sk_status_name((sk_status)11), "SK_ERR_UNKNOWN");
  assert_string_equal(sk_status_name((sk_status)-1), "SK_ERR_UNKNOWN");
  assert_string_equal(sk_status_name((sk_status)1000000), "SK_ERR_UNKNOWN");
}

static void test_version(void **state) {
  char want[32];
  (void)state;
  assert_int_equal(SK_VERSION_NUMBER, SK_VERSION_MAJOR * 10000 + SK_VERSION_MINOR * 100 + SK_VERSION_PATCH);
  assert_int_equal(sk_version(), SK_VERSION_NUMBER);
  snprintf(want, sizeof want, "%d.%d.%d", SK_VERSION_MAJOR, SK_VERSION_MINOR, SK_VERSION_PATCH);
  assert_non_null(sk_version_string());
  assert_string_equal(sk_version_string(), want);
  assert_ptr_equal(sk_version_string(), sk_version_string()); /* static: never freed */
}

/* ---- last error: never NULL, kept until the next failure, per thread ------------------------ */

struct thread_result {
  char before[256];
  char after[256];
  sk_status st;
};

static void *fail_in_thread(void *arg) {
  struct thread_result *r = (struct thread_result *)arg;
  sk_device *dev = SENTINEL(sk_device);
  snprintf(r->before, sizeof r->before, "%s", sk_last_error());
  r->st = sk_device_open("host:thread_only_key=1", &dev);
  snprintf(r->after, sizeof r->after, "%s", sk_last_error());
  return NULL;
}

static void test_last_error(void **state) {
  sk_device *dev = SENTINEL(sk_device);
  pthread_t t;
  struct thread_result r;
  (void)state;
  assert_non_null(sk_last_error());
  SK_EXPECT_ERR(sk_device_open("host:main_thread_key=1", &dev), SK_ERR_INVALID_ARGUMENT, "main_thread_key");
  assert_ptr_equal(dev, SENTINEL(sk_device));
  /* A success does not clear the message. */
  assert_int_equal(sk_version(), SK_VERSION_NUMBER);
  dev = open_device("host:cores=1");
  sk_device_close(dev);
  SK_EXPECT_MSG("main_thread_key");
  /* Another thread starts with "" and never sees this thread's message, nor this one its. */
  memset(&r, 0, sizeof r);
  assert_int_equal(pthread_create(&t, NULL, fail_in_thread, &r), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_string_equal(r.before, "");
  assert_int_equal(r.st, SK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(r.after, "thread_only_key"));
  assert_null(strstr(r.after, "main_thread_key"));
  SK_EXPECT_MSG("main_thread_key");
  assert_null(strstr(sk_last_error(), "thread_only_key"));
}

/* ---- device specs ---------------------------------------------------------------------------- */

static void expect_bad_spec(const char *spec, const char *needle) {
  sk_device *dev = SENTINEL(sk_device);
  sk_status st = sk_device_open(spec, &dev);
  if (st != SK_ERR_INVALID_ARGUMENT)
    fail_msg("sk_device_open(\"%s\") returned %s (%s), expected SK_ERR_INVALID_ARGUMENT", spec, sk_status_name(st),
             sk_last_error());
  if (!strstr(sk_last_error(), needle))
    fail_msg("sk_device_open(\"%s\"): message \"%s\" does not name \"%s\"", spec, sk_last_error(), needle);
  assert_ptr_equal(dev, SENTINEL(sk_device));
}

static void test_device_spec_errors(void **state) {
  sk_device *dev = SENTINEL(sk_device);
  (void)state;
  SK_EXPECT_ERR(sk_device_open(NULL, &dev), SK_ERR_INVALID_ARGUMENT, "spec");
  assert_ptr_equal(dev, SENTINEL(sk_device));
  SK_EXPECT_ERR(sk_device_open("host", NULL), SK_ERR_INVALID_ARGUMENT, "out");
  expect_bad_spec("warp-drive", "warp-drive");           /* unknown backend */
  expect_bad_spec("warp-drive:cores=2", "warp-drive");   /* unknown backend with keys */
  expect_bad_spec("warp-drive", "this build has: host"); /* and the backends there are */
#ifdef SK_TEST_WITHOUT_CUDA
  expect_bad_spec("cuda", "unknown backend 'cuda' (this build has: host)");
  expect_bad_spec("cuda:0", "unknown backend 'cuda'");
#endif
  expect_bad_spec("", "backend");
  expect_bad_spec(":cores=2", "backend");
  expect_bad_spec("host:corez=2", "corez"); /* unknown key */
  expect_bad_spec("host:cores=2,flux=9", "flux");
  expect_bad_spec("host:cores=abc", "abc"); /* bad values */
  expect_bad_spec("host:cores=abc", "cores");
  expect_bad_spec("host:cores=0", "cores");
  expect_bad_spec("host:cores=-1", "cores");
  expect_bad_spec("host:cores=2x", "2x");
  expect_bad_spec("host:cores=", "cores");
  expect_bad_spec("host:cores=99999999999999999999999", "cores");
  expect_bad_spec("host:timeout_ms=0", "timeout_ms");
  expect_bad_spec("host:spin_us=fast", "spin_us");
  expect_bad_spec("host:spin_max_us=-5", "spin_max_us");
  expect_bad_spec("host:spin_max_us=10000001", "spin_max_us");
  expect_bad_spec("host:barrier_group=1", "barrier_group"); /* a group of one is no group */
  expect_bad_spec("host:barrier_group=2000", "barrier_group");
  expect_bad_spec("host:cores=2,cores=3", "cores"); /* repeated key */
  expect_bad_spec("host:cores", "cores");           /* not key=value */
  expect_bad_spec("host:=2", "=2");
}

static void test_device_open_valid(void **state) {
  static const char *const specs[] = {"host",
                                      "host:cores=2",
                                      "host:cores=1",
                                      "host:cores=3,spin_us=0,timeout_ms=5000",
                                      "host:timeout_ms=100,cores=2",
                                      "host:cores=4,barrier_group=2",
                                      "host:spin_us=10,spin_max_us=0",
                                      "host:spin_max_us=5000"};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof specs / sizeof specs[0]; ++i) {
    sk_device *dev = NULL;
    SK_CHECK(sk_device_open(specs[i], &dev));
    assert_non_null(dev);
    sk_device_close(dev);
  }
  /* Two devices at once. */
  {
    sk_device *a = open_device("host:cores=2");
    sk_device *b = open_device("host:cores=2");
    assert_ptr_not_equal(a, b);
    sk_device_close(b);
    sk_device_close(a);
  }
}

/* The cores a device reports: the spec's cores=N, and by default the CPUs this process may run
 * on (its affinity mask; a cgroup CPU quota may lower it, never raise it). */
static void test_device_cores(void **state) {
  static const uint32_t counts[] = {1, 2, 3, 7};
  cpu_set_t set;
  uint32_t cores = 0, cpus;
  size_t i;
  sk_device *dev;
  (void)state;
  for (i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
    char spec[32];
    snprintf(spec, sizeof spec, "host:cores=%u,pin=0", counts[i]);
    dev = open_device(spec);
    SK_CHECK(sk_device_cores(dev, &cores));
    assert_int_equal(cores, counts[i]);
    sk_device_close(dev);
  }
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  cpus = (uint32_t)CPU_COUNT(&set);
  dev = open_device("host");
  SK_CHECK(sk_device_cores(dev, &cores));
  assert_true(cores >= 1 && cores <= cpus);
  SK_EXPECT_ERR(sk_device_cores(dev, NULL), SK_ERR_INVALID_ARGUMENT, "out");
  sk_device_close(dev);
  cores = 99;
  SK_EXPECT_ERR(sk_device_cores(NULL, &cores), SK_ERR_INVALID_ARGUMENT, "device");
  assert_int_equal(cores, 99);
}

/* ---- memory -------------------------------------------------------------------------------- */

static void test_memory(void **state) {
  sk_device *dev = open_device("host:cores=2");
  void *p = SENTINEL(void);
  unsigned char *a, *b;
  unsigned char host[300];
  size_t i;
  (void)state;
  SK_EXPECT_ERR(sk_mem_alloc(NULL, 64, &p), SK_ERR_INVALID_ARGUMENT, "device");
  assert_ptr_equal(p, SENTINEL(void));
  SK_EXPECT_ERR(sk_mem_alloc(dev, 64, NULL), SK_ERR_INVALID_ARGUMENT, "out");
  SK_EXPECT_ERR(sk_mem_alloc(dev, 0, &p), SK_ERR_INVALID_ARGUMENT, "size");
  assert_ptr_equal(p, SENTINEL(void));
  SK_EXPECT_ERR(sk_mem_alloc(dev, (size_t)-1 / 2, &p), SK_ERR_OUT_OF_MEMORY, "sk_mem_alloc");
  assert_ptr_equal(p, SENTINEL(void));

  a = (unsigned char *)mem_alloc(dev, 300);
  b = (unsigned char *)mem_alloc(dev, 1);
  assert_int_equal((uintptr_t)a % 64, 0);
  assert_int_equal((uintptr_t)b % 64, 0);
  for (i = 0; i < sizeof host; ++i) host[i] = (unsigned char)(i * 7 + 1);
  SK_CHECK(sk_memcpy(dev, a, host, sizeof host));
  assert_memory_equal(a, host, sizeof host);
  memset(host, 0, sizeof host);
  SK_CHECK(sk_memcpy(dev, host, a, sizeof host));
  for (i = 0; i < sizeof host; ++i) assert_int_equal(host[i], (unsigned char)(i * 7 + 1));
  SK_CHECK(sk_memcpy(dev, b, a + 5, 1));
  assert_int_equal(b[0], a[5]);
  SK_CHECK(sk_memcpy(dev, NULL, NULL, 0)); /* nothing to copy */
  SK_EXPECT_ERR(sk_memcpy(NULL, a, host, 4), SK_ERR_INVALID_ARGUMENT, "device");
  SK_EXPECT_ERR(sk_memcpy(dev, NULL, host, 4), SK_ERR_INVALID_ARGUMENT, "dst");
  SK_EXPECT_ERR(sk_memcpy(dev, a, NULL, 4), SK_ERR_INVALID_ARGUMENT, "src");

  sk_mem_free(dev, NULL);
  sk_mem_free(NULL, NULL);
  sk_mem_free(dev, b);
  sk_mem_free(dev, a);
  sk_device_close(dev);
}

/* ---- streams -------------------------------------------------------------------------------- */

static void test_streams_basic(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_stream *s = SENTINEL(sk_stream), *t = NULL;
  (void)state;
  SK_EXPECT_ERR(sk_stream_create(NULL, &s), SK_ERR_INVALID_ARGUMENT, "device");
  assert_ptr_equal(s, SENTINEL(sk_stream));
  SK_EXPECT_ERR(sk_stream_create(dev, NULL), SK_ERR_INVALID_ARGUMENT, "out");
  SK_CHECK(sk_stream_create(dev, &s));
  SK_CHECK(sk_stream_create(dev, &t));
  assert_non_null(s);
  assert_non_null(t);
  assert_ptr_not_equal(s, t);
  SK_CHECK(sk_stream_synchronize(s)); /* nothing queued */
  SK_CHECK(sk_stream_synchronize(NULL));
  sk_stream_destroy(t);
  sk_stream_destroy(s);
  sk_stream_destroy(NULL);
  sk_device_close(dev);
}

/* ---- NULL handles and out-parameters everywhere --------------------------------------------- */

static void test_null_handles(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = SENTINEL(sk_module);
  sk_kernel *k = SENTINEL(sk_kernel);
  sk_scope *scope = SENTINEL(sk_scope);
  sk_superkernel *sk = SENTINEL(sk_superkernel);
  static const unsigned char bytes[64] = {0x7f, 'E', 'L', 'F'};
  char buf[16];
  size_t needed = 12345;
  uint32_t v = 0;
  void *args[1];
  (void)state;
  args[0] = &v;

  SK_EXPECT_ERR(sk_module_load(NULL, bytes, sizeof bytes, &mod), SK_ERR_INVALID_ARGUMENT, "device");
  SK_EXPECT_ERR(sk_module_load(dev, NULL, 64, &mod), SK_ERR_INVALID_ARGUMENT, "image");
  SK_EXPECT_ERR(sk_module_load(dev, bytes, sizeof bytes, NULL), SK_ERR_INVALID_ARGUMENT, "out");
  SK_EXPECT_ERR(sk_module_load(dev, bytes, 0, &mod), SK_ERR_BAD_BINARY, "0 bytes");
  SK_EXPECT_ERR(sk_module_load_file(NULL, "x.o", &mod), SK_ERR_INVALID_ARGUMENT, "device");
  SK_EXPECT_ERR(sk_module_load_file(dev, NULL, &mod), SK_ERR_INVALID_ARGUMENT, "path");
  SK_EXPECT_ERR(sk_module_load_file(dev, "x.o", NULL), SK_ERR_INVALID_ARGUMENT, "out");
  assert_ptr_equal(mod, SENTINEL(sk_module));

  SK_EXPECT_ERR(sk_module_get_kernel(NULL, "capi_fill", &k), SK_ERR_INVALID_ARGUMENT, "module");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(NULL, "capi_fill", "ptr", &k), SK_ERR_INVALID_ARGUMENT,
                "module");
  assert_ptr_equal(k, SENTINEL(sk_kernel));

  SK_EXPECT_ERR(sk_scope_begin(NULL, "s", NULL, &scope), SK_ERR_INVALID_ARGUMENT, "device");
  SK_EXPECT_ERR(sk_scope_begin(dev, "s", NULL, NULL), SK_ERR_INVALID_ARGUMENT, "out");
  assert_ptr_equal(scope, SENTINEL(sk_scope));
  SK_EXPECT_ERR(sk_add_kernel(NULL, NULL, 1, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "scope");
  SK_EXPECT_ERR(sk_finalize(NULL, &sk), SK_ERR_INVALID_ARGUMENT, "scope");
  assert_ptr_equal(sk, SENTINEL(sk_superkernel));

  SK_EXPECT_ERR(sk_launch(NULL, NULL), SK_ERR_INVALID_ARGUMENT, "super kernel");
  SK_EXPECT_ERR(sk_launch_kernel(NULL, 1, args, NULL), SK_ERR_INVALID_ARGUMENT, "kernel");
  SK_EXPECT_ERR(sk_superkernel_set_arg(NULL, 0, 0, &v), SK_ERR_INVALID_ARGUMENT, "super kernel");
  SK_EXPECT_ERR(sk_superkernel_explain(NULL, buf, sizeof buf, &needed), SK_ERR_INVALID_ARGUMENT, "super kernel");
  assert_int_equal(needed, 12345);

  /* Destroy, close and unload functions accept NULL. */
  sk_superkernel_destroy(NULL);
  sk_scope_abort(NULL);
  sk_module_unload(NULL);
  sk_stream_destroy(NULL);
  sk_mem_free(NULL, NULL);
  sk_device_close(NULL);
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_last_error),
      cmocka_unit_test(test_device_spec_errors),
      cmocka_unit_test(test_device_open_valid),
      cmocka_unit_test(test_device_cores),
      cmocka_unit_test(test_memory),
      cmocka_unit_test(test_streams_basic),
      cmocka_unit_test(test_null_handles),
  };
  return cmocka_run_group_tests_name("c_api_basics", tests, NULL, NULL);
}
