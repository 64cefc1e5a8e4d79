/* Public C API: profiling (scope option profiling=1). sk_superkernel_profile returns one record
 * per (sub-kernel, core that ran it) of the last completed launch; sk_superkernel_write_trace
 * writes it as Chrome trace-event JSON. A profiled super kernel computes what its kernels
 * compute unfused. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "test_util.h"

#define N 300u
#define CORES 2u
#define STEPS 4u
/* Records of the chain below: fill on 2 cores, axpb on 1, sum on 2, fill on 5 blocks over 2. */
#define RECORDS 7u

struct fixture {
  sk_device *dev;
  sk_module *chain, *sync;
  sk_kernel *fill, *axpb, *sync_sum;
  uint32_t *a, *b, *c, *partials; /* fused */
  uint32_t *ua, *ub, *uc;         /* unfused */
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  if (sk_device_open("host:cores=2", &f->dev) != SK_OK) return -1;
  f->chain = load_kernels(f->dev, TEST_VARIANT, "capi_chain");
  f->sync = load_kernels(f->dev, TEST_VARIANT, "capi_sync");
  f->fill = get_kernel(f->chain, "capi_fill");
  f->axpb = get_kernel(f->chain, "capi_axpb");
  f->sync_sum = get_kernel(f->sync, "capi_sync_sum");
  f->a = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->b = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->c = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->ua = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->ub = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->uc = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->partials = (uint32_t *)mem_alloc(f->dev, 8 * sizeof(uint32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t *bufs[7];
  int i;
  bufs[0] = f->a, bufs[1] = f->b, bufs[2] = f->c, bufs[3] = f->ua, bufs[4] = f->ub, bufs[5] = f->uc;
  bufs[6] = f->partials;
  for (i = 0; i < 7; ++i) sk_mem_free(f->dev, bufs[i]);
  sk_module_unload(f->chain);
  sk_module_unload(f->sync);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

/* fill(a) on 2 blocks; axpb(a) on 1; "sum": b = a + total (sk_sync_all) on 2; fill(c) on 5. */
struct chain_args {
  uint32_t n, seed1, seed2, one, two, five;
  int32_t mul, add;
  uint32_t *a, *b, *c, *partials;
  void *fill1[3], *axpb[4], *sum[4], *fill2[3];
};

static void bind_chain(struct chain_args *x, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *partials) {
  x->n = N, x->seed1 = 7, x->seed2 = 9, x->mul = 3, x->add = -5;
  x->a = a, x->b = b, x->c = c, x->partials = partials;
  x->fill1[0] = &x->a, x->fill1[1] = &x->n, x->fill1[2] = &x->seed1;
  x->axpb[0] = &x->a, x->axpb[1] = &x->n, x->axpb[2] = &x->mul, x->axpb[3] = &x->add;
  x->sum[0] = &x->a, x->sum[1] = &x->partials, x->sum[2] = &x->b, x->sum[3] = &x->n;
  x->fill2[0] = &x->c, x->fill2[1] = &x->n, x->fill2[2] = &x->seed2;
}

static sk_superkernel *build(struct fixture *f, const char *options, struct chain_args *x) {
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_kernel_options named = SK_KERNEL_OPTIONS_INIT;
  named.name = "sum";
  bind_chain(x, f->a, f->b, f->c, f->partials);
  SK_CHECK(sk_scope_begin(f->dev, "profiled", options, &scope));
  SK_CHECK(sk_add_kernel(scope, f->fill, 2, x->fill1, NULL));
  SK_CHECK(sk_add_kernel(scope, f->axpb, 1, x->axpb, NULL));
  SK_CHECK(sk_add_kernel(scope, f->sync_sum, 2, x->sum, &named));
  SK_CHECK(sk_add_kernel(scope, f->fill, 5, x->fill2, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  return sk;
}

static void run_unfused(struct fixture *f) {
  struct chain_args x;
  bind_chain(&x, f->ua, f->ub, f->uc, f->partials);
  SK_CHECK(sk_launch_kernel(f->fill, 2, x.fill1, NULL));
  SK_CHECK(sk_launch_kernel(f->axpb, 1, x.axpb, NULL));
  SK_CHECK(sk_launch_kernel(f->sync_sum, 2, x.sum, NULL));
  SK_CHECK(sk_launch_kernel(f->fill, 5, x.fill2, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
}

static void test_profile_of_a_launch(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct chain_args x;
  sk_superkernel *sk = build(f, "profiling=1", &x);
  sk_profile_record rec[RECORDS];
  size_t count = 12345;
  /* step, core, blocks of every record, in order */
  static const uint32_t want[RECORDS][3] = {{0, 0, 1}, {0, 1, 1}, {1, 0, 1}, {2, 0, 1},
                                            {2, 1, 1}, {3, 0, 3}, {3, 1, 2}};
  uint32_t i, j;
  int launch;
  rec[0].struct_size = sizeof rec[0];

  /* Nothing completed yet. */
  SK_EXPECT_ERR(sk_superkernel_profile(sk, rec, RECORDS, &count), SK_ERR_STATE, "no completed launch");
  SK_EXPECT_MSG("profiled");
  assert_int_equal(count, 12345);

  for (launch = 0; launch < 3; ++launch) {
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
  }
  /* Size query, then the records. */
  SK_CHECK(sk_superkernel_profile(sk, NULL, 0, &count));
  assert_int_equal(count, RECORDS);
  /* An array with cap 0 is no size query: too small, *count set. */
  count = 12345;
  SK_EXPECT_ERR(sk_superkernel_profile(sk, rec, 0, &count), SK_ERR_INVALID_ARGUMENT, "cap is 0");
  assert_int_equal(count, RECORDS);
  SK_EXPECT_ERR(sk_superkernel_profile(sk, NULL, 0, NULL), SK_ERR_INVALID_ARGUMENT, "records");
  SK_CHECK(sk_superkernel_profile(sk, rec, RECORDS, &count));
  for (i = 0; i < RECORDS; ++i) {
    assert_int_equal(rec[i].struct_size, sizeof(sk_profile_record));
    assert_int_equal(rec[i].step, want[i][0]);
    assert_int_equal(rec[i].core, want[i][1]);
    assert_int_equal(rec[i].blocks, want[i][2]);
    assert_int_equal(rec[i].core_type, 0);
    assert_true(rec[i].ready_ns > 0);
    assert_true(rec[i].ready_ns <= rec[i].start_ns);
    assert_true(rec[i].start_ns <= rec[i].end_ns);
    assert_true(rec[i].sync_wait_ns <= rec[i].end_ns - rec[i].start_ns);
  }
  /* Without task overlap, a step starts on any core after the previous one ended on every core. */
  for (i = 0; i < RECORDS; ++i)
    for (j = 0; j < RECORDS; ++j)
      if (rec[j].step == rec[i].step + 1) assert_true(rec[j].start_ns >= rec[i].end_ns);

  /* Profiling changes nothing in what the kernels compute. */
  run_unfused(f);
  assert_memory_equal(f->a, f->ua, N * sizeof(uint32_t));
  assert_memory_equal(f->b, f->ub, N * sizeof(uint32_t));
  assert_memory_equal(f->c, f->uc, N * sizeof(uint32_t));
  sk_superkernel_destroy(sk);
}

static void test_profile_buffer_protocol(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct chain_args x;
  sk_superkernel *sk = build(f, "profiling=1", &x);
  sk_profile_record rec[RECORDS + 2];
  size_t count = 0;
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  rec[0].struct_size = sizeof rec[0];
  /* Too small: an error that says how many, with *count set. */
  SK_EXPECT_ERR(sk_superkernel_profile(sk, rec, RECORDS - 1, &count), SK_ERR_INVALID_ARGUMENT, "7 records");
  assert_int_equal(count, RECORDS);
  SK_EXPECT_ERR(sk_superkernel_profile(sk, NULL, 3, &count), SK_ERR_INVALID_ARGUMENT, "records is NULL");
  SK_EXPECT_ERR(sk_superkernel_profile(sk, NULL, 0, NULL), SK_ERR_INVALID_ARGUMENT, "cap is 0");
  /* Room to spare, and count optional. */
  memset(rec, 0xab, sizeof rec);
  rec[0].struct_size = sizeof rec[0];
  SK_CHECK(sk_superkernel_profile(sk, rec, RECORDS + 2, NULL));
  assert_int_equal(rec[RECORDS - 1].step, 3);
  assert_int_equal(rec[RECORDS].step, 0xabababab); /* untouched past the records */
  SK_EXPECT_ERR(sk_superkernel_profile(NULL, rec, RECORDS, &count), SK_ERR_INVALID_ARGUMENT,
                "sk_superkernel_profile");
  sk_superkernel_destroy(sk);
}

static void test_profiling_off(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct chain_args x;
  sk_profile_record rec[RECORDS];
  size_t count = 99;
  const char *options[2] = {NULL, "profiling=0"};
  int i;
  rec[0].struct_size = sizeof rec[0];
  for (i = 0; i < 2; ++i) {
    sk_superkernel *sk = build(f, options[i], &x);
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    SK_EXPECT_ERR(sk_superkernel_profile(sk, rec, RECORDS, &count), SK_ERR_STATE, "profiling=1");
    SK_EXPECT_MSG("'profiled'");
    assert_int_equal(count, 99);
    SK_EXPECT_ERR(sk_superkernel_write_trace(sk, "/tmp/sk_never_written.json"), SK_ERR_STATE, "profiling=1");
    assert_int_equal(access("/tmp/sk_never_written.json", F_OK), -1);
    sk_superkernel_destroy(sk);
  }
}

/* A caller built against a later sk.h whose record has grown by two fields. */
struct later_record {
  sk_profile_record known;
  uint64_t later_a, later_b;
};

static void test_profile_struct_size(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct chain_args x;
  sk_superkernel *sk = build(f, "profiling=1", &x);
  sk_profile_record rec[RECORDS], want[RECORDS];
  struct later_record later[RECORDS];
  /* Under the first version's fields (all of 0.2.0's record), and not a stride of 8. */
  const uint32_t refused[] = {0, 4, (uint32_t)sizeof(sk_profile_record) - 8, (uint32_t)sizeof(sk_profile_record) + 4,
                              1u << 20};
  size_t count = 99, i;
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  for (i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
    memset(rec, 0xab, sizeof rec);
    rec[0].struct_size = refused[i];
    SK_EXPECT_ERR(sk_superkernel_profile(sk, rec, RECORDS, &count), SK_ERR_INVALID_ARGUMENT,
                  "records[0].struct_size");
    assert_int_equal(count, 99);               /* out-parameters untouched */
    assert_int_equal(rec[0].step, 0xabababab); /* nothing written */
  }
  /* The size a caller of this header sets: every record written, each with that size. */
  rec[0].struct_size = sizeof rec[0];
  SK_CHECK(sk_superkernel_profile(sk, rec, RECORDS, &count));
  assert_int_equal(count, RECORDS);
  for (i = 0; i < RECORDS; ++i) assert_int_equal(rec[i].struct_size, sizeof(sk_profile_record));
  memcpy(want, rec, sizeof want);
  /* A larger record: libsk keeps to the caller's stride and leaves the fields it does not know. */
  memset(later, 0xcd, sizeof later);
  later[0].known.struct_size = sizeof later[0];
  SK_CHECK(sk_superkernel_profile(sk, &later[0].known, RECORDS, &count));
  for (i = 0; i < RECORDS; ++i) {
    assert_int_equal(later[i].known.struct_size, sizeof(struct later_record));
    assert_int_equal(later[i].known.step, want[i].step);
    assert_int_equal(later[i].known.core, want[i].core);
    assert_true(later[i].known.ready_ns == want[i].ready_ns);
    assert_true(later[i].known.sync_wait_ns == want[i].sync_wait_ns);
    assert_true(later[i].later_a == 0xcdcdcdcdcdcdcdcdull && later[i].later_b == 0xcdcdcdcdcdcdcdcdull);
  }
  sk_superkernel_destroy(sk);
}

/* Whole file as a NUL-terminated string (the caller frees it). */
static char *read_text(const char *path) {
  size_t size = 0;
  unsigned char *data = read_whole_file(path, &size);
  char *text = (char *)realloc(data, size + 1);
  assert_non_null(text);
  text[size] = '\0';
  return text;
}

static void test_write_trace(void **state) {
  struct fixture *f = (struct fixture *)*state;
  struct chain_args x;
  sk_superkernel *sk = build(f, "profiling=1", &x);
  char path[] = "/tmp/sk_trace_XXXXXX";
  char cmd[512];
  char *text;
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  SK_CHECK(sk_superkernel_write_trace(sk, path));
  text = read_text(path);
  /* Complete events named after the sub-kernels, one track per core. */
  assert_non_null(strstr(text, "\"traceEvents\":["));
  assert_non_null(strstr(text, "{\"name\":\"capi_fill\",\"cat\":\"sub-kernel\",\"ph\":\"X\""));
  assert_non_null(strstr(text, "{\"name\":\"sum\",\"cat\":\"sub-kernel\",\"ph\":\"X\""));
  assert_non_null(strstr(text, "\"tid\":1,"));
  assert_non_null(strstr(text, "\"args\":{\"name\":\"super kernel profiled\"}"));
  assert_non_null(strstr(text, "\"args\":{\"step\":3,"));
  free(text);
  /* A JSON parser agrees (when python3 is there to ask). */
  if (system("python3 -c 'import json' >/dev/null 2>&1") == 0) {
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "x=[e for e in d[\"traceEvents\"] if e[\"ph\"]==\"X\" and e[\"cat\"]==\"sub-kernel\"]; "
             "sys.exit(0 if len(x)==%u else 1)' %s",
             RECORDS, path);
    assert_int_equal(system(cmd), 0);
  }
  unlink(path);
  /* Errors name the path. */
  SK_EXPECT_ERR(sk_superkernel_write_trace(sk, "/nonexistent-sk-dir/trace.json"), SK_ERR_INVALID_ARGUMENT,
                "/nonexistent-sk-dir/trace.json");
  SK_EXPECT_ERR(sk_superkernel_write_trace(sk, NULL), SK_ERR_INVALID_ARGUMENT, "path is NULL");
  SK_EXPECT_ERR(sk_superkernel_write_trace(sk, ""), SK_ERR_INVALID_ARGUMENT, "path is empty");
  sk_superkernel_destroy(sk);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_profile_of_a_launch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profile_buffer_protocol, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiling_off, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profile_struct_size, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_trace, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
