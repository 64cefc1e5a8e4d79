/* Public C API: task overlap is real, and a full barrier stops it. Two kernels meet through a
 * handshake in global memory (tests/kernels/capi_handshake.c): the first kernel's part after
 * sk_set_next_task_start pings and waits for an answer that only the second kernel's part
 * before (or right after) sk_wait_pre_task_end gives. Overlap completes the handshake; under
 * early-start=0 or debug-sync-all=1 it must not happen, and the second kernel finds the first
 * one ended. The spins inside the kernels are bounded: a broken overlap fails, never hangs. The
 * profile of the same launches tells the same story with timestamps of one clock. */
#include "test_util.h"

/* hs[] slots, as the kernels use them */
enum { PING, PONG, FIRST_SAW_PONG, SECOND_SAW_PING, FIRST_ENDED, SECOND_SAW_FIRST_ENDED, HS_WORDS = 8 };

/* Long enough never to be reached when overlap works; the test fails, not hangs, otherwise. */
#define OVERLAP_TIMEOUT_MS 5000u
/* Without overlap the first kernel waits this long for an answer that cannot come. */
#define BARRIER_TIMEOUT_MS 30u

static const char *const variants[] = {TEST_VARIANT, "gcc-O0-pic", "clang-O2-nopic", "clang-O0-pie"};

struct run {
  uint32_t hs[HS_WORDS];
  sk_profile_record first_core0, second_last; /* first kernel's block 0, second's last block */
  char explain[8192];
};

/* One launch of [first, second] (2 blocks each on 2 cores) with `options` (profiling=1 added). */
static void run_pair(const char *variant, const char *options, uint32_t timeout_ms, uint32_t after_wait,
                     struct run *out) {
  sk_device *dev = open_device("host:cores=2");
  sk_module *mod = load_kernels(dev, variant, "capi_handshake");
  sk_kernel *first = get_kernel(mod, "capi_hs_first"), *second = get_kernel(mod, "capi_hs_second");
  uint32_t *hs = (uint32_t *)mem_alloc(dev, HS_WORDS * sizeof(uint32_t));
  void *a1[2], *a2[3];
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  sk_profile_record rec[4];
  size_t count = 0, i;
  char opts[256];
  snprintf(opts, sizeof opts, "profiling=1%s%s", options ? ":" : "", options ? options : "");
  memset(hs, 0, HS_WORDS * sizeof(uint32_t));
  a1[0] = &hs, a1[1] = &timeout_ms;
  a2[0] = &hs, a2[1] = &timeout_ms, a2[2] = &after_wait;
  SK_CHECK(sk_scope_begin(dev, "handshake", opts, &scope));
  SK_CHECK(sk_add_kernel(scope, first, 2, a1, NULL));
  SK_CHECK(sk_add_kernel(scope, second, 2, a2, NULL));
  SK_CHECK(sk_finalize(scope, &sk));
  SK_CHECK(sk_superkernel_explain(sk, out->explain, sizeof out->explain, NULL));
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
  memcpy(out->hs, hs, sizeof out->hs);
  rec[0].struct_size = sizeof rec[0];
  SK_CHECK(sk_superkernel_profile(sk, rec, 4, &count));
  assert_int_equal(count, 4);
  for (i = 0; i < count; ++i) {
    if (rec[i].step == 0 && rec[i].core == 0) out->first_core0 = rec[i];
    if (rec[i].step == 1 && rec[i].core == 1) out->second_last = rec[i];
  }
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, hs);
  sk_module_unload(mod);
  sk_device_close(dev);
}

static void expect_overlap(const char *variant, const char *options, uint32_t after_wait) {
  struct run r;
  run_pair(variant, options, OVERLAP_TIMEOUT_MS, after_wait, &r);
  if (!r.hs[FIRST_SAW_PONG] || !r.hs[SECOND_SAW_PING])
    fail_msg("%s, options '%s', after_wait %u: no handshake (first saw pong %u, second saw ping %u)", variant,
             options ? options : "", after_wait, r.hs[FIRST_SAW_PONG], r.hs[SECOND_SAW_PING]);
  /* The second kernel answered while the first was still running... */
  assert_int_equal(r.hs[SECOND_SAW_FIRST_ENDED], 0);
  /* ...and the clock agrees: the second kernel's last block started before the first's block 0 ended. */
  assert_true(r.second_last.start_ns <= r.first_core0.end_ns);
  assert_non_null(strstr(r.explain, "\"release_next\":\"sk_set_next_task_start\""));
  assert_non_null(strstr(r.explain, "\"wait_previous\":\"sk_wait_pre_task_end\""));
}

static void expect_ordered(const char *variant, const char *options, uint32_t after_wait) {
  struct run r;
  run_pair(variant, options, BARRIER_TIMEOUT_MS, after_wait, &r);
  /* The first kernel's tail waited in vain: nothing of the second kernel ran meanwhile. */
  if (r.hs[FIRST_SAW_PONG])
    fail_msg("%s, options '%s': the handshake happened across a full barrier", variant, options);
  /* The second kernel's head found the first one ended, and saw its ping (memory is ordered). */
  assert_int_equal(r.hs[SECOND_SAW_FIRST_ENDED], 1);
  assert_int_equal(r.hs[SECOND_SAW_PING], 1);
  assert_true(r.second_last.start_ns >= r.first_core0.end_ns);
  assert_null(strstr(r.explain, "\"release_next\":\"sk_set_next_task_start\""));
  assert_null(strstr(r.explain, "\"wait_previous\":\"sk_wait_pre_task_end\""));
}

static void test_overlap_runs_tail_and_head_together(void **state) {
  size_t v;
  (void)state;
  for (v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    expect_overlap(variants[v], NULL, 0);
    expect_overlap(variants[v], "early-start=1", 0);
    expect_overlap(variants[v], "debug-sync-all=0", 1);
  }
}

static void test_early_start_0_is_a_full_barrier(void **state) {
  (void)state;
  expect_ordered(TEST_VARIANT, "early-start=0", 0);
  expect_ordered(TEST_VARIANT, "early-start=0", 1);
  expect_ordered("clang-O0-pie", "early-start=0", 0);
}

static void test_debug_sync_all_is_a_full_barrier(void **state) {
  (void)state;
  expect_ordered(TEST_VARIANT, "debug-sync-all=1", 0);
  expect_ordered(TEST_VARIANT, "debug-sync-all=1", 1);
  expect_ordered("clang-O0-pie", "debug-sync-all=1:early-start=1", 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_overlap_runs_tail_and_head_together),
      cmocka_unit_test(test_early_start_0_is_a_full_barrier),
      cmocka_unit_test(test_debug_sync_all_is_a_full_barrier),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
