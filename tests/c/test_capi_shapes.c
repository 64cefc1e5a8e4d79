/* Code shapes from plain C: -mcmodel=large and medium objects of gcc and clang at -O0/-O2, and
 * objects built with distributions' flags (-gz, hardening), run fused and unfused with the
 * results of the default-model build of the same source; LTO objects without machine code are
 * refused naming the flag (fat ones load); the host device key perf_map=1 writes perf's map of
 * the loaded functions, and nothing is written without it. */
#define _POSIX_C_SOURCE 200809L /* strtok_r, unsetenv, getpid */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define N 3000u

/* shape_fill(a); shape_reverse(b, a); shape_reverse(a, b) into `out` (2 * N words). */
static void run_chain(const char *variant, int fused, uint32_t *out) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, variant, "shape_models");
  sk_kernel *fill = get_kernel(mod, "shape_fill"), *reverse = get_kernel(mod, "shape_reverse");
  uint32_t *buf = (uint32_t *)mem_alloc(dev, 2 * N * sizeof(uint32_t));
  uint32_t *a = buf, *b = buf + N, n = N;
  void *fill_args[2], *ab_args[3], *ba_args[3];
  fill_args[0] = &a, fill_args[1] = &n;
  ab_args[0] = &b, ab_args[1] = &a, ab_args[2] = &n;
  ba_args[0] = &a, ba_args[1] = &b, ba_args[2] = &n;
  if (fused) {
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    SK_CHECK(sk_scope_begin(dev, "shapes", NULL, &scope));
    SK_CHECK(sk_add_kernel(scope, fill, 4, fill_args, NULL));
    SK_CHECK(sk_add_kernel(scope, reverse, 3, ab_args, NULL));
    SK_CHECK(sk_add_kernel(scope, reverse, 5, ba_args, NULL));
    SK_CHECK(sk_finalize(scope, &sk));
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    sk_superkernel_destroy(sk);
  } else {
    SK_CHECK(sk_launch_kernel(fill, 4, fill_args, NULL));
    SK_CHECK(sk_launch_kernel(reverse, 3, ab_args, NULL));
    SK_CHECK(sk_launch_kernel(reverse, 5, ba_args, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
  }
  memcpy(out, buf, 2 * N * sizeof(uint32_t));
  sk_mem_free(dev, buf);
  sk_module_unload(mod);
  sk_device_close(dev);
}

static void test_code_models_equal_the_default_model(void **state) {
  static uint32_t want[2 * N], unfused[2 * N], fused[2 * N];
  char variants[] = SK_TEST_SHAPE_VARIANTS;
  char *v, *save = NULL;
  int count = 0;
  (void)state;
  run_chain(TEST_VARIANT, 0, want);
  for (v = strtok_r(variants, ",", &save); v; v = strtok_r(NULL, ",", &save), ++count) {
    run_chain(v, 0, unfused);
    run_chain(v, 1, fused);
    if (memcmp(unfused, want, sizeof want) != 0) fail_msg("%s: unfused differs from %s", v, TEST_VARIANT);
    if (memcmp(fused, unfused, sizeof want) != 0) fail_msg("%s: fused differs from unfused", v);
  }
  assert_true(count >= 4); /* gcc and clang, -O0 and -O2, at least the large model */
}

/* Objects built with distributions' flags compute what the default build does, fused and
   unfused: compressed debug sections (-gz; their relocations address the uncompressed bytes),
   and Ubuntu's hardening defaults (stack protector, clash protection, CET or PAC/BTI, fortified
   calls). */
static void test_distribution_build_flags(void **state) {
  static uint32_t want[2 * N], unfused[2 * N], fused[2 * N];
  const char *variants[] = {"gcc-O2-gz", "clang-O2-gz", "gcc-O2-hardened", "clang-O2-hardened"};
  size_t i;
  (void)state;
  run_chain(TEST_VARIANT, 0, want);
  for (i = 0; i < sizeof variants / sizeof variants[0]; ++i) {
    run_chain(variants[i], 0, unfused);
    run_chain(variants[i], 1, fused);
    if (memcmp(unfused, want, sizeof want) != 0) fail_msg("%s: unfused differs from %s", variants[i], TEST_VARIANT);
    if (memcmp(fused, unfused, sizeof want) != 0) fail_msg("%s: fused differs from unfused", variants[i]);
  }
}

static void test_lto_objects(void **state) {
  static uint32_t want[2 * N], fat[2 * N];
  sk_device *dev = open_device("host:cores=1");
  sk_module *mod = SENTINEL(sk_module);
  char path[1024];
  (void)state;
  kernel_path(path, sizeof path, "gcc-O2-lto", "shape_models");
  SK_EXPECT_ERR(sk_module_load_file(dev, path, &mod), SK_ERR_UNSUPPORTED,
                "compiled with -flto: add -ffat-lto-objects or compile without -flto");
  SK_EXPECT_MSG("gcc-O2-lto/shape_models.o");
  kernel_path(path, sizeof path, "clang-O2-lto", "shape_models");
  SK_EXPECT_ERR(sk_module_load_file(dev, path, &mod), SK_ERR_UNSUPPORTED, "LLVM bitcode");
  SK_EXPECT_MSG("clang-O2-lto/shape_models.o");
  SK_EXPECT_MSG("compile without -flto");
  sk_device_close(dev);
  run_chain(TEST_VARIANT, 0, want);
  run_chain("gcc-O2-fatlto", 1, fat);
  assert_memory_equal(fat, want, sizeof want);
}

/* Lines of the perf map naming `name`; *covers: whether one of them lies in executable memory. */
static int perf_map_lines(const char *name, int *covers) {
  char path[64], line[512], maps_line[512];
  FILE *f, *maps;
  int count = 0;
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  *covers = 0;
  f = fopen(path, "r");
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long start, size;
    char n[256];
    if (sscanf(line, "%llx %llx %255s", &start, &size, n) != 3 || strcmp(n, name) != 0) continue;
    ++count;
    maps = fopen("/proc/self/maps", "r");
    assert_non_null(maps);
    while (fgets(maps_line, sizeof maps_line, maps)) {
      unsigned long long lo, hi;
      char perms[8];
      if (sscanf(maps_line, "%llx-%llx %7s", &lo, &hi, perms) == 3 && perms[2] == 'x' && lo <= start &&
          start + size <= hi)
        *covers = 1;
    }
    fclose(maps);
  }
  fclose(f);
  return count;
}

static void test_perf_map(void **state) {
  char path[64];
  sk_device *dev;
  sk_module *mod;
  int covers = 0;
  (void)state;
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  unsetenv("SK_PERF_MAP");
  remove(path);
  dev = open_device("host:cores=1");
  mod = load_kernels(dev, TEST_VARIANT, "shape_models");
  assert_int_equal(perf_map_lines("shape_fill", &covers), 0); /* not asked: nothing written */
  sk_module_unload(mod);
  sk_device_close(dev);

  dev = open_device("host:cores=1,perf_map=1");
  mod = load_kernels(dev, TEST_VARIANT, "shape_models");
  assert_int_equal(perf_map_lines("shape_fill", &covers), 1);
  assert_true(covers); /* the line covers code mapped executable in this process */
  assert_int_equal(perf_map_lines("shape_reverse", &covers), 1);
  sk_module_unload(mod);
  sk_device_close(dev);
  remove(path);

  SK_EXPECT_ERR(sk_device_open("host:perf_map=yes", &dev), SK_ERR_INVALID_ARGUMENT, "perf_map");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_code_models_equal_the_default_model),
      cmocka_unit_test(test_distribution_build_flags),
      cmocka_unit_test(test_lto_objects),
      cmocka_unit_test(test_perf_map),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
