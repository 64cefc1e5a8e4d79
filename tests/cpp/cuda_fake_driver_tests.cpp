// The CUDA backend's launch path through the public C API, against a stand-in driver
// (fake_cuda_driver.cpp, via SK_CUDA_DRIVER_LIBRARY): finalize with co-residency clipping,
// launch parameters and epochs, stream ordering, argument rebinding, hang reports,
// sk_launch_kernel. Real linking (nvJitLink) happens; no kernel code runs.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sk.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_test_support.hpp"

namespace {

// Before anything opens the driver: libsk caches the first driver it loads.
const bool g_env = [] {
  setenv("SK_CUDA_DRIVER_LIBRARY", SK_FAKE_CUDA_DRIVER, 1);
  return true;
}();

struct FakeLaunch {
  unsigned grid, block;
  int cooperative;
  void *stream;
  uint64_t first_slot, args_buffer, sync, epoch, report;
};

struct Fake {
  void *lib = dlopen(SK_FAKE_CUDA_DRIVER, RTLD_NOW);
  int (*launches)(FakeLaunch *, int) = reinterpret_cast<int (*)(FakeLaunch *, int)>(dlsym(lib, "fake_cuda_launches"));
  int (*waits)() = reinterpret_cast<int (*)()>(dlsym(lib, "fake_cuda_stream_waits"));
  void (*reset)(int) = reinterpret_cast<void (*)(int)>(dlsym(lib, "fake_cuda_reset"));
  std::vector<FakeLaunch> all() {
    std::vector<FakeLaunch> v(256);
    v.resize((size_t)launches(v.data(), (int)v.size()));
    return v;
  }
};

using sk::cuda_test::contains;

class CudaFakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(g_env);
    ASSERT_NE(fake_.lib, nullptr) << dlerror();
    fake_.reset(2);  // 2 blocks per SM x 4 SMs: 8 co-resident blocks
    ASSERT_EQ(sk_device_open("cuda:0", &dev_), SK_OK) << sk_last_error();
  }
  void TearDown() override {
    for (sk_module *m : modules_) sk_module_unload(m);
    sk_device_close(dev_);
  }
  sk_kernel *kernel(const char *file, const char *name) {
    sk_module *mod = nullptr;
    EXPECT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path(file).c_str(), &mod), SK_OK) << sk_last_error();
    if (!mod) return nullptr;
    modules_.push_back(mod);
    sk_kernel *k = nullptr;
    EXPECT_EQ(sk_module_get_kernel(mod, name, &k), SK_OK) << sk_last_error();
    return k;
  }
  Fake fake_;
  sk_device *dev_ = nullptr;
  std::vector<sk_module *> modules_;
};

}  // namespace

TEST_F(CudaFakeDriver, MemoryGoesThroughTheDriver) {
  void *p = nullptr;
  ASSERT_EQ(sk_mem_alloc(dev_, 64, &p), SK_OK) << sk_last_error();
  const char msg[] = "through cuMemcpy";
  char back[sizeof msg] = {0};
  ASSERT_EQ(sk_memcpy(dev_, p, msg, sizeof msg), SK_OK);
  ASSERT_EQ(sk_memcpy(dev_, back, p, sizeof msg), SK_OK);
  EXPECT_STREQ(back, msg);
  int local = 0;
  sk_mem_free(dev_, &local);  // not the device's: ignored, with a message
  EXPECT_TRUE(contains(sk_last_error(), "was not allocated by this device")) << sk_last_error();
  sk_mem_free(dev_, p);
}

TEST_F(CudaFakeDriver, TheDeviceCountsItsMultiprocessorsAsCores) {
  uint32_t cores = 0;
  ASSERT_EQ(sk_device_cores(dev_, &cores), SK_OK) << sk_last_error();
  EXPECT_EQ(cores, 4u);  // the fake driver's SMs
  EXPECT_EQ(sk_device_synchronize(dev_), SK_OK) << sk_last_error();  // its default stream
}

TEST_F(CudaFakeDriver, FinalizeClipsTheGridToCoResidency) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint32_t *x = reinterpret_cast<uint32_t *>(0x1234000);
  uint32_t n = 100, i0 = 0, i1 = 1;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "clipped", nullptr, &scope), SK_OK);
  void *a0[] = {&x, &n, &i0};
  void *a1[] = {&x, &n, &i1};
  ASSERT_EQ(sk_add_kernel(scope, step, 20, a0, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, step, 5, a1, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 3u);
  for (size_t i = 0; i < l.size(); ++i) {
    EXPECT_EQ(l[i].grid, 8u);  // 20 blocks multiplexed on the 8 co-resident ones
    EXPECT_EQ(l[i].block, 128u);
    EXPECT_EQ(l[i].cooperative, 1);
    EXPECT_EQ(l[i].epoch, i + 1);  // counters are never reset: each launch has its epoch
    EXPECT_EQ(l[i].sync, l[0].sync);
    EXPECT_NE(l[i].report, 0u);
    EXPECT_EQ(l[i].first_slot, reinterpret_cast<uint64_t>(x));  // arguments in the parameter space
  }
  char json[8192];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
  EXPECT_TRUE(contains(json, "cuda")) << json;
  sk_profile_record rec{};
  rec.struct_size = sizeof rec;
  size_t count = 0;
  EXPECT_EQ(sk_superkernel_profile(sk, &rec, 1, &count), SK_ERR_UNSUPPORTED);
  sk_superkernel_destroy(sk);
}

TEST_F(CudaFakeDriver, SyncAllBeyondCoResidencyIsIncompatible) {
  sk_kernel *sum = kernel("sync.cubin", "sync_sum");
  ASSERT_NE(sum, nullptr);
  void *p = nullptr;
  uint32_t n = 10;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "too_wide", nullptr, &scope), SK_OK);
  void *args[] = {&p, &p, &n};
  ASSERT_EQ(sk_add_kernel(scope, sum, 12, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE);
  const std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "sync_sum")) << msg;
  EXPECT_TRUE(contains(msg, "at most 8 blocks are co-resident")) << msg;
  EXPECT_EQ(sk, nullptr);
}

TEST_F(CudaFakeDriver, RebindingArgumentsInParametersAndInABuffer) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000, y = 0x2000;
  uint32_t n = 8, i = 0;
  for (uint32_t kernels : {2u, 200u}) {  // 6 slots in the parameters; 600 in a device buffer
    fake_.reset(2);
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "rebind", nullptr, &scope), SK_OK);
    void *args[] = {&x, &n, &i};
    for (uint32_t k = 0; k < kernels; ++k) ASSERT_EQ(sk_add_kernel(scope, step, 2, args, nullptr), SK_OK);
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK);
    ASSERT_EQ(sk_superkernel_set_arg(sk, 0, 0, &y), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK);
    std::vector<FakeLaunch> l = fake_.all();
    ASSERT_EQ(l.size(), 2u);
    if (kernels == 2) {
      EXPECT_EQ(l[0].first_slot, x);  // the first launch copied its parameters at launch
      EXPECT_EQ(l[1].first_slot, y);
    } else {
      EXPECT_EQ(l[0].first_slot, l[1].first_slot);  // the buffer's address
      uint64_t slots[4] = {0};
      ASSERT_EQ(sk_memcpy(dev_, slots, reinterpret_cast<void *>(l[1].first_slot), sizeof slots), SK_OK);
      EXPECT_EQ(slots[0], y);
      EXPECT_EQ(slots[1], n);
      EXPECT_EQ(slots[3], x);  // step 1 keeps its value
    }
    sk_superkernel_destroy(sk);
  }
}

TEST_F(CudaFakeDriver, LaunchesOnAnotherStreamWaitForThePrevious) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "streams", nullptr, &scope), SK_OK);
  void *args[] = {&x, &n, &i};
  ASSERT_EQ(sk_add_kernel(scope, step, 4, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK);
  sk_stream *s1 = nullptr, *s2 = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s1), SK_OK);
  ASSERT_EQ(sk_stream_create(dev_, &s2), SK_OK);
  ASSERT_EQ(sk_launch(sk, s1), SK_OK);
  ASSERT_EQ(sk_launch(sk, s1), SK_OK);
  EXPECT_EQ(fake_.waits(), 0);
  ASSERT_EQ(sk_launch(sk, s2), SK_OK);
  EXPECT_EQ(fake_.waits(), 1);
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].stream, l[1].stream);
  EXPECT_NE(l[1].stream, l[2].stream);
  EXPECT_EQ(sk_stream_synchronize(s1), SK_OK);
  EXPECT_EQ(sk_stream_synchronize(s2), SK_OK);
  sk_superkernel_destroy(sk);
  sk_stream_destroy(s1);
  sk_stream_destroy(s2);
}

TEST_F(CudaFakeDriver, HangReportBecomesSkErrHangOnce) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  sk_kernel *sum = kernel("sync.cubin", "sync_sum");
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "hangs", nullptr, &scope), SK_OK);
  void *a[] = {&x, &n, &i};
  void *b[] = {&x, &x, &n};
  ASSERT_EQ(sk_add_kernel(scope, step, 4, a, nullptr), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, sum, 4, b, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK);
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  // What a timed-out wait writes: abort flag, super kernel id (the device's first), step,
  // block, sync point (3: sk_sync_all), counter seen, target.
  const uint64_t report[7] = {1, 1, 1, 3, 3, 5, 8};
  ASSERT_EQ(sk_memcpy(dev_, reinterpret_cast<void *>(l[0].report), report, sizeof report), SK_OK);
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_HANG);
  const std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "'hangs'")) << msg;
  EXPECT_TRUE(contains(msg, "step 1 'sync_sum'")) << msg;
  EXPECT_TRUE(contains(msg, "block 3")) << msg;
  EXPECT_TRUE(contains(msg, "sk_sync_all")) << msg;
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK);  // reported once
  sk_superkernel_destroy(sk);
}

TEST_F(CudaFakeDriver, LaunchKernelUsesASingleKernelEntry) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  sk_kernel *sum = kernel("sync.cubin", "sync_sum");
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *a[] = {&x, &n, &i};
  ASSERT_EQ(sk_launch_kernel(step, 20, a, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(step, 20, a, nullptr), SK_OK) << sk_last_error();  // the entry is reused
  void *b[] = {&x, &x, &n};
  EXPECT_EQ(sk_launch_kernel(sum, 12, b, nullptr), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "co-resident")) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(sum, 4, b, nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].grid, 20u);  // one block per block: nothing waits, no co-residency needed
  EXPECT_EQ(l[0].cooperative, 0);
  EXPECT_EQ(l[1].epoch, 2u);
  EXPECT_EQ(l[2].grid, 4u);
  EXPECT_EQ(l[2].cooperative, 1);  // sk_sync_all needs all 4 resident
  EXPECT_EQ(sk_launch_kernel(step, 0, a, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sk_launch_kernel(step, 4, nullptr, nullptr), SK_ERR_INVALID_ARGUMENT);
}

TEST_F(CudaFakeDriver, MismatchedThreadsAndForeignKernelsAreRefused) {
  sk_kernel *a = kernel("chain.cubin", "chain_step");
  sk_kernel *b = kernel("misc.cubin", "wide_block");
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "threads", nullptr, &scope), SK_OK);
  void *aa[] = {&x, &n, &i};
  void *ba[] = {&x, &n};
  ASSERT_EQ(sk_add_kernel(scope, a, 2, aa, nullptr), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, b, 2, ba, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "'wide_block'")) << sk_last_error();
  // A kernel of a host device cannot join a CUDA scope.
  sk_device *host = nullptr;
  ASSERT_EQ(sk_device_open("host:cores=1", &host), SK_OK);
  sk_scope *hs = nullptr;
  ASSERT_EQ(sk_scope_begin(host, "host_scope", nullptr, &hs), SK_OK);
  EXPECT_EQ(sk_add_kernel(hs, a, 1, aa, nullptr), SK_ERR_INCOMPATIBLE);
  sk_scope_abort(hs);
  sk_device_close(host);
  // A mixed kernel has no place on a GPU.
  ASSERT_EQ(sk_scope_begin(dev_, "mixed", nullptr, &scope), SK_OK);
  sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
  opts.core_type = "mix_1_1";
  ASSERT_EQ(sk_add_kernel(scope, a, 2, aa, &opts), SK_OK);
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk_last_error(), "one core type")) << sk_last_error();
}

namespace {

// A CUDA module is one cubin: several are refused, naming the way out; one loads as ever.
TEST_F(CudaFakeDriver, SeveralObjectsAsOneModuleAreRefused) {
  const std::string chain = sk::cuda_test::kernel_path("chain.cubin"), misc = sk::cuda_test::kernel_path("misc.cubin");
  const char *two[] = {chain.c_str(), misc.c_str()};
  sk_module *mod = nullptr;
  EXPECT_EQ(sk_module_load_files(dev_, two, 2, &mod), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk_last_error(), "a CUDA module is one cubin")) << sk_last_error();
  EXPECT_EQ(mod, nullptr);
  ASSERT_EQ(sk_module_load_files(dev_, two, 1, &mod), SK_OK) << sk_last_error();
  modules_.push_back(mod);
}

}  // namespace
