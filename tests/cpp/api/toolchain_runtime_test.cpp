// Kernels that use what a program's static link takes from the toolchain's static parts and
// GNU indirect functions (tests/kernels/toolchain_runtime.c, every variant): an ifunc, a
// target_clones function and __builtin_cpu_supports compute, unfused and fused, exactly what
// the same source linked into this executable computes; atexit handlers run when the module is
// unloaded and pthread_atfork handlers run at a fork while it is loaded, and are gone after.
#include <gtest/gtest.h>
#include <sk.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "linker_test_support.hpp"
#include "sk_assert.hpp"

extern "C" void toolchain_values(const uint32_t *in, uint32_t *out, uint32_t n, uint32_t first, uint32_t step);

namespace {

constexpr uint32_t kN = 301;

class ToolchainRuntime : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_SK(sk_device_open("host:cores=3", &dev_));
    ASSERT_SK(sk_module_load_file(dev_, sk::test::kernel_path(GetParam(), "toolchain_runtime").c_str(), &mod_));
  }
  void TearDown() override {
    sk_module_unload(mod_);
    sk_device_close(dev_);
  }
  sk_device *dev_ = nullptr;
  sk_module *mod_ = nullptr;
};

TEST_P(ToolchainRuntime, IndirectFunctionsAndCpuModelAsLinkedNatively) {
  std::vector<uint32_t> in(kN), want(kN);
  for (uint32_t i = 0; i < kN; ++i) in[i] = i * 7919u + 13u;
  toolchain_values(in.data(), want.data(), kN, 0, 1);
  sk_kernel *k = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod_, "toolchain_values_kernel", &k));
  std::vector<uint32_t> unfused(kN, 0), fused_a(kN, 0), fused_b(kN, 0);
  uint32_t n = kN;
  const uint32_t *pin = in.data();
  uint32_t *pout = unfused.data();
  void *args[] = {&pin, &pout, &n};
  ASSERT_SK(sk_launch_kernel(k, 3, args, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  EXPECT_EQ(std::memcmp(unfused.data(), want.data(), kN * sizeof(uint32_t)), 0) << "unfused";
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "toolchain", nullptr, &scope));
  uint32_t *pa = fused_a.data(), *pb = fused_b.data();
  void *args_a[] = {&pin, &pa, &n}, *args_b[] = {&pin, &pb, &n};
  ASSERT_SK(sk_add_kernel(scope, k, 3, args_a, nullptr));
  ASSERT_SK(sk_add_kernel(scope, k, 2, args_b, nullptr));
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  sk_superkernel_destroy(sk);
  EXPECT_EQ(std::memcmp(fused_a.data(), want.data(), kN * sizeof(uint32_t)), 0) << "fused, first";
  EXPECT_EQ(std::memcmp(fused_b.data(), want.data(), kN * sizeof(uint32_t)), 0) << "fused, second";
}

#if !defined(SK_TEST_EMULATED)  // qemu-user's fork is not the kernel's
// The child's exit status: 0 when its pthread_atfork child handler ran `expected` times.
pid_t fork_checking(const uint32_t *counters, uint32_t expected) {
  const pid_t pid = fork();
  if (pid == 0) _exit(counters[3] == expected ? 0 : 1);
  return pid;
}

int child_status(pid_t pid) {
  int status = -1;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
#endif

TEST_P(ToolchainRuntime, AtexitAtUnloadAndAtforkWhileLoaded) {
  uint32_t counters[4] = {};
  int32_t status = -1;
  uint32_t *pc = counters;
  int32_t *ps = &status;
  void *args[] = {&pc, &ps};
  sk_kernel *k = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod_, "toolchain_register_kernel", &k));
  ASSERT_SK(sk_launch_kernel(k, 1, args, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  ASSERT_EQ(status, 0);
#if !defined(SK_TEST_EMULATED)
  EXPECT_EQ(child_status(fork_checking(counters, 1)), 0) << "the child handler did not run in the child";
  EXPECT_EQ(counters[1], 1u) << "prepare";
  EXPECT_EQ(counters[2], 1u) << "parent";
#endif
  EXPECT_EQ(counters[0], 0u) << "the atexit handler ran before the module went";
  sk_module_unload(mod_);
  mod_ = nullptr;
  EXPECT_EQ(counters[0], 1u) << "the atexit handler did not run when the module went";
#if !defined(SK_TEST_EMULATED)
  // The handlers went with the module (their code is unmapped: calling them would crash).
  EXPECT_EQ(child_status(fork_checking(counters, 0)), 0);
  EXPECT_EQ(counters[1], 1u);
  EXPECT_EQ(counters[2], 1u);
#endif
}

INSTANTIATE_TEST_SUITE_P(AllVariants, ToolchainRuntime, ::testing::ValuesIn(sk::test::kernel_variants()),
                         sk::test::variant_name);

}  // namespace
