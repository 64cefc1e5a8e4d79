/* Public C API against hostile or mistaken callers: NULL and invalid arguments to every call,
 * calls in the wrong state (stale handles included), absurd sizes and signatures that do not
 * parse. Each gets its documented status and a message naming the culprit (docs/conventions.md);
 * run under LeakSanitizer by scripts/test, so every path here must also free what it took. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define N 256u

struct fixture {
  sk_device *dev;
  sk_module *chain, *misc;
  sk_kernel *fill, *axpb, *noargs, *plain;
  uint32_t *buf;
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f || sk_device_open("host:cores=2", &f->dev) != SK_OK) return -1;
  f->chain = load_kernels(f->dev, TEST_VARIANT, "capi_chain");
  f->misc = load_kernels(f->dev, TEST_VARIANT, "capi_misc");
  f->fill = get_kernel(f->chain, "capi_fill");
  f->axpb = get_kernel(f->chain, "capi_axpb");
  f->noargs = get_kernel(f->misc, "capi_noargs");
  SK_CHECK(sk_module_get_kernel_with_signature(f->misc, "capi_plain_add", "ptr,u32,u32", &f->plain));
  f->buf = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_mem_free(f->dev, f->buf);
  sk_module_unload(f->chain);
  sk_module_unload(f->misc);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The CPU time of the calling thread: what it spent, however long a loaded machine kept it, or
 * the cores it waits for, off their CPUs. */
static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A one-kernel super kernel: capi_fill(buf, N, seed) on 2 blocks. */
static sk_superkernel *build_fill(struct fixture *f, uint32_t seed) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N;
  void *args[3];
  args[0] = &f->buf;
  args[1] = &n;
  args[2] = &seed;
  SK_CHECK(sk_scope_begin(f->dev, "fill", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 2, args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

/* ---- NULL and invalid arguments ------------------------------------------------------------- */

static void test_invalid_arguments(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_device *dev = SENTINEL(sk_device);
  sk_kernel *k = SENTINEL(sk_kernel);
  sk_scope *scope = NULL;
  sk_superkernel *sk = SENTINEL(sk_superkernel);
  sk_stream *stream = SENTINEL(sk_stream);
  void *p = SENTINEL(void);
  uint32_t n = N, seed = 1, v = 0, local = 0;
  void *args[3], *holes[3];
  sk_kernel_options bad_opts = SK_KERNEL_OPTIONS_INIT;
  char buf[8];
  size_t needed = 7;
  args[0] = &f->buf;
  args[1] = &n;
  args[2] = &seed;
  holes[0] = &f->buf;
  holes[1] = NULL;
  holes[2] = &seed;

  SK_EXPECT_ERR(sk_device_open(NULL, &dev), SK_ERR_INVALID_ARGUMENT, "spec");
  SK_EXPECT_ERR(sk_device_open("host", NULL), SK_ERR_INVALID_ARGUMENT, "out");
  SK_EXPECT_ERR(sk_device_open("", &dev), SK_ERR_INVALID_ARGUMENT, "no backend");
  SK_EXPECT_ERR(sk_device_open("host:cores=0", &dev), SK_ERR_INVALID_ARGUMENT, "cores");
  SK_EXPECT_ERR(sk_device_open("host:symbols=none", &dev), SK_ERR_INVALID_ARGUMENT, "symbols");
  assert_ptr_equal(dev, SENTINEL(sk_device));

  SK_EXPECT_ERR(sk_mem_alloc(NULL, 16, &p), SK_ERR_INVALID_ARGUMENT, "device");
  SK_EXPECT_ERR(sk_mem_alloc(f->dev, 16, NULL), SK_ERR_INVALID_ARGUMENT, "out");
  SK_EXPECT_ERR(sk_mem_alloc(f->dev, 0, &p), SK_ERR_INVALID_ARGUMENT, "size is 0");
  SK_EXPECT_ERR(sk_mem_alloc(f->dev, SIZE_MAX, &p), SK_ERR_OUT_OF_MEMORY, "bytes");
  assert_ptr_equal(p, SENTINEL(void));
  sk_mem_free(f->dev, &local); /* not the device's: ignored, with a message */
  SK_EXPECT_MSG("not allocated by this device");
  SK_EXPECT_ERR(sk_memcpy(NULL, &v, &n, 4), SK_ERR_INVALID_ARGUMENT, "device");
  SK_EXPECT_ERR(sk_memcpy(f->dev, NULL, &n, 4), SK_ERR_INVALID_ARGUMENT, "dst");
  SK_EXPECT_ERR(sk_memcpy(f->dev, &v, NULL, 4), SK_ERR_INVALID_ARGUMENT, "src");
  SK_CHECK(sk_memcpy(f->dev, NULL, NULL, 0)); /* nothing to copy */

  SK_EXPECT_ERR(sk_module_get_kernel(f->chain, NULL, &k), SK_ERR_INVALID_ARGUMENT, "name");
  SK_EXPECT_ERR(sk_module_get_kernel(f->chain, "capi_fill", NULL), SK_ERR_INVALID_ARGUMENT, "out");
  SK_EXPECT_ERR(sk_module_get_kernel(f->chain, "no_such_kernel", &k), SK_ERR_NOT_FOUND, "no_such_kernel");
  SK_EXPECT_ERR(sk_module_get_kernel(f->chain, "", &k), SK_ERR_NOT_FOUND, "''");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(f->chain, "capi_fill", NULL, &k), SK_ERR_INVALID_ARGUMENT,
                "signature");
  assert_ptr_equal(k, SENTINEL(sk_kernel));

  SK_EXPECT_ERR(sk_stream_create(NULL, &stream), SK_ERR_INVALID_ARGUMENT, "device");
  SK_EXPECT_ERR(sk_stream_create(f->dev, NULL), SK_ERR_INVALID_ARGUMENT, "out");
  assert_ptr_equal(stream, SENTINEL(sk_stream));

  SK_CHECK(sk_scope_begin(f->dev, NULL, NULL, &scope)); /* NULL name: a default one */
  SK_EXPECT_ERR(sk_add_kernel(scope, NULL, 1, args, NULL), SK_ERR_INVALID_ARGUMENT, "kernel");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 1, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "capi_fill");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 1, holes, NULL), SK_ERR_INVALID_ARGUMENT, "args[1]");
  bad_opts.struct_size = 0;
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 1, args, &bad_opts), SK_ERR_INVALID_ARGUMENT, "struct_size");
  SK_CHECK(sk_add_kernel(scope, f->noargs, 1, NULL, NULL)); /* no parameters: args may be NULL */
  SK_EXPECT_ERR(sk_finalize(scope, NULL), SK_ERR_INVALID_ARGUMENT, "consumed");
  /* The scope is gone now (finalize consumes it whatever happens). */

  sk = build_fill(f, 5);
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 0, 0, NULL), SK_ERR_INVALID_ARGUMENT, "value");
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 1, 0, &v), SK_ERR_INVALID_ARGUMENT, "step 1");
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 0, 3, &v), SK_ERR_INVALID_ARGUMENT, "index 3");
  SK_EXPECT_ERR(sk_superkernel_explain(sk, NULL, 5, &needed), SK_ERR_INVALID_ARGUMENT, "buf is NULL");
  SK_EXPECT_ERR(sk_superkernel_explain(sk, buf, sizeof buf, &needed), SK_ERR_INVALID_ARGUMENT, "needs");
  assert_true(needed > sizeof buf);
  SK_EXPECT_ERR(sk_launch_kernel(f->fill, 1, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "args is NULL");
  SK_EXPECT_ERR(sk_launch_kernel(f->fill, 1, holes, NULL), SK_ERR_INVALID_ARGUMENT, "args[1]");
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(f->buf[3], 3u * 2654435761u + 5u);
  sk_superkernel_destroy(sk);
  assert_string_equal(sk_status_name((sk_status)12345), "SK_ERR_UNKNOWN");
}

/* Handles of one type passed where another is expected: the tag says it is not one. */
static void test_foreign_handles(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_kernel *k = SENTINEL(sk_kernel);
  sk_superkernel *not_sk = (sk_superkernel *)(void *)f->chain;
  sk_stream *not_stream = (sk_stream *)(void *)f->fill;
  SK_EXPECT_ERR(sk_launch(not_sk, NULL), SK_ERR_INVALID_ARGUMENT, "not a live super kernel handle");
  SK_EXPECT_ERR(sk_stream_synchronize(not_stream), SK_ERR_INVALID_ARGUMENT, "not a live stream handle");
  SK_EXPECT_ERR(sk_module_get_kernel((sk_module *)(void *)f->dev, "capi_fill", &k), SK_ERR_INVALID_ARGUMENT,
                "not a live module handle");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
}

/* ---- wrong states ---------------------------------------------------------------------------- */

static void test_scope_after_finalize(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL, *aborted = NULL;
  sk_superkernel *sk = NULL, *again = SENTINEL(sk_superkernel);
  int i;
  SK_CHECK(sk_scope_begin(f->dev, "once", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, f->noargs, 1, NULL, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  /* The scope was consumed: adding, finalizing or aborting it again is a stale use. */
  SK_EXPECT_ERR(sk_add_kernel(scope, f->noargs, 1, NULL, NULL), SK_ERR_STATE, "finalized or aborted");
  SK_EXPECT_ERR(sk_finalize(scope, &again), SK_ERR_STATE, "stale handle");
  assert_ptr_equal(again, SENTINEL(sk_superkernel));
  sk_scope_abort(scope); /* ignored, with a message */
  SK_EXPECT_MSG("sk_scope_abort");
  SK_CHECK(sk_scope_begin(f->dev, "aborted", NULL, &aborted));
  sk_scope_abort(aborted);
  SK_EXPECT_ERR(sk_add_kernel(aborted, f->noargs, 1, NULL, NULL), SK_ERR_STATE, "finalized or aborted");
  /* Still detected after many scopes of the same type came and went (the quarantine). */
  for (i = 0; i < 200; ++i) {
    sk_scope *s = NULL;
    SK_CHECK(sk_scope_begin(f->dev, "churn", NULL, &s));
    sk_scope_abort(s);
  }
  SK_EXPECT_ERR(sk_add_kernel(scope, f->noargs, 1, NULL, NULL), SK_ERR_STATE, "stale handle");
  /* A failed finalize consumes the scope too (an empty scope cannot be finalized). */
  SK_CHECK(sk_scope_begin(f->dev, "empty", NULL, &aborted));
  SK_EXPECT_ERR(sk_finalize(aborted, &again), SK_ERR_STATE, "no kernel");
  SK_EXPECT_ERR(sk_finalize(aborted, &again), SK_ERR_STATE, "stale handle");
  sk_superkernel_destroy(sk);
}

static void test_launch_after_destroy(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_superkernel *sk = build_fill(f, 9);
  sk_stream *stream = NULL;
  uint32_t v = 1;
  char buf[16];
  SK_CHECK(sk_stream_create(f->dev, &stream));
  SK_CHECK(sk_launch(sk, stream));
  sk_stream_destroy(stream); /* waits for the launch */
  assert_int_equal(f->buf[7], 7u * 2654435761u + 9u);
  SK_EXPECT_ERR(sk_launch(sk, stream), SK_ERR_STATE, "stream");
  SK_EXPECT_ERR(sk_stream_synchronize(stream), SK_ERR_STATE, "was destroyed");
  sk_stream_destroy(stream); /* destroyed twice: ignored */
  SK_EXPECT_MSG("sk_stream_destroy");
  sk_superkernel_destroy(sk);
  SK_EXPECT_ERR(sk_launch(sk, NULL), SK_ERR_STATE, "super kernel");
  SK_EXPECT_MSG("was destroyed");
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 0, 0, &v), SK_ERR_STATE, "was destroyed");
  SK_EXPECT_ERR(sk_superkernel_explain(sk, buf, sizeof buf, NULL), SK_ERR_STATE, "was destroyed");
  sk_superkernel_destroy(sk); /* destroyed twice: ignored */
  SK_EXPECT_MSG("sk_superkernel_destroy");
}

static void test_kernel_after_unload(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_module *mod = load_kernels(f->dev, "clang-O2-pic", "capi_chain");
  sk_kernel *fill = get_kernel(mod, "capi_fill"), *k = SENTINEL(sk_kernel);
  sk_scope *scope = NULL;
  uint32_t n = N, seed = 3;
  void *args[3];
  args[0] = &f->buf;
  args[1] = &n;
  args[2] = &seed;
  sk_module_unload(mod);
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "capi_fill", &k), SK_ERR_STATE, "was unloaded");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  SK_EXPECT_ERR(sk_launch_kernel(fill, 1, args, NULL), SK_ERR_STATE, "module that was unloaded");
  SK_CHECK(sk_scope_begin(f->dev, "stale_kernel", NULL, &scope));
  SK_EXPECT_ERR(sk_add_kernel(scope, fill, 1, args, NULL), SK_ERR_STATE, "module that was unloaded");
  sk_scope_abort(scope);
  sk_module_unload(mod); /* unloaded twice: ignored */
  SK_EXPECT_MSG("sk_module_unload");
}

static void test_device_after_close(void **state) {
  sk_device *dev = open_device("host:cores=1");
  sk_module *mod = SENTINEL(sk_module);
  sk_scope *scope = SENTINEL(sk_scope);
  void *p = SENTINEL(void);
  static const unsigned char bytes[64] = {0x7f, 'E', 'L', 'F'};
  (void)state;
  sk_device_close(dev);
  SK_EXPECT_ERR(sk_module_load(dev, bytes, sizeof bytes, &mod), SK_ERR_STATE, "was closed");
  SK_EXPECT_ERR(sk_scope_begin(dev, "s", NULL, &scope), SK_ERR_STATE, "was closed");
  SK_EXPECT_ERR(sk_mem_alloc(dev, 64, &p), SK_ERR_STATE, "was closed");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  assert_ptr_equal(scope, SENTINEL(sk_scope));
  assert_ptr_equal(p, SENTINEL(void));
  sk_device_close(dev); /* closed twice: ignored */
  SK_EXPECT_MSG("sk_device_close");
}

/* Closing a device while objects made from it live: the close says which, every later use of
 * them fails with SK_ERR_STATE naming the closed device, and their destroy calls still free them
 * (LeakSanitizer checks). */
static void test_children_of_closed_device(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_chain");
  sk_kernel *fill = get_kernel(mod, "capi_fill"), *k = SENTINEL(sk_kernel);
  sk_stream *stream = NULL;
  sk_scope *scope = NULL, *open_scope = NULL;
  sk_superkernel *sk = NULL, *out = SENTINEL(sk_superkernel);
  sk_profile_record rec[2];
  uint32_t *buf = (uint32_t *)calloc(N, sizeof(uint32_t)), n = N, seed = 4;
  void *args[3];
  char text[64];
  size_t needed = 0;
  (void)state;
  assert_non_null(buf);
  args[0] = &buf;
  args[1] = &n;
  args[2] = &seed;
  rec[0].struct_size = sizeof rec[0];
  SK_CHECK(sk_stream_create(dev, &stream));
  SK_CHECK(sk_scope_begin(dev, "of_closed", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, fill, 2, args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_scope_begin(dev, "left_open", NULL, &open_scope));
  SK_CHECK(sk_launch(sk, stream));
  sk_device_close(dev); /* waits for the launch, then reports what is still alive */
  assert_int_equal(buf[5], 5u * 2654435761u + seed);
  SK_EXPECT_MSG("sk_device_close: device \"host:cores=2\"");
  SK_EXPECT_MSG("1 module, 1 stream, 1 scope, 1 super kernel still alive");

  SK_EXPECT_ERR(sk_launch(sk, NULL), SK_ERR_STATE, "sk_launch: super kernel");
  SK_EXPECT_MSG("belongs to device \"host:cores=2\", which was closed");
  SK_EXPECT_ERR(sk_launch(sk, stream), SK_ERR_STATE, "which was closed");
  SK_EXPECT_ERR(sk_launch_kernel(fill, 1, args, NULL), SK_ERR_STATE, "sk_launch_kernel: kernel");
  SK_EXPECT_MSG("which was closed");
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 0, 2, &seed), SK_ERR_STATE, "which was closed");
  SK_EXPECT_ERR(sk_superkernel_explain(sk, text, sizeof text, &needed), SK_ERR_STATE, "which was closed");
  SK_EXPECT_ERR(sk_superkernel_profile(sk, rec, 2, &needed), SK_ERR_STATE, "which was closed");
  SK_EXPECT_ERR(sk_superkernel_write_trace(sk, "/nonexistent/t.json"), SK_ERR_STATE, "which was closed");
  SK_EXPECT_ERR(sk_stream_synchronize(stream), SK_ERR_STATE, "sk_stream_synchronize: stream");
  SK_EXPECT_ERR(sk_module_get_kernel(mod, "capi_fill", &k), SK_ERR_STATE, "which was closed");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "capi_fill", "ptr,u32,u32", &k), SK_ERR_STATE,
                "which was closed");
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  SK_EXPECT_ERR(sk_add_kernel(open_scope, fill, 1, args, NULL), SK_ERR_STATE, "sk_add_kernel: scope");
  SK_EXPECT_ERR(sk_scope_record_event(open_scope, 0, 1), SK_ERR_STATE, "which was closed");
  SK_EXPECT_ERR(sk_scope_wait_event(open_scope, 0, 1), SK_ERR_STATE, "which was closed");
  /* Finalize consumes the scope whatever happens, this too. */
  SK_EXPECT_ERR(sk_finalize(open_scope, &out), SK_ERR_STATE, "which was closed");
  assert_ptr_equal(out, SENTINEL(sk_superkernel));
  SK_EXPECT_ERR(sk_finalize(open_scope, &out), SK_ERR_STATE, "stale handle");
  SK_CHECK(sk_stream_synchronize(NULL)); /* no open device waits for the closed one's streams */

  /* Destroy calls work and leave no message; a second one finds a destroyed handle. */
  sk_superkernel_destroy(sk);
  sk_stream_destroy(stream);
  sk_module_unload(mod);
  SK_EXPECT_MSG("sk_finalize"); /* still the last failure */
  sk_superkernel_destroy(sk);
  SK_EXPECT_MSG("sk_superkernel_destroy: super kernel");
  SK_EXPECT_MSG("was destroyed (stale handle)");
  sk_stream_destroy(stream);
  SK_EXPECT_MSG("sk_stream_destroy: stream");
  sk_module_unload(mod);
  SK_EXPECT_MSG("sk_module_unload: module");
  free(buf);

  /* A device closed with nothing left alive sets no message. */
  dev = open_device("host:cores=1");
  sk_device_close(dev);
  SK_EXPECT_MSG("sk_module_unload: module");
}

/* Unloading every module while launches that use them are queued: the super kernel keeps its
 * code, and later launches still work. */
static void test_unload_while_queued(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_module *mod = load_kernels(f->dev, "gcc-O0-nopic", "capi_chain");
  sk_kernel *fill = get_kernel(mod, "capi_fill"), *axpb = get_kernel(mod, "capi_axpb");
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t n = N, seed = 11, i;
  int32_t a = 3, b = 4;
  void *fill_args[3], *axpb_args[4];
  fill_args[0] = axpb_args[0] = &f->buf;
  fill_args[1] = axpb_args[1] = &n;
  fill_args[2] = &seed;
  axpb_args[2] = &a;
  axpb_args[3] = &b;
  SK_CHECK(sk_scope_begin(f->dev, "unload_queued", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, fill, 3, fill_args, NULL));
  SK_CHECK(sk_add_kernel(scope, axpb, 2, axpb_args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  for (i = 0; i < 50; ++i) SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_launch_kernel(fill, 2, fill_args, NULL));
  sk_module_unload(mod);
  for (i = 0; i < 50; ++i) SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < N; ++i) assert_int_equal(f->buf[i], (i * 2654435761u + seed) * 3u + 4u);
  sk_superkernel_destroy(sk);
}

/* Closing a device with work queued waits for it. Results go to malloc'ed memory, which outlives
 * the device. */
static void test_close_with_work_queued(void **state) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_chain");
  sk_kernel *fill = get_kernel(mod, "capi_fill"), *axpb = get_kernel(mod, "capi_axpb");
  sk_stream *stream = NULL;
  const uint32_t n = 1u << 16;
  uint32_t *out = (uint32_t *)malloc(n * sizeof(uint32_t)), seed = 2, i;
  int32_t a = 1, b = 1;
  void *fill_args[3], *axpb_args[4];
  (void)state;
  assert_non_null(out);
  fill_args[0] = axpb_args[0] = &out;
  fill_args[1] = axpb_args[1] = (void *)&n;
  fill_args[2] = &seed;
  axpb_args[2] = &a;
  axpb_args[3] = &b;
  SK_CHECK(sk_stream_create(dev, &stream));
  SK_CHECK(sk_launch_kernel(fill, 4, fill_args, stream));
  for (i = 0; i < 200; ++i) SK_CHECK(sk_launch_kernel(axpb, 4, axpb_args, i % 2 ? stream : NULL));
  sk_stream_destroy(stream); /* waits for the stream's share */
  sk_module_unload(mod);     /* queued unfused launches hold their kernel */
  sk_device_close(dev);      /* waits for the rest */
  for (i = 0; i < n; ++i) assert_int_equal(out[i], i * 2654435761u + seed + 200u);
  free(out);
}

/* ---- absurd sizes ------------------------------------------------------------------------------ */

static void test_block_dim_extremes(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "dims", NULL, &scope));
  SK_EXPECT_ERR(sk_add_kernel(scope, f->noargs, 0, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "block_dim 0");
  SK_EXPECT_MSG("capi_noargs");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->noargs, 1u << 31, NULL, NULL), SK_ERR_INVALID_ARGUMENT,
                "block_dim 2147483648");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->noargs, UINT32_MAX, NULL, NULL), SK_ERR_INVALID_ARGUMENT,
                "outside [1, 16777216]");
  SK_EXPECT_ERR(sk_add_kernel(scope, f->noargs, (1u << 24) + 1, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "block_dim");
  SK_CHECK(sk_add_kernel(scope, f->noargs, 1u << 24, NULL, NULL)); /* the largest accepted */
  sk_scope_abort(scope);
  SK_EXPECT_ERR(sk_launch_kernel(f->noargs, 0, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "block_dim 0");
  SK_EXPECT_ERR(sk_launch_kernel(f->noargs, 1u << 31, NULL, NULL), SK_ERR_INVALID_ARGUMENT, "block_dim 2147483648");
}

/* A grid's shape (sk_kernel_options.grid, sk_launch_kernel_grid): every extent at least 1 and
 * block_dim their product, checked without overflow; a host kernel runs the same blocks with it. */
static void test_grid_shapes(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
  uint32_t n = N, seed = 9, flat[N];
  void *args[3];
  char json[8192];
  const uint32_t shape[3] = {2, 2, 1}, zero[3] = {2, 0, 1}, many[3] = {4096, 4096, 2},
                 wraps[3] = {UINT32_MAX, UINT32_MAX, 1};
  args[0] = &f->buf;
  args[1] = &n;
  args[2] = &seed;
  SK_CHECK(sk_scope_begin(f->dev, "shapes", NULL, &scope));
  opts.grid[0] = 2, opts.grid[1] = 0, opts.grid[2] = 1;
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 4, args, &opts), SK_ERR_INVALID_ARGUMENT,
                "sk_add_kernel: kernel 'capi_fill': opts->grid {2, 0, 1} has an extent of 0");
  opts.grid[1] = 1;
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 4, args, &opts), SK_ERR_INVALID_ARGUMENT,
                "opts->grid {2, 1, 1} is not block_dim 4 blocks");
  opts.grid[0] = UINT32_MAX, opts.grid[1] = UINT32_MAX, opts.grid[2] = UINT32_MAX;
  SK_EXPECT_ERR(sk_add_kernel(scope, f->fill, 4, args, &opts), SK_ERR_INVALID_ARGUMENT, "is not block_dim 4");
  opts.grid[0] = 2, opts.grid[1] = 2, opts.grid[2] = 1;
  SK_CHECK(sk_add_kernel(scope, f->fill, 4, args, &opts));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_superkernel_explain(sk, json, sizeof json, NULL));
  assert_non_null(strstr(json, "\"block_dim\":4,\"grid\":[2,2,1]"));

  SK_EXPECT_ERR(sk_launch_kernel_grid(f->fill, NULL, args, NULL), SK_ERR_INVALID_ARGUMENT,
                "sk_launch_kernel_grid: kernel 'capi_fill': grid is NULL");
  SK_EXPECT_ERR(sk_launch_kernel_grid(f->fill, zero, args, NULL), SK_ERR_INVALID_ARGUMENT,
                "grid {2, 0, 1} has an extent of 0");
  SK_EXPECT_ERR(sk_launch_kernel_grid(f->fill, many, args, NULL), SK_ERR_INVALID_ARGUMENT,
                "grid {4096, 4096, 2} has more than the 16777216 blocks of a launch");
  SK_EXPECT_ERR(sk_launch_kernel_grid(f->fill, wraps, args, NULL), SK_ERR_INVALID_ARGUMENT, "has more than");
  SK_EXPECT_ERR(sk_launch_kernel_grid(NULL, shape, args, NULL), SK_ERR_INVALID_ARGUMENT, "kernel");
  /* The same blocks, shaped or not, fused or not. */
  memset(f->buf, 0, N * sizeof(uint32_t));
  SK_CHECK(sk_launch_kernel(f->fill, 4, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  memcpy(flat, f->buf, sizeof flat);
  memset(f->buf, 0, N * sizeof(uint32_t));
  SK_CHECK(sk_launch_kernel_grid(f->fill, shape, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_memory_equal(flat, f->buf, sizeof flat);
  memset(f->buf, 0, N * sizeof(uint32_t));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_memory_equal(flat, f->buf, sizeof flat);
  assert_int_equal(flat[3], 3u * 2654435761u + 9u);
  sk_superkernel_destroy(sk);
}

/* 100k kernels in one scope: finalize and launch stay linear (seconds, not minutes, of the
 * calling thread's CPU time; the launch's steps run on it and on the executor's cores, and it
 * waits for them, spinning for at most spin_us at each step). */
static void test_hundred_thousand_kernels(void **state) {
  struct fixture *f = (struct fixture *)*state;
  const uint32_t count = 100000, n = 64;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  uint32_t i, seed = 77, zero = 0;
  int32_t a = 1, b = 1;
  void *fill_args[3], *axpb_args[4];
  size_t needed = 0;
  double t0, t_add, t_fin, t_launch, wall0, wall_launch;
  fill_args[0] = axpb_args[0] = &f->buf;
  fill_args[1] = axpb_args[1] = (void *)&n;
  fill_args[2] = &seed;
  axpb_args[2] = &a;
  axpb_args[3] = &b;
  t0 = thread_cpu_s();
  SK_CHECK(sk_scope_begin(f->dev, "huge", "dcci-disable-on-kernel=capi_axpb", &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 2, fill_args, NULL));
  for (i = 1; i < count; ++i) SK_CHECK(sk_add_kernel(scope, f->axpb, 1 + i % 3, axpb_args, NULL));
  t_add = thread_cpu_s();
  SK_CHECK(sk_finalize(scope, &sk));
  t_fin = thread_cpu_s();
  wall0 = now_s();
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  t_launch = thread_cpu_s();
  wall_launch = now_s() - wall0;
  for (i = 0; i < n; ++i) assert_int_equal(f->buf[i], i * 2654435761u + seed + (count - 1));
  /* Rebinding the last step: it now adds 0. */
  SK_CHECK(sk_superkernel_set_arg(sk, count - 1, 3, &zero));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < n; ++i) assert_int_equal(f->buf[i], i * 2654435761u + seed + (count - 2));
  SK_CHECK(sk_superkernel_explain(sk, NULL, 0, &needed));
  assert_true(needed > count * 100u);
  print_message("100k kernels (CPU time): add %.2f s, finalize %.2f s, first launch %.2f s (%.2f s wall)\n",
                t_add - t0, t_fin - t_add, t_launch - t_fin, wall_launch);
  /* Generous bounds (sanitizer builds on two shared cores); quadratic work would take minutes. */
  assert_true(t_add - t0 < 30.0);
  assert_true(t_fin - t_add < 30.0);
  assert_true(t_launch - t_fin < 30.0);
  sk_superkernel_destroy(sk);
}

static long resident_kib(void) {
  long pages = 0, resident = 0;
  FILE *fp = fopen("/proc/self/statm", "r");
  assert_non_null(fp);
  assert_int_equal(fscanf(fp, "%ld %ld", &pages, &resident), 2);
  fclose(fp);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* 1 GiB in memory: refused before it is hashed or copied. Just below, with an ELF magic and
 * nothing else: hashed (reading zero pages), then refused by the header check without a copy. */
static void test_one_gib_in_memory(void **state) {
  struct fixture *f = (struct fixture *)*state;
  const size_t gib = (size_t)1 << 30;
  sk_module *mod = SENTINEL(sk_module);
  unsigned char *image =
      (unsigned char *)mmap(NULL, gib, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  long before;
  assert_true(image != MAP_FAILED);
  SK_EXPECT_ERR(sk_module_load(f->dev, image, gib, &mod), SK_ERR_UNSUPPORTED, "1073741824 bytes");
  SK_EXPECT_MSG("smaller than");
  SK_EXPECT_ERR(sk_module_load(f->dev, image, gib - 1, &mod), SK_ERR_BAD_BINARY, "not an ELF object");
  memcpy(image, "\177ELF\2\1\1", 7);
  image[16] = 1; /* e_type ET_REL; e_shoff stays 0 */
  before = resident_kib();
  SK_EXPECT_ERR(sk_module_load(f->dev, image, gib - 1, &mod), SK_ERR_BAD_BINARY, "no section header table");
  assert_true(resident_kib() - before < 64 * 1024); /* no copy of the gigabyte */
  assert_ptr_equal(mod, SENTINEL(sk_module));
  munmap(image, gib);
}

/* 1 GiB files: a sparse file is refused by its size without being read; /dev/zero (no size) is
 * refused at its first bytes. */
static void test_one_gib_files(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_module *mod = SENTINEL(sk_module);
  char path[] = "/tmp/sk_bad_inputs_XXXXXX";
  int fd = mkstemp(path);
  long before;
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "\177ELF\2\1\1", 7), 7);
  assert_int_equal(ftruncate(fd, (off_t)1 << 30), 0);
  close(fd);
  before = resident_kib();
  SK_EXPECT_ERR(sk_module_load_file(f->dev, path, &mod), SK_ERR_UNSUPPORTED, path);
  SK_EXPECT_MSG("smaller than");
  assert_true(resident_kib() - before < 64 * 1024);
  unlink(path);
  SK_EXPECT_ERR(sk_module_load_file(f->dev, "/dev/zero", &mod), SK_ERR_BAD_BINARY, "/dev/zero");
  SK_EXPECT_ERR(sk_module_load_file(f->dev, "/tmp", &mod), SK_ERR_NOT_FOUND, "directory");
  assert_ptr_equal(mod, SENTINEL(sk_module));
}

/* Files that are not objects, from places that are not plain files: each fails at once with a
 * message naming the path (none may block: a hang is the ctest timeout). */
static void test_hostile_files(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_module *mod = SENTINEL(sk_module);
  char fifo[] = "/tmp/sk_bad_fifo_XXXXXX", trunc[] = "/tmp/sk_bad_trunc_XXXXXX",
       empty[] = "/tmp/sk_bad_empty_XXXXXX";
  char path[1024], proc[64];
  unsigned char *image;
  size_t size;
  int fd, pipefd[2];

  /* A FIFO no one writes to: opening it must not wait for a writer. */
  fd = mkstemp(fifo);
  assert_true(fd >= 0);
  close(fd);
  unlink(fifo);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  SK_EXPECT_ERR(sk_module_load_file(f->dev, fifo, &mod), SK_ERR_BAD_BINARY, fifo);
  SK_EXPECT_MSG("no writer");
  unlink(fifo);

  /* /proc files say size 0 and have bytes: read, then refused by their magic. */
  SK_EXPECT_ERR(sk_module_load_file(f->dev, "/proc/self/status", &mod), SK_ERR_BAD_BINARY, "/proc/self/status");
  SK_EXPECT_MSG("not an ELF object");

  /* An empty regular file. */
  fd = mkstemp(empty);
  assert_true(fd >= 0);
  close(fd);
  SK_EXPECT_ERR(sk_module_load_file(f->dev, empty, &mod), SK_ERR_BAD_BINARY, "file is empty");
  SK_EXPECT_MSG(empty);
  unlink(empty);

  /* A real object cut short: its section table lies past the end. */
  kernel_path(path, sizeof path, TEST_VARIANT, "capi_chain");
  image = read_whole_file(path, &size);
  fd = mkstemp(trunc);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, image, size / 2), (ssize_t)(size / 2));
  close(fd);
  SK_EXPECT_ERR(sk_module_load_file(f->dev, trunc, &mod), SK_ERR_BAD_BINARY, trunc);
  unlink(trunc);
  assert_ptr_equal(mod, SENTINEL(sk_module));

  /* A pipe holding a whole object loads (streamed); one holding text is refused. */
  assert_int_equal(pipe(pipefd), 0);
  assert_true(size < 65536); /* fits the pipe's buffer: no writer thread needed */
  assert_int_equal(write(pipefd[1], image, size), (ssize_t)size);
  close(pipefd[1]);
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", pipefd[0]);
  mod = NULL;
  SK_CHECK(sk_module_load_file(f->dev, proc, &mod));
  assert_non_null(mod);
  sk_module_unload(mod);
  close(pipefd[0]);
  assert_int_equal(pipe(pipefd), 0);
  assert_int_equal(write(pipefd[1], "hello\n", 6), 6);
  close(pipefd[1]);
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", pipefd[0]);
  mod = SENTINEL(sk_module);
  SK_EXPECT_ERR(sk_module_load_file(f->dev, proc, &mod), SK_ERR_BAD_BINARY, "bad magic");
  SK_EXPECT_MSG(proc);
  close(pipefd[0]);
  assert_ptr_equal(mod, SENTINEL(sk_module));
  free(image);
}

/* ---- signatures that do not parse ------------------------------------------------------------- */

static void expect_bad_signature(sk_module *mod, const char *sig, sk_status status, const char *needle) {
  sk_kernel *k = SENTINEL(sk_kernel);
  sk_status st = sk_module_get_kernel_with_signature(mod, "capi_plain_add", sig, &k);
  if (st != status)
    fail_msg("signature \"%.40s\": %s (%s), expected %s", sig, sk_status_name(st), sk_last_error(),
             sk_status_name(status));
  if (!strstr(sk_last_error(), needle))
    fail_msg("signature \"%.40s\": message \"%s\" does not name \"%s\"", sig, sk_last_error(), needle);
  assert_ptr_equal(k, SENTINEL(sk_kernel));
}

static void test_bad_signatures(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_kernel *k = SENTINEL(sk_kernel);
  char *longsig;
  size_t i;
  expect_bad_signature(f->misc, "ptr,,u32", SK_ERR_INVALID_ARGUMENT, "parameter 1 is ''");
  expect_bad_signature(f->misc, "ptr,u33,u32", SK_ERR_INVALID_ARGUMENT, "'u33'");
  expect_bad_signature(f->misc, "ptr,u32,", SK_ERR_INVALID_ARGUMENT, "parameter 2");
  expect_bad_signature(f->misc, "float*", SK_ERR_INVALID_ARGUMENT, "'float*'");
  expect_bad_signature(f->misc, "PTR", SK_ERR_INVALID_ARGUMENT, "'PTR'");
  expect_bad_signature(f->misc, "ptr u32", SK_ERR_INVALID_ARGUMENT, "'ptr u32'");
  expect_bad_signature(f->misc, "\xff\xfe", SK_ERR_INVALID_ARGUMENT, "capi_plain_add");
  /* Aggregates (structs by value) that do not parse name the parameter and the fault. */
  expect_bad_signature(f->misc, "ptr,{u32,u32", SK_ERR_INVALID_ARGUMENT, "parameter 1 has a '{' at byte 4");
  expect_bad_signature(f->misc, "ptr,{},u32", SK_ERR_INVALID_ARGUMENT, "empty aggregate");
  expect_bad_signature(f->misc, "ptr,u32[2]", SK_ERR_INVALID_ARGUMENT, "an array parameter is a pointer");
  expect_bad_signature(f->misc, "ptr,{u8[40000]}", SK_ERR_INVALID_ARGUMENT, "array length '40000'");
  longsig = (char *)malloc(400001);
  assert_non_null(longsig);
  for (i = 0; i < 100000; ++i) memcpy(longsig + 4 * i, "ptr,", 4);
  memcpy(longsig + 399996, "xyz", 4); /* 99999 good tokens, then a bad one */
  expect_bad_signature(f->misc, longsig, SK_ERR_INVALID_ARGUMENT, "parameter 99999 is 'xyz'");
  free(longsig);
  /* A signature that parses but disagrees with the object's metadata. */
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(f->chain, "capi_fill", "ptr,u32", &k), SK_ERR_INCOMPATIBLE,
                "capi_fill");
  /* Metadata whose signature does not parse (capi_badsig): the object is at fault. */
  {
    sk_module *bad = load_kernels(f->dev, TEST_VARIANT, "capi_badsig");
    SK_EXPECT_ERR(sk_module_get_kernel(bad, "capi_badsig", &k), SK_ERR_BAD_BINARY, "'float'");
    sk_module_unload(bad);
  }
  assert_ptr_equal(k, SENTINEL(sk_kernel));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_invalid_arguments),
      cmocka_unit_test(test_foreign_handles),
      cmocka_unit_test(test_scope_after_finalize),
      cmocka_unit_test(test_launch_after_destroy),
      cmocka_unit_test(test_kernel_after_unload),
      cmocka_unit_test(test_device_after_close),
      cmocka_unit_test(test_children_of_closed_device),
      cmocka_unit_test(test_unload_while_queued),
      cmocka_unit_test(test_close_with_work_queued),
      cmocka_unit_test(test_block_dim_extremes),
      cmocka_unit_test(test_grid_shapes),
      cmocka_unit_test(test_hundred_thousand_kernels),
      cmocka_unit_test(test_one_gib_in_memory),
      cmocka_unit_test(test_one_gib_files),
      cmocka_unit_test(test_hostile_files),
      cmocka_unit_test(test_bad_signatures),
  };
  return cmocka_run_group_tests_name("c_bad_inputs", tests, setup, teardown);
}
