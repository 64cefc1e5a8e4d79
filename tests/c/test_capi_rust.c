/* Public C API: a Rust staticlib built with std (tests/kernels/rust), loaded alone with a
 * linker script naming its kernels: a bounds-checked gather whose out-of-range indices panic
 * and are caught, and a bounds-checked loop, unfused and fused, equal the same source built as
 * a cdylib and loaded with dlopen, bit for bit. Skipped, saying why, where rustc cannot build
 * for the target. */
#include <dlfcn.h>
#include <unistd.h>

#include "test_util.h"

#ifndef SK_TEST_RUST_DIR
#error "SK_TEST_RUST_DIR must name the folder of libsk_rust_kernels.a and .so"
#endif

typedef void (*gather_fn)(const float *, uint32_t, const uint32_t *, uint32_t, float, float *);
typedef void (*prefix_fn)(const float *, uint32_t, float *);

enum { RN = 50, RM = 64 };

struct rust_data {
  uint32_t n, m;
  float scale;
  float values[RN], gathered[RM], prefix[RN];
  uint32_t index[RM];
};

static void rust_inputs(struct rust_data *d) {
  int i;
  memset(d, 0, sizeof *d);
  d->n = RN, d->m = RM, d->scale = 0.375f;
  for (i = 0; i < RN; ++i) d->values[i] = (float)((i * 37) % 23) * 0.125f - 1.0f;
  for (i = 0; i < RM; ++i) d->index[i] = (uint32_t)((i * 7) % 61); /* some beyond RN: panics */
}

static void test_rust_staticlib(void **state) {
  sk_device *dev = (sk_device *)*state;
  const char *archive = SK_TEST_RUST_DIR "/libsk_rust_kernels.a",
             *shared = SK_TEST_RUST_DIR "/libsk_rust_kernels.so";
  char script[] = "/tmp/sk_rust_test_XXXXXX";
  static const char externs[] = "EXTERN(sk_rust_gather sk_rust_prefix)\n";
  const char *paths[2];
  void *lib, *syms[2];
  gather_fn gather;
  prefix_fn prefix;
  struct rust_data want, *got;
  sk_module *mod = NULL;
  sk_kernel *k_gather = NULL, *k_prefix = NULL;
  int fused, fd, caught;
  if (SK_TEST_RUST_MISSING[0]) {
    print_message("skipped: %s\n", SK_TEST_RUST_MISSING);
    skip();
  }
  lib = dlopen(shared, RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail_msg("dlopen %s: %s", shared, dlerror());
  syms[0] = dlsym(lib, "sk_rust_gather"), syms[1] = dlsym(lib, "sk_rust_prefix");
  assert_true(syms[0] && syms[1]);
  memcpy(&gather, &syms[0], sizeof gather);
  memcpy(&prefix, &syms[1], sizeof prefix);
  rust_inputs(&want);
  gather(want.values, want.n, want.index, want.m, want.scale, want.gathered);
  prefix(want.values, want.n, want.prefix);
  for (fused = 0, caught = 0; fused < RM; ++fused)
    caught += want.index[fused] >= RN && want.gathered[fused] == -1.0f;
  assert_true(caught > 0); /* the inputs make panics to catch */

  fd = mkstemp(script);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, externs, sizeof externs - 1), (ssize_t)(sizeof externs - 1));
  close(fd);
  paths[0] = script;
  paths[1] = archive;
  SK_CHECK(sk_module_load_files(dev, paths, 2, &mod));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "sk_rust_gather", "ptr,u32,ptr,u32,f32,ptr", &k_gather));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "sk_rust_prefix", "ptr,u32,ptr", &k_prefix));
  for (fused = 0; fused < 2; ++fused) {
    void *pv, *pi, *pg, *pp;
    void *gather_args[6], *prefix_args[3];
    got = (struct rust_data *)mem_alloc(dev, sizeof *got);
    rust_inputs(got);
    pv = got->values, pi = got->index, pg = got->gathered, pp = got->prefix;
    gather_args[0] = &pv, gather_args[1] = &got->n, gather_args[2] = &pi, gather_args[3] = &got->m;
    gather_args[4] = &got->scale, gather_args[5] = &pg;
    prefix_args[0] = &pv, prefix_args[1] = &got->n, prefix_args[2] = &pp;
    if (fused) {
      sk_scope *scope = NULL;
      sk_superkernel *sk = NULL;
      SK_CHECK(sk_scope_begin(dev, "rust", NULL, &scope));
      SK_CHECK(sk_add_kernel(scope, k_gather, 1, gather_args, NULL));
      SK_CHECK(sk_add_kernel(scope, k_prefix, 1, prefix_args, NULL));
      SK_CHECK(sk_finalize(scope, &sk));
      SK_CHECK(sk_launch(sk, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      sk_superkernel_destroy(sk);
    } else {
      SK_CHECK(sk_launch_kernel(k_gather, 1, gather_args, NULL));
      SK_CHECK(sk_launch_kernel(k_prefix, 1, prefix_args, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
    }
    if (memcmp(got->gathered, want.gathered, sizeof want.gathered) != 0)
      fail_msg("%s: sk_rust_gather differs from the cdylib", fused ? "fused" : "unfused");
    if (memcmp(got->prefix, want.prefix, sizeof want.prefix) != 0)
      fail_msg("%s: sk_rust_prefix differs from the cdylib", fused ? "fused" : "unfused");
    sk_mem_free(dev, got);
  }
  sk_module_unload(mod);
  unlink(script);
  dlclose(lib);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rust_staticlib),
  };
  return cmocka_run_group_tests(tests, test_setup_host_device, test_teardown_device);
}
