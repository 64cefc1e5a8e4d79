// CUDA super kernels on a GPU, through the public C API: fused == unfused on a 100-kernel
// chain, sk_sync_all on fewer blocks than the super kernel, task overlap, argument rebinding.
// Every test skips (never passes) when no CUDA device can be opened.
#include <gtest/gtest.h>
#include <sk.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuda_test_support.hpp"

namespace {

class CudaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sk_device_open("cuda:0", &dev_) != SK_OK) {
      dev_ = nullptr;
      GTEST_SKIP() << "no CUDA device: " << sk_last_error();
    }
  }
  void TearDown() override {
    for (sk_module *m : modules_) sk_module_unload(m);
    for (void *p : buffers_) sk_mem_free(dev_, p);
    if (dev_) sk_device_close(dev_);
  }
  sk_kernel *kernel(const char *file, const char *name, const char *signature = nullptr) {
    sk_module *mod = nullptr;
    EXPECT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path(file).c_str(), &mod), SK_OK) << sk_last_error();
    if (!mod) return nullptr;
    modules_.push_back(mod);
    sk_kernel *k = nullptr;
    if (signature)
      EXPECT_EQ(sk_module_get_kernel_with_signature(mod, name, signature, &k), SK_OK) << sk_last_error();
    else
      EXPECT_EQ(sk_module_get_kernel(mod, name, &k), SK_OK) << sk_last_error();
    return k;
  }
  template <class T>
  T *alloc(const std::vector<T> &init) {
    void *p = nullptr;
    EXPECT_EQ(sk_mem_alloc(dev_, init.size() * sizeof(T), &p), SK_OK) << sk_last_error();
    buffers_.push_back(p);
    EXPECT_EQ(sk_memcpy(dev_, p, init.data(), init.size() * sizeof(T)), SK_OK) << sk_last_error();
    return static_cast<T *>(p);
  }
  template <class T>
  std::vector<T> read(const T *p, size_t n) {
    std::vector<T> out(n);
    EXPECT_EQ(sk_memcpy(dev_, out.data(), p, n * sizeof(T)), SK_OK) << sk_last_error();
    return out;
  }
  sk_device *dev_ = nullptr;
  std::vector<sk_module *> modules_;
  std::vector<void *> buffers_;
};

}  // namespace

TEST_F(CudaGpu, HundredKernelChainFusedEqualsUnfused) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  const uint32_t n = 5000;
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i;
  uint32_t *fused = alloc(init), *unfused = alloc(init);
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "chain100", nullptr, &scope), SK_OK) << sk_last_error();
  for (uint32_t i = 0; i < 100; ++i) {
    const uint32_t blocks = 1 + (i * 7) % 40;  // uneven block counts: idle and multiplexed cores
    void *args[] = {&fused, (void *)&n, &i};
    ASSERT_EQ(sk_add_kernel(scope, step, blocks, args, nullptr), SK_OK) << sk_last_error();
  }
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  for (int launch = 0; launch < 3; ++launch) {
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    for (uint32_t i = 0; i < 100; ++i) {
      const uint32_t blocks = 1 + (i * 7) % 40;
      void *args[] = {&unfused, (void *)&n, &i};
      ASSERT_EQ(sk_launch_kernel(step, blocks, args, nullptr), SK_OK) << sk_last_error();
    }
  }
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<uint32_t> a = read(fused, n), b = read(unfused, n), expect = init;
  for (int launch = 0; launch < 3; ++launch)
    for (uint32_t i = 0; i < 100; ++i)
      for (uint32_t &x : expect) x = x * 3u + i;
  EXPECT_EQ(a, expect);
  EXPECT_EQ(b, expect);
  char json[1 << 16];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
  EXPECT_NE(std::string(json).find("\"cuda\""), std::string::npos) << json;
  sk_superkernel_destroy(sk);
}

TEST_F(CudaGpu, SyncAllOnFewerBlocksThanTheSuperKernel) {
  sk_kernel *sum = kernel("sync.cubin", "sync_sum");
  sk_kernel *mark = kernel("chain.cubin", "mark_blocks");
  ASSERT_TRUE(sum && mark);
  const uint32_t n = 10000;
  std::vector<uint32_t> in(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = i % 13;
  uint32_t expect = 0;
  for (uint32_t v : in) expect += v;
  uint32_t *din = alloc(in), *partial = alloc(std::vector<uint32_t>(64, 0)), *marks = alloc(std::vector<uint32_t>(32, 0));
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "sync_fewer", nullptr, &scope), SK_OK);
  uint8_t tag = 5;
  int64_t bias = -2;
  void *mark_args[] = {&marks, &tag, &bias};
  ASSERT_EQ(sk_add_kernel(scope, mark, 32, mark_args, nullptr), SK_OK) << sk_last_error();
  void *sum_args[] = {&din, &partial, (void *)&n};
  ASSERT_EQ(sk_add_kernel(scope, sum, 3, sum_args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  for (int launch = 0; launch < 5; ++launch) ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(read(partial, 1)[0], expect);
  std::vector<uint32_t> m = read(marks, 32);
  for (uint32_t b = 0; b < 32; ++b) EXPECT_EQ(m[b], 3u + 32u * 1000u) << "block " << b;
  sk_superkernel_destroy(sk);
}

TEST_F(CudaGpu, TaskOverlapKeepsTheDataDependency) {
  sk_kernel *produce = kernel("overlap.cubin", "overlap_produce");
  sk_kernel *consume = kernel("overlap.cubin", "overlap_consume");
  ASSERT_TRUE(produce && consume);
  const uint32_t n = 4096;
  uint32_t *data = alloc(std::vector<uint32_t>(n, 0)), *scratch = alloc(std::vector<uint32_t>(n, 0)),
           *out = alloc(std::vector<uint32_t>(n, 0));
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "overlap", "early-start=1", &scope), SK_OK);
  void *pa[] = {&data, &scratch, (void *)&n};
  void *ca[] = {&data, &out, (void *)&n};
  ASSERT_EQ(sk_add_kernel(scope, produce, 8, pa, nullptr), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, consume, 6, ca, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  char json[1 << 14];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK);
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<uint32_t> o = read(out, n), s = read(scratch, n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(o[i], 2 * (i + 1)) << i << " " << json;
    ASSERT_EQ(s[i], 2u) << i;
  }
  sk_superkernel_destroy(sk);
}

TEST_F(CudaGpu, RebindingArgumentsAndStreams) {
  sk_kernel *axpy = kernel("chain.cubin", "chain_axpy");
  ASSERT_NE(axpy, nullptr);
  const uint32_t n = 1000;
  float *x = alloc(std::vector<float>(n, 1.0f)), *y = alloc(std::vector<float>(n, 0.0f));
  float a = 2.0f;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "axpy", nullptr, &scope), SK_OK);
  void *args[] = {&x, &a, &y, (void *)&n};
  ASSERT_EQ(sk_add_kernel(scope, axpy, 4, args, nullptr), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, axpy, 2, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  sk_stream *s1 = nullptr, *s2 = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s1), SK_OK);
  ASSERT_EQ(sk_stream_create(dev_, &s2), SK_OK);
  ASSERT_EQ(sk_launch(sk, s1), SK_OK);  // y = 1, then 1 + 2*1 = 3
  float b = 0.5f;
  ASSERT_EQ(sk_superkernel_set_arg(sk, 1, 1, &b), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, s2), SK_OK);  // after s1's: y = 1 + 2*3 = 7, then 1 + 0.5*7 = 4.5
  ASSERT_EQ(sk_stream_synchronize(s2), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(s1), SK_OK) << sk_last_error();
  std::vector<float> out = read(y, n);
  for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(out[i], 4.5f) << i;
  EXPECT_EQ(sk_superkernel_set_arg(sk, 2, 0, &b), SK_ERR_INVALID_ARGUMENT);
  sk_superkernel_destroy(sk);
  sk_stream_destroy(s1);
  sk_stream_destroy(s2);
}

TEST_F(CudaGpu, MismatchedThreadsAreIncompatibleAtFinalize) {
  sk_kernel *a = kernel("chain.cubin", "chain_step");
  sk_kernel *b = kernel("misc.cubin", "wide_block");
  ASSERT_TRUE(a && b);
  uint32_t *x = alloc(std::vector<uint32_t>(16, 0));
  uint32_t n = 16, step = 0;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "mixed_threads", nullptr, &scope), SK_OK);
  void *aa[] = {&x, &n, &step};
  void *ba[] = {&x, &n};
  ASSERT_EQ(sk_add_kernel(scope, a, 1, aa, nullptr), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, b, 1, ba, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE);
  EXPECT_NE(std::string(sk_last_error()).find("wide_block"), std::string::npos) << sk_last_error();
}
