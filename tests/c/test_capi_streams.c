/* Public C API: stream fusion (scope option stream-fusion=1). Kernels of different scope streams
 * share the super kernel's cores and run at the same time, ordered only by scope events; without
 * the option a second stream is an error naming the kernel. And launches the host never waits
 * for still run to their end. */
#include <time.h>

#include "test_util.h"

#define N 4096u
/* Polls of a handshake before it gives up. A side that must meet the other gets LONG_WAIT
 * (seconds on a loaded machine; it returns as soon as the other side arrives); a side that must
 * not meet it gets SHORT_WAIT (tens of ms), which it always spends. */
#define LONG_WAIT 20000000u
#define SHORT_WAIT 300000u

struct fixture {
  sk_device *dev;
  sk_module *mod;
  sk_kernel *axpb, *handshake;
  uint32_t *a, *b, *c, *d, *flags, *met;
  uint32_t epoch;
};

static int setup(void **state) {
  struct fixture *f = (struct fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  f->dev = open_device("host:cores=2");
  f->mod = load_kernels(f->dev, TEST_VARIANT, "capi_streams");
  f->axpb = get_kernel(f->mod, "stream_axpb");
  f->handshake = get_kernel(f->mod, "stream_handshake");
  f->a = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->b = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->c = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->d = (uint32_t *)mem_alloc(f->dev, N * sizeof(uint32_t));
  f->flags = (uint32_t *)mem_alloc(f->dev, 2 * sizeof(uint32_t));
  f->met = (uint32_t *)mem_alloc(f->dev, 2 * sizeof(uint32_t));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = (struct fixture *)*state;
  uint32_t *bufs[] = {f->a, f->b, f->c, f->d, f->flags, f->met};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) sk_mem_free(f->dev, bufs[i]);
  sk_module_unload(f->mod);
  sk_device_close(f->dev);
  free(f);
  return 0;
}

static sk_kernel_options on_stream(uint32_t stream) {
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  o.stream = stream;
  return o;
}

/* Side `mine` of the handshake, on block `mine` of 2 (so each side runs on its own core). */
static void add_handshake(struct fixture *f, sk_scope *scope, uint32_t mine, uint32_t stream, uint32_t spins) {
  uint32_t theirs = 1 - mine;
  void *args[] = {&f->flags, &f->met, &mine, &theirs, &f->epoch, &spins};
  sk_kernel_options o = on_stream(stream);
  SK_CHECK(sk_add_kernel(scope, f->handshake, 2, args, &o));
}

/* Runs a two-sided handshake super kernel once; met[i]: side i saw the other side. */
static void run_handshake(struct fixture *f, sk_superkernel *sk) {
  ++f->epoch;
  SK_CHECK(sk_superkernel_set_arg(sk, 0, 4, &f->epoch));
  SK_CHECK(sk_superkernel_set_arg(sk, 1, 4, &f->epoch));
  f->met[0] = f->met[1] = 7;
  SK_CHECK(sk_launch(sk, NULL));
  SK_CHECK(sk_stream_synchronize(NULL));
}

/* Two kernels on different streams, no event between them: they run at the same time (a
 * handshake that needs both alive completes on both sides). On one stream, the second waits for
 * the first: the first side's handshake gives up. */
static void test_streams_overlap_only_with_stream_fusion(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *fused = NULL, *serial = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "two-streams", "stream-fusion=1", &scope));
  add_handshake(f, scope, 0, 0, LONG_WAIT);
  add_handshake(f, scope, 1, 1, LONG_WAIT);
  SK_CHECK(sk_finalize(scope, &fused));
  SK_EXPECT_EXPLAIN(fused, "\"stream_fusion\":true");
  for (int launch = 0; launch < 5; ++launch) {
    run_handshake(f, fused);
    assert_int_equal(f->met[0], 1);
    assert_int_equal(f->met[1], 1);
  }
  SK_CHECK(sk_scope_begin(f->dev, "one-stream", "stream-fusion=1", &scope));
  add_handshake(f, scope, 0, 0, SHORT_WAIT);
  add_handshake(f, scope, 1, 0, LONG_WAIT);
  SK_CHECK(sk_finalize(scope, &serial));
  SK_EXPECT_EXPLAIN(serial, "\"stream_fusion\":false");
  run_handshake(f, serial);
  assert_int_equal(f->met[0], 0);
  assert_int_equal(f->met[1], 1);
  sk_superkernel_destroy(fused);
  sk_superkernel_destroy(serial);
}

/* An event orders kernels of two streams: the waiting kernel starts after the recorded one
 * ended (its handshake partner gave up first), and a consumer reads what a producer on another
 * stream wrote. */
static void test_events_order_streams(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  sk_superkernel *sk = NULL;
  SK_CHECK(sk_scope_begin(f->dev, "events", "stream-fusion=1", &scope));
  add_handshake(f, scope, 0, 0, SHORT_WAIT);
  SK_CHECK(sk_scope_record_event(scope, 0, 42));
  SK_CHECK(sk_scope_wait_event(scope, 1, 42));
  add_handshake(f, scope, 1, 1, LONG_WAIT);
  SK_CHECK(sk_finalize(scope, &sk));
  SK_EXPECT_EXPLAIN(sk, "\"waits_for_steps\":[0]");
  run_handshake(f, sk);
  assert_int_equal(f->met[0], 0);
  assert_int_equal(f->met[1], 1);
  sk_superkernel_destroy(sk);

  /* Producer/consumer: b = a*2+1 on stream 0; on stream 1 an independent d = c*5+0, then after
   * the event c = b*3+2. Compared with the same kernels launched one by one. */
  uint32_t n = N, two = 2, one = 1, three = 3, five = 5, zero = 0;
  void *produce[] = {&f->a, &f->b, &n, &two, &one};
  void *independent[] = {&f->c, &f->d, &n, &five, &zero};
  void *consume[] = {&f->b, &f->c, &n, &three, &two};
  sk_kernel_options s0 = on_stream(0), s1 = on_stream(1);
  SK_CHECK(sk_scope_begin(f->dev, "produce-consume", "stream-fusion=1", &scope));
  SK_CHECK(sk_add_kernel(scope, f->axpb, 2, produce, &s0));
  SK_CHECK(sk_scope_record_event(scope, 0, 1));
  SK_CHECK(sk_add_kernel(scope, f->axpb, 2, independent, &s1));
  SK_CHECK(sk_scope_wait_event(scope, 1, 1));
  SK_CHECK(sk_add_kernel(scope, f->axpb, 2, consume, &s1));
  SK_CHECK(sk_finalize(scope, &sk));
  uint32_t *want_c = (uint32_t *)malloc(N * sizeof(uint32_t)), *want_d = (uint32_t *)malloc(N * sizeof(uint32_t));
  assert_non_null(want_c);
  assert_non_null(want_d);
  for (uint32_t launch = 0; launch < 30; ++launch) {
    for (uint32_t i = 0; i < N; ++i) f->a[i] = i * (launch + 1), f->c[i] = i + launch;
    /* Unfused, in order, on a copy of the state. */
    SK_CHECK(sk_launch_kernel(f->axpb, 2, produce, NULL));
    SK_CHECK(sk_launch_kernel(f->axpb, 2, independent, NULL));
    SK_CHECK(sk_launch_kernel(f->axpb, 2, consume, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    memcpy(want_c, f->c, N * sizeof(uint32_t));
    memcpy(want_d, f->d, N * sizeof(uint32_t));
    for (uint32_t i = 0; i < N; ++i) f->c[i] = i + launch;
    memset(f->b, 0, N * sizeof(uint32_t));
    memset(f->d, 0, N * sizeof(uint32_t));
    SK_CHECK(sk_launch(sk, NULL));
    SK_CHECK(sk_stream_synchronize(NULL));
    assert_memory_equal(f->c, want_c, N * sizeof(uint32_t));
    assert_memory_equal(f->d, want_d, N * sizeof(uint32_t));
  }
  free(want_c);
  free(want_d);
  sk_superkernel_destroy(sk);
}

/* Waits (up to 5 s, without synchronizing) until out[i] == in[i] * mul + add for every i. */
static int poll_axpb(const uint32_t *in, const uint32_t *out, uint32_t mul, uint32_t add) {
  struct timespec start, now, pause = {0, 100000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    uint32_t i = 0;
    while (i < N && __atomic_load_n(&out[i], __ATOMIC_ACQUIRE) == in[i] * mul + add) ++i;
    if (i == N) return 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= 5) return 0;
    nanosleep(&pause, NULL);
  }
}

/* A launch the host never waits for still runs to its end, every block of it: the host polls
 * the output instead of synchronizing. Unfused launches and a one-kernel super kernel, at
 * block dims up to more than the cores, on 1 to 3 cores. (A one-step launch on 2 cores used to
 * leave core 0's blocks unrun until the host synchronized.) */
static void test_launches_finish_without_synchronize(void **state) {
  static const char *const specs[] = {"host:cores=1", "host:cores=2", "host:cores=3"};
  uint32_t n = N, mul = 3, add, i;
  size_t d;
  (void)state;
  for (d = 0; d < sizeof specs / sizeof specs[0]; ++d) {
    sk_device *dev = open_device(specs[d]);
    sk_module *mod = load_kernels(dev, TEST_VARIANT, "capi_streams");
    sk_kernel *axpb = get_kernel(mod, "stream_axpb");
    uint32_t *in = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
    uint32_t *out = (uint32_t *)mem_alloc(dev, N * sizeof(uint32_t));
    void *args[] = {&in, &out, &n, &mul, &add};
    sk_scope *scope = NULL;
    sk_superkernel *sk = NULL;
    for (i = 0; i < N; ++i) in[i] = i * 2654435761u;
    SK_CHECK(sk_scope_begin(dev, "one-kernel", NULL, &scope));
    add = 0;
    SK_CHECK(sk_add_kernel(scope, axpb, 2, args, NULL));
    SK_CHECK(sk_finalize(scope, &sk));
    for (add = 1; add <= 12; ++add) {
      if (add % 3 == 0) {
        SK_CHECK(sk_superkernel_set_arg(sk, 0, 4, &add));
        SK_CHECK(sk_launch(sk, NULL));
      } else {
        SK_CHECK(sk_launch_kernel(axpb, add % 3 == 1 ? 2 : 5, args, NULL));
      }
      if (!poll_axpb(in, out, mul, add))
        fail_msg("%s: launch %u did not finish in 5 s without a synchronize", specs[d], add);
    }
    SK_CHECK(sk_stream_synchronize(NULL));
    sk_superkernel_destroy(sk);
    sk_mem_free(dev, in);
    sk_mem_free(dev, out);
    sk_module_unload(mod);
    sk_device_close(dev);
  }
}

/* sk_device_synchronize waits for its own device's default stream only: device B runs a kernel
 * that waits for this thread, device A's launch is synchronized meanwhile (with
 * sk_stream_synchronize(NULL) that wait would never end). */
static void test_device_synchronize_leaves_other_devices_alone(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_device *other = open_device("host:cores=1");
  sk_module *mod = load_kernels(other, TEST_VARIANT, "capi_streams");
  sk_kernel *handshake = get_kernel(mod, "stream_handshake");
  volatile uint32_t *flags = (volatile uint32_t *)mem_alloc(other, 2 * sizeof(uint32_t));
  uint32_t *met = (uint32_t *)mem_alloc(other, 2 * sizeof(uint32_t));
  uint32_t mine = 0, theirs = 1, epoch = 77, spins = 2000000000u, n = N, mul = 5, add = 9, i;
  void *wait_args[] = {&flags, &met, &mine, &theirs, &epoch, &spins};
  void *axpb_args[] = {&f->a, &f->b, &n, &mul, &add};
  flags[0] = flags[1] = 0;
  met[0] = 0;
  for (i = 0; i < N; ++i) f->a[i] = i * 2654435761u;
  /* Block 0 on the other device waits until flags[1] says `epoch`: until this thread writes it. */
  SK_CHECK(sk_launch_kernel(handshake, 1, wait_args, NULL));
  while (__atomic_load_n(&flags[0], __ATOMIC_SEQ_CST) != epoch) {
  }
  SK_CHECK(sk_launch_kernel(f->axpb, 2, axpb_args, NULL));
  SK_CHECK(sk_device_synchronize(f->dev));
  for (i = 0; i < N; ++i) assert_int_equal(f->b[i], f->a[i] * mul + add);
  assert_int_equal(__atomic_load_n(&met[0], __ATOMIC_SEQ_CST), 0); /* still waiting */
  __atomic_store_n(&flags[1], epoch, __ATOMIC_SEQ_CST);
  SK_CHECK(sk_device_synchronize(other));
  assert_int_equal(met[0], 1);
  SK_EXPECT_ERR(sk_device_synchronize(NULL), SK_ERR_INVALID_ARGUMENT, "device");
  sk_mem_free(other, met);
  sk_mem_free(other, (void *)flags);
  sk_module_unload(mod);
  sk_device_close(other);
}

/* Streams and events are errors that name the kernel, the event or the option. */
static void test_stream_errors(void **state) {
  struct fixture *f = (struct fixture *)*state;
  sk_scope *scope = NULL;
  uint32_t n = N, two = 2, one = 1;
  void *args[] = {&f->a, &f->b, &n, &two, &one};
  sk_kernel_options s1 = on_stream(1), far = on_stream(64);
  sk_kernel_options named = on_stream(1);
  named.name = "second-stream-kernel";
  SK_CHECK(sk_scope_begin(f->dev, "no-fusion", NULL, &scope));
  SK_EXPECT_ERR(sk_add_kernel(scope, f->axpb, 2, args, &named), SK_ERR_INVALID_ARGUMENT,
                "kernel 'second-stream-kernel' is on stream 1");
  SK_EXPECT_MSG("stream-fusion=1");
  SK_EXPECT_ERR(sk_scope_record_event(scope, 0, 3), SK_ERR_INVALID_ARGUMENT, "event 3");
  SK_EXPECT_MSG("stream-fusion=1");
  sk_scope_abort(scope);

  SK_CHECK(sk_scope_begin(f->dev, "fusion", "stream-fusion=1", &scope));
  SK_EXPECT_ERR(sk_add_kernel(scope, f->axpb, 2, args, &far), SK_ERR_INVALID_ARGUMENT, "stream 64 is out of range");
  SK_CHECK(sk_add_kernel(scope, f->axpb, 2, args, &s1));
  SK_EXPECT_ERR(sk_scope_wait_event(scope, 0, 9), SK_ERR_INVALID_ARGUMENT, "event 9 was not recorded");
  SK_CHECK(sk_scope_record_event(scope, 1, 9));
  SK_EXPECT_ERR(sk_scope_record_event(scope, 0, 9), SK_ERR_INVALID_ARGUMENT, "event 9 is already recorded");
  SK_EXPECT_ERR(sk_scope_record_event(NULL, 0, 1), SK_ERR_INVALID_ARGUMENT, "sk_scope_record_event");
  sk_scope_abort(scope);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_streams_overlap_only_with_stream_fusion),
      cmocka_unit_test(test_events_order_streams),
      cmocka_unit_test(test_stream_errors),
      cmocka_unit_test(test_launches_finish_without_synchronize),
      cmocka_unit_test(test_device_synchronize_leaves_other_devices_alone),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
