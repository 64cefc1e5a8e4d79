// Issue 6's rule for the launch path, checked on the built libsk: once a super kernel or an
// unfused kernel has been launched a few times, launching it again and waiting for it makes no
// heap call and takes no lock, on any core. Each super kernel below takes another of the step
// loop's paths (direct, register-map and libffi calls; task overlap; sk_sync_all; profiling;
// stream fusion with events; cache maintenance; mixed cores with hard sync; arguments read by
// reference and aggregates).
#include <gtest/gtest.h>
#include <sk.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "../sk_assert.hpp"
#include "call_counter.hpp"

namespace sk::test {
namespace {

constexpr uint32_t kN = 96;  // divisible by every block count used
constexpr int kWarmLaunches = 20, kLaunches = 200;

std::string kernel_path(const char *name) { return std::string(SK_TEST_KERNEL_DIR) + "/gcc-O2-pic/" + name + ".o"; }

::testing::AssertionResult NoHeapOrLockCalls(const CallCounts &c) {
  if (c.allocations == 0 && c.frees == 0 && c.locks == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.allocations << " allocations, " << c.frees << " frees, " << c.locks
                                       << " locks";
}

// Arguments of chain_ops' wide_mixed (a register-map call with stack words) and too_wide
// (17 doubles: libffi), writing to `out`.
struct WideArgs {
  void *out;
  float f = 1.5f;
  double d = 2.25;
  int8_t i8 = -3;
  uint16_t u16 = 7;
  int32_t i32 = -9;
  uint64_t u64 = 11;
  int64_t i64 = -13;
  uint8_t u8 = 200;
  void *wide_mixed[20] = {&out, &f, &i8, &d, &u16, &f, &i32, &d, &u64, &f,
                          &d,   &f, &d,  &f, &d,   &f, &i64, &d, &u8,  &f};
  void *too_wide[18] = {&out};
  explicit WideArgs(void *o) : out(o) {
    for (int k = 1; k < 18; ++k) too_wide[k] = &d;
  }
  WideArgs(const WideArgs &) = delete;  // the arrays point into this object
};

struct LaunchPath : ::testing::Test {
  sk_device *dev = nullptr;
  std::vector<sk_module *> modules;
  std::vector<void *> buffers;
  sk_stream *stream = nullptr;

  void open(const char *spec) {
    ASSERT_SK(sk_device_open(spec, &dev));
    ASSERT_SK(sk_stream_create(dev, &stream));
  }
  void TearDown() override {
    sk_stream_destroy(stream);
    for (void *b : buffers) sk_mem_free(dev, b);
    for (sk_module *m : modules) sk_module_unload(m);
    sk_device_close(dev);
  }
  sk_kernel *kernel(const char *object, const char *name) {
    sk_module *m = nullptr;
    sk_kernel *k = nullptr;
    EXPECT_EQ(sk_module_load_file(dev, kernel_path(object).c_str(), &m), SK_OK) << sk_last_error();
    if (m) modules.push_back(m);
    EXPECT_EQ(m ? sk_module_get_kernel(m, name, &k) : SK_ERR_NOT_FOUND, SK_OK) << name << ": " << sk_last_error();
    return k;
  }
  void *buffer() {  // kN 64-bit words, zeroed
    void *p = nullptr;
    EXPECT_EQ(sk_mem_alloc(dev, kN * sizeof(uint64_t), &p), SK_OK) << sk_last_error();
    std::vector<uint64_t> zero(kN, 0);
    if (p) EXPECT_EQ(sk_memcpy(dev, p, zero.data(), kN * sizeof(uint64_t)), SK_OK);
    buffers.push_back(p);
    return p;
  }

  // Unfused launches build the programs they reuse later, as many as are queued at once. A
  // warm-up burst queued behind a gate (capi_hs_first on one block: it waits for hs[1]) has
  // all its launches queued at once, so that no later burst of as many needs a new program,
  // however the cores' timing goes (under qemu, a burst that ran while it was queued built
  // fewer). Only for bursts that fit the executor's ring of 256 tasks with the gate (a launch
  // that finds the ring full runs core 0, the gate) and launches that never wait for the device
  // themselves.
  bool gate_warm_up = false;
  int launches = kLaunches;  // per burst

  // `launch` warmed up (kWarmLaunches launches, each waited for, and a burst of `launches`
  // queued ones), then counted over `launches` launches each waited for, and over a burst of
  // `launches` queued launches and one wait.
  void expect_quiet(const std::function<sk_status()> &launch) {
    for (int i = 0; i < kWarmLaunches; ++i) {
      ASSERT_SK(launch());
      ASSERT_SK(sk_stream_synchronize(stream));
    }
    uint32_t *hs = nullptr;
    if (gate_warm_up) {
      sk_kernel *gate = kernel("capi_handshake", "capi_hs_first");
      hs = static_cast<uint32_t *>(buffer());
      uint32_t timeout_ms = 60000;
      void *gate_args[] = {&hs, &timeout_ms};
      ASSERT_SK(sk_launch_kernel(gate, 1, gate_args, stream));
    }
    for (int i = 0; i < launches; ++i) ASSERT_SK(launch());
    if (hs) __atomic_store_n(&hs[1], 1u, __ATOMIC_RELEASE);
    ASSERT_SK(sk_stream_synchronize(stream));
    if (hs) EXPECT_EQ(hs[2], 1u) << "the gate timed out: the burst filled the ring";
    sk_status st = SK_OK;
    CallCounter::start();
    for (int i = 0; i < launches && st == SK_OK; ++i) {
      st = launch();
      if (st == SK_OK) st = sk_stream_synchronize(stream);
    }
    CallCounts waited = CallCounter::stop();
    ASSERT_SK(st);
    EXPECT_TRUE(NoHeapOrLockCalls(waited)) << "in " << launches << " launches, each waited for";

    CallCounter::start();
    for (int i = 0; i < launches && st == SK_OK; ++i) st = launch();
    if (st == SK_OK) st = sk_stream_synchronize(stream);
    CallCounts queued = CallCounter::stop();
    ASSERT_SK(st);
    EXPECT_TRUE(NoHeapOrLockCalls(queued)) << "in " << launches << " queued launches and one wait";
  }
  void expect_quiet(sk_superkernel *sk) {
    ASSERT_NE(sk, nullptr);
    expect_quiet([this, sk] { return sk_launch(sk, stream); });
    sk_superkernel_destroy(sk);
  }
  sk_superkernel *finalize(sk_scope *scope) {
    sk_superkernel *sk = nullptr;
    EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    return sk;
  }

  // capi_chain's fill and axpb (direct calls), on one buffer; other tests' arguments use n and
  // seed too.
  sk_kernel *fill = nullptr, *axpb = nullptr;
  void *buf = nullptr;
  uint32_t n = kN, seed = 5;
  int32_t a = 3, b = 1;
  void *fill_args[3] = {&buf, &n, &seed}, *axpb_args[4] = {&buf, &n, &a, &b};
  // Opens the device `spec`, and loads those kernels and their buffer.
  void open_with_chain(const char *spec) {
    open(spec);
    fill = kernel("capi_chain", "capi_fill");
    axpb = kernel("capi_chain", "capi_axpb");
    buf = buffer();
  }
  // Begins scope `name`: capi_fill on `fill_dim` blocks, then capi_axpb on each of `axpb_dims`.
  sk_scope *chain_scope(const char *name, const char *options, uint32_t fill_dim,
                        std::initializer_list<uint32_t> axpb_dims) {
    sk_scope *scope = nullptr;
    EXPECT_EQ(sk_scope_begin(dev, name, options, &scope), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_add_kernel(scope, fill, fill_dim, fill_args, nullptr), SK_OK) << sk_last_error();
    for (uint32_t dim : axpb_dims)
      EXPECT_EQ(sk_add_kernel(scope, axpb, dim, axpb_args, nullptr), SK_OK) << sk_last_error();
    return scope;
  }
};

// The counter itself: a stretch that allocates and locks is seen to.
TEST(CallCounter, SeesHeapAndLockCalls) {
  CallCounter::start();
  std::string *s = new std::string(100, 'x');
  delete s;
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&m);
  pthread_mutex_unlock(&m);
  CallCounts c = CallCounter::stop();
  EXPECT_GE(c.allocations, 2u);  // the string object and its characters
  EXPECT_GE(c.frees, 2u);
  EXPECT_EQ(c.locks, 1u);
  EXPECT_FALSE(NoHeapOrLockCalls(c));
}

TEST_F(LaunchPath, ChainOfDirectRegisterMapAndLibffiCalls) {
  open_with_chain("host:cores=2");
  sk_scope *scope = chain_scope("calls", "", 2, {2, 2, 2, 2});
  ASSERT_NE(scope, nullptr);
  sk_kernel *wide = kernel("chain_ops", "wide_mixed"), *too_wide = kernel("chain_ops", "too_wide");
  WideArgs w(buffer());
  ASSERT_SK(sk_add_kernel(scope, wide, 2, w.wide_mixed, nullptr));
  ASSERT_SK(sk_add_kernel(scope, too_wide, 2, w.too_wide, nullptr));
  expect_quiet(finalize(scope));
}

TEST_F(LaunchPath, TaskOverlapAndSyncAll) {
  open("host:cores=2");
  sk_kernel *produce = kernel("capi_overlap", "capi_ov_produce"),
            *consume = kernel("capi_overlap", "capi_ov_consume");
  sk_kernel *sum = kernel("capi_sync", "capi_sync_sum");
  void *produced = buffer(), *side = buffer(), *pre = buffer(), *out = buffer(), *partials = buffer();
  void *produce_args[] = {&produced, &side, &n, &seed}, *consume_args[] = {&produced, &pre, &out, &n};
  void *sum_args[] = {&out, &partials, &side, &n};
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev, "overlap", "", &scope));
  for (int i = 0; i < 3; ++i) {
    ASSERT_SK(sk_add_kernel(scope, produce, 2, produce_args, nullptr));
    ASSERT_SK(sk_add_kernel(scope, consume, 2, consume_args, nullptr));
    ASSERT_SK(sk_add_kernel(scope, sum, 2, sum_args, nullptr));
  }
  expect_quiet(finalize(scope));
}

TEST_F(LaunchPath, ProfiledLaunches) {
  // Core 1 passes the middle step.
  open_with_chain("host:cores=2");
  expect_quiet(finalize(chain_scope("profiled", "profiling=1", 2, {1, 2})));
}

TEST_F(LaunchPath, StreamFusionWithEventsAndCacheMaintenance) {
  open("host:cores=2");
  sk_kernel *stream_axpb = kernel("capi_streams", "stream_axpb");
  sk_kernel *write = kernel("capi_cache", "capi_gm_write"), *read = kernel("capi_cache", "capi_gm_read");
  void *x = buffer(), *y = buffer(), *z = buffer(), *wide = buffer(), *dst = buffer();
  uint32_t two = 2, one = 1;
  void *first[] = {&x, &y, &n, &two, &one}, *second[] = {&y, &z, &n, &two, &one};
  void *write_args[] = {&x, &wide, &n, &seed}, *read_args[] = {&x, &wide, &dst, &n};
  sk_kernel_options s0 = SK_KERNEL_OPTIONS_INIT, s1 = SK_KERNEL_OPTIONS_INIT;
  s1.stream = 1;
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev, "streams", "stream-fusion=1:dcci-before-kernel-start=capi_gm_read", &scope));
  ASSERT_SK(sk_add_kernel(scope, write, 2, write_args, &s0));
  ASSERT_SK(sk_add_kernel(scope, read, 2, read_args, &s0));
  ASSERT_SK(sk_scope_record_event(scope, 0, 1));
  ASSERT_SK(sk_add_kernel(scope, stream_axpb, 1, first, &s1));
  ASSERT_SK(sk_scope_wait_event(scope, 1, 1));
  ASSERT_SK(sk_add_kernel(scope, stream_axpb, 2, second, &s1));
  expect_quiet(finalize(scope));
}

TEST_F(LaunchPath, MixedCoresWithHardSync) {
  open("host:cores=6");
  sk_kernel *tile = kernel("capi_mixed", "mix_tile_scale"), *vector_tag = kernel("capi_mixed", "vector_tag");
  void *in = buffer(), *part = buffer(), *sums = buffer(), *out = buffer(), *tags = buffer();
  uint32_t tag = 4;
  void *tile_args[] = {&in, &part, &sums, &out, &n}, *tag_args[] = {&tags, &tag};
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev, "mixed", "", &scope));
  ASSERT_SK(sk_add_kernel(scope, tile, 3, tile_args, nullptr));
  ASSERT_SK(sk_add_kernel(scope, vector_tag, 3, tag_args, nullptr));
  ASSERT_SK(sk_add_kernel(scope, tile, 3, tile_args, nullptr));
  expect_quiet(finalize(scope));
}

TEST_F(LaunchPath, OneCoreDevice) {
  open_with_chain("host:cores=1");
  expect_quiet(finalize(chain_scope("one-core", "", 1, {1})));
}

// core0=thread: the host thread only waits (asleep) for core 0's thread, on 2 cores and on 1,
// and a rebind waits the same way.
TEST_F(LaunchPath, CoreZeroOnItsOwnThread) {
  open_with_chain("host:cores=2,core0=thread");
  expect_quiet(finalize(chain_scope("core0-thread", "", 2, {2, 1})));
  sk_superkernel *sk = finalize(chain_scope("core0-thread-rebind", "", 2, {}));
  ASSERT_NE(sk, nullptr);
  expect_quiet([this, sk] {
    ++seed;
    const sk_status st = sk_superkernel_set_arg(sk, 0, 2, &seed);
    return st != SK_OK ? st : sk_launch(sk, stream);
  });
  sk_superkernel_destroy(sk);
}

TEST_F(LaunchPath, OneCoreOnItsOwnThread) {
  open_with_chain("host:cores=1,core0=thread");
  expect_quiet(finalize(chain_scope("one-core-thread", "", 1, {1})));
}

// sk_launch_repeat: the runs and the barrier between them, on a chain with a stop flag nobody
// sets and with one already set (one run), and with profiling (the general step loop).
TEST_F(LaunchPath, RepeatedLaunches) {
  open_with_chain("host:cores=2");
  uint32_t *never = static_cast<uint32_t *>(buffer()), *set = never + 1;
  *never = 0, *set = 1;
  sk_superkernel *sk = finalize(chain_scope("repeat", "", 2, {2, 1}));
  ASSERT_NE(sk, nullptr);
  expect_quiet([this, sk, never] { return sk_launch_repeat(sk, 4, never, stream); });
  expect_quiet([this, sk, set] { return sk_launch_repeat(sk, 4, set, stream); });
  sk_superkernel_destroy(sk);
  sk = finalize(chain_scope("repeat-profiled", "profiling=1", 2, {2}));
  ASSERT_NE(sk, nullptr);
  expect_quiet([this, sk] { return sk_launch_repeat(sk, 3, nullptr, stream); });
  sk_superkernel_destroy(sk);
}

// sk_superkernel_set_arg between launches: it waits for the launches queued, then writes.
TEST_F(LaunchPath, RebindingAnArgumentBetweenLaunches) {
  open_with_chain("host:cores=2");
  sk_superkernel *sk = finalize(chain_scope("rebind", "", 2, {}));
  ASSERT_NE(sk, nullptr);
  expect_quiet([this, sk] {
    ++seed;
    const sk_status st = sk_superkernel_set_arg(sk, 0, 2, &seed);
    return st != SK_OK ? st : sk_launch(sk, stream);
  });
  sk_superkernel_destroy(sk);
}

// Arguments read by reference, through each call path (direct, register map, libffi), and
// aggregates passed by value through libffi, one of them rebound at every launch.
TEST_F(LaunchPath, ArgumentsReadByReferenceAndAggregates) {
  open("host:cores=2");
  sk_kernel *add = kernel("args_refs", "ref_add_at"), *scale = kernel("args_refs", "ref_scale_at"),
            *point = kernel("args_refs", "ref_point_at"), *i5 = kernel("args_aggregates", "agg_i5");
  void *out = buffer(), *in = buffer();
  uint32_t upos = 1, v = 2;
  int32_t pos = 3;
  float scale_by = 0.5f, xy[2] = {1.0f, 2.0f};
  int32_t five[5] = {1, 2, 3, 4, 5};
  void *add_args[] = {&out, &upos, &v}, *scale_args[] = {&out, &in, &pos, &scale_by},
       *point_args[] = {&out, &pos, xy}, *i5_args[] = {&out, five};
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev, "refs", "", &scope));
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  o.arg_refs = 1u << 1;
  ASSERT_SK(sk_add_kernel(scope, add, 2, add_args, &o));
  o.arg_refs = 1u << 2 | 1u << 3;
  ASSERT_SK(sk_add_kernel(scope, scale, 2, scale_args, &o));
  o.arg_refs = 1u << 1 | 1u << 2;
  ASSERT_SK(sk_add_kernel(scope, point, 2, point_args, &o));
  ASSERT_SK(sk_add_kernel(scope, i5, 1, i5_args, nullptr));
  sk_superkernel *sk = finalize(scope);
  ASSERT_NE(sk, nullptr);
  expect_quiet([this, sk, &pos, &five] {
    pos = (pos + 1) % 8;
    ++five[0];
    const sk_status st = sk_superkernel_set_arg(sk, 3, 1, five);
    return st != SK_OK ? st : sk_launch(sk, stream);
  });
  sk_superkernel_destroy(sk);
}

// Unfused launches reuse their kernel's programs (host/executor/program_pool.hpp), with one block_dim
// and with two taking turns.
TEST_F(LaunchPath, UnfusedLaunches) {
  open_with_chain("host:cores=2");
  gate_warm_up = true;
  sk_kernel *wide = kernel("chain_ops", "wide_mixed");
  WideArgs w(buffer());
  expect_quiet([&] { return sk_launch_kernel(axpb, 2, axpb_args, stream); });
  uint32_t turn = 0;
  launches = kLaunches / 2;  // two launches each
  expect_quiet([&] {
    const sk_status st = sk_launch_kernel(axpb, 1 + turn++ % 2, axpb_args, stream);
    return st != SK_OK ? st : sk_launch_kernel(wide, 2, w.wide_mixed, stream);
  });
}

}  // namespace
}  // namespace sk::test
