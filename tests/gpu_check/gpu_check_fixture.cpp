// What scripts/gpu-check runs in tests/gpu_check/test_gpu_check.py, in place of sk_cuda_tests, on
// machines without a GPU: CudaGpu tests on the stand-in driver ($SK_CUDA_DRIVER_LIBRARY) that
// pass, report a hang, hit a sticky error, never return and skip, so that the harness's own
// behaviour (a process and a timeout per test, the lines, the summary, the artifacts) is tested
// here. They fail on purpose: ctest does not run them, and neither does the harness run the
// test that needs no GPU. $SK_GPU_FIXTURE_SMOKE=sticky makes the smoke test fail.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sk.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/entry_ptx.hpp"
#include "cuda_test_support.hpp"

namespace {

constexpr int kIllegalAddress = 700;  // CUDA_ERROR_ILLEGAL_ADDRESS: sticky
constexpr int kNeverReturn = -1;      // fake_cuda_fail_next: the call blocks for ever

class CudaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const char *driver = std::getenv("SK_CUDA_DRIVER_LIBRARY");
    ASSERT_TRUE(driver && *driver) << "the fixture runs on the stand-in driver only";
    fake_ = dlopen(driver, RTLD_NOW);
    ASSERT_NE(fake_, nullptr) << dlerror();
    ASSERT_EQ(sk_device_open("cuda:0", &dev_), SK_OK) << sk_last_error();
  }
  void TearDown() override {
    for (sk_superkernel *sk : supers_) sk_superkernel_destroy(sk);
    if (mod_) sk_module_unload(mod_);
    sk_device_close(dev_);
  }
  template <class F>
  F fake(const char *name) {
    return reinterpret_cast<F>(dlsym(fake_, name));
  }
  void fail_next(const char *call, int error) {
    fake<void (*)(const char *, int)>("fake_cuda_fail_next")(call, error);
  }
  // A chain of `steps` chain_step steps on `blocks` blocks (the stand-in runs no kernel code).
  sk_superkernel *chain(const char *name, uint32_t steps, uint32_t blocks) {
    if (!mod_) EXPECT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path("chain.cubin").c_str(), &mod_), SK_OK);
    sk_kernel *step = nullptr;
    EXPECT_EQ(sk_module_get_kernel(mod_, "chain_step", &step), SK_OK) << sk_last_error();
    uint64_t x = 0x1000;
    uint32_t n = 8, i = 0;
    void *args[] = {&x, &n, &i};
    sk_scope *scope = nullptr;
    EXPECT_EQ(sk_scope_begin(dev_, name, nullptr, &scope), SK_OK) << sk_last_error();
    for (uint32_t k = 0; k < steps; ++k) EXPECT_EQ(sk_add_kernel(scope, step, blocks, args, nullptr), SK_OK);
    sk_superkernel *sk = nullptr;
    EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    if (sk) supers_.push_back(sk);
    return sk;
  }
  void *fake_ = nullptr;
  sk_device *dev_ = nullptr;
  sk_module *mod_ = nullptr;
  std::vector<sk_superkernel *> supers_;
};

}  // namespace

TEST_F(CudaGpu, SmokeTwoStepsOnOneBlockAndOneBlockPerSm) {
  uint32_t sms = 0;
  ASSERT_EQ(sk_device_cores(dev_, &sms), SK_OK) << sk_last_error();
  const char *mode = std::getenv("SK_GPU_FIXTURE_SMOKE");
  for (uint32_t blocks : {1u, sms}) {
    sk_superkernel *sk = chain("smoke", 2, blocks);
    ASSERT_NE(sk, nullptr);
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    if (mode && std::strcmp(mode, "sticky") == 0) fail_next("cuStreamSynchronize", kIllegalAddress);
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  }
}

TEST_F(CudaGpu, NeverReturns) {
  sk_superkernel *sk = chain("never", 2, 2);
  ASSERT_NE(sk, nullptr);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  fail_next("cuStreamSynchronize", kNeverReturn);
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
}

TEST_F(CudaGpu, AHangIsReported) {
  sk_superkernel *sk = chain("hung", 3, 2);
  ASSERT_NE(sk, nullptr);
  const uint64_t words[sk::cuda::kReportWords] = {0, 1, 1, 1, 0, 1, 2, 0};  // block 1 of step 1, at its start
  fake<void (*)(unsigned, const uint64_t *)>("fake_cuda_hang_in_run")(0, words);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
}

TEST_F(CudaGpu, AStickyError) {
  sk_superkernel *sk = chain("sticky", 2, 2);
  ASSERT_NE(sk, nullptr);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  fail_next("cuStreamSynchronize", kIllegalAddress);
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
}

TEST_F(CudaGpu, Passes) {
  sk_superkernel *sk = chain("passes", 2, 2);
  ASSERT_NE(sk, nullptr);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
}

TEST_F(CudaGpu, Skips) { GTEST_SKIP() << "no CUDA device: the fixture's skipping test"; }

TEST(CudaFixture, NeedsNoGpu) { FAIL() << "a test that needs no GPU ran in the device run"; }
