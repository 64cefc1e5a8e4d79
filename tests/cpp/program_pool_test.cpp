// The programs of unfused launches are kept per kernel and reused (host/program_pool.hpp):
// the pool's own rules, and through the public API that a reused program runs each launch
// with that launch's arguments, for any block_dim, also after a launch that was aborted.
#include <gtest/gtest.h>
#include <sk.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/handles.hpp"
#include "host/program_pool.hpp"
#include "linker_test_support.hpp"
#include "sk_assert.hpp"

namespace sk::test {
namespace {

std::unique_ptr<host::Program> program_for(uint32_t block_dim, host::ProgramPool *pool) {
  auto p = std::make_unique<host::Program>();
  p->steps.resize(1);
  p->steps[0].block_dim = block_dim;
  p->pool = pool;
  return p;
}

TEST(ProgramPool, TakesTheNewestProgramOfTheSameBlockDim) {
  host::ProgramPool pool;
  EXPECT_EQ(pool.take(2), nullptr);
  auto a = program_for(2, &pool), b = program_for(1, &pool), c = program_for(2, &pool);
  host::Program *pa = a.get(), *pb = b.get(), *pc = c.get();
  pool.put(std::move(a));
  pool.put(std::move(b));
  pool.put(std::move(c));
  EXPECT_EQ(pool.take(3), nullptr);
  EXPECT_EQ(pool.take(2).get(), pc);
  EXPECT_EQ(pool.take(2).get(), pa);
  EXPECT_EQ(pool.take(2), nullptr);
  EXPECT_EQ(pool.take(1).get(), pb);
  EXPECT_EQ(pool.size(), 0u);
}

TEST(ProgramPool, KeepsAtMostMaxProgramsAndDropsTheOldest) {
  host::ProgramPool pool;
  pool.put(program_for(7, &pool));  // the oldest: dropped first
  for (size_t i = 1; i < host::ProgramPool::kMaxPrograms; ++i) pool.put(program_for(1, &pool));
  EXPECT_EQ(pool.size(), host::ProgramPool::kMaxPrograms);
  pool.put(program_for(1, &pool));
  EXPECT_EQ(pool.size(), host::ProgramPool::kMaxPrograms);
  EXPECT_EQ(pool.take(7), nullptr);
}

// recycle must be done with the pool before it lets go of the kernel: here the kernel's hold
// is all that keeps the pool alive (ASan reports a use after free if the order is wrong).
TEST(ProgramPool, RecycleDropsTheKernelHoldAfterThePoolIsDoneWith) {
  struct Kernel {
    host::ProgramPool pool;
  };
  auto kernel = std::make_shared<Kernel>();
  std::weak_ptr<Kernel> watch = kernel;
  auto p = program_for(1, &kernel->pool);
  p->launched_kernel = kernel;
  kernel.reset();
  ASSERT_FALSE(watch.expired());
  host::ProgramPool::recycle(std::move(p));
  EXPECT_TRUE(watch.expired());  // pool and program freed with the kernel

  // A program without a pool is freed, and lets go of its kernel too.
  auto other = std::make_shared<Kernel>();
  watch = other;
  auto q = program_for(1, nullptr);
  q->launched_kernel = std::move(other);
  host::ProgramPool::recycle(std::move(q));
  EXPECT_TRUE(watch.expired());
}

struct Unfused : ::testing::Test {
  sk_device *dev = nullptr;
  sk_module *chain = nullptr, *sync = nullptr;
  sk_kernel *fill = nullptr, *hang_if = nullptr;
  void SetUp() override {
    ASSERT_SK(sk_device_open("host:cores=2,timeout_ms=200", &dev));
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
  static const host::ProgramPool &pool(sk_kernel *k) { return k->impl->unfused_programs; }
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
