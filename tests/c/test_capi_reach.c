/* Public C API: kernels whose sk_sync_all is in a helper they reach through a tail jump, a jump
 * table, a function pointer (set by another kernel, or by another object's constructor) or in
 * another object of the module are planned as syncing kernels. With more blocks than the device
 * has cores they are refused, unfused and in a scope, by a message naming the kernel and how it
 * gets to sk_sync_all; with as many blocks as cores the fused result equals the unfused one bit
 * for bit. The kernels beside them that do not sync still take more blocks than cores. */
#include "test_util.h"

#ifndef SK_TEST_MULTI_VARIANTS
#error "SK_TEST_MULTI_VARIANTS must list the variants of tests/kernels/multi"
#endif

#define CORES 2
#define FLOATS 8 /* per buffer: more than any block index used */

static const char *const variants[] = {
    "gcc-O0-pie",   "gcc-O0-pic",   "gcc-O0-nopic",   "gcc-O2-pie",   "gcc-O2-pic",   "gcc-O2-nopic",
    "gcc-O3-pie",   "gcc-O3-pic",   "gcc-O3-nopic",   "clang-O0-pie", "clang-O0-pic", "clang-O0-nopic",
    "clang-O2-pie", "clang-O2-pic", "clang-O2-nopic", "clang-O3-pie", "clang-O3-pic", "clang-O3-nopic"};

static int setup_device(void **state) {
  sk_device *dev = NULL;
  char spec[32];
  snprintf(spec, sizeof spec, "host:cores=%d", CORES);
  if (sk_device_open(spec, &dev) != SK_OK) return -1;
  *state = dev;
  return 0;
}

/* A kernel taking (p, o) or (p, o, u32), with its third argument when it has one. */
struct call {
  const char *name;
  int has_arg;
  uint32_t arg;
  const char *path; /* what the refusal must say about how it reaches sk_sync_all */
};

struct buffers {
  float *p, *o;
};

static void fill(struct buffers *b, float seed) {
  int i;
  for (i = 0; i < FLOATS; ++i) {
    b->p[i] = seed + (float)i * 0.25f;
    b->o[i] = -1.0f;
  }
}

static void args_of(const struct call *c, struct buffers *b, uint32_t *arg, void *args[3]) {
  *arg = c->arg;
  args[0] = &b->p;
  args[1] = &b->o;
  args[2] = c->has_arg ? arg : NULL;
}

/* `sync` is taken for a syncing kernel: refused on CORES + 1 blocks, unfused and in a scope,
 * naming it and its path; on CORES blocks, followed by `plain` on CORES + 1 blocks (which does
 * not sync), fused gives the bits unfused gives. */
static void check_syncing(sk_device *dev, sk_module *mod, const struct call *sync, const struct call *plain,
                          const char *variant) {
  sk_kernel *k = get_kernel(mod, sync->name), *after = get_kernel(mod, plain->name);
  struct buffers ub = {(float *)mem_alloc(dev, FLOATS * sizeof(float)),
                       (float *)mem_alloc(dev, FLOATS * sizeof(float))};
  struct buffers fb = {(float *)mem_alloc(dev, FLOATS * sizeof(float)),
                       (float *)mem_alloc(dev, FLOATS * sizeof(float))};
  uint32_t a1, a2, a3, a4;
  void *uargs[3], *uplain[3], *fargs[3], *fplain[3];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  args_of(sync, &ub, &a1, uargs);
  args_of(plain, &ub, &a2, uplain);
  args_of(sync, &fb, &a3, fargs);
  args_of(plain, &fb, &a4, fplain);

  SK_EXPECT_ERR(sk_launch_kernel(k, CORES + 1, uargs, NULL), SK_ERR_INCOMPATIBLE, sync->name);
  SK_EXPECT_MSG(sync->path);
  SK_CHECK(sk_scope_begin(dev, "reach", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, k, CORES + 1, uargs, NULL));
  SK_EXPECT_ERR(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE, sync->name);
  SK_EXPECT_MSG(sync->path);

  fill(&ub, 1.5f);
  fill(&fb, 1.5f);
  SK_CHECK(sk_launch_kernel(k, CORES, uargs, NULL));
  SK_CHECK(sk_launch_kernel(after, CORES + 1, uplain, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  SK_CHECK(sk_scope_begin(dev, "reach", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, k, CORES, fargs, NULL));
  SK_CHECK(sk_add_kernel(scope, after, CORES + 1, fplain, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  if (memcmp(ub.p, fb.p, FLOATS * sizeof(float)) != 0 || memcmp(ub.o, fb.o, FLOATS * sizeof(float)) != 0)
    fail_msg("%s: %s then %s: fused differs from unfused", variant, sync->name, plain->name);
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, ub.p);
  sk_mem_free(dev, ub.o);
  sk_mem_free(dev, fb.p);
  sk_mem_free(dev, fb.o);
}

/* `plain` does not sync: unfused and fused on CORES + 1 blocks, the same bits. */
static void check_plain(sk_device *dev, sk_module *mod, const struct call *plain, const char *variant) {
  sk_kernel *k = get_kernel(mod, plain->name);
  struct buffers ub = {(float *)mem_alloc(dev, FLOATS * sizeof(float)),
                       (float *)mem_alloc(dev, FLOATS * sizeof(float))};
  struct buffers fb = {(float *)mem_alloc(dev, FLOATS * sizeof(float)),
                       (float *)mem_alloc(dev, FLOATS * sizeof(float))};
  uint32_t a1, a2;
  void *uargs[3], *fargs[3];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  args_of(plain, &ub, &a1, uargs);
  args_of(plain, &fb, &a2, fargs);
  fill(&ub, 3.0f);
  fill(&fb, 3.0f);
  SK_CHECK(sk_launch_kernel(k, CORES + 1, uargs, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  SK_CHECK(sk_scope_begin(dev, "plain", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, k, CORES + 1, fargs, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"sync_all_scope\":\"none\"");
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  if (memcmp(ub.o, fb.o, FLOATS * sizeof(float)) != 0)
    fail_msg("%s: %s: fused differs from unfused", variant, plain->name);
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, ub.p);
  sk_mem_free(dev, ub.o);
  sk_mem_free(dev, fb.p);
  sk_mem_free(dev, fb.o);
}

/* Runs a kernel taking one u32 on one block: the hook setters. */
static void set_hook(sk_module *mod, const char *name, uint32_t which) {
  void *args[1];
  args[0] = &which;
  SK_CHECK(sk_launch_kernel(get_kernel(mod, name), 1, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
}

/* Explain says the hook's kernel is taken for a syncing one only through its call through a
 * pointer, and names the helper. */
static void check_hook_explained(sk_device *dev, sk_module *mod, const char *kernel) {
  struct buffers b = {(float *)mem_alloc(dev, FLOATS * sizeof(float)),
                      (float *)mem_alloc(dev, FLOATS * sizeof(float))};
  void *args[2];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  args[0] = &b.p;
  args[1] = &b.o;
  SK_CHECK(sk_scope_begin(dev, "hook", NULL, &scope));
  SK_CHECK(sk_add_kernel(scope, get_kernel(mod, kernel), CORES, args, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "{\"function\":\"sk_sync_all\",\"chain\":[\"reach_hook_call\",");
  SK_EXPECT_EXPLAIN(sk, "through a pointer");
  SK_EXPECT_EXPLAIN(sk, "\"conservative\":true");
  SK_EXPECT_EXPLAIN(sk, "\"sync_all_scope\":\"own cores\"");
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, b.p);
  sk_mem_free(dev, b.o);
}

/* tests/kernels/reach_paths.c, every variant. */
static void test_one_object(void **state) {
  sk_device *dev = (sk_device *)*state;
  static const struct call syncing[] = {
      {"reach_tail_global", 0, 0, "'reach_sync_sum', which calls sk_sync_all"},
      {"reach_tail_static", 0, 0, "'sync_sum_static', which calls sk_sync_all"},
      {"reach_switch_sync", 1, 2, "'reach_sync_sum', which calls sk_sync_all"},
      {"reach_hook_call", 0, 0, "through a pointer"},
      {"reach_table_call", 1, 1, "which calls sk_sync_all"},
  };
  static const struct call plain = {"reach_switch_plain", 1, 3, NULL};
  static const struct call loop = {"reach_switch_loop", 1, FLOATS, NULL};
  size_t v, i;
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    sk_module *mod = load_kernels(dev, variants[v], "reach_paths");
    set_hook(mod, "reach_set_hook", 1);
    for (i = 0; i < sizeof syncing / sizeof syncing[0]; ++i)
      check_syncing(dev, mod, &syncing[i], &plain, variants[v]);
    check_plain(dev, mod, &plain, variants[v]);
    check_plain(dev, mod, &loop, variants[v]);
    check_hook_explained(dev, mod, "reach_hook_call");
    sk_module_unload(mod);
  }
}

/* tests/kernels/reach_pointer_plain.c: the pointer can reach no function that syncs. */
static void test_pointer_to_plain_helpers(void **state) {
  sk_device *dev = (sk_device *)*state;
  static const struct call plain = {"reach_plain_pointer_call", 0, 0, NULL};
  static const struct call sync = {"reach_plain_sync", 0, 0, "sk_sync_all"};
  size_t v;
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    sk_module *mod = load_kernels(dev, variants[v], "reach_pointer_plain");
    set_hook(mod, "reach_plain_set_hook", 1);
    check_plain(dev, mod, &plain, variants[v]);
    check_syncing(dev, mod, &sync, &plain, variants[v]);
    sk_module_unload(mod);
  }
}

/* tests/kernels/multi: the helper and the hook in another object of the module. */
static void test_helper_in_another_object(void **state) {
  sk_device *dev = (sk_device *)*state;
  static const struct call plain = {"multi_reach_own", 0, 0, NULL};
  static const struct call syncing[] = {
      {"multi_reach_tail", 0, 0, "'multi_reach_sync_sum', which calls sk_sync_all"},
      {"multi_reach_hook_call", 0, 0, "multi_reach_sync_sum"},
  };
  const char *p = SK_TEST_MULTI_VARIANTS;
  while (*p) {
    char variant[32], main_path[1024], helper_path[1024];
    const char *paths[2];
    size_t len = strcspn(p, ","), i;
    sk_module *mod = NULL;
    assert_true(len > 0 && len < sizeof variant);
    memcpy(variant, p, len);
    variant[len] = '\0';
    p += len + (p[len] == ',');
    snprintf(main_path, sizeof main_path, "%s/multi/%s/multi_reach_main.o", SK_TEST_KERNEL_DIR, variant);
    snprintf(helper_path, sizeof helper_path, "%s/multi/%s/multi_reach_helper.o", SK_TEST_KERNEL_DIR, variant);
    paths[0] = main_path;
    paths[1] = helper_path;
    SK_CHECK(sk_module_load_files(dev, paths, 2, &mod));
    for (i = 0; i < sizeof syncing / sizeof syncing[0]; ++i) check_syncing(dev, mod, &syncing[i], &plain, variant);
    check_plain(dev, mod, &plain, variant);
    sk_module_unload(mod);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_object),
      cmocka_unit_test(test_pointer_to_plain_helpers),
      cmocka_unit_test(test_helper_in_another_object),
  };
  return cmocka_run_group_tests(tests, setup_device, test_teardown_device);
}
