// The public API from several threads at once: launches of different super kernels on their own
// streams and the default stream (results checked against unfused launches), module loads of
// the same and of different bytes, and scope building. scripts/test also runs these under TSan.
#include <gtest/gtest.h>
#include <sk.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "linker_test_support.hpp"
#include "sk_assert.hpp"

namespace {

constexpr uint32_t kN = 512;
constexpr int kThreads = 4;

struct Device {
  sk_device *dev = nullptr;
  Device() { EXPECT_EQ(sk_device_open("host:cores=2", &dev), SK_OK) << sk_last_error(); }
  ~Device() { sk_device_close(dev); }
};

uint32_t *alloc(sk_device *dev) {
  void *p = nullptr;
  EXPECT_EQ(sk_mem_alloc(dev, kN * sizeof(uint32_t), &p), SK_OK) << sk_last_error();
  return static_cast<uint32_t *>(p);
}

struct Chain {
  sk_kernel *fill, *axpb, *rotate;
};

Chain chain_kernels(sk_module *mod) {
  Chain c{};
  EXPECT_EQ(sk_module_get_kernel(mod, "capi_fill", &c.fill), SK_OK);
  EXPECT_EQ(sk_module_get_kernel(mod, "capi_axpb", &c.axpb), SK_OK);
  EXPECT_EQ(sk_module_get_kernel(mod, "capi_rotate", &c.rotate), SK_OK);
  return c;
}

// Thread t's sequence: a = fill(seed); a = a*(t+2)+t; b = rotate(a); b = b*3+1. Every launch
// writes the same values (idempotent), so any number of launches leaves a known result.
struct Sequence {
  uint32_t *a, *b;
  uint32_t n = kN, seed;
  int32_t mul, add, three = 3, one = 1;
  void *fill_args[3], *axpb_a[4], *rot_args[3], *axpb_b[4];
  Sequence(uint32_t *a_, uint32_t *b_, int t) : a(a_), b(b_), seed(1000u + t), mul(t + 2), add(t) {
    fill_args[0] = axpb_a[0] = rot_args[1] = &a;
    rot_args[0] = axpb_b[0] = &b;
    fill_args[1] = axpb_a[1] = rot_args[2] = axpb_b[1] = &n;
    fill_args[2] = &seed;
    axpb_a[2] = &mul;
    axpb_a[3] = &add;
    axpb_b[2] = &three;
    axpb_b[3] = &one;
  }
};

void run_unfused(const Chain &c, Sequence &s, sk_stream *stream) {
  ASSERT_SK(sk_launch_kernel(c.fill, 2, s.fill_args, stream));
  ASSERT_SK(sk_launch_kernel(c.axpb, 3, s.axpb_a, stream));
  ASSERT_SK(sk_launch_kernel(c.rotate, 2, s.rot_args, stream));
  ASSERT_SK(sk_launch_kernel(c.axpb, 1, s.axpb_b, stream));
  ASSERT_SK(sk_stream_synchronize(stream));
}

sk_superkernel *build_fused(sk_device *dev, const Chain &c, Sequence &s) {
  sk_scope *scope = nullptr;
  sk_superkernel *sk = nullptr;
  EXPECT_EQ(sk_scope_begin(dev, "concurrent", nullptr, &scope), SK_OK);
  EXPECT_EQ(sk_add_kernel(scope, c.fill, 2, s.fill_args, nullptr), SK_OK);
  EXPECT_EQ(sk_add_kernel(scope, c.axpb, 3, s.axpb_a, nullptr), SK_OK);
  EXPECT_EQ(sk_add_kernel(scope, c.rotate, 2, s.rot_args, nullptr), SK_OK);
  EXPECT_EQ(sk_add_kernel(scope, c.axpb, 1, s.axpb_b, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  return sk;
}

TEST(Concurrency, ThreadsLaunchDifferentSuperKernelsOnOwnAndDefaultStreams) {
  Device d;
  sk_module *mod = nullptr;
  ASSERT_SK(sk_module_load_file(d.dev, sk::test::kernel_path("gcc-O2-pie", "capi_chain").c_str(), &mod));
  const Chain c = chain_kernels(mod);
  constexpr int kIterations = 2000, kBatch = 16;
  std::atomic<int> launches{0};
  auto worker = [&](int t) {
    uint32_t *ref_a = alloc(d.dev), *ref_b = alloc(d.dev), *a = alloc(d.dev), *b = alloc(d.dev);
    sk_stream *own = nullptr;
    ASSERT_SK(sk_stream_create(d.dev, &own));
    Sequence ref(ref_a, ref_b, t), fused(a, b, t);
    run_unfused(c, ref, own);
    sk_superkernel *sk = build_fused(d.dev, c, fused);
    ASSERT_NE(sk, nullptr);
    for (int i = 0; i < kIterations; i += kBatch) {
      std::memset(b, 0, kN * sizeof(uint32_t));
      for (int j = 0; j < kBatch; ++j) {
        // Every third launch on the default stream, shared with the other threads.
        ASSERT_SK(sk_launch(sk, (i + j) % 3 == 0 ? nullptr : own));
        launches.fetch_add(1, std::memory_order_relaxed);
      }
      ASSERT_SK(sk_stream_synchronize(own));
      ASSERT_SK(sk_stream_synchronize(nullptr));
      ASSERT_EQ(std::memcmp(a, ref_a, kN * sizeof(uint32_t)), 0) << "thread " << t << " launch " << i;
      ASSERT_EQ(std::memcmp(b, ref_b, kN * sizeof(uint32_t)), 0) << "thread " << t << " launch " << i;
    }
    sk_superkernel_destroy(sk);
    sk_stream_destroy(own);
    for (uint32_t *p : {ref_a, ref_b, a, b}) sk_mem_free(d.dev, p);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto &th : threads) th.join();
  EXPECT_EQ(launches.load(), kThreads * kIterations);
  sk_module_unload(mod);
}

// sk_stream_synchronize(NULL) takes no lock while exactly one host device is open. Devices
// opened and closed under a thread that keeps calling it (so that 0, 1 and 2 are open in turn)
// must be neither used after they are closed nor skipped while they have work queued.
TEST(Concurrency, DefaultStreamSynchronizeWhileDevicesOpenAndClose) {
  const std::vector<uint8_t> bytes = sk::test::read_bytes(sk::test::kernel_path("gcc-O2-pie", "capi_chain"));
  std::atomic<bool> stop{false};
  std::atomic<long> syncs{0};
  std::thread syncer([&] {
    while (!stop.load()) {
      ASSERT_SK(sk_stream_synchronize(nullptr));
      syncs.fetch_add(1);
    }
  });
  auto churn = [&](int t) {
    for (int round = 0; round < 30; ++round) {
      sk_device *dev = nullptr;
      ASSERT_SK(sk_device_open("host:cores=2", &dev));
      sk_module *mod = nullptr;
      sk_kernel *fill = nullptr, *axpb = nullptr;
      ASSERT_SK(sk_module_load(dev, bytes.data(), bytes.size(), &mod));
      ASSERT_SK(sk_module_get_kernel(mod, "capi_fill", &fill));
      ASSERT_SK(sk_module_get_kernel(mod, "capi_axpb", &axpb));
      uint32_t *buf = alloc(dev);
      uint32_t n = kN, seed = 97u * t + round;
      int32_t mul = 1, add = 1;
      void *fill_args[] = {&buf, &n, &seed};
      void *axpb_args[] = {&buf, &n, &mul, &add};
      ASSERT_SK(sk_launch_kernel(fill, 2, fill_args, nullptr));
      for (int i = 0; i < 8; ++i) ASSERT_SK(sk_launch_kernel(axpb, 2, axpb_args, nullptr));
      ASSERT_SK(sk_stream_synchronize(nullptr));
      for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(buf[i], i * 2654435761u + seed + 8) << "thread " << t;
      sk_mem_free(dev, buf);
      sk_module_unload(mod);
      sk_device_close(dev);
    }
  };
  std::thread a(churn, 0), b(churn, 1);
  a.join();
  b.join();
  stop.store(true);
  syncer.join();
  EXPECT_GT(syncs.load(), 0);
}

TEST(Concurrency, ModuleLoadsOfSameAndDifferentBytesFromManyThreads) {
  Device d;
  const std::vector<std::string> variants = sk::test::kernel_variants();
  const std::vector<uint8_t> same = sk::test::read_bytes(sk::test::kernel_path("gcc-O2-pie", "capi_chain"));
  auto worker = [&](int t) {
    uint32_t *buf = alloc(d.dev);
    sk_stream *stream = nullptr;
    ASSERT_SK(sk_stream_create(d.dev, &stream));
    for (int round = 0; round < 12; ++round) {
      // Alternately the bytes every thread loads, and a variant of this thread's own.
      std::vector<uint8_t> own;
      if (round % 2)
        own = sk::test::read_bytes(sk::test::kernel_path(variants[(t * 5 + round) % variants.size()], "capi_chain"));
      const std::vector<uint8_t> &bytes = round % 2 ? own : same;
      sk_module *mod = nullptr;
      ASSERT_SK(sk_module_load(d.dev, bytes.data(), bytes.size(), &mod));
      sk_kernel *fill = nullptr;
      ASSERT_SK(sk_module_get_kernel(mod, "capi_fill", &fill));
      uint32_t n = kN, seed = 31u * t + round;
      void *args[] = {&buf, &n, &seed};
      ASSERT_SK(sk_launch_kernel(fill, 1 + round % 4, args, stream));
      sk_module_unload(mod);  // the queued launch holds the kernel
      ASSERT_SK(sk_stream_synchronize(stream));
      for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(buf[i], i * 2654435761u + seed) << "thread " << t;
    }
    sk_stream_destroy(stream);
    sk_mem_free(d.dev, buf);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto &th : threads) th.join();
}

TEST(Concurrency, ScopesBuiltFromManyThreads) {
  Device d;
  sk_module *mod = nullptr;
  ASSERT_SK(sk_module_load_file(d.dev, sk::test::kernel_path("clang-O2-pic", "capi_chain").c_str(), &mod));
  const Chain c = chain_kernels(mod);
  auto worker = [&](int t) {
    uint32_t *buf = alloc(d.dev);
    sk_stream *stream = nullptr;
    ASSERT_SK(sk_stream_create(d.dev, &stream));
    for (int round = 0; round < 8; ++round) {
      uint32_t n = kN, seed = 7u * t + round;
      int32_t mul = 1, add = t + 1;
      void *fill_args[] = {&buf, &n, &seed};
      void *axpb_args[] = {&buf, &n, &mul, &add};
      constexpr int kKernels = 64;
      sk_scope *scope = nullptr;
      ASSERT_SK(sk_scope_begin(d.dev, ("t" + std::to_string(t)).c_str(), "early-start=1", &scope));
      ASSERT_SK(sk_add_kernel(scope, c.fill, 2, fill_args, nullptr));
      for (int k = 1; k < kKernels; ++k) ASSERT_SK(sk_add_kernel(scope, c.axpb, 1 + k % 3, axpb_args, nullptr));
      sk_superkernel *sk = nullptr;
      ASSERT_SK(sk_finalize(scope, &sk));
      ASSERT_SK(sk_launch(sk, stream));
      ASSERT_SK(sk_stream_synchronize(stream));
      for (uint32_t i = 0; i < kN; ++i)
        ASSERT_EQ(buf[i], i * 2654435761u + seed + (kKernels - 1) * uint32_t(t + 1)) << "thread " << t;
      sk_superkernel_destroy(sk);
    }
    sk_stream_destroy(stream);
    sk_mem_free(d.dev, buf);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto &th : threads) th.join();
  sk_module_unload(mod);
}

// sk_superkernel_destroy frees a super kernel's program once its launches have completed. The
// thread that completes a launch must be done with the program by then: it read the program
// once more after publishing the completion (whether to give it back to a pool), a read of
// freed memory that TSan found in sk_fuzz_api. Here the dedicated core-0 thread completes the
// launches while this thread destroys the super kernel: on 1 core every launch rings it, on 2
// cores with spin_us=1 core 1 calls it almost at once. Under TSan a read after the completion
// is a race with the destroy's delete.
TEST(Concurrency, ASuperKernelDestroyedAfterItsLaunchIsNotReadOnceItsLaunchCompleted) {
  for (const char *spec : {"host:cores=1", "host:cores=2,spin_us=1"}) {
    SCOPED_TRACE(spec);
    sk_device *dev = nullptr;
    ASSERT_SK(sk_device_open(spec, &dev));
    uint32_t cores = 0;
    ASSERT_SK(sk_device_cores(dev, &cores));
    sk_module *mod = nullptr;
    ASSERT_SK(sk_module_load_file(dev, sk::test::kernel_path("gcc-O2-pie", "capi_chain").c_str(), &mod));
    sk_kernel *fill = nullptr;
    ASSERT_SK(sk_module_get_kernel(mod, "capi_fill", &fill));
    uint32_t *buf = alloc(dev), n = kN, seed = 0;
    void *args[] = {&buf, &n, &seed};
    for (int i = 0; i < 200; ++i) {
      seed = 7u * i;
      sk_scope *scope = nullptr;
      sk_superkernel *sk = nullptr;
      ASSERT_SK(sk_scope_begin(dev, "destroyed", nullptr, &scope));
      ASSERT_SK(sk_add_kernel(scope, fill, cores, args, nullptr));
      ASSERT_SK(sk_finalize(scope, &sk));
      ASSERT_SK(sk_launch(sk, nullptr));
      // Every other launch: give the dedicated thread time to take it and complete it.
      if (i % 2) std::this_thread::sleep_for(std::chrono::microseconds(200));
      sk_superkernel_destroy(sk);
      for (uint32_t j = 0; j < kN; j += 97) ASSERT_EQ(buf[j], j * 2654435761u + seed) << "launch " << i;
    }
    sk_mem_free(dev, buf);
    sk_module_unload(mod);
    sk_device_close(dev);
  }
}

// sk_superkernel_set_arg racing sk_launch: every launch sees each argument's old value or its
// new one, whole, in all its blocks. One thread rebinds capi_fill's output between two buffers
// while this one gives every launch a seed of its own (a second writer of the same super
// kernel) and launches: each launch must have filled all of one buffer with its seed and none
// of the other. A launch torn by a rebind lands in both; under TSan the unordered write of the
// slot is a race with the cores' reads.
TEST(Concurrency, SetArgRacingLaunchesGivesEachLaunchTheOldOrTheNewValueWhole) {
  sk_device *dev = nullptr;
  ASSERT_SK(sk_device_open("host:cores=2", &dev));
  sk_module *mod = nullptr;
  ASSERT_SK(sk_module_load_file(dev, sk::test::kernel_path("gcc-O2-pie", "capi_chain").c_str(), &mod));
  sk_kernel *fill = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod, "capi_fill", &fill));
  uint32_t *bufs[2] = {alloc(dev), alloc(dev)};
  std::memset(bufs[0], 0, kN * sizeof(uint32_t));
  std::memset(bufs[1], 0, kN * sizeof(uint32_t));
  uint32_t *out = bufs[0], n = kN, seed = 0;
  void *args[] = {&out, &n, &seed};
  sk_scope *scope = nullptr;
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_scope_begin(dev, "rebound", nullptr, &scope));
  ASSERT_SK(sk_add_kernel(scope, fill, 8, args, nullptr));
  ASSERT_SK(sk_finalize(scope, &sk));
  sk_stream *stream = nullptr;
  ASSERT_SK(sk_stream_create(dev, &stream));

  std::atomic<bool> done{false};
  std::atomic<long> rebinds{0};
  struct Join {  // stops and joins the rebinder, even at a failed check
    std::atomic<bool> &done;
    std::thread thread;
    void stop() {
      done.store(true);
      if (thread.joinable()) thread.join();
    }
    ~Join() { stop(); }
  } rebinder{done, std::thread([&] {
               for (uint32_t i = 0; !done.load(std::memory_order_relaxed); ++i) {
                 uint32_t *target = bufs[i % 2];
                 ASSERT_SK(sk_superkernel_set_arg(sk, 0, 0, &target));
                 rebinds.fetch_add(1, std::memory_order_relaxed);
               }
             })};
  constexpr int kLaunches = 10000;
  for (int l = 1; l <= kLaunches; ++l) {
    const uint32_t s = 0x9E3779B9u * static_cast<uint32_t>(l);  // distinct for every launch
    ASSERT_SK(sk_superkernel_set_arg(sk, 0, 2, &s));
    ASSERT_SK(sk_launch(sk, stream));
    ASSERT_SK(sk_stream_synchronize(stream));
    const int hit = bufs[0][0] == s ? 0 : 1;  // element 0 is hash(0) + seed = seed
    uint32_t wrong = 0, strays = 0;
    for (uint32_t i = 0; i < kN; ++i) {
      wrong += bufs[hit][i] != i * 2654435761u + s;
      strays += bufs[1 - hit][i] == i * 2654435761u + s;
    }
    ASSERT_EQ(wrong, 0u) << "launch " << l << " left " << wrong << " of " << kN << " elements of buffer " << hit
                         << " unwritten with its seed";
    ASSERT_EQ(strays, 0u) << "launch " << l << " was torn: " << strays << " elements went to buffer " << 1 - hit;
  }
  rebinder.stop();
  EXPECT_GT(rebinds.load(), 0);
  sk_stream_destroy(stream);
  sk_superkernel_destroy(sk);
  for (uint32_t *b : bufs) sk_mem_free(dev, b);
  sk_module_unload(mod);
  sk_device_close(dev);
}

}  // namespace
