// Thread-local storage in kernel objects (tests/kernels/tls_counters.c, every variant: local
// exec, initial exec, general and local dynamic): every thread that runs the code has its own
// copy, initialised from .tdata/.tbss, whatever model reaches it, including the core threads
// that existed before the module was loaded. Cores 1 and up are one thread each, so each core's
// results, unfused and fused, equal the same source run natively on a fresh thread of its own.
#include <gtest/gtest.h>
#include <sk.h>

#include <set>
#include <thread>
#include <vector>

#include "linker_test_support.hpp"
#include "sk_assert.hpp"

extern "C" uint64_t tls_step(uint32_t x);

namespace {

constexpr uint32_t kCores = 3;
constexpr uint32_t kRounds = 4;

// What the thread of core `core` computes over the rounds, each round running `per_round`
// steps (round, round + 1, ...), natively on a fresh thread.
std::vector<uint64_t> native(uint32_t core, uint32_t per_round) {
  std::vector<uint64_t> out;
  std::thread t([&] {
    for (uint32_t r = 0; r < kRounds; ++r)
      for (uint32_t k = 0; k < per_round; ++k) out.push_back(tls_step(core + r * per_round + k));
  });
  t.join();
  return out;
}

class ThreadLocal : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_SK(sk_device_open("host:cores=3", &dev_));
    ASSERT_SK(sk_module_load_file(dev_, sk::test::kernel_path(GetParam(), "tls_counters").c_str(), &mod_));
    ASSERT_SK(sk_module_get_kernel(mod_, "tls_kernel", &kernel_));
  }
  void TearDown() override {
    sk_module_unload(mod_);
    sk_device_close(dev_);
  }
  sk_device *dev_ = nullptr;
  sk_module *mod_ = nullptr;
  sk_kernel *kernel_ = nullptr;
};

TEST_P(ThreadLocal, EveryCoreHasItsOwnAsLinkedNatively) {
  std::vector<uint64_t> got[kCores];
  for (uint32_t r = 0; r < kRounds; ++r) {
    uint64_t out[kCores] = {}, where[kCores] = {};
    uint64_t *po = out, *pw = where;
    void *args[] = {&po, &pw, &r};
    ASSERT_SK(sk_launch_kernel(kernel_, kCores, args, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    std::set<uint64_t> addresses(where, where + kCores);
    EXPECT_EQ(addresses.size(), kCores) << "two cores shared a thread-local";
    for (uint32_t c = 0; c < kCores; ++c) got[c].push_back(out[c]);
  }
  // Core 0's share runs on whichever host thread waits for it: only the others are fixed threads.
  for (uint32_t c = 1; c < kCores; ++c) EXPECT_EQ(got[c], native(c, 1)) << "core " << c;
}

TEST_P(ThreadLocal, FusedStepsContinueEachCoresThreadLocals) {
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "tls", nullptr, &scope));
  uint64_t out[2][kCores] = {}, where[2][kCores] = {};
  uint64_t *po[2] = {out[0], out[1]}, *pw[2] = {where[0], where[1]};
  uint32_t round[2] = {0, 1};
  void *args0[] = {&po[0], &pw[0], &round[0]}, *args1[] = {&po[1], &pw[1], &round[1]};
  ASSERT_SK(sk_add_kernel(scope, kernel_, kCores, args0, nullptr));
  ASSERT_SK(sk_add_kernel(scope, kernel_, kCores, args1, nullptr));
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  std::vector<uint64_t> got[kCores];
  for (uint32_t r = 0; r < kRounds; ++r) {
    round[0] = 2 * r, round[1] = 2 * r + 1;
    ASSERT_SK(sk_superkernel_set_arg(sk, 0, 2, &round[0]));
    ASSERT_SK(sk_superkernel_set_arg(sk, 1, 2, &round[1]));
    ASSERT_SK(sk_launch(sk, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    for (uint32_t c = 0; c < kCores; ++c) got[c].insert(got[c].end(), {out[0][c], out[1][c]});
  }
  sk_superkernel_destroy(sk);
  for (uint32_t c = 1; c < kCores; ++c) EXPECT_EQ(got[c], native(c, 2)) << "core " << c;
}

// Every variant, and x86-64's TLS-descriptor build (gcc -mtls-dialect=gnu2) where there is one.
std::vector<std::string> tls_variants() {
  std::vector<std::string> v = sk::test::kernel_variants();
  if (std::string(SK_TEST_TLSDESC_VARIANTS) != "") v.push_back(SK_TEST_TLSDESC_VARIANTS);
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllVariants, ThreadLocal, ::testing::ValuesIn(tls_variants()), sk::test::variant_name);

// Modules with thread-locals come and go: glibc takes their static TLS back (a local-exec
// object needs it), so loading one again and again does not run out.
TEST(ThreadLocalLifetime, LoadUnloadManyTimes) {
  sk_device *dev = nullptr;
  ASSERT_SK(sk_device_open("host:cores=2", &dev));
  const std::string path = sk::test::kernel_path("gcc-O2-pie", "tls_counters");
  for (int i = 0; i < 200; ++i) {
    sk_module *mod = nullptr;
    sk_kernel *k = nullptr;
    ASSERT_SK(sk_module_load_file(dev, path.c_str(), &mod)) << "load " << i;
    ASSERT_SK(sk_module_get_kernel(mod, "tls_kernel", &k));
    uint64_t out[2] = {}, where[2] = {};
    uint64_t *po = out, *pw = where;
    uint32_t round = 1;
    void *args[] = {&po, &pw, &round};
    ASSERT_SK(sk_launch_kernel(k, 2, args, nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
    sk_module_unload(mod);
    // A fresh link each time: every thread starts from the initial values again.
    ASSERT_EQ(out[1] >> 48, 6u) << "load " << i;
  }
  sk_device_close(dev);
}

}  // namespace
