// The programs of unfused launches are kept per kernel and reused (host/executor/program_pool.hpp):
// the pool's own rules, and through the public API that a reused program runs each launch
// with that launch's arguments, for any block_dim, also after a launch that was aborted.
#include <gtest/gtest.h>
#include <sk.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.hpp"
#include "host/executor/program_pool.hpp"
#include "host/host_backend.hpp"
#include "linker_test_support.hpp"
#include "sk_assert.hpp"

namespace sk::test {
namespace {

std::unique_ptr<host::Program> program_for(uint32_t block_dim) {
  auto p = std::make_unique<host::Program>();
  p->steps.resize(1);
  p->steps[0].block_dim = block_dim;
  return p;
}

// Adopts a program built for `block_dim`, taken for the launch it was built for.
host::Program *adopt(host::ProgramPool &pool, uint32_t block_dim) {
  std::unique_ptr<host::Program> p = program_for(block_dim);
  host::Program *raw = p.get();
  EXPECT_EQ(pool.adopt(p), raw);
  EXPECT_EQ(p, nullptr);  // the pool owns it now
  EXPECT_EQ(raw->pool, &pool);
  return raw;
}

TEST(ProgramPool, TakesAFreeProgramOfTheSameBlockDimTheLastGivenBackFirst) {
  host::ProgramPool pool;
  EXPECT_EQ(pool.take(2), nullptr);
  host::Program *a = adopt(pool, 2), *b = adopt(pool, 1), *c = adopt(pool, 2);
  EXPECT_EQ(pool.take(2), nullptr);  // all taken
  pool.put(a);
  pool.put(b);
  pool.put(c);
  EXPECT_EQ(pool.take(3), nullptr);
  EXPECT_EQ(pool.take(2), c);  // the last given back
  EXPECT_EQ(pool.take(2), a);
  EXPECT_EQ(pool.take(2), nullptr);
  EXPECT_EQ(pool.take(1), b);
  EXPECT_EQ(pool.size(), 3u);
  // A program launched and waited for in a loop stays the same one.
  pool.put(a);
  pool.put(c);
  for (int i = 0; i < 5; ++i) {
    host::Program *p = pool.take(2);
    EXPECT_EQ(p, c);
    pool.put(p);
  }
}

TEST(ProgramPool, KeepsAtMostMaxProgramsGivingUpAFreeOneOfAnotherBlockDim) {
  host::ProgramPool pool;
  std::vector<host::Program *> taken;
  for (size_t i = 0; i < host::ProgramPool::kMaxPrograms; ++i) taken.push_back(adopt(pool, i == 0 ? 7 : 1));
  EXPECT_EQ(pool.size(), host::ProgramPool::kMaxPrograms);
  // Every program is in a launch: the pool declines, the caller keeps the program.
  std::unique_ptr<host::Program> extra = program_for(3);
  EXPECT_EQ(pool.adopt(extra), nullptr);
  ASSERT_NE(extra, nullptr);
  EXPECT_EQ(extra->pool, nullptr);
  // The block_dim 7 program is free again: a block_dim 3 program takes its slot.
  pool.put(taken[0]);
  host::Program *raw = extra.get();
  EXPECT_EQ(pool.adopt(extra), raw);
  EXPECT_EQ(pool.size(), host::ProgramPool::kMaxPrograms);
  EXPECT_EQ(pool.take(7), nullptr);
  pool.put(raw);
  EXPECT_EQ(pool.take(3), raw);
}

// Launching threads take and give back programs of two block dims concurrently: a program is
// never held by two at once (TSan checks the hand-overs too).
TEST(ProgramPool, ConcurrentTakersNeverShareAProgram) {
  host::ProgramPool pool;
  constexpr int kThreads = 4, kRounds = 200000;
  std::atomic<uint64_t> adopted{0}, shared{0};
  auto work = [&](int t) {
    for (int r = 0; r < kRounds; ++r) {
      const uint32_t block_dim = 1 + (r + t) % 2;
      host::Program *p = pool.take(block_dim);
      if (!p) {
        std::unique_ptr<host::Program> built = program_for(block_dim);
        p = pool.adopt(built);
        if (!p) continue;  // all taken: an unpooled launch
        adopted.fetch_add(1);
      }
      if (p->steps[0].block_dim != block_dim) shared.fetch_add(1);
      // The program's own state is this thread's while it holds it.
      if (p->next_epoch.fetch_add(1, std::memory_order_relaxed) !=
          p->completed_epoch.load(std::memory_order_relaxed))
        shared.fetch_add(1);
      p->completed_epoch.fetch_add(1, std::memory_order_relaxed);
      pool.put(p);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(shared.load(), 0u);
  // Every program adopted is kept (a take that races past a program being given back adopts
  // one more: a handful beyond the kThreads held at once, never past the pool's bound).
  EXPECT_EQ(pool.size(), adopted.load());
  EXPECT_LE(pool.size(), host::ProgramPool::kMaxPrograms);
}

// recycle must be done with the pool before it lets go of the kernel: here the kernel's hold
// is all that keeps the pool alive (ASan reports a use after free if the order is wrong).
TEST(ProgramPool, RecycleDropsTheKernelHoldAfterThePoolIsDoneWith) {
  struct Kernel {
    host::ProgramPool pool;
  };
  auto kernel = std::make_shared<Kernel>();
  std::weak_ptr<Kernel> watch = kernel;
  host::Program *p = adopt(kernel->pool, 1);
  p->launched_kernel = kernel;
  kernel.reset();
  ASSERT_FALSE(watch.expired());
  host::ProgramPool::recycle(p, nullptr);
  EXPECT_TRUE(watch.expired());  // pool and program freed with the kernel

  // A program its pool declined is freed, and lets go of its kernel too.
  auto other = std::make_shared<Kernel>();
  watch = other;
  auto q = program_for(1);
  q->launched_kernel = std::move(other);
  host::Program *raw = q.get();
  host::ProgramPool::recycle(raw, std::move(q));
  EXPECT_TRUE(watch.expired());
}

// A short deadline for the hang below; under qemu-user a core thread can go without a CPU for
// longer than 200 ms, and the device would take it for one stuck in its kernel.
#if defined(SK_TEST_EMULATED)
constexpr const char *kHangDevice = "host:cores=2,timeout_ms=1000";
#else
constexpr const char *kHangDevice = "host:cores=2,timeout_ms=200";
#endif

struct Unfused : ::testing::Test {
  sk_device *dev = nullptr;
  sk_module *chain = nullptr, *sync = nullptr;
  sk_kernel *fill = nullptr, *hang_if = nullptr;
  void SetUp() override {
    ASSERT_SK(sk_device_open(kHangDevice, &dev));
    ASSERT_SK(sk_module_load_file(dev, kernel_path("gcc-O2-pie", "capi_chain").c_str(), &chain));
    ASSERT_SK(sk_module_load_file(dev, kernel_path("clang-O2-pie", "capi_sync").c_str(), &sync));
    ASSERT_SK(sk_module_get_kernel(chain, "capi_fill", &fill));
    ASSERT_SK(sk_module_get_kernel(sync, "capi_hang_if", &hang_if));
  }
  void TearDown() override {
    sk_module_unload(chain);
    sk_module_unload(sync);
    sk_device_close(dev);
  }
  static const host::ProgramPool &pool(sk_kernel *k) {
    return static_cast<const host::HostBackendKernel &>(*k->backend).unfused_programs;
  }
};

TEST_F(Unfused, ALaunchAfterTheLastCompletedReusesItsProgram) {
  std::vector<uint32_t> out(64);
  uint32_t *p = out.data(), n = 64, seed = 0;
  void *args[3] = {&p, &n, &seed};
  std::set<const void *> seen;
  for (seed = 0; seed < 50; ++seed) {
    ASSERT_SK(sk_launch_kernel(fill, 2, args, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], i * 2654435761u + seed) << "launch " << seed;
  }
  EXPECT_EQ(pool(fill).size(), 1u);  // one program served all 50
}

// More launches queued at once than the executor's ring holds, with block dims 1 to 4: each
// writes its own buffer with its own seed, so a launch that ran with another's arguments
// (a program reused while still queued) shows.
TEST_F(Unfused, DeepQueuesOfLaunchesEachRunWithTheirOwnArguments) {
  constexpr uint32_t kLaunches = 600, kN = 37;
  std::vector<std::vector<uint32_t>> out(kLaunches, std::vector<uint32_t>(kN, 0));
  std::vector<uint32_t *> ptr(kLaunches);
  std::vector<uint32_t> seed(kLaunches);
  uint32_t n = kN;
  sk_stream *stream = nullptr;
  ASSERT_SK(sk_stream_create(dev, &stream));
  for (int round = 0; round < 3; ++round) {
    for (uint32_t l = 0; l < kLaunches; ++l) {
      ptr[l] = out[l].data();
      seed[l] = l * 7919u + round;
      void *args[3] = {&ptr[l], &n, &seed[l]};
      ASSERT_SK(sk_launch_kernel(fill, 1 + l % 4, args, l % 3 ? stream : nullptr));
    }
    ASSERT_SK(sk_stream_synchronize(stream));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    for (uint32_t l = 0; l < kLaunches; ++l)
      for (uint32_t i = 0; i < kN; ++i)
        ASSERT_EQ(out[l][i], i * 2654435761u + seed[l]) << "round " << round << " launch " << l << " element " << i;
  }
  sk_stream_destroy(stream);
  // Never more programs than launches in flight at once (the ring's 256), whatever was queued.
  EXPECT_GE(pool(fill).size(), 4u);
  EXPECT_LE(pool(fill).size(), host::ProgramPool::kMaxPrograms);
}

// Threads launching one kernel at once, in bursts on streams of their own with block dims
// taking turns: the pool hands each launch a program nobody else holds (a program shared by
// two queued launches would run one with the other's arguments), while completions give
// programs back beside the takers.
TEST_F(Unfused, ThreadsLaunchingOneKernelEachRunWithTheirOwnArguments) {
  constexpr int kThreads = 3, kRounds = 500;
  constexpr uint32_t kBurst = 8, kN = 24;
  auto worker = [&](int t) {
    sk_stream *stream = nullptr;
    ASSERT_SK(sk_stream_create(dev, &stream));
    std::vector<std::vector<uint32_t>> out(kBurst, std::vector<uint32_t>(kN));
    std::vector<uint32_t *> ptr(kBurst);
    std::vector<uint32_t> seed(kBurst);
    uint32_t n = kN;
    for (int round = 0; round < kRounds; ++round) {
      for (uint32_t j = 0; j < kBurst; ++j) {
        ptr[j] = out[j].data();
        seed[j] = (static_cast<uint32_t>(t) << 24) + static_cast<uint32_t>(round) * kBurst + j;
        void *args[3] = {&ptr[j], &n, &seed[j]};
        ASSERT_SK(sk_launch_kernel(fill, 1 + (t + j + round) % 3, args, stream));
      }
      ASSERT_SK(sk_stream_synchronize(stream));
      for (uint32_t j = 0; j < kBurst; ++j)
        for (uint32_t i = 0; i < kN; ++i)
          ASSERT_EQ(out[j][i], i * 2654435761u + seed[j]) << "thread " << t << " round " << round << " launch " << j;
    }
    sk_stream_destroy(stream);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (std::thread &th : threads) th.join();
  EXPECT_LE(pool(fill).size(), host::ProgramPool::kMaxPrograms);
}

// Programs are kept per block_dim: each launch runs exactly its own number of blocks.
TEST_F(Unfused, EachBlockDimRunsItsOwnProgram) {
  sk_module *mixed = nullptr;
  sk_kernel *tag_kernel = nullptr;
  ASSERT_SK(sk_module_load_file(dev, kernel_path("gcc-O2-pie", "capi_mixed").c_str(), &mixed));
  ASSERT_SK(sk_module_get_kernel(mixed, "vector_tag", &tag_kernel));  // out[block] = tag + block
  std::vector<uint32_t> out(8);
  uint32_t *p = out.data(), tag = 0;
  void *args[2] = {&p, &tag};
  for (uint32_t round = 0; round < 40; ++round) {
    const uint32_t block_dim = 1 + (round * 5) % 7;
    tag = 100 * (round + 1);
    out.assign(8, 0);
    ASSERT_SK(sk_launch_kernel(tag_kernel, block_dim, args, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    for (uint32_t b = 0; b < 8; ++b)
      ASSERT_EQ(out[b], b < block_dim ? tag + b : 0u) << "block_dim " << block_dim << " round " << round;
  }
  EXPECT_EQ(pool(tag_kernel).size(), 7u);
  sk_module_unload(mixed);
}

// A bad argument after the program was taken puts it back: nothing is lost, nothing queued.
TEST_F(Unfused, ABadArgumentGivesTheProgramBack) {
  std::vector<uint32_t> out(8);
  uint32_t *p = out.data(), n = 8, seed = 5;
  void *good[3] = {&p, &n, &seed}, *bad[3] = {&p, nullptr, &seed};
  ASSERT_SK(sk_launch_kernel(fill, 2, good, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  ASSERT_EQ(pool(fill).size(), 1u);
  EXPECT_EQ(sk_launch_kernel(fill, 2, bad, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sk_last_error()).find("args[1] (u32) is NULL"), std::string::npos) << sk_last_error();
  EXPECT_EQ(pool(fill).size(), 1u);
  EXPECT_EQ(sk_launch_kernel(fill, 2, nullptr, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pool(fill).size(), 1u);
  ASSERT_SK(sk_stream_synchronize(nullptr));
}

// An aborted launch leaves its program as a clean launch would: the next launch with the same
// block_dim reuses it and runs to the end.
TEST_F(Unfused, AProgramReusedAfterAHangRunsClean) {
  std::vector<uint32_t> out(4);
  uint32_t *p = out.data(), hang = 1;
  void *args[2] = {&p, &hang};
  for (int round = 0; round < 3; ++round) {
    hang = 1;
    ASSERT_SK(sk_launch_kernel(hang_if, 2, args, nullptr));
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_HANG);
    EXPECT_NE(std::string(sk_last_error()).find("capi_hang_if"), std::string::npos) << sk_last_error();
    EXPECT_EQ(pool(hang_if).size(), 1u);
    hang = 0;
    out.assign(4, 0);
    p = out.data();
    ASSERT_SK(sk_launch_kernel(hang_if, 2, args, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    EXPECT_EQ(out[0], 1u);
    EXPECT_EQ(out[1], 2u);
    EXPECT_EQ(pool(hang_if).size(), 1u);
  }
}

}  // namespace
}  // namespace sk::test
