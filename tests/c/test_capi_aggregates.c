/* Structs passed by value (aggregate signatures such as "{f32,f32}"): the kernels of
 * tests/kernels/args_aggregates.c, compiled by gcc and clang at -O0 and -O2, run fused, unfused
 * and captured, and each call's record of the values it received equals the record of a native
 * call of the same function (the source is compiled into this test too), byte for byte. */
#include "test_util.h"

/* The kernels, called natively as the reference (they use no device API). */
#include "../kernels/args_aggregates.c"

#define RECORD 256 /* bytes each call's record may take */

enum { K_F2, K_DI, K_I5, K_CF, K_NEST, K_MIXED, KERNELS };
static const char *const kNames[KERNELS] = {"agg_f2", "agg_di", "agg_i5", "agg_cf", "agg_nest", "agg_mixed"};

/* One set of argument values for every kernel; `seed` changes each of them. */
struct values {
  struct agg_f2 p, p2;
  struct agg_di q, q2;
  struct agg_i5 r;
  struct agg_cf s, s2;
  struct agg_nest n;
  float f, g, after;
  double d, e, k;
  int64_t a;
  int32_t b;
  int8_t c;
  uint16_t h;
  uint64_t z;
};

static void make_values(struct values *v, int seed) {
  int i;
  memset(v, 0xa5, sizeof *v); /* padding bytes hold garbage, as a caller's may */
  v->p.x = 1.5f + (float)seed;
  v->p.y = -2.25f * (float)(seed + 1);
  v->p2.x = 1e-3f * (float)(seed + 3);
  v->p2.y = 7.0f;
  v->q.d = 3.0e100 / (seed + 1);
  v->q.i = -123456 - seed;
  v->q2.d = -0.125 * seed;
  v->q2.i = 0x7fffffff - seed;
  for (i = 0; i < 5; ++i) v->r.a[i] = (i + 1) * 1000003 * (seed + 1) * (i % 2 ? -1 : 1);
  v->s.c = (int8_t)(-7 - seed);
  v->s.f = 0.75f * (float)(seed + 2);
  v->s2.c = (int8_t)(100 + seed);
  v->s2.f = -1.0e30f;
  v->n.p[0].x = 10.0f + (float)seed;
  v->n.p[0].y = 20.0f;
  v->n.p[1].x = -30.0f;
  v->n.p[1].y = 40.5f * (float)(seed + 1);
  v->n.t = (int16_t)(-300 - seed);
  v->f = 4.5f;
  v->g = -8.0f * (float)(seed + 1);
  v->after = 0.5f + (float)seed;
  v->d = 2.0 / 3.0 + seed;
  v->e = -1.0e-300;
  v->k = 12345.678 * (seed + 1);
  v->a = INT64_MIN + 17 + seed;
  v->b = -99 * (seed + 1);
  v->c = (int8_t)(-128 + seed);
  v->h = (uint16_t)(65535 - seed);
  v->z = UINT64_MAX - (uint64_t)seed;
}

/* The native calls: each kernel's record into out[kernel]. */
static void native(const struct values *v, unsigned char out[KERNELS][RECORD]) {
  memset(out, 0, (size_t)KERNELS * RECORD);
  agg_f2(out[K_F2], v->p);
  agg_di(out[K_DI], v->q);
  agg_i5(out[K_I5], v->r);
  agg_cf(out[K_CF], v->s);
  agg_nest(out[K_NEST], v->n, v->after);
  agg_mixed(out[K_MIXED], v->a, v->p, v->d, v->q, v->b, v->r, v->s, v->f, v->c, v->p2, v->e, v->h, v->q2, v->g, v->z,
            v->k, v->s2);
}

/* The argument arrays of each kernel, writing into out[kernel]; `outs` keeps the pointers. */
struct call_args {
  unsigned char *outs[KERNELS];
  void *f2[2], *di[2], *i5[2], *cf[2], *nest[3], *mixed[18];
};

static void *const *args_of(struct call_args *c, int k) {
  void *const *all[KERNELS] = {c->f2, c->di, c->i5, c->cf, c->nest, c->mixed};
  return all[k];
}

static void make_args(struct call_args *c, struct values *v, unsigned char out[KERNELS][RECORD]) {
  int k;
  for (k = 0; k < KERNELS; ++k) c->outs[k] = out[k];
  c->f2[0] = &c->outs[K_F2];
  c->f2[1] = &v->p;
  c->di[0] = &c->outs[K_DI];
  c->di[1] = &v->q;
  c->i5[0] = &c->outs[K_I5];
  c->i5[1] = &v->r;
  c->cf[0] = &c->outs[K_CF];
  c->cf[1] = &v->s;
  c->nest[0] = &c->outs[K_NEST];
  c->nest[1] = &v->n;
  c->nest[2] = &v->after;
  {
    void *m[18];
    m[0] = &c->outs[K_MIXED];
    m[1] = &v->a;
    m[2] = &v->p;
    m[3] = &v->d;
    m[4] = &v->q;
    m[5] = &v->b;
    m[6] = &v->r;
    m[7] = &v->s;
    m[8] = &v->f;
    m[9] = &v->c;
    m[10] = &v->p2;
    m[11] = &v->e;
    m[12] = &v->h;
    m[13] = &v->q2;
    m[14] = &v->g;
    m[15] = &v->z;
    m[16] = &v->k;
    m[17] = &v->s2;
    memcpy(c->mixed, m, sizeof m);
  }
}

static void expect_records(unsigned char got[KERNELS][RECORD], unsigned char want[KERNELS][RECORD], const char *how,
                           const char *variant) {
  int k;
  size_t i;
  for (k = 0; k < KERNELS; ++k)
    for (i = 0; i < RECORD; ++i)
      if (got[k][i] != want[k][i])
        fail_msg("%s (%s): kernel %s: byte %zu of its record is 0x%02x, the native call wrote 0x%02x", how, variant,
                 kNames[k], i, got[k][i], want[k][i]);
}

static void test_aggregates_fused_unfused_captured_native(void **state) {
  static const char *const variants[] = {"gcc-O0-pie",   "gcc-O2-pie",   "clang-O0-pie",
                                         "clang-O2-pie", "gcc-O2-nopic", "clang-O3-pic"};
  size_t v;
  (void)state;
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    sk_device *dev = open_device("host:cores=2");
    sk_module *mod = load_kernels(dev, variants[v], "args_aggregates");
    sk_kernel *ks[KERNELS];
    static unsigned char want[KERNELS][RECORD], got[KERNELS][RECORD];
    struct values vals, next;
    struct call_args args;
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    sk_stream *stream = NULL;
    int k, round;
    for (k = 0; k < KERNELS; ++k) ks[k] = get_kernel(mod, kNames[k]);

    /* Unfused. */
    make_values(&vals, 0);
    native(&vals, want);
    memset(got, 0, sizeof got);
    make_args(&args, &vals, got);
    for (k = 0; k < KERNELS; ++k) SK_CHECK(sk_launch_kernel(ks[k], 1, args_of(&args, k), NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    expect_records(got, want, "unfused", variants[v]);

    /* Fused, then with rebound aggregates (several slots each). */
    SK_CHECK(sk_scope_begin(dev, "aggregates", NULL, &scope));
    for (k = 0; k < KERNELS; ++k) SK_CHECK(sk_add_kernel(scope, ks[k], 1, args_of(&args, k), NULL));
    memset(&vals, 0, sizeof vals); /* the values were copied: changing them now changes nothing */
    SK_CHECK(sk_finalize(scope, &sk));
    for (round = 0; round < 3; ++round) {
      memset(got, 0, sizeof got);
      SK_CHECK(sk_launch(sk, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      expect_records(got, want, round == 0 ? "fused" : "fused after set_arg", variants[v]);
      make_values(&next, round + 1);
      native(&next, want);
      SK_CHECK(sk_superkernel_set_arg(sk, K_F2, 1, &next.p));
      SK_CHECK(sk_superkernel_set_arg(sk, K_DI, 1, &next.q));
      SK_CHECK(sk_superkernel_set_arg(sk, K_I5, 1, &next.r));
      SK_CHECK(sk_superkernel_set_arg(sk, K_CF, 1, &next.s));
      SK_CHECK(sk_superkernel_set_arg(sk, K_NEST, 1, &next.n));
      SK_CHECK(sk_superkernel_set_arg(sk, K_NEST, 2, &next.after));
      make_args(&args, &next, got);
      for (k = 1; k < 18; ++k) SK_CHECK(sk_superkernel_set_arg(sk, K_MIXED, (uint32_t)k, args.mixed[k]));
    }
    sk_superkernel_destroy(sk);

    /* Captured: the launches' aggregates recorded into a super kernel. */
    make_values(&vals, 7);
    native(&vals, want);
    memset(got, 0, sizeof got);
    make_args(&args, &vals, got);
    SK_CHECK(sk_stream_create(dev, &stream));
    SK_CHECK(sk_stream_begin_capture(stream, "captured", NULL));
    for (k = 0; k < KERNELS; ++k) SK_CHECK(sk_launch_kernel(ks[k], 1, args_of(&args, k), stream));
    SK_CHECK(sk_stream_end_capture(stream, &sk));
    SK_CHECK(sk_launch(sk, stream));
    SK_CHECK(sk_stream_synchronize(stream));
    expect_records(got, want, "captured", variants[v]);
    sk_superkernel_destroy(sk);
    sk_stream_destroy(stream);
    sk_module_unload(mod);
    sk_device_close(dev);
  }
}

/* The signature as libsk reads it, and a given one checked against the metadata: the members
 * listed as parameters describe another function. */
static void test_aggregate_signatures(void **state) {
  sk_device *dev = open_device("host:cores=1");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "args_aggregates");
  sk_kernel *k = NULL;
  char buf[256];
  (void)state;
  SK_CHECK(sk_kernel_signature(get_kernel(mod, "agg_nest"), buf, sizeof buf, NULL));
  assert_string_equal(buf, "ptr,{{f32,f32}[2],i16},f32");
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "agg_f2", " ptr , { f32 , f32 } ", &k));
  SK_CHECK(sk_kernel_signature(k, buf, sizeof buf, NULL));
  assert_string_equal(buf, "ptr,{f32,f32}");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "agg_f2", "ptr,f32,f32", &k), SK_ERR_INCOMPATIBLE,
                "metadata says \"ptr,{f32,f32}\"");
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "agg_i5", "ptr,{i32[4]}", &k), SK_ERR_INCOMPATIBLE,
                "agg_i5");
  sk_module_unload(mod);
  sk_device_close(dev);
}

/* Explain shows the aggregate; a struct is one argument for sk_superkernel_set_arg. */
static void test_aggregate_explain_and_set_arg_index(void **state) {
  sk_device *dev = open_device("host:cores=1");
  sk_module *mod = load_kernels(dev, TEST_VARIANT, "args_aggregates");
  static unsigned char out[KERNELS][RECORD];
  struct values vals;
  struct call_args args;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  char json[8192];
  (void)state;
  make_values(&vals, 0);
  make_args(&args, &vals, out);
  SK_CHECK(sk_scope_begin(dev, "explained", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, get_kernel(mod, "agg_i5"), 1, args.i5, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_superkernel_explain(sk, json, sizeof json, NULL));
  if (!strstr(json, "\"signature\":\"ptr,{i32[5]}\"")) fail_msg("explain does not show the aggregate: %s", json);
  /* {i32[5]} takes three argument slots but is one parameter: index 2 does not exist. */
  SK_EXPECT_ERR(sk_superkernel_set_arg(sk, 0, 2, &vals.r), SK_ERR_INVALID_ARGUMENT, "index 2 does not exist");
  sk_superkernel_destroy(sk);
  sk_module_unload(mod);
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_aggregates_fused_unfused_captured_native),
      cmocka_unit_test(test_aggregate_signatures),
      cmocka_unit_test(test_aggregate_explain_and_set_arg_index),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
