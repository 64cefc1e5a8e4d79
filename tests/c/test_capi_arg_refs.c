/* Arguments read by reference (sk_kernel_options.arg_refs): a super kernel whose kernels read a
 * position and per-launch values from memory, launched many times with the memory changed
 * between launches, computes what unfused launches given the values directly compute; in
 * sk_launch_repeat each run reads what the run before wrote; a capture records the references;
 * misuse fails naming the option and the parameter. Kernels: tests/kernels/args_refs.c. */
#include "test_util.h"

struct ref_f2 {
  float x, y;
};

#define STEPS 6  /* launches, one position each */
#define BLOCKS 4 /* ref_scale_at's blocks */

/* What the kernels write, and the values they read per launch. */
struct outputs {
  uint32_t added[STEPS];
  float scaled[STEPS * BLOCKS];
  float points[2 * STEPS];
  int64_t narrow[4];
};
struct per_launch {
  uint32_t upos;
  int32_t pos;
  float scale;
  struct ref_f2 point;
  int8_t a;
  int16_t b;
  uint8_t c;
  uint16_t d;
};

static void values_for(struct per_launch *v, int t) {
  v->upos = (uint32_t)t;
  v->pos = t;
  v->scale = 0.5f + (float)t;
  v->point.x = -1.25f * (float)t;
  v->point.y = 3.0f + (float)t;
  v->a = (int8_t)(-100 - t);
  v->b = (int16_t)(-30000 + t);
  v->c = (uint8_t)(250 - t);
  v->d = (uint16_t)(65000 + t);
}

struct kernels {
  sk_module *mod;
  sk_kernel *add, *scale, *point, *narrow, *advance;
};

static void load(sk_device *dev, const char *variant, struct kernels *k) {
  k->mod = load_kernels(dev, variant, "args_refs");
  k->add = get_kernel(k->mod, "ref_add_at");
  k->scale = get_kernel(k->mod, "ref_scale_at");
  k->point = get_kernel(k->mod, "ref_point_at");
  k->narrow = get_kernel(k->mod, "ref_narrow");
  k->advance = get_kernel(k->mod, "ref_advance");
}

static sk_kernel_options refs(uint64_t bits) {
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  o.arg_refs = bits;
  return o;
}

static const float kIn[BLOCKS] = {1.0f, -2.0f, 0.25f, 1e6f};

/* The unfused launches of one step's kernels with `v` passed by value. */
static void launch_unfused(const struct kernels *k, struct outputs *out, const struct per_launch *v) {
  uint32_t three = 3;
  void *added = out->added, *scaled = out->scaled, *points = out->points, *narrow = out->narrow;
  const void *in = kIn;
  void *a_add[] = {&added, (void *)&v->upos, &three};
  void *a_scale[] = {&scaled, (void *)&in, (void *)&v->pos, (void *)&v->scale};
  void *a_point[] = {&points, (void *)&v->pos, (void *)&v->point};
  void *a_narrow[] = {&narrow, (void *)&v->a, (void *)&v->b, (void *)&v->c, (void *)&v->d};
  SK_CHECK(sk_launch_kernel(k->add, 1, a_add, NULL));
  SK_CHECK(sk_launch_kernel(k->scale, BLOCKS, a_scale, NULL));
  SK_CHECK(sk_launch_kernel(k->point, 1, a_point, NULL));
  SK_CHECK(sk_launch_kernel(k->narrow, 1, a_narrow, NULL));
}

/* The same kernels in one scope, every per-launch value read by reference from `v`. */
static sk_superkernel *build_by_reference(sk_device *dev, const struct kernels *k, struct outputs *out,
                                          struct per_launch *v) {
  uint32_t three = 3;
  void *added = out->added, *scaled = out->scaled, *points = out->points, *narrow = out->narrow;
  const void *in = kIn;
  void *a_add[3], *a_scale[4], *a_point[3], *a_narrow[5];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_kernel_options o;
  a_add[0] = &added;
  a_add[1] = &v->upos;
  a_add[2] = &three;
  a_scale[0] = &scaled;
  a_scale[1] = (void *)&in;
  a_scale[2] = &v->pos;
  a_scale[3] = &v->scale;
  a_point[0] = &points;
  a_point[1] = &v->pos;
  a_point[2] = &v->point;
  a_narrow[0] = &narrow;
  a_narrow[1] = &v->a;
  a_narrow[2] = &v->b;
  a_narrow[3] = &v->c;
  a_narrow[4] = &v->d;
  SK_CHECK(sk_scope_begin(dev, "decode", NULL, &scope));
  o = refs(1u << 1);
  SK_CHECK(sk_add_kernel(scope, k->add, 1, a_add, &o));
  o = refs(1u << 2 | 1u << 3);
  SK_CHECK(sk_add_kernel(scope, k->scale, BLOCKS, a_scale, &o));
  o = refs(1u << 1 | 1u << 2);
  SK_CHECK(sk_add_kernel(scope, k->point, 1, a_point, &o));
  o = refs(0x1e);
  SK_CHECK(sk_add_kernel(scope, k->narrow, 1, a_narrow, &o));
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

static void expect_same(const struct outputs *got, const struct outputs *want, const char *how,
                        const char *variant) {
  if (memcmp(got, want, sizeof *got) != 0) {
    size_t i;
    const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
    for (i = 0; i < sizeof *got && g[i] == w[i]; ++i) {
    }
    fail_msg("%s (%s): byte %zu of the outputs differs from the unfused launches given the values", how, variant, i);
  }
}

static void test_refs_read_at_every_launch(void **state) {
  static const char *const variants[] = {"gcc-O0-pie", "gcc-O2-pie", "clang-O0-nopic", "clang-O2-pie"};
  size_t vi;
  (void)state;
  for (vi = 0; vi < sizeof variants / sizeof variants[0]; ++vi) {
    sk_device *dev = open_device("host:cores=2");
    struct kernels k;
    static struct outputs fused, unfused;
    struct per_launch v, direct;
    sk_superkernel *sk;
    char json[16384];
    int t;
    load(dev, variants[vi], &k);
    memset(&fused, 0, sizeof fused);
    memset(&unfused, 0, sizeof unfused);
    values_for(&v, 0);
    sk = build_by_reference(dev, &k, &fused, &v);
    for (t = 0; t < STEPS; ++t) {
      values_for(&v, t); /* what the engine keeps in memory: no set_arg */
      SK_CHECK(sk_launch(sk, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      values_for(&direct, t);
      launch_unfused(&k, &unfused, &direct);
      SK_CHECK(sk_stream_synchronize(NULL));
      expect_same(&fused, &unfused, "fused, values read by reference", variants[vi]);
    }
    SK_CHECK(sk_superkernel_explain(sk, json, sizeof json, NULL));
    if (!strstr(json, "\"arguments_by_reference\":[2,3]"))
      fail_msg("explain does not list step 1's arguments read by reference: %s", json);
    /* Reading by reference keeps the direct and register-map calls. */
    if (!strstr(json, "\"calls\":{\"direct\":2,\"register map\":1,\"libffi\":1}"))
      fail_msg("explain does not count the calls by the kernels' own kinds: %s", json);
    sk_superkernel_destroy(sk);
    sk_module_unload(k.mod);
    sk_device_close(dev);
  }
}

/* sk_launch_repeat: a kernel of each run advances the position the next run reads. */
static void test_refs_in_repeated_runs(void **state) {
  sk_device *dev = open_device("host:cores=2");
  struct kernels k;
  static struct outputs fused, unfused;
  int32_t pos = 0;
  float scale = 2.0f;
  void *scaled = fused.scaled, *want_scaled = unfused.scaled;
  const void *in = kIn;
  int32_t *pos_address = &pos;
  void *a_scale[] = {&scaled, (void *)&in, &pos, &scale};
  void *a_advance[] = {&pos_address};
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_kernel_options o = refs(1u << 2);
  int32_t t;
  (void)state;
  load(dev, TEST_VARIANT, &k);
  memset(&fused, 0, sizeof fused);
  memset(&unfused, 0, sizeof unfused);
  SK_CHECK(sk_scope_begin(dev, "repeat", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, k.scale, BLOCKS, a_scale, &o));
  SK_CHECK(sk_add_kernel(scope, k.advance, 1, a_advance, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_launch_repeat(sk, STEPS, NULL, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(pos, STEPS);
  for (t = 0; t < STEPS; ++t) {
    void *a[] = {&want_scaled, (void *)&in, &t, &scale};
    SK_CHECK(sk_launch_kernel(k.scale, BLOCKS, a, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
  }
  expect_same(&fused, &unfused, "sk_launch_repeat, the position advanced by a kernel", TEST_VARIANT);
  sk_superkernel_destroy(sk);
  sk_module_unload(k.mod);
  sk_device_close(dev);
}

/* sk_superkernel_set_arg of an argument read by reference sets the address it is read from. */
static void test_refs_set_arg_moves_the_reference(void **state) {
  sk_device *dev = open_device("host:cores=1");
  struct kernels k;
  static struct outputs fused, unfused;
  struct per_launch v, other, direct;
  sk_superkernel *sk;
  (void)state;
  load(dev, TEST_VARIANT, &k);
  memset(&fused, 0, sizeof fused);
  memset(&unfused, 0, sizeof unfused);
  values_for(&v, 1);
  values_for(&other, 4);
  sk = build_by_reference(dev, &k, &fused, &v);
  SK_CHECK(sk_superkernel_set_arg(sk, 1, 2, &other.pos)); /* ref_scale_at's position */
  SK_CHECK(sk_superkernel_set_arg(sk, 2, 2, &other.point));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  /* ref_scale_at now reads other's position; ref_point_at still v's, and other's point. */
  values_for(&direct, 1);
  direct.pos = 4;
  launch_unfused(&k, &unfused, &direct);
  SK_CHECK(sk_stream_synchronize(NULL));
  memset(unfused.points, 0, sizeof unfused.points);
  {
    struct ref_f2 p = other.point;
    int32_t pos = 1;
    void *points = unfused.points;
    void *a[3];
    a[0] = &points;
    a[1] = &pos;
    a[2] = &p;
    SK_CHECK(sk_launch_kernel(k.point, 1, a, NULL));
  }
  SK_CHECK(sk_stream_synchronize(NULL));
  expect_same(&fused, &unfused, "after set_arg of references", TEST_VARIANT);
  sk_superkernel_destroy(sk);
  sk_module_unload(k.mod);
  sk_device_close(dev);
}

/* A captured sk_launch records the references: the captured super kernel reads the memory at
 * its own launches. A capture whose references differ does not update a super kernel. */
static void test_refs_captured(void **state) {
  sk_device *dev = open_device("host:cores=2");
  struct kernels k;
  static struct outputs fused, unfused, scratch;
  struct per_launch v, direct, w;
  sk_superkernel *sk, *captured, *by_value, *by_reference;
  sk_stream *stream = NULL;
  sk_scope *scope = NULL;
  int t;
  (void)state;
  load(dev, TEST_VARIANT, &k);
  memset(&fused, 0, sizeof fused);
  memset(&unfused, 0, sizeof unfused);
  values_for(&v, 0);
  sk = build_by_reference(dev, &k, &fused, &v);
  SK_CHECK(sk_stream_create(dev, &stream));
  SK_CHECK(sk_stream_begin_capture(stream, "captured", NULL));
  SK_CHECK(sk_launch(sk, stream));
  SK_CHECK(sk_stream_end_capture(stream, &captured));
  for (t = 0; t < STEPS; ++t) {
    values_for(&v, t);
    SK_CHECK(sk_launch(captured, stream));
    SK_CHECK(sk_stream_synchronize(stream));
    values_for(&direct, t);
    launch_unfused(&k, &unfused, &direct);
    SK_CHECK(sk_stream_synchronize(NULL));
    expect_same(&fused, &unfused, "captured, values read by reference", TEST_VARIANT);
  }
  /* A capture of the same kernel with the value copied does not match the one reading it by
   * reference. */
  values_for(&w, 2);
  {
    void *added = scratch.added;
    uint32_t three = 3;
    void *a_add[3];
    sk_kernel_options o = refs(1u << 1);
    a_add[0] = &added;
    a_add[1] = &w.upos;
    a_add[2] = &three;
    SK_CHECK(sk_scope_begin(dev, "by-reference", NULL, &scope));
    SK_CHECK(sk_add_kernel(scope, k.add, 1, a_add, &o));
    SK_CHECK(sk_finalize(scope, &by_reference));
    SK_CHECK(sk_scope_begin(dev, "by-value", NULL, &scope));
    SK_CHECK(sk_add_kernel(scope, k.add, 1, a_add, NULL));
    SK_CHECK(sk_finalize(scope, &by_value));
  }
  SK_CHECK(sk_stream_begin_capture(stream, "by-reference", NULL));
  SK_CHECK(sk_launch(by_value, stream));
  SK_EXPECT_ERR(sk_superkernel_update_from_capture(by_reference, stream), SK_ERR_INCOMPATIBLE,
                "arguments read by reference [1] where [] were captured");
  sk_superkernel_destroy(by_reference);
  sk_stream_destroy(stream);
  sk_superkernel_destroy(by_value);
  sk_superkernel_destroy(captured);
  sk_superkernel_destroy(sk);
  sk_module_unload(k.mod);
  sk_device_close(dev);
}

/* Misuse fails naming the option and the parameter; a caller built before arg_refs existed
 * (a smaller struct_size) gets its values copied, as then. */
static void test_refs_misuse(void **state) {
  sk_device *dev = open_device("host:cores=1");
  struct kernels k;
  uint32_t out[STEPS] = {0}, pos = 2, three = 3;
  void *outp = out;
  void *a[3];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_kernel_options o = refs(1u << 3);
  (void)state;
  load(dev, TEST_VARIANT, &k);
  a[0] = &outp;
  a[1] = &pos;
  a[2] = &three;
  SK_CHECK(sk_scope_begin(dev, "misuse", NULL, &scope));
  SK_EXPECT_ERR(sk_add_kernel(scope, k.add, 1, a, &o), SK_ERR_INVALID_ARGUMENT,
                "opts->arg_refs 0x8 has bit 3, but the kernel takes 3 parameters (ptr,u32,u32)");
  o = refs(1u << 1);
  a[1] = NULL;
  SK_EXPECT_ERR(sk_add_kernel(scope, k.add, 1, a, &o), SK_ERR_INVALID_ARGUMENT,
                "args[1] (u32) is NULL (an argument read by reference needs an address)");
  a[1] = &pos;
  o.struct_size = (uint32_t)offsetof(sk_kernel_options, arg_refs); /* an older caller */
  SK_CHECK(sk_add_kernel(scope, k.add, 1, a, &o));
  SK_CHECK(sk_finalize(scope, &sk));
  pos = 4; /* copied at sk_add_kernel: not read */
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(out[2], 3);
  assert_int_equal(out[4], 0);
  sk_superkernel_destroy(sk);
  sk_module_unload(k.mod);
  sk_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refs_read_at_every_launch),
      cmocka_unit_test(test_refs_in_repeated_runs),
      cmocka_unit_test(test_refs_set_arg_moves_the_reference),
      cmocka_unit_test(test_refs_captured),
      cmocka_unit_test(test_refs_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
