/* Public C API: several objects and archives as one module (sk_module_load_files and
 * sk_module_load_images), with objects built by gcc and clang (tests/kernels/multi), linker
 * scripts of EXTERN commands, and Debian's reference BLAS (libblas.a) and OpenBLAS
 * (libopenblas.a) used unmodified, compared with their shared libraries. */
#include <dlfcn.h>
#include <unistd.h>

#include "test_util.h"

#ifndef SK_TEST_MULTI_VARIANTS
#error "SK_TEST_MULTI_VARIANTS must list the variants of tests/kernels/multi"
#endif
#ifndef SK_TEST_OPENBLAS_DIR
#error "SK_TEST_OPENBLAS_DIR must name the folder of Debian's libopenblas.a and libopenblas.so.0"
#endif
#ifndef SK_TEST_BLAS_DIR
#error "SK_TEST_BLAS_DIR must name the folder of libblas.a and libblas.so.3"
#endif

#define MAX_VARIANTS 8

/* The variants of tests/kernels/multi/CMakeLists.txt, from "gcc-O0,gcc-O2,...". */
static size_t multi_variants(char names[MAX_VARIANTS][32]) {
  const char *p = SK_TEST_MULTI_VARIANTS;
  size_t n = 0;
  while (*p && n < MAX_VARIANTS) {
    size_t len = strcspn(p, ",");
    assert_true(len > 0 && len < 32);
    memcpy(names[n], p, len);
    names[n++][len] = '\0';
    p += len + (p[len] == ',');
  }
  assert_true(n > 0);
  return n;
}

static char *multi_path(const char *variant, const char *file) {
  char *path = (char *)malloc(1024);
  int n;
  assert_non_null(path);
  n = snprintf(path, 1024, "%s/multi/%s/%s", SK_TEST_KERNEL_DIR, variant, file);
  assert_true(n > 0 && n < 1024);
  return path;
}

static void free_paths(char **paths, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) free(paths[i]);
}

/* multi_kernel on 8 values: (3 * v + 100) * 2 + 7 (multi_main.c's comment). */
static void check_multi_kernel(sk_device *dev, sk_module *mod, const char *what) {
  int32_t *buf = (int32_t *)mem_alloc(dev, 8 * sizeof(int32_t));
  uint32_t n = 8, i;
  void *args[2];
  args[0] = &buf;
  args[1] = &n;
  for (i = 0; i < n; ++i) buf[i] = (int32_t)i - 3;
  SK_CHECK(sk_launch_kernel(get_kernel(mod, "multi_kernel"), 3, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < n; ++i)
    if (buf[i] != (3 * ((int32_t)i - 3) + 100) * 2 + 7)
      fail_msg("%s: multi_kernel gave buf[%u] = %d", what, i, buf[i]);
  /* The second object's kernel is found by its own .sk.kernels record. */
  SK_CHECK(sk_launch_kernel(get_kernel(mod, "multi_helper_kernel"), 2, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  assert_int_equal(buf[0], 3 * ((3 * -3 + 100) * 2 + 7));
  sk_mem_free(dev, buf);
}

/* An object, a helper object and an archive, in either order, from every compiler. */
static void test_objects_and_archive(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  size_t nv = multi_variants(variants), v;
  for (v = 0; v < nv; ++v) {
    char *paths[3];
    const char *const *cpaths = (const char *const *)paths;
    sk_module *mod = NULL;
    paths[0] = multi_path(variants[v], "multi_main.o");
    paths[1] = multi_path(variants[v], "multi_helper.o");
    paths[2] = multi_path(variants[v], "libmulti.a");
    SK_CHECK(sk_module_load_files(dev, cpaths, 3, &mod));
    check_multi_kernel(dev, mod, variants[v]);
    sk_module_unload(mod);
    /* The archive first: members are pulled by need wherever it stands. */
    {
      char *first = paths[2];
      paths[2] = paths[1];
      paths[1] = paths[0];
      paths[0] = first;
    }
    SK_CHECK(sk_module_load_files(dev, cpaths, 3, &mod));
    check_multi_kernel(dev, mod, variants[v]);
    sk_module_unload(mod);
    free_paths(paths, 3);
  }
}

/* Objects of different compilers and optimisation levels in one module. */
static void test_mixed_compilers(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  size_t nv = multi_variants(variants);
  char *paths[3];
  sk_module *mod = NULL;
  paths[0] = multi_path(variants[0], "multi_main.o");
  paths[1] = multi_path(variants[nv - 1], "multi_helper.o");
  paths[2] = multi_path(variants[nv / 2], "libmulti.a");
  SK_CHECK(sk_module_load_files(dev, (const char *const *)paths, 3, &mod));
  check_multi_kernel(dev, mod, "mixed compilers");
  sk_module_unload(mod);
  free_paths(paths, 3);
}

/* In memory: the same objects, and the messages name "<memory #i>". */
static void test_images(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  const char *files[3] = {"multi_main.o", "multi_helper.o", "libmulti.a"};
  const void *images[3];
  size_t sizes[3], i;
  unsigned char *bytes[3];
  sk_module *mod = NULL;
  multi_variants(variants);
  for (i = 0; i < 3; ++i) {
    char *path = multi_path(variants[0], files[i]);
    bytes[i] = read_whole_file(path, &sizes[i]);
    images[i] = bytes[i];
    free(path);
  }
  SK_CHECK(sk_module_load_images(dev, images, sizes, 3, &mod));
  check_multi_kernel(dev, mod, "in memory");
  sk_module_unload(mod);
  /* Without the helper object, multi_scale is undefined: named with the object that needs it. */
  images[1] = images[2];
  sizes[1] = sizes[2];
  mod = SENTINEL(sk_module);
  SK_EXPECT_ERR(sk_module_load_images(dev, images, sizes, 2, &mod), SK_ERR_NOT_FOUND, "multi_scale");
  SK_EXPECT_MSG("<memory #0>");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  for (i = 0; i < 3; ++i) free(bytes[i]);
}

/* A member nothing needs is not pulled: it would fail the link; an object that needs it fails. */
static void test_need_only(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  char *paths[4];
  sk_module *mod = SENTINEL(sk_module);
  multi_variants(variants);
  paths[0] = multi_path(variants[0], "multi_wants_unused.o");
  paths[1] = multi_path(variants[0], "multi_main.o");
  paths[2] = multi_path(variants[0], "multi_helper.o");
  paths[3] = multi_path(variants[0], "libmulti.a");
  SK_EXPECT_ERR(sk_module_load_files(dev, (const char *const *)paths, 4, &mod), SK_ERR_NOT_FOUND,
                "multi_no_such_symbol");
  SK_EXPECT_MSG("libmulti.a(multi_unused.o)");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  SK_CHECK(sk_module_load_files(dev, (const char *const *)paths + 1, 3, &mod));
  sk_module_unload(mod);
  free_paths(paths, 4);
}

/* A refusal inside a member names the member, not the set. */
static void test_refusal_names_the_member(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  char *paths[2];
  sk_module *mod = SENTINEL(sk_module);
  multi_variants(variants);
  paths[0] = multi_path(variants[0], "multi_wants_tls_big.o");
  paths[1] = multi_path(variants[0], "libmulti.a");
  SK_EXPECT_ERR(sk_module_load_files(dev, (const char *const *)paths, 2, &mod), SK_ERR_UNSUPPORTED,
                "libmulti.a(multi_tls_big.o): thread-local variable 'multi_tls_big_buffer'");
  SK_EXPECT_MSG("local exec");
  assert_null(strstr(sk_last_error(), " + "));
  assert_ptr_equal(mod, SENTINEL(sk_module));
  free_paths(paths, 2);
}

/* A file holding `contents`, for as long as the test needs it: its path in `path`. */
static void temp_file(char *path, size_t cap, const char *contents) {
  int fd;
  size_t n = strlen(contents);
  assert_true(cap > 32);
  snprintf(path, cap, "/tmp/sk_multi_test_XXXXXX");
  fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, contents, n), (ssize_t)n);
  close(fd);
}

/* An archive alone, with a linker script naming what to pull in (as ld -u): the members that
 * define those symbols and what they need are linked; asking for a function a member left out
 * defines says how to ask for it. */
static void test_extern_script_pulls_members(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  char script[64], bad[64];
  const char *paths[2];
  sk_module *mod = SENTINEL(sk_module);
  sk_kernel *k = NULL;
  int v = 5;
  void *args[1];
  multi_variants(variants);
  temp_file(script, sizeof script, "/* what the kernels need */\nEXTERN(multi_offset)\n");
  paths[0] = script;
  paths[1] = multi_path(variants[0], "libmulti.a");
  SK_CHECK(sk_module_load_files(dev, paths, 2, &mod));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "multi_offset", "i32", &k));
  args[0] = &v;
  SK_CHECK(sk_launch_kernel(k, 1, args, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  SK_EXPECT_ERR(sk_module_get_kernel_with_signature(mod, "multi_unused", "", &k), SK_ERR_NOT_FOUND,
                "libmulti.a(multi_unused.o) defines it");
  SK_EXPECT_MSG("EXTERN(multi_unused)");
  sk_module_unload(mod);
  mod = SENTINEL(sk_module);
  temp_file(bad, sizeof bad, "EXTERN(multi_not_in_the_archive)");
  paths[0] = bad;
  SK_EXPECT_ERR(sk_module_load_files(dev, paths, 2, &mod), SK_ERR_NOT_FOUND, "EXTERN(multi_not_in_the_archive)");
  SK_EXPECT_MSG(bad);
  unlink(bad);
  temp_file(bad, sizeof bad, "EXTERN(multi_offset) INPUT(libc.a)");
  SK_EXPECT_ERR(sk_module_load_files(dev, paths, 2, &mod), SK_ERR_BAD_BINARY, "not an EXTERN command");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  unlink(bad);
  unlink(script);
  free((char *)paths[1]);
}

/* Two strong definitions of one symbol: refused, naming both objects. */
static void test_duplicate_definition(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  char *paths[3];
  sk_module *mod = SENTINEL(sk_module);
  multi_variants(variants);
  paths[0] = multi_path(variants[0], "multi_main.o");
  paths[1] = multi_path(variants[0], "multi_helper.o");
  paths[2] = multi_path(variants[0], "multi_dup.o");
  SK_EXPECT_ERR(sk_module_load_files(dev, (const char *const *)paths, 3, &mod), SK_ERR_BAD_BINARY, "'multi_scale'");
  SK_EXPECT_MSG("multi_helper.o");
  SK_EXPECT_MSG("multi_dup.o");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  free_paths(paths, 3);
}

/* One inline variable and template instance kept of two C++ objects' COMDAT groups: both
 * kernels count on the same multi_counter (multi_comdat_a.cpp's comments). */
static void test_comdat_across_objects(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  size_t nv = multi_variants(variants), v;
  for (v = 0; v < nv; ++v) {
    char *paths[2];
    sk_module *mod = NULL;
    int *out = (int *)mem_alloc(dev, 2 * sizeof(int));
    int *second = out + 1;
    void *args_a[1], *args_b[1];
    args_a[0] = &out;
    args_b[0] = &second;
    paths[0] = multi_path(variants[v], "multi_comdat_a.o");
    paths[1] = multi_path(variants[(v + 1) % nv], "multi_comdat_b.o");
    SK_CHECK(sk_module_load_files(dev, (const char *const *)paths, 2, &mod));
    SK_CHECK(sk_launch_kernel(get_kernel(mod, "multi_comdat_a"), 1, args_a, NULL));
    SK_CHECK(sk_launch_kernel(get_kernel(mod, "multi_comdat_b"), 1, args_b, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_int_equal(out[0], 41);
    assert_int_equal(out[1], 2011);
    sk_module_unload(mod);
    sk_mem_free(dev, out);
    free_paths(paths, 2);
  }
}

static void test_bad_sets(void **state) {
  sk_device *dev = (sk_device *)*state;
  char variants[MAX_VARIANTS][32];
  char *archive;
  const char *paths[2];
  static const char thin[] = "!<thin>\n";
  const void *images[2];
  size_t sizes[2] = {sizeof thin - 1, 0};
  sk_module *mod = SENTINEL(sk_module);
  multi_variants(variants);
  archive = multi_path(variants[0], "libmulti.a");
  paths[0] = archive;
  paths[1] = NULL;
  SK_EXPECT_ERR(sk_module_load_files(dev, NULL, 1, &mod), SK_ERR_INVALID_ARGUMENT, "paths is NULL");
  SK_EXPECT_ERR(sk_module_load_files(dev, paths, 0, &mod), SK_ERR_INVALID_ARGUMENT, "count is 0");
  SK_EXPECT_ERR(sk_module_load_files(dev, paths, 2, &mod), SK_ERR_INVALID_ARGUMENT, "paths[1] is NULL");
  SK_EXPECT_ERR(sk_module_load_files(dev, paths, 1, &mod), SK_ERR_INVALID_ARGUMENT, "only archives");
  SK_EXPECT_MSG("libmulti.a");
  images[0] = thin;
  images[1] = thin;
  SK_EXPECT_ERR(sk_module_load_images(dev, images, sizes, 2, &mod), SK_ERR_BAD_BINARY, "<memory #1> is empty");
  sizes[1] = sizes[0];
  SK_EXPECT_ERR(sk_module_load_images(dev, images, sizes, 2, &mod), SK_ERR_UNSUPPORTED, "thin archive");
  SK_EXPECT_MSG("<memory #0>");
  SK_EXPECT_ERR(sk_module_load_images(dev, images, NULL, 2, &mod), SK_ERR_INVALID_ARGUMENT, "sizes is NULL");
  assert_ptr_equal(mod, SENTINEL(sk_module));
  free(archive);
}

/* Fortran BLAS signatures (every argument by pointer). */
typedef void (*saxpy_fn)(const int *, const float *, const float *, const int *, float *, const int *);
typedef void (*sgemv_fn)(const char *, const int *, const int *, const float *, const float *, const int *,
                         const float *, const int *, const float *, float *, const int *);
typedef float (*sdot_fn)(const int *, const float *, const int *, const float *, const int *);

enum { BLAS_N = 64, BLAS_M = 48 };

struct blas_data {
  int n, m, inc;
  char trans;
  float a, alpha, beta, dot;
  float x[BLAS_N], y[BLAS_N], mat[BLAS_M * BLAS_N], z[BLAS_M], w[BLAS_M];
};

static void blas_inputs(struct blas_data *d) {
  int i;
  memset(d, 0, sizeof *d);
  d->n = BLAS_N;
  d->m = BLAS_M;
  d->inc = 1;
  d->trans = 'N';
  d->a = 1.25f;
  d->alpha = 0.75f;
  d->beta = 0.5f;
  for (i = 0; i < BLAS_N; ++i) d->x[i] = (float)(i % 7) * 0.3f - 0.9f, d->y[i] = (float)(i % 5) * 0.11f;
  for (i = 0; i < BLAS_M * BLAS_N; ++i) d->mat[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
  for (i = 0; i < BLAS_M; ++i) d->z[i] = (float)i * 0.01f, d->w[i] = (float)(i % 3) - 1.1f;
}

/* saxpy_ -> sgemv_ -> sdot_ fused from libblas.a equals the same calls through libblas.so. */
static void test_blas_chain(void **state) {
  sk_device *dev = (sk_device *)*state;
  const char *archive = SK_TEST_BLAS_DIR "/libblas.a", *shared = SK_TEST_BLAS_DIR "/libblas.so.3";
  char variants[MAX_VARIANTS][32];
  size_t nv = multi_variants(variants), v;
  void *lib;
  struct blas_data *want, *got;
  if (access(archive, R_OK) != 0 || access(shared, R_OK) != 0) {
    print_message("skipped: %s or %s is missing (install libblas-dev: scripts/deps)\n", archive, shared);
    skip();
  }
  /* RTLD_LOCAL: the module's saxpy_ and others are the archive's, not these. */
  lib = dlopen(shared, RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail_msg("dlopen %s: %s", shared, dlerror());
  want = (struct blas_data *)malloc(sizeof *want);
  assert_non_null(want);
  blas_inputs(want);
  {
    void *syms[3];
    saxpy_fn saxpy;
    sgemv_fn sgemv;
    sdot_fn sdot;
    syms[0] = dlsym(lib, "saxpy_");
    syms[1] = dlsym(lib, "sgemv_");
    syms[2] = dlsym(lib, "sdot_");
    assert_true(syms[0] && syms[1] && syms[2]);
    /* ISO C has no cast from void * to a function pointer: copy the bits, as POSIX allows. */
    memcpy(&saxpy, &syms[0], sizeof saxpy);
    memcpy(&sgemv, &syms[1], sizeof sgemv);
    memcpy(&sdot, &syms[2], sizeof sdot);
    saxpy(&want->n, &want->a, want->x, &want->inc, want->y, &want->inc);
    sgemv(&want->trans, &want->m, &want->n, &want->alpha, want->mat, &want->m, want->y, &want->inc, &want->beta,
          want->z, &want->inc);
    want->dot = sdot(&want->m, want->z, &want->inc, want->w, &want->inc);
  }
  for (v = 0; v < nv; ++v) {
    char *paths[2];
    sk_module *mod = NULL;
    sk_kernel *saxpy = NULL, *sgemv = NULL, *sdot;
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    void *axpy_args[6], *gemv_args[11], *dot_args[6];
    void *p[16];
    int k;
    got = (struct blas_data *)mem_alloc(dev, sizeof *got);
    blas_inputs(got);
    /* The address of every field an argument points to. */
    p[0] = &got->n, p[1] = &got->a, p[2] = got->x, p[3] = &got->inc, p[4] = got->y;
    p[5] = &got->trans, p[6] = &got->m, p[7] = &got->alpha, p[8] = got->mat, p[9] = &got->beta;
    p[10] = got->z, p[11] = got->w, p[12] = &got->dot;
    axpy_args[0] = &p[0], axpy_args[1] = &p[1], axpy_args[2] = &p[2], axpy_args[3] = &p[3];
    axpy_args[4] = &p[4], axpy_args[5] = &p[3];
    gemv_args[0] = &p[5], gemv_args[1] = &p[6], gemv_args[2] = &p[0], gemv_args[3] = &p[7];
    gemv_args[4] = &p[8], gemv_args[5] = &p[6], gemv_args[6] = &p[4], gemv_args[7] = &p[3];
    gemv_args[8] = &p[9], gemv_args[9] = &p[10], gemv_args[10] = &p[3];
    dot_args[0] = &p[6], dot_args[1] = &p[10], dot_args[2] = &p[3], dot_args[3] = &p[11];
    dot_args[4] = &p[3], dot_args[5] = &p[12];
    paths[0] = multi_path(variants[v], "blas_chain.o");
    paths[1] = (char *)archive;
    SK_CHECK(sk_module_load_files(dev, (const char *const *)paths, 2, &mod));
    SK_CHECK(sk_module_get_kernel_with_signature(mod, "saxpy_", "ptr,ptr,ptr,ptr,ptr,ptr", &saxpy));
    SK_CHECK(
        sk_module_get_kernel_with_signature(mod, "sgemv_", "ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr", &sgemv));
    sdot = get_kernel(mod, "blas_sdot_into");
    SK_CHECK(sk_scope_begin(dev, "blas_chain", NULL, &scope));
    SK_CHECK(sk_add_kernel(scope, saxpy, 1, axpy_args, NULL));
    SK_CHECK(sk_add_kernel(scope, sgemv, 1, gemv_args, NULL));
    SK_CHECK(sk_add_kernel(scope, sdot, 1, dot_args, NULL));
    SK_CHECK(sk_finalize(scope, &sk));
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    /* The same machine code ran: bitwise equal. */
    for (k = 0; k < BLAS_N; ++k)
      if (memcmp(&got->y[k], &want->y[k], sizeof(float)) != 0)
        fail_msg("%s: saxpy_ y[%d] = %a, libblas.so gives %a", variants[v], k, got->y[k], want->y[k]);
    for (k = 0; k < BLAS_M; ++k)
      if (memcmp(&got->z[k], &want->z[k], sizeof(float)) != 0)
        fail_msg("%s: sgemv_ z[%d] = %a, libblas.so gives %a", variants[v], k, got->z[k], want->z[k]);
    if (memcmp(&got->dot, &want->dot, sizeof(float)) != 0)
      fail_msg("%s: sdot_ = %a, libblas.so gives %a", variants[v], got->dot, want->dot);
    sk_superkernel_destroy(sk);
    sk_module_unload(mod);
    sk_mem_free(dev, got);
    free(paths[0]);
  }
  free(want);
  dlclose(lib);
}

/* CBLAS and Fortran signatures of Debian's OpenBLAS (CblasColMajor = 102, CblasNoTrans = 111). */
typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                               float *, int);
typedef void (*cblas_sgemv_fn)(int, int, int, int, float, const float *, int, const float *, int, float, float *,
                               int);
typedef void (*sgemm_fn)(const char *, const char *, const int *, const int *, const int *, const float *,
                         const float *, const int *, const float *, const int *, const float *, float *,
                         const int *);

enum { OB_M = 37, OB_N = 29, OB_K = 41 };

struct openblas_data {
  int order, notrans, m, n, k, one;
  char trans_n, trans_t;
  float alpha, beta;
  float a[OB_M * OB_K], b[OB_K * OB_N], c[OB_M * OB_N], x[OB_N], y[OB_M], d[OB_M * OB_N];
};

static void openblas_inputs(struct openblas_data *o) {
  int i;
  memset(o, 0, sizeof *o);
  o->order = 102, o->notrans = 111, o->m = OB_M, o->n = OB_N, o->k = OB_K, o->one = 1;
  o->trans_n = 'N', o->trans_t = 'T';
  o->alpha = 0.625f, o->beta = -0.5f;
  for (i = 0; i < OB_M * OB_K; ++i) o->a[i] = (float)((i * 29) % 97) / 31.0f - 1.5f;
  for (i = 0; i < OB_K * OB_N; ++i) o->b[i] = (float)((i * 13) % 89) / 17.0f - 2.5f;
  for (i = 0; i < OB_M * OB_N; ++i) o->c[i] = (float)(i % 11) * 0.25f, o->d[i] = (float)(i % 7) - 3.0f;
  for (i = 0; i < OB_N; ++i) o->x[i] = (float)(i % 5) * 0.5f - 1.0f;
  for (i = 0; i < OB_M; ++i) o->y[i] = (float)(i % 3);
}

/* Debian's unmodified libopenblas.a (thread-locals, pthread_atfork, CPU dispatch), pulled by a
 * linker script alone: cblas_sgemm -> cblas_sgemv -> sgemm_ fused, and each unfused, equal the
 * same calls through libopenblas.so (the same build), bit for bit. */
static void test_openblas(void **state) {
  sk_device *dev = (sk_device *)*state;
  const char *archive = SK_TEST_OPENBLAS_DIR "/libopenblas.a", *shared = SK_TEST_OPENBLAS_DIR "/libopenblas.so.0";
  char script[64];
  const char *paths[2];
  void *lib, *syms[3];
  cblas_sgemm_fn gemm;
  cblas_sgemv_fn gemv;
  sgemm_fn fgemm;
  struct openblas_data *want, *got[2];
  sk_module *mod = NULL;
  sk_kernel *k_gemm = NULL, *k_gemv = NULL, *k_fgemm = NULL;
  int fused;
  if (access(archive, R_OK) != 0 || access(shared, R_OK) != 0) {
    print_message("skipped: %s or %s is missing (install libopenblas-pthread-dev: scripts/deps)\n", archive, shared);
    skip();
  }
  lib = dlopen(shared, RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail_msg("dlopen %s: %s", shared, dlerror());
  syms[0] = dlsym(lib, "cblas_sgemm"), syms[1] = dlsym(lib, "cblas_sgemv"), syms[2] = dlsym(lib, "sgemm_");
  assert_true(syms[0] && syms[1] && syms[2]);
  memcpy(&gemm, &syms[0], sizeof gemm);
  memcpy(&gemv, &syms[1], sizeof gemv);
  memcpy(&fgemm, &syms[2], sizeof fgemm);
  want = (struct openblas_data *)malloc(sizeof *want);
  assert_non_null(want);
  openblas_inputs(want);
  gemm(want->order, want->notrans, want->notrans, want->m, want->n, want->k, want->alpha, want->a, want->m, want->b,
       want->k, want->beta, want->c, want->m);
  gemv(want->order, want->notrans, want->m, want->n, want->alpha, want->c, want->m, want->x, want->one, want->beta,
       want->y, want->one);
  fgemm(&want->trans_n, &want->trans_t, &want->m, &want->n, &want->n, &want->alpha, want->c, &want->m, want->c + 0,
        &want->m, &want->beta, want->d, &want->m);

  temp_file(script, sizeof script, "EXTERN(cblas_sgemm cblas_sgemv sgemm_)\n");
  paths[0] = script;
  paths[1] = archive;
  SK_CHECK(sk_module_load_files(dev, paths, 2, &mod));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "cblas_sgemm",
                                               "i32,i32,i32,i32,i32,i32,f32,ptr,i32,ptr,i32,f32,ptr,i32", &k_gemm));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "cblas_sgemv", "i32,i32,i32,i32,f32,ptr,i32,ptr,i32,f32,ptr,i32",
                                               &k_gemv));
  SK_CHECK(sk_module_get_kernel_with_signature(mod, "sgemm_", "ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr,ptr",
                                               &k_fgemm));
  for (fused = 0; fused < 2; ++fused) {
    struct openblas_data *o = got[fused] = (struct openblas_data *)mem_alloc(dev, sizeof *got[fused]);
    void *pa = o->a, *pb = o->b, *pc = o->c, *px = o->x, *py = o->y, *pd = o->d;
    void *p_tn = &o->trans_n, *p_tt = &o->trans_t, *p_m = &o->m, *p_n = &o->n, *p_alpha = &o->alpha;
    void *p_beta = &o->beta;
    void *gemm_args[14], *gemv_args[12], *fgemm_args[13];
    openblas_inputs(o);
    gemm_args[0] = &o->order, gemm_args[1] = &o->notrans, gemm_args[2] = &o->notrans, gemm_args[3] = &o->m;
    gemm_args[4] = &o->n, gemm_args[5] = &o->k, gemm_args[6] = &o->alpha, gemm_args[7] = &pa;
    gemm_args[8] = &o->m, gemm_args[9] = &pb, gemm_args[10] = &o->k, gemm_args[11] = &o->beta;
    gemm_args[12] = &pc, gemm_args[13] = &o->m;
    gemv_args[0] = &o->order, gemv_args[1] = &o->notrans, gemv_args[2] = &o->m, gemv_args[3] = &o->n;
    gemv_args[4] = &o->alpha, gemv_args[5] = &pc, gemv_args[6] = &o->m, gemv_args[7] = &px;
    gemv_args[8] = &o->one, gemv_args[9] = &o->beta, gemv_args[10] = &py, gemv_args[11] = &o->one;
    fgemm_args[0] = &p_tn, fgemm_args[1] = &p_tt, fgemm_args[2] = &p_m, fgemm_args[3] = &p_n;
    fgemm_args[4] = &p_n, fgemm_args[5] = &p_alpha, fgemm_args[6] = &pc, fgemm_args[7] = &p_m;
    fgemm_args[8] = &pc, fgemm_args[9] = &p_m, fgemm_args[10] = &p_beta, fgemm_args[11] = &pd;
    fgemm_args[12] = &p_m;
    if (fused) {
      sk_scope *scope = NULL;
      sk_superkernel *sk = NULL;
      SK_CHECK(sk_scope_begin(dev, "openblas", NULL, &scope));
      SK_CHECK(sk_add_kernel(scope, k_gemm, 1, gemm_args, NULL));
      SK_CHECK(sk_add_kernel(scope, k_gemv, 1, gemv_args, NULL));
      SK_CHECK(sk_add_kernel(scope, k_fgemm, 1, fgemm_args, NULL));
      SK_CHECK(sk_finalize(scope, &sk));
      SK_CHECK(sk_launch(sk, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
      sk_superkernel_destroy(sk);
    } else {
      SK_CHECK(sk_launch_kernel(k_gemm, 1, gemm_args, NULL));
      SK_CHECK(sk_launch_kernel(k_gemv, 1, gemv_args, NULL));
      SK_CHECK(sk_launch_kernel(k_fgemm, 1, fgemm_args, NULL));
      SK_CHECK(sk_stream_synchronize(NULL));
    }
    /* The same machine code ran: bitwise equal. */
    if (memcmp(o->c, want->c, sizeof o->c) != 0)
      fail_msg("%s: cblas_sgemm differs from libopenblas.so", fused ? "fused" : "unfused");
    if (memcmp(o->y, want->y, sizeof o->y) != 0)
      fail_msg("%s: cblas_sgemv differs from libopenblas.so", fused ? "fused" : "unfused");
    if (memcmp(o->d, want->d, sizeof o->d) != 0)
      fail_msg("%s: sgemm_ differs from libopenblas.so", fused ? "fused" : "unfused");
    sk_mem_free(dev, o);
  }
  sk_module_unload(mod);
  unlink(script);
  free(want);
  dlclose(lib);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_objects_and_archive),
      cmocka_unit_test(test_mixed_compilers),
      cmocka_unit_test(test_images),
      cmocka_unit_test(test_need_only),
      cmocka_unit_test(test_refusal_names_the_member),
      cmocka_unit_test(test_extern_script_pulls_members),
      cmocka_unit_test(test_duplicate_definition),
      cmocka_unit_test(test_comdat_across_objects),
      cmocka_unit_test(test_bad_sets),
      cmocka_unit_test(test_blas_chain),
      cmocka_unit_test(test_openblas),
  };
  return cmocka_run_group_tests(tests, test_setup_host_device, test_teardown_device);
}
