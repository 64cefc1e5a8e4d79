/* Public C API: cache maintenance (DCCI). The plan places per-access and whole-cache flushes
 * by the scope options and the tiling-sink flag, explain shows where, and kernels using the
 * scalar accessors and explicit flushes compute fused what they compute unfused. (That the
 * executor flushes where the plan says is checked from inside by tests/cpp/host/cache_test.cpp.) */
#include "test_util.h"

#define N 257u

struct fixture {
  sk_device *dev;
  sk_module *mod;
  sk_kernel *write, *read;
  uint32_t *buf, *dst, *ubuf, *udst;
  uint64_t *wide, *uwide;
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  if (sk_device_open("host:cores=3", &f->dev) != SK_OK) return -1;
  f->mod = load_kernels(f->dev, TEST_VARIANT, "capi_cache");
  f->write = get_kernel(f->mod, "capi_gm_write");
  f->read = get_kernel(f->mod, "capi_gm_read");
  f->buf = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->dst = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->ubuf = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->udst = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->wide = (uint64_t *)mem_alloc(f->dev, N * sizeof(uint64_t));
  f->uwide = (uint64_t *)mem_alloc(f->dev, N * sizeof(uint64_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_mem_free(f->dev, f->buf);
  sk_mem_free(f->dev, f->dst);
  sk_mem_free(f->dev, f->ubuf);
  sk_mem_free(f->dev, f->udst);
  sk_mem_free(f->dev, f->wide);
  sk_mem_free(f->dev, f->uwide);
  sk_module_unload(f->mod);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

struct pair_args {
  uint32_t n, seed;
  uint32_t *buf, *dst;
  uint64_t *wide;
  void *w[4], *r[4];
};

static void bind_pair(struct pair_args *x, uint32_t *buf, uint64_t *wide, uint32_t *dst, uint32_t seed) {
  x->n = N, x->seed = seed, x->buf = buf, x->wide = wide, x->dst = dst;
  x->w[0] = &x->buf, x->w[1] = &x->wide, x->w[2] = &x->n, x->w[3] = &x->seed;
  x->r[0] = &x->buf, x->r[1] = &x->wide, x->r[2] = &x->dst, x->r[3] = &x->n;
}

/* The "cache" object of the step named `name` must read `want` (its fields, in order). */
static void expect_cache(const char *json, const char *name, const char *want) {
  char key[128];
  const char *step, *cache;
  snprintf(key, sizeof key, "\"name\":\"%s\"", name);
  step = strstr(json, key);
  if (!step) fail_msg("explain has no step named %s: %s", name, json);
  cache = strstr(step, "\"cache\":");
  assert_non_null(cache);
  if (strncmp(cache + 8, want, strlen(want)) != 0)
    fail_msg("step %s: cache is %.160s, expected %s", name, cache + 8, want);
}

#define DEFAULT_CACHE "{\"per_access_flush\":true,\"flush_before\":false,\"flush_after\":false,\"rules\":[]}"

/* Adds writer/reader pairs named w0, r0, w1, r1, ... with `flags` on the pair's writer. */
static sk_superkernel *build_pairs(struct fixture *f, const char *options, int pairs, struct pair_args *x,
                                   const uint32_t *flags) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  char wname[8][16], rname[8][16];
  int i;
  assert_true(pairs <= 8);
  SK_CHECK(sk_scope_begin(f->dev, "dcci", options, &scope));
  for (i = 0; i < pairs; ++i) {
    sk_kernel_options wo = SK_KERNEL_OPTIONS_INIT, ro = SK_KERNEL_OPTIONS_INIT;
    snprintf(wname[i], sizeof wname[i], "w%d", i);
    snprintf(rname[i], sizeof rname[i], "r%d", i);
    wo.name = wname[i];
    wo.flags = flags ? flags[i] : 0;
    ro.name = rname[i];
    SK_CHECK(sk_add_kernel(scope, f->write, 3, x->w, &wo));
    SK_CHECK(sk_add_kernel(scope, f->read, 2 + (uint32_t)i, x->r, &ro));
  }
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

static void test_explain_shows_where_flushes_go(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct pair_args x;
  const uint32_t flags[4] = {0, 0, 0, SK_KERNEL_FLAG_TILING_SINK};
  sk_superkernel *sk;
  char *json;
  bind_pair(&x, f->buf, f->wide, f->dst, 1);
  /* w0: before (pattern); r0: after (the guide's alias); w1, r1: disabled (wins over before);
   * w2, r2: default; w3: tiling sink (wins over disable); r3: before and after. */
  sk = build_pairs(f,
                   "dcci-before-kernel-start=w[01],r3:dcci-after-kernel-start=r0,r3:"
                   "dcci-disable-on-kernel=.1,w3",
                   4, &x, flags);
  json = explain_text(sk);
  expect_cache(json, "w0",
               "{\"per_access_flush\":false,\"flush_before\":true,\"flush_after\":false,"
               "\"rules\":[\"dcci-before-kernel-start\"]}");
  expect_cache(json, "r0",
               "{\"per_access_flush\":false,\"flush_before\":false,\"flush_after\":true,"
               "\"rules\":[\"dcci-after-kernel-end\"]}");
  expect_cache(json, "w1",
               "{\"per_access_flush\":false,\"flush_before\":false,\"flush_after\":false,"
               "\"rules\":[\"dcci-disable-on-kernel\"]}");
  expect_cache(json, "r1",
               "{\"per_access_flush\":false,\"flush_before\":false,\"flush_after\":false,"
               "\"rules\":[\"dcci-disable-on-kernel\"]}");
  expect_cache(json, "w2", DEFAULT_CACHE);
  expect_cache(json, "r2", DEFAULT_CACHE);
  expect_cache(
      json, "w3",
      "{\"per_access_flush\":false,\"flush_before\":true,\"flush_after\":true,\"rules\":[\"tiling-sink\"]}");
  expect_cache(json, "r3",
               "{\"per_access_flush\":false,\"flush_before\":true,\"flush_after\":true,"
               "\"rules\":[\"dcci-before-kernel-start\",\"dcci-after-kernel-end\"]}");
  /* The binaries tell the planner they use the cache API. */
  assert_non_null(strstr(json, "\"sk_dcci_all\",\"sk_gm_store\""));
  assert_non_null(strstr(json, "\"sk_dcci_line\",\"sk_gm_load\",\"sk_gm_store\""));
  free(json);
  sk_superkernel_destroy(sk);
}

static void test_debug_dcci_all(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct pair_args x;
  sk_superkernel *sk;
  char *json;
  bind_pair(&x, f->buf, f->wide, f->dst, 1);
  sk = build_pairs(f, "debug-dcci-all=1:dcci-disable-on-kernel=r0", 1, &x, NULL);
  json = explain_text(sk);
  expect_cache(
      json, "w0",
      "{\"per_access_flush\":true,\"flush_before\":true,\"flush_after\":true,\"rules\":[\"debug-dcci-all\"]}");
  expect_cache(json, "r0",
               "{\"per_access_flush\":false,\"flush_before\":true,\"flush_after\":true,"
               "\"rules\":[\"dcci-disable-on-kernel\",\"debug-dcci-all\"]}");
  free(json);
  sk_superkernel_destroy(sk);
}

static void test_flags_follow_struct_size(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct pair_args x;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  char *json;
  bind_pair(&x, f->buf, f->wide, f->dst, 1);
  SK_CHECK(sk_scope_begin(f->dev, "sizes", NULL, &scope));
  /* An older caller's struct ends before flags: the flag bits past it are not read. */
  o.name = "old";
  o.flags = SK_KERNEL_FLAG_TILING_SINK;
  o.struct_size = (uint32_t)offsetof(sk_kernel_options, flags);
  SK_CHECK(sk_add_kernel(scope, f->write, 2, x.w, &o));
  o.name = "new";
  o.struct_size = (uint32_t)sizeof o;
  SK_CHECK(sk_add_kernel(scope, f->write, 2, x.w, &o));
  /* Bits this version does not know are refused, naming the kernel. */
  o.name = "future";
  o.flags = 0xCu;
  SK_EXPECT_ERR(sk_add_kernel(scope, f->write, 2, x.w, &o), SK_ERR_INVALID_ARGUMENT, "'future'");
  SK_EXPECT_MSG("unknown bits 0xc");
  SK_CHECK(sk_finalize(scope, &sk));
  json = explain_text(sk);
  expect_cache(json, "old", DEFAULT_CACHE);
  expect_cache(
      json, "new",
      "{\"per_access_flush\":false,\"flush_before\":true,\"flush_after\":true,\"rules\":[\"tiling-sink\"]}");
  free(json);
  sk_superkernel_destroy(sk);
}

/* What the pair computes, on the host. */
static void reference(uint32_t *dst, uint32_t seed) {
  uint32_t i;
  for (i = 0; i < N; ++i) {
    uint32_t j = (i + 1) % N, v = j * 2654435761u ^ seed;
    dst[i] = v + (v & 0xffu) + v;
  }
}

static void test_fused_equals_unfused_under_every_placement(void **state) {
  struct fixture *f = (struct fixture *)*state;
  static const char *const options[] = {
      NULL,
      "dcci-before-kernel-start=.*",
      "dcci-after-kernel-end=.*",
      "dcci-disable-on-kernel=.*",
      "debug-dcci-all=1",
      "dcci-before-kernel-start=w.*:dcci-after-kernel-end=r.*:dcci-disable-on-kernel=w1",
  };
  const uint32_t flags[3] = {SK_KERNEL_FLAG_TILING_SINK, 0, SK_KERNEL_FLAG_TILING_SINK};
  uint32_t want[N];
  size_t o;
  int launch, with_flags;
  for (o = 0; o < sizeof options / sizeof options[0]; ++o) {
    for (with_flags = 0; with_flags < 2; ++with_flags) {
      struct pair_args fx, ux;
      sk_superkernel *sk;
      uint32_t seed = 11 + (uint32_t)o;
      bind_pair(&fx, f->buf, f->wide, f->dst, seed);
      sk = build_pairs(f, options[o], 3, &fx, with_flags ? flags : NULL);
      for (launch = 0; launch < 5; ++launch) {
        memset(f->dst, 0, N * sizeof(uint32_t));
        fx.seed = seed + (uint32_t)launch;
        SK_CHECK(sk_superkernel_set_arg(sk, 0, 3, &fx.seed));
        SK_CHECK(sk_superkernel_set_arg(sk, 2, 3, &fx.seed));
        SK_CHECK(sk_superkernel_set_arg(sk, 4, 3, &fx.seed));
        SK_CHECK(sk_launch(sk, NULL));
        SK_CHECK(sk_stream_synchronize(NULL));
        bind_pair(&ux, f->ubuf, f->uwide, f->udst, fx.seed);
        SK_CHECK(sk_launch_kernel(f->write, 3, ux.w, NULL));
        SK_CHECK(sk_launch_kernel(f->read, 4, ux.r, NULL));
        SK_CHECK(sk_stream_synchronize(NULL));
        reference(want, fx.seed);
        assert_memory_equal(f->udst, want, sizeof want);
        assert_memory_equal(f->dst, f->udst, N * sizeof(uint32_t));
      }
      sk_superkernel_destroy(sk);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_explain_shows_where_flushes_go, setup, teardown),
      cmocka_unit_test_setup_teardown(test_debug_dcci_all, setup, teardown),
      cmocka_unit_test_setup_teardown(test_flags_follow_struct_size, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fused_equals_unfused_under_every_placement, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
