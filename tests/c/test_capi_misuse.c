/* The misuse matrix of the public C API: every entry point that takes a handle, given for each
 * handle parameter a NULL, a handle of another type, a destroyed (stale) handle and a handle of a
 * closed device. Each gets its documented status and a message naming the call and the culprit
 * (docs/conventions.md); destroy calls given the same return nothing and leave a message. Other
 * bad arguments of single calls are in test_bad_inputs.c. */
#include "test_util.h"

#define N 64u

/* The handles of one device: live ones, or ones whose device was closed. */
struct handles {
  sk_device *dev;
  sk_module *mod;
  sk_kernel *kernel;
  sk_stream *stream;
  sk_scope *scope;
  sk_superkernel *sk;
};

struct fixture {
  struct handles live, closed, stale;
  uint32_t *buf;
  uint32_t n, seed;
  void *args[3];
};

static void make_handles(struct fixture *f, struct handles *h, const char *spec) {
  h->dev = open_device(spec);
  h->mod = load_kernels(h->dev, TEST_VARIANT, "capi_chain");
  h->kernel = get_kernel(h->mod, "capi_fill");
  SK_CHECK(sk_stream_create(h->dev, &h->stream));
  SK_CHECK(sk_scope_begin(h->dev, "misuse", NULL, &h->scope));
  SK_CHECK(sk_add_kernel(h->scope, h->kernel, 1, f->args, NULL));
  {
    sk_scope *s = NULL;
    SK_CHECK(sk_scope_begin(h->dev, "misuse_sk", NULL, &s));
    SK_CHECK(sk_add_kernel(s, h->kernel, 1, f->args, NULL));
    SK_CHECK(sk_finalize(s, &h->sk));
  }
}

static void destroy_handles(struct handles *h) {
  sk_superkernel_destroy(h->sk);
  sk_scope_abort(h->scope);
  sk_stream_destroy(h->stream);
  sk_module_unload(h->mod);
  sk_device_close(h->dev);
}

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  f->buf = (uint32_t *)calloc(N, sizeof(uint32_t));
  if (!f->buf) return -1;
  f->n = N;
  f->seed = 1;
  f->args[0] = &f->buf;
  f->args[1] = &f->n;
  f->args[2] = &f->seed;
  make_handles(f, &f->live, "host:cores=1");
  make_handles(f, &f->closed, "host:cores=1,pin=0");
  sk_device_close(f->closed.dev); /* its children stay, refusing every use but destroy */
  make_handles(f, &f->stale, "host:cores=1");
  destroy_handles(&f->stale);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  f->closed.dev = NULL; /* closed already */
  destroy_handles(&f->closed);
  destroy_handles(&f->live);
  free(f->buf);
  free(f);
  return 0;
}

/* What a handle parameter is given. */
enum bad { BAD_NULL, BAD_FOREIGN, BAD_STALE, BAD_CLOSED, BAD_COUNT };
static const char *const bad_name[BAD_COUNT] = {"NULL", "a foreign handle", "a stale handle",
                                                "a handle of a closed device"};

/* The status and a piece of the message each kind of bad handle gets. */
static sk_status expected_status(enum bad b) {
  return b == BAD_NULL || b == BAD_FOREIGN ? SK_ERR_INVALID_ARGUMENT : SK_ERR_STATE;
}
static const char *expected_text(enum bad b, const char *what) {
  static char text[128];
  switch (b) {
    case BAD_NULL: snprintf(text, sizeof text, "%s is NULL", what); break;
    case BAD_FOREIGN: snprintf(text, sizeof text, "is not a live %s handle", what); break;
    case BAD_STALE: return "(stale handle)";
    default: return "was closed"; /* a closed device itself is a stale one */
  }
  return text;
}

/* The bad value of each handle type: a NULL, another type's live handle, a destroyed one, one of
 * the closed device (for the device itself: the closed device). */
static void *bad_device(struct fixture *f, enum bad b) {
  void *v[] = {NULL, f->live.mod, f->stale.dev, f->stale.dev};
  return v[b];
}
static void *bad_module(struct fixture *f, enum bad b) {
  void *v[] = {NULL, f->live.kernel, f->stale.mod, f->closed.mod};
  return v[b];
}
static void *bad_kernel(struct fixture *f, enum bad b) {
  void *v[] = {NULL, f->live.stream, f->stale.kernel, f->closed.kernel};
  return v[b];
}
static void *bad_stream(struct fixture *f, enum bad b) {
  void *v[] = {NULL, f->live.sk, f->stale.stream, f->closed.stream};
  return v[b];
}
static void *bad_scope(struct fixture *f, enum bad b) {
  void *v[] = {NULL, f->live.dev, f->stale.scope, f->closed.scope};
  return v[b];
}
static void *bad_superkernel(struct fixture *f, enum bad b) {
  void *v[] = {NULL, f->live.scope, f->stale.sk, f->closed.sk};
  return v[b];
}

/* One entry point with one handle parameter replaced by `h`; the other arguments are valid. */
struct entry {
  const char *call;
  const char *what;                         /* the handle parameter, as messages name it */
  void *(*bad)(struct fixture *, enum bad); /* its bad values */
  sk_status (*run)(struct fixture *f, void *h);
  int null_is_valid; /* NULL means the default stream */
};

static sk_status run_device_cores(struct fixture *f, void *h) {
  uint32_t cores = 0;
  (void)f;
  return sk_device_cores((sk_device *)h, &cores);
}
static sk_status run_device_synchronize(struct fixture *f, void *h) {
  (void)f;
  return sk_device_synchronize((sk_device *)h);
}
static sk_status run_mem_alloc(struct fixture *f, void *h) {
  void *p = SENTINEL(void);
  sk_status st = sk_mem_alloc((sk_device *)h, 64, &p);
  (void)f;
  assert_ptr_equal(p, SENTINEL(void));
  return st;
}
static sk_status run_memcpy(struct fixture *f, void *h) {
  uint32_t a = 1, b = 2;
  (void)f;
  return sk_memcpy((sk_device *)h, &a, &b, sizeof a);
}
static sk_status run_module_load(struct fixture *f, void *h) {
  static const unsigned char image[64] = {0x7f, 'E', 'L', 'F'};
  sk_module *m = SENTINEL(sk_module);
  sk_status st = sk_module_load((sk_device *)h, image, sizeof image, &m);
  (void)f;
  assert_ptr_equal(m, SENTINEL(sk_module));
  return st;
}
static sk_status run_module_load_file(struct fixture *f, void *h) {
  char path[1024];
  sk_module *m = SENTINEL(sk_module);
  sk_status st;
  (void)f;
  kernel_path(path, sizeof path, TEST_VARIANT, "capi_chain");
  st = sk_module_load_file((sk_device *)h, path, &m);
  assert_ptr_equal(m, SENTINEL(sk_module));
  return st;
}
static sk_status run_stream_create(struct fixture *f, void *h) {
  sk_stream *s = SENTINEL(sk_stream);
  sk_status st = sk_stream_create((sk_device *)h, &s);
  (void)f;
  assert_ptr_equal(s, SENTINEL(sk_stream));
  return st;
}
static sk_status run_scope_begin(struct fixture *f, void *h) {
  sk_scope *s = SENTINEL(sk_scope);
  sk_status st = sk_scope_begin((sk_device *)h, "x", NULL, &s);
  (void)f;
  assert_ptr_equal(s, SENTINEL(sk_scope));
  return st;
}
static sk_status run_get_kernel(struct fixture *f, void *h) {
  sk_kernel *k = SENTINEL(sk_kernel);
  sk_status st = sk_module_get_kernel((sk_module *)h, "capi_fill", &k);
  (void)f;
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  return st;
}
static sk_status run_get_kernel_with_signature(struct fixture *f, void *h) {
  sk_kernel *k = SENTINEL(sk_kernel);
  sk_status st = sk_module_get_kernel_with_signature((sk_module *)h, "capi_fill", "ptr,u32,u32", &k);
  (void)f;
  assert_ptr_equal(k, SENTINEL(sk_kernel));
  return st;
}
static sk_status run_launch_kernel(struct fixture *f, void *h) {
  return sk_launch_kernel((sk_kernel *)h, 1, f->args, NULL);
}
static sk_status run_launch_kernel_stream(struct fixture *f, void *h) {
  return sk_launch_kernel(f->live.kernel, 1, f->args, (sk_stream *)h);
}
static sk_status run_add_kernel_kernel(struct fixture *f, void *h) {
  return sk_add_kernel(f->live.scope, (sk_kernel *)h, 1, f->args, NULL);
}
static sk_status run_add_kernel_scope(struct fixture *f, void *h) {
  return sk_add_kernel((sk_scope *)h, f->live.kernel, 1, f->args, NULL);
}
static sk_status run_record_event(struct fixture *f, void *h) {
  (void)f;
  return sk_scope_record_event((sk_scope *)h, 0, 1);
}
static sk_status run_wait_event(struct fixture *f, void *h) {
  (void)f;
  return sk_scope_wait_event((sk_scope *)h, 0, 1);
}
static sk_status run_stream_synchronize(struct fixture *f, void *h) {
  (void)f;
  return sk_stream_synchronize((sk_stream *)h);
}
static sk_status run_stream_query_device(struct fixture *f, void *h) {
  int done = 7;
  sk_status st = sk_stream_query((sk_device *)h, NULL, &done);
  (void)f;
  assert_int_equal(done, 7);
  return st;
}
static sk_status run_stream_query_stream(struct fixture *f, void *h) {
  int done = 7;
  sk_status st = sk_stream_query(f->live.dev, (sk_stream *)h, &done);
  assert_int_equal(done, 7);
  return st;
}
static sk_status run_launch(struct fixture *f, void *h) { return sk_launch((sk_superkernel *)h, f->live.stream); }
static sk_status run_launch_stream(struct fixture *f, void *h) { return sk_launch(f->live.sk, (sk_stream *)h); }
static sk_status run_set_arg(struct fixture *f, void *h) {
  return sk_superkernel_set_arg((sk_superkernel *)h, 0, 2, &f->seed);
}
static sk_status run_explain(struct fixture *f, void *h) {
  char buf[16] = "untouched";
  size_t needed = 7;
  sk_status st = sk_superkernel_explain((sk_superkernel *)h, buf, sizeof buf, &needed);
  (void)f;
  assert_string_equal(buf, "untouched");
  assert_int_equal(needed, 7);
  return st;
}
static sk_status run_profile(struct fixture *f, void *h) {
  sk_profile_record rec[1];
  size_t count = 7;
  sk_status st;
  (void)f;
  rec[0].struct_size = sizeof rec[0];
  st = sk_superkernel_profile((sk_superkernel *)h, rec, 1, &count);
  assert_int_equal(count, 7);
  return st;
}
static sk_status run_write_trace(struct fixture *f, void *h) {
  (void)f;
  return sk_superkernel_write_trace((sk_superkernel *)h, "/nonexistent-dir/trace.json");
}
/* Last: a scope of a closed device is consumed by the refused finalize. */
static sk_status run_finalize(struct fixture *f, void *h) {
  sk_superkernel *out = SENTINEL(sk_superkernel);
  sk_status st = sk_finalize((sk_scope *)h, &out);
  (void)f;
  assert_ptr_equal(out, SENTINEL(sk_superkernel));
  return st;
}

static const struct entry entries[] = {
    {"sk_device_cores", "device", bad_device, run_device_cores, 0},
    {"sk_device_synchronize", "device", bad_device, run_device_synchronize, 0},
    {"sk_mem_alloc", "device", bad_device, run_mem_alloc, 0},
    {"sk_memcpy", "device", bad_device, run_memcpy, 0},
    {"sk_module_load", "device", bad_device, run_module_load, 0},
    {"sk_module_load_file", "device", bad_device, run_module_load_file, 0},
    {"sk_stream_create", "device", bad_device, run_stream_create, 0},
    {"sk_scope_begin", "device", bad_device, run_scope_begin, 0},
    {"sk_module_get_kernel", "module", bad_module, run_get_kernel, 0},
    {"sk_module_get_kernel_with_signature", "module", bad_module, run_get_kernel_with_signature, 0},
    {"sk_launch_kernel", "kernel", bad_kernel, run_launch_kernel, 0},
    {"sk_launch_kernel", "stream", bad_stream, run_launch_kernel_stream, 1},
    {"sk_add_kernel", "kernel", bad_kernel, run_add_kernel_kernel, 0},
    {"sk_add_kernel", "scope", bad_scope, run_add_kernel_scope, 0},
    {"sk_scope_record_event", "scope", bad_scope, run_record_event, 0},
    {"sk_scope_wait_event", "scope", bad_scope, run_wait_event, 0},
    {"sk_stream_synchronize", "stream", bad_stream, run_stream_synchronize, 1},
    {"sk_stream_query", "device", bad_device, run_stream_query_device, 0},
    {"sk_stream_query", "stream", bad_stream, run_stream_query_stream, 1},
    {"sk_launch", "super kernel", bad_superkernel, run_launch, 0},
    {"sk_launch", "stream", bad_stream, run_launch_stream, 1},
    {"sk_superkernel_set_arg", "super kernel", bad_superkernel, run_set_arg, 0},
    {"sk_superkernel_explain", "super kernel", bad_superkernel, run_explain, 0},
    {"sk_superkernel_profile", "super kernel", bad_superkernel, run_profile, 0},
    {"sk_superkernel_write_trace", "super kernel", bad_superkernel, run_write_trace, 0},
    {"sk_finalize", "scope", bad_scope, run_finalize, 0},
};

static void test_entry_points(void **state) {
  struct fixture *f = (struct fixture *)*state;
  size_t i;
  int b;
  for (i = 0; i < sizeof entries / sizeof entries[0]; ++i) {
    const struct entry *e = &entries[i];
    for (b = 0; b < BAD_COUNT; ++b) {
      const sk_status want = expected_status((enum bad)b);
      const char *text = expected_text((enum bad)b, e->what);
      sk_status st;
      if (b == BAD_NULL && e->null_is_valid) continue;
      st = e->run(f, e->bad(f, (enum bad)b));
      if (st != want)
        fail_msg("%s given %s as its %s: %s (%s), expected %s", e->call, bad_name[b], e->what, sk_status_name(st),
                 sk_last_error(), sk_status_name(want));
      if (!strstr(sk_last_error(), e->call) || !strstr(sk_last_error(), text))
        fail_msg("%s given %s as its %s: message \"%s\" does not name \"%s\" and \"%s\"", e->call, bad_name[b],
                 e->what, sk_last_error(), e->call, text);
    }
  }
  /* The live handles still work after all that. */
  SK_CHECK(sk_launch(f->live.sk, f->live.stream));
  SK_CHECK(sk_stream_synchronize(f->live.stream));
  assert_int_equal(f->buf[3], 3u * 2654435761u + f->seed);
}

/* Destroy calls return nothing: a foreign or stale handle is ignored with a message naming the
 * call; NULL does nothing. */
static void destroy_device(void *h) { sk_device_close((sk_device *)h); }
static void destroy_module(void *h) { sk_module_unload((sk_module *)h); }
static void destroy_stream(void *h) { sk_stream_destroy((sk_stream *)h); }
static void destroy_scope(void *h) { sk_scope_abort((sk_scope *)h); }
static void destroy_superkernel(void *h) { sk_superkernel_destroy((sk_superkernel *)h); }

static void test_destroy_calls(void **state) {
  struct fixture *f = (struct fixture *)*state;
  const struct {
    const char *call;
    void (*destroy)(void *);
    void *foreign, *stale;
  } calls[] = {
      {"sk_device_close", destroy_device, f->live.mod, f->stale.dev},
      {"sk_module_unload", destroy_module, f->live.kernel, f->stale.mod},
      {"sk_stream_destroy", destroy_stream, f->live.sk, f->stale.stream},
      {"sk_scope_abort", destroy_scope, f->live.dev, f->stale.scope},
      {"sk_superkernel_destroy", destroy_superkernel, f->live.scope, f->stale.sk},
  };
  size_t i;
  for (i = 0; i < sizeof calls / sizeof calls[0]; ++i) {
    calls[i].destroy(NULL);
    calls[i].destroy(calls[i].foreign);
    SK_EXPECT_MSG(calls[i].call);
    SK_EXPECT_MSG("is not a live");
    calls[i].destroy(calls[i].stale);
    SK_EXPECT_MSG(calls[i].call);
    SK_EXPECT_MSG("(stale handle)");
  }
  sk_mem_free(NULL, f->buf);
  sk_mem_free(f->stale.dev, f->buf);
  SK_EXPECT_MSG("sk_mem_free");
  SK_EXPECT_MSG("(stale handle)");
  sk_mem_free((sk_device *)(void *)f->live.stream, f->buf);
  SK_EXPECT_MSG("is not a live device handle");
}

/* Integers outside what a call accepts, on live handles: refused naming the value. */
static void test_out_of_range_integers(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *fused = NULL;
  uint32_t v = 0;
  void *p = SENTINEL(void);
  SK_EXPECT_ERR(sk_launch_kernel(f->live.kernel, 0, f->args, NULL), SK_ERR_INVALID_ARGUMENT, "block_dim 0");
  SK_EXPECT_ERR(sk_launch_kernel(f->live.kernel, UINT32_MAX, f->args, NULL), SK_ERR_INVALID_ARGUMENT,
                "block_dim 4294967295");
  SK_EXPECT_ERR(sk_add_kernel(f->live.scope, f->live.kernel, 0, f->args, NULL), SK_ERR_INVALID_ARGUMENT,
                "block_dim 0");
  SK_EXPECT_ERR(sk_superkernel_set_arg(f->live.sk, UINT32_MAX, 0, &v), SK_ERR_INVALID_ARGUMENT, "step 4294967295");
  SK_EXPECT_ERR(sk_superkernel_set_arg(f->live.sk, 0, UINT32_MAX, &v), SK_ERR_INVALID_ARGUMENT, "index 4294967295");
  SK_EXPECT_ERR(sk_mem_alloc(f->live.dev, SIZE_MAX, &p), SK_ERR_OUT_OF_MEMORY, "bytes");
  assert_ptr_equal(p, SENTINEL(void));
  SK_CHECK(sk_scope_begin(f->live.dev, "events", "stream-fusion=1", &fused));
  SK_EXPECT_ERR(sk_scope_record_event(fused, 64, 1), SK_ERR_INVALID_ARGUMENT, "64");
  SK_EXPECT_ERR(sk_scope_record_event(fused, UINT32_MAX, 1), SK_ERR_INVALID_ARGUMENT, "4294967295");
  SK_EXPECT_ERR(sk_scope_wait_event(fused, 64, 1), SK_ERR_INVALID_ARGUMENT, "64");
  SK_CHECK(sk_scope_record_event(fused, 0, UINT32_MAX)); /* any event id */
  SK_EXPECT_ERR(sk_scope_record_event(fused, 1, UINT32_MAX), SK_ERR_INVALID_ARGUMENT, "4294967295");
  sk_scope_abort(fused);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entry_points),
      cmocka_unit_test(test_destroy_calls),
      cmocka_unit_test(test_out_of_range_integers),
  };
  return cmocka_run_group_tests_name("c_api_misuse", tests, setup, teardown);
}
