// CUDA super kernels on a GPU, through the public C API: fused == unfused on a 100-kernel
// chain and a 1000-step one, sk_sync_all on fewer blocks than the super kernel (also from a __noinline__ helper),
// task overlap, argument rebinding, static and dynamic shared memory (static variables of two
// modules in the shared overlay), a hang and the launch
// after it, 30 KiB of arguments in the parameter space, a launch captured into a CUDA graph
// and replayed, sub-kernels whose threads return early, sk_launch_repeat as one launch (n
// runs == n launches, an early stop by a kernel that sets the flag), kernels loaded from a host
// object of nvcc -dc and from a fatbinary, structs by value and a position read by reference,
// call stacks past the default limit (known, and recursive with the stack_bytes key), a 48 KiB
// static tile, and reads through the read-only path of what the step before wrote.
// CudaGpu.Smoke... runs first on a device (scripts/gpu-check): when it fails, the rest is not
// worth the device's time.
// Every test skips (never passes) when no CUDA device can be opened.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sk.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda/nvjitlink.hpp"
#include "cuda/ptx_module.hpp"
#include "cuda_test_support.hpp"
#include "elf/fatbin.hpp"

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
  // Kernel `name` of the PTX text `ptx`, taken with `desc`; its module unloads at the test's end.
  sk_kernel *ptx_kernel(const std::string &ptx, const char *name, const sk_kernel_desc &desc) {
    sk_module *mod = nullptr;
    EXPECT_EQ(sk_module_load(dev_, ptx.data(), ptx.size(), &mod), SK_OK) << name << ": " << sk_last_error();
    if (!mod) return nullptr;
    modules_.push_back(mod);
    sk_kernel *k = nullptr;
    EXPECT_EQ(sk_module_get_kernel_desc(mod, name, &desc, &k), SK_OK) << name << ": " << sk_last_error();
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
  // One step of a super kernel run_fused builds: sk_add_kernel's arguments.
  struct Step {
    sk_kernel *kernel;
    uint32_t blocks;
    void *const *args;
    const sk_kernel_options *options = nullptr;
  };
  // Fuses `steps` into super kernel `name` (scope options `options`), launches it once and waits
  // for it.
  void run_fused(const char *name, const std::vector<Step> &steps, const char *options = nullptr) {
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, name, options, &scope), SK_OK) << sk_last_error();
    for (const Step &s : steps)
      ASSERT_EQ(sk_add_kernel(scope, s.kernel, s.blocks, s.args, s.options), SK_OK)
          << name << ": " << sk_last_error();
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << name << ": " << sk_last_error();
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << name << ": " << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << name << ": " << sk_last_error();
    sk_superkernel_destroy(sk);
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

// The device run's first test: two steps of a chain on one block, then on one block per SM,
// fused == unfused == the CPU. Each launch goes through libsk's whole path (link, load,
// cooperative launch, the barrier between two steps, the epoch, the synchronisation).
TEST_F(CudaGpu, SmokeTwoStepsOnOneBlockAndOneBlockPerSm) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint32_t sms = 0;
  ASSERT_EQ(sk_device_cores(dev_, &sms), SK_OK) << sk_last_error();
  for (const uint32_t blocks : {1u, sms}) {
    SCOPED_TRACE(std::to_string(blocks) + " blocks");
    const uint32_t n = blocks * 128;
    std::vector<uint32_t> init(n);
    for (uint32_t i = 0; i < n; ++i) init[i] = i * 2654435761u;
    uint32_t *fused = alloc(init), *unfused = alloc(init);
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "smoke", nullptr, &scope), SK_OK) << sk_last_error();
    for (uint32_t i = 0; i < 2; ++i) {
      void *args[] = {&fused, (void *)&n, &i};
      ASSERT_EQ(sk_add_kernel(scope, step, blocks, args, nullptr), SK_OK) << sk_last_error();
    }
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    for (uint32_t i = 0; i < 2; ++i) {
      void *args[] = {&unfused, (void *)&n, &i};
      ASSERT_EQ(sk_launch_kernel(step, blocks, args, nullptr), SK_OK) << sk_last_error();
    }
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    std::vector<uint32_t> expect = init;
    for (uint32_t i = 0; i < 2; ++i)
      for (uint32_t &x : expect) x = x * 3u + i;
    EXPECT_EQ(read(unfused, n), expect);
    EXPECT_EQ(read(fused, n), expect);
    sk_superkernel_destroy(sk);
  }
}

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

// chain.cu as nvcc -dc writes it by default (a host object) and as a fatbinary for two
// architectures: fused from them == unfused launches of chain.cubin's kernel == the CPU.
TEST_F(CudaGpu, KernelsFromAHostObjectAndAFatbinFusedEqualUnfused) {
  sk_kernel *plain = kernel("chain.cubin", "chain_step");
  ASSERT_NE(plain, nullptr);
  for (const char *file : {"chain_host.o", "chain_multi.fatbin"}) {
    SCOPED_TRACE(file);
    sk_kernel *step = kernel(file, "chain_step");
    ASSERT_NE(step, nullptr);
    const uint32_t n = 3000;
    std::vector<uint32_t> init(n);
    for (uint32_t i = 0; i < n; ++i) init[i] = i;
    uint32_t *fused = alloc(init), *unfused = alloc(init);
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, file, nullptr, &scope), SK_OK) << sk_last_error();
    for (uint32_t i = 0; i < 20; ++i) {
      void *args[] = {&fused, (void *)&n, &i};
      ASSERT_EQ(sk_add_kernel(scope, step, 1 + (i * 5) % 24, args, nullptr), SK_OK) << sk_last_error();
    }
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    for (uint32_t i = 0; i < 20; ++i) {
      void *args[] = {&unfused, (void *)&n, &i};
      ASSERT_EQ(sk_launch_kernel(plain, 1 + (i * 5) % 24, args, nullptr), SK_OK) << sk_last_error();
    }
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    std::vector<uint32_t> expect = init;
    for (uint32_t i = 0; i < 20; ++i)
      for (uint32_t &x : expect) x = x * 3u + i;
    EXPECT_EQ(read(fused, n), expect);
    EXPECT_EQ(read(unfused, n), expect);
    sk_superkernel_destroy(sk);
  }
}

// nvcc -dc objects of separable compilation (cross_a.cu's kernel calls a function and reads a
// variable of cross_b.cu), given together, as their static library (nvcc -lib) and as a shared
// library compiled -rdc (libcross_rdc.so): cross_apply, cross_normalize (whose call reaches
// cross_b.cu's static __shared__ array, laid out with its own in the overlay), cross_scale, the
// template kernel both cross_b.cu and cross_c.cu instantiate (weak in each) and cross_square
// fused == each launched alone == the CPU, bit for bit (rounded operations only: nothing to
// contract).
TEST_F(CudaGpu, ObjectsOfSeparableCompilationFusedEqualUnfused) {
  const std::string a = sk::cuda_test::kernel_path("cross_a.o"), b = sk::cuda_test::kernel_path("cross_b.o"),
                    c = sk::cuda_test::kernel_path("cross_c.o"), lib = sk::cuda_test::kernel_path("libcross.a"),
                    shared = sk::cuda_test::kernel_path("libcross_rdc.so");
  const std::vector<std::vector<const char *>> sets = {
      {a.c_str(), b.c_str(), c.c_str()}, {lib.c_str()}, {shared.c_str()}};
  const int n = 5000;
  const float factor = -1.75f, offset = 0.75f;
  std::vector<float> x(n);
  uint32_t seed = 99;
  for (float &v : x) v = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 4194304.0f - 2.0f;
  std::vector<float> expect(n);
  const float bias[4] = {0.25f, -0.5f, 1.0f, 2.0f};
  // Each product and sum rounded on its own, as the kernels' __fmul_rn and __fadd_rn (a volatile
  // keeps the compiler from contracting them into a fused multiply-add).
  auto activation = [](float v) {
    volatile float r = v > 0.0f ? v * 1.5f : v * 0.125f;
    return (float)r;
  };
  std::vector<float> applied(n);
  for (int i = 0; i < n; ++i) applied[i] = activation(x[i]) + bias[i % 4];
  // cross_normalize: each value plus its block's sum of squares, in cross_block_sum's tree.
  for (int block = 0; block * 128 < n; ++block) {
    float partial[128];
    for (int t = 0; t < 128; ++t) {
      const int i = block * 128 + t;
      const float v = i < n ? applied[i] : 0.0f;
      volatile float square = v * v;
      partial[t] = square;
    }
    for (int stride = 64; stride > 0; stride >>= 1)
      for (int t = 0; t < stride; ++t) partial[t] += partial[t + stride];
    for (int t = 0; t < 128 && block * 128 + t < n; ++t) applied[block * 128 + t] += partial[0];
  }
  for (int i = 0; i < n; ++i) {
    volatile float product = applied[i] * factor;
    volatile float moved = activation(product) + offset;
    expect[i] = moved * moved;
  }
  for (const auto &paths : sets) {
    SCOPED_TRACE(paths[0]);
    sk_module *mod = nullptr;
    ASSERT_EQ(sk_module_load_files(dev_, paths.data(), paths.size(), &mod), SK_OK) << sk_last_error();
    modules_.push_back(mod);
    sk_kernel *apply = nullptr, *normalize = nullptr, *scale = nullptr, *shift = nullptr, *square = nullptr;
    ASSERT_EQ(sk_module_get_kernel(mod, "cross_apply", &apply), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_module_get_kernel(mod, "cross_normalize", &normalize), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_module_get_kernel(mod, "cross_scale", &scale), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_module_get_kernel(mod, "_Z12cross_offsetIfEvPT_S0_i", &shift), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_module_get_kernel(mod, "cross_square", &square), SK_OK) << sk_last_error();
    const float *in = alloc(x);
    float *fused = alloc(std::vector<float>(n)), *alone = alloc(std::vector<float>(n));
    const uint32_t blocks = (n + 127) / 128;
    void *fused_apply[] = {&in, &fused, (void *)&n}, *fused_normalize[] = {&fused, &fused, (void *)&n},
         *fused_scale[] = {&fused, (void *)&factor, (void *)&n},
         *fused_shift[] = {&fused, (void *)&offset, (void *)&n}, *fused_square[] = {&fused, (void *)&n};
    ASSERT_NO_FATAL_FAILURE(run_fused("separable_compilation", {{apply, blocks, fused_apply},
                                                                {normalize, blocks, fused_normalize},
                                                                {scale, blocks, fused_scale},
                                                                {shift, blocks, fused_shift},
                                                                {square, blocks, fused_square}}));
    void *alone_apply[] = {&in, &alone, (void *)&n}, *alone_normalize[] = {&alone, &alone, (void *)&n},
         *alone_scale[] = {&alone, (void *)&factor, (void *)&n},
         *alone_shift[] = {&alone, (void *)&offset, (void *)&n}, *alone_square[] = {&alone, (void *)&n};
    ASSERT_EQ(sk_launch_kernel(apply, blocks, alone_apply, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch_kernel(normalize, blocks, alone_normalize, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch_kernel(scale, blocks, alone_scale, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch_kernel(shift, blocks, alone_shift, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch_kernel(square, blocks, alone_square, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    const std::vector<float> got = read(fused, n), plain = read(alone, n);
    EXPECT_EQ(std::memcmp(got.data(), expect.data(), n * 4), 0) << "fused != the CPU";
    EXPECT_EQ(std::memcmp(plain.data(), expect.data(), n * 4), 0) << "unfused != the CPU";
  }
}

// 1000 steps walk the step table of one small entry (two call sites, two argument shapes:
// every third step is tiny_add); its finalize time goes to the log.
TEST_F(CudaGpu, ThousandStepChainFusedEqualsUnfused) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  sk_kernel *add = kernel("tiny.cubin", "tiny_add");
  ASSERT_NE(step, nullptr);
  ASSERT_NE(add, nullptr);
  const uint32_t n = 4096;
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i;
  uint32_t *fused = alloc(init), *unfused = alloc(init);
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "chain1000", nullptr, &scope), SK_OK) << sk_last_error();
  // Uneven block counts (idle and multiplexed cores); tiny_add covers n with 32 blocks.
  auto blocks = [](uint32_t i) { return i % 3 ? 1 + (i * 13) % 64 : 32; };
  for (uint32_t i = 0; i < 1000; ++i) {
    void *args[] = {&fused, (void *)&n, &i};
    ASSERT_EQ(sk_add_kernel(scope, i % 3 ? step : add, blocks(i), args, nullptr), SK_OK) << sk_last_error();
  }
  sk_superkernel *sk = nullptr;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  std::printf("finalize of 1000 steps: %.1f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  for (int launch = 0; launch < 2; ++launch) {
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    for (uint32_t i = 0; i < 1000; ++i) {
      void *args[] = {&unfused, (void *)&n, &i};
      ASSERT_EQ(sk_launch_kernel(i % 3 ? step : add, blocks(i), args, nullptr), SK_OK) << sk_last_error();
    }
  }
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<uint32_t> expect = init;
  for (int launch = 0; launch < 2; ++launch)
    for (uint32_t i = 0; i < 1000; ++i)
      for (uint32_t &x : expect) x = i % 3 ? x * 3u + i : x + 1;
  EXPECT_EQ(read(fused, n), expect);
  EXPECT_EQ(read(unfused, n), expect);
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
  uint32_t *din = alloc(in), *partial = alloc(std::vector<uint32_t>(64, 0)),
           *marks = alloc(std::vector<uint32_t>(32, 0));
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

TEST_F(CudaGpu, FlagIdOutOfRangeFailsTheLaunchOnce) {
  sk_kernel *k = kernel("misc.cubin", "any_flag");
  ASSERT_NE(k, nullptr);
  uint32_t flag = 17;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "bad_flag", nullptr, &scope), SK_OK);
  void *args[] = {&flag};
  ASSERT_EQ(sk_add_kernel(scope, k, 2, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_device_synchronize(dev_), SK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sk_last_error()).find("(17): flag ids are 0..15"), std::string::npos) << sk_last_error();
  flag = 3;  // a valid id: the next launch runs
  ASSERT_EQ(sk_superkernel_set_arg(sk, 0, 0, &flag), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_device_synchronize(dev_), SK_OK) << sk_last_error();
  sk_superkernel_destroy(sk);
}

// A hang aborts its own launch only: a super kernel on another stream is not aborted, the sync
// of the hung one's stream reports it once, and its next launch starts from zeroed counters
// (the aborted barrier left one block's arrival behind, which would hang the next launch).
TEST_F(CudaGpu, AHangAbortsOnlyItsLaunchAndTheNextOneRuns) {
  sk_device_close(dev_);
  ASSERT_EQ(sk_device_open("cuda:0,timeout_ms=200", &dev_), SK_OK) << sk_last_error();
  sk_kernel *k = kernel("hang.cubin", "partial_sync");
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_TRUE(k && step);
  uint32_t *count = alloc(std::vector<uint32_t>(1, 0));
  const uint32_t n = 1024;
  uint32_t *dx = alloc(std::vector<uint32_t>(n, 1));
  uint32_t syncing = 1, zero = 0;
  void *hang_args[] = {&count, &syncing};
  void *step_args[] = {&dx, (void *)&n, &zero};
  sk_scope *scope = nullptr;
  sk_superkernel *hung = nullptr, *other = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "hung", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, k, 2, hang_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_finalize(scope, &hung), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_scope_begin(dev_, "other", nullptr, &scope), SK_OK);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(sk_add_kernel(scope, step, 8, step_args, nullptr), SK_OK);
  ASSERT_EQ(sk_finalize(scope, &other), SK_OK) << sk_last_error();
  sk_stream *s1 = nullptr, *s2 = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s1), SK_OK);
  ASSERT_EQ(sk_stream_create(dev_, &s2), SK_OK);
  ASSERT_EQ(sk_launch(hung, s1), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(other, s2), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(s2), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(s1), SK_ERR_HANG);
  EXPECT_NE(std::string(sk_last_error()).find("'hung'"), std::string::npos) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(s1), SK_OK) << sk_last_error();  // once
  EXPECT_EQ(read(count, 1)[0], 2u);  // the aborted launch still ran both blocks to the end
  uint32_t want = 1;
  for (int i = 0; i < 20; ++i) want *= 3u;  // 20 steps of x * 3 + 0, none aborted
  for (uint32_t v : read(dx, n)) ASSERT_EQ(v, want);
  syncing = 2;
  ASSERT_EQ(sk_superkernel_set_arg(hung, 0, 1, &syncing), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(hung, s1), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(s1), SK_OK) << sk_last_error();
  EXPECT_EQ(read(count, 1)[0], 4u);
  sk_superkernel_destroy(hung);
  sk_superkernel_destroy(other);
  sk_stream_destroy(s1);
  sk_stream_destroy(s2);
}

TEST_F(CudaGpu, StaticTilesAndDynamicSharedFuse) {
  // Two 24 KiB static tiles (48 KiB together), then 64 KiB and 4 KiB extern __shared__ arrays
  // (one launch-wide 64 KiB region past the opt-in), one block each, in one super kernel; from
  // the optimized build of shared.cu and from its device debug build (nvcc -G).
  for (const char *file : {"shared.cubin", "shared_debug.cubin"}) {
    SCOPED_TRACE(file);
    sk_module *mod = nullptr;
    ASSERT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path(file).c_str(), &mod), SK_OK) << sk_last_error();
    modules_.push_back(mod);
    sk_kernel *k[4] = {};
    const char *names[4] = {"tile_a", "tile_b", "dyn_big", "dyn_small"};
    for (int i = 0; i < 4; ++i) ASSERT_EQ(sk_module_get_kernel(mod, names[i], &k[i]), SK_OK) << sk_last_error();
    const uint32_t size = 16384, n = 128;
    std::vector<float> x(size);
    for (uint32_t i = 0; i < size; ++i) x[i] = (float)i;
    float *dx = alloc(x);
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "shared_memory", nullptr, &scope), SK_OK) << sk_last_error();
    void *two[] = {&dx, (void *)&n};
    void *one[] = {&dx};
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(sk_add_kernel(scope, k[i], 1, i < 2 ? two : one, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    // The same four steps on the CPU (tile_a / tile_b read the first n values, 128 threads).
    std::vector<float> old = x;
    for (uint32_t t = 0; t < 128; ++t) x[t] = old[(t * 7) % n];
    old = x;
    for (uint32_t t = 0; t < 128; ++t) x[t] = 2.0f * old[(t * 5) % n];
    old = x;
    for (uint32_t t = 0; t < 128; ++t) x[t] = old[size - 1 - t];
    old = x;
    for (uint32_t t = 0; t < 128; ++t) x[t] = old[127 - t];
    EXPECT_EQ(read(dx, size), x);
    sk_superkernel_destroy(sk);
  }
}

namespace {

// overlay.cu's and shared.cu's tile kernels on the CPU, one block of 128 threads, each phase
// (between two __syncthreads) for every thread before the next: what the GPU must compute
// when every variable one call tree reaches has its own place in the shared overlay.
void model_tile(std::vector<float> &x, uint32_t n, float scale, float add, uint32_t stride) {
  std::vector<float> tile(6144);
  for (uint32_t i = 0; i < 6144; ++i) tile[i] = x[i % n] * scale + add;
  for (uint32_t t = 0; t < 128; ++t) x[t] = tile[(t * stride) % 6144];
}
void model_two_arrays(std::vector<float> &x, uint32_t n) {
  std::vector<float> p(4096), q(2048);
  for (uint32_t i = 0; i < 4096; ++i) p[i] = x[i % n];
  for (uint32_t i = 0; i < 2048; ++i) q[i] = -2.0f * x[(i + 1) % n];
  for (uint32_t t = 0; t < 128; ++t) x[t] = p[4095 - t] + q[2047 - t] + p[t] * q[t];
}
// ring_a (b = false) and ring_b: their own array, then the helper's ring.
void model_ring(std::vector<float> &x, bool b) {
  const uint32_t size = b ? 3072 : 2048;
  std::vector<float> own(size), ring(128), old(x.begin(), x.begin() + 128);
  for (uint32_t k = 0; k < size; ++k) own[k] = b ? 2.0f * old[k % 128] - (float)k : old[k % 128] + (float)k;
  for (uint32_t t = 0; t < 128; ++t) ring[t] = old[t];
  for (uint32_t t = 0; t < 128; ++t) {
    const float r = ring[(t + 1) % 128];
    x[t] = b ? r * own[size - 1 - t] : r + own[size - 1 - t];
  }
}
// tile_then_reverse, whose call reaches shared.cu's reverse_in_shared.
void model_tile_then_reverse(std::vector<float> &x) {
  std::vector<float> tile(6144), line(128), old(x.begin(), x.begin() + 128);
  for (uint32_t k = 0; k < 6144; ++k) tile[k] = old[k % 128] * (float)(k & 7);
  for (uint32_t t = 0; t < 128; ++t) line[t] = old[t];
  for (uint32_t t = 0; t < 128; ++t) x[t] = line[127 - t] + tile[6143 - t];
}

}  // namespace

// Six sub-kernels of two modules whose static variables share the overlay (the three 24 KiB
// tiles lie over each other): fused == unfused == the CPU, one block each.
TEST_F(CudaGpu, StaticVariablesInTheSharedOverlayFusedEqualsUnfused) {
  sk_module *shared = nullptr, *overlay = nullptr;
  ASSERT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path("shared.cubin").c_str(), &shared), SK_OK)
      << sk_last_error();
  modules_.push_back(shared);
  ASSERT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path("overlay.cubin").c_str(), &overlay), SK_OK)
      << sk_last_error();
  modules_.push_back(overlay);
  const char *names[6] = {"tile_a", "tile_b", "tile_c", "two_arrays", "ring_a", "ring_b"};
  sk_kernel *k[6] = {};
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(sk_module_get_kernel(i < 2 ? shared : overlay, names[i], &k[i]), SK_OK) << names[i];
  const uint32_t size = 256, n = 128;
  std::vector<float> x(size);
  for (uint32_t i = 0; i < size; ++i) x[i] = (float)(i % 97);
  float *fused = alloc(x), *unfused = alloc(x);
  void *fused_two[] = {&fused, (void *)&n}, *fused_one[] = {&fused};
  void *unfused_two[] = {&unfused, (void *)&n}, *unfused_one[] = {&unfused};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "shared_overlay", nullptr, &scope), SK_OK) << sk_last_error();
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(sk_add_kernel(scope, k[i], 1, i < 4 ? fused_two : fused_one, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(sk_launch_kernel(k[i], 1, i < 4 ? unfused_two : unfused_one, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  model_tile(x, n, 1.0f, 0.0f, 7);
  model_tile(x, n, 2.0f, 0.0f, 5);
  model_tile(x, n, 1.0f, 3.0f, 3);
  model_two_arrays(x, n);
  model_ring(x, false);
  model_ring(x, true);
  EXPECT_EQ(read(fused, size), x);
  EXPECT_EQ(read(unfused, size), x);
  sk_superkernel_destroy(sk);
}

// A call into another module: shared.cu's helper's line lies apart from the caller's tile
// (tile_then_reverse links only beside a kernel of shared.cu, so fused only, against the CPU).
TEST_F(CudaGpu, AnotherModulesHelperKeepsItsOwnPlaceInTheOverlay) {
  sk_module *shared = nullptr, *overlay = nullptr;
  ASSERT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path("shared.cubin").c_str(), &shared), SK_OK)
      << sk_last_error();
  modules_.push_back(shared);
  ASSERT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path("overlay.cubin").c_str(), &overlay), SK_OK)
      << sk_last_error();
  modules_.push_back(overlay);
  sk_kernel *tile = nullptr, *caller = nullptr;
  ASSERT_EQ(sk_module_get_kernel(shared, "tile_a", &tile), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(overlay, "tile_then_reverse", &caller), SK_OK) << sk_last_error();
  const uint32_t n = 128;
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = (float)(i % 13) - 6.0f;
  float *dx = alloc(x);
  void *two[] = {&dx, (void *)&n}, *one[] = {&dx};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "helper_overlay", nullptr, &scope), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, tile, 1, two, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, caller, 1, one, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  model_tile(x, n, 1.0f, 0.0f, 7);
  model_tile_then_reverse(x);
  EXPECT_EQ(read(dx, n), x);
  sk_superkernel_destroy(sk);
}

TEST_F(CudaGpu, SyncAllInAHelperSpansEveryBlock) {
  sk_kernel *k = kernel("callgraph.cubin", "sync_in_helper");
  ASSERT_NE(k, nullptr);
  const uint32_t blocks = 16, v = 10;
  uint32_t *partial = alloc(std::vector<uint32_t>(1 + blocks, 0));
  void *args[] = {&partial, (void *)&v};
  ASSERT_EQ(sk_launch_kernel(k, blocks, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  uint32_t expect = 0;
  for (uint32_t b = 0; b < blocks; ++b) expect += v + b;
  EXPECT_EQ(read(partial, 1)[0], expect);
}

TEST_F(CudaGpu, ThirtyKiBOfArgumentsReachEverySubKernel) {
  sk_kernel *k = kernel("params.cubin", "many_args");  // 32 slots: 120 steps are 30 KiB
  ASSERT_NE(k, nullptr);
  const uint32_t steps = 120, blocks = 2;
  int64_t *out = alloc(std::vector<int64_t>(steps * blocks, -1));
  std::vector<int64_t *> outs(steps);
  std::vector<int64_t> v(31);
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "params30k", nullptr, &scope), SK_OK) << sk_last_error();
  for (uint32_t s = 0; s < steps; ++s) {
    outs[s] = out + s * blocks;
    v[0] = s;
    for (int i = 1; i < 31; ++i) v[i] = i;
    void *args[32] = {&outs[s]};
    for (int i = 0; i < 31; ++i) args[i + 1] = &v[i];
    ASSERT_EQ(sk_add_kernel(scope, k, blocks, args, nullptr), SK_OK) << sk_last_error();  // copies the values
  }
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  const std::vector<int64_t> got = read(out, steps * blocks);
  for (uint32_t s = 0; s < steps; ++s)
    for (uint32_t b = 0; b < blocks; ++b) EXPECT_EQ(got[s * blocks + b], (int64_t)s + 465) << "step " << s;
  sk_superkernel_destroy(sk);
}

// An engine's decode step: a super kernel launched while the application captures its own
// stream in global mode (through the driver API, as cudart would; the driver libsk loaded,
// $SK_CUDA_DRIVER_LIBRARY where scripts/gpu-check found it), the graph replayed 100 times,
// then one more sk_launch; bit for bit what the same runs of the kernels unfused give. In both
// orders: the super kernel's first launch inside the capture (libsk then zeroes its counters
// and writes its step table while the thread captures), and before it.
TEST_F(CudaGpu, ACapturedSuperKernelReplaysAHundredTimesAsUnfused) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  const char *driver = std::getenv("SK_CUDA_DRIVER_LIBRARY");
  void *cuda = dlopen(driver && *driver ? driver : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cuda, nullptr) << dlerror();
  auto fn = [cuda](const char *name) {
    void *f = dlsym(cuda, name);
    EXPECT_NE(f, nullptr) << name;
    return f;
  };
  using Ptr = void *;
  auto retain = reinterpret_cast<int (*)(Ptr *, int)>(fn("cuDevicePrimaryCtxRetain"));
  auto release = reinterpret_cast<int (*)(int)>(fn("cuDevicePrimaryCtxRelease_v2"));
  auto push = reinterpret_cast<int (*)(Ptr)>(fn("cuCtxPushCurrent_v2"));
  auto pop = reinterpret_cast<int (*)(Ptr *)>(fn("cuCtxPopCurrent_v2"));
  auto stream_create = reinterpret_cast<int (*)(Ptr *, unsigned)>(fn("cuStreamCreate"));
  auto stream_destroy = reinterpret_cast<int (*)(Ptr)>(fn("cuStreamDestroy_v2"));
  auto begin = reinterpret_cast<int (*)(Ptr, int)>(fn("cuStreamBeginCapture_v2"));
  auto end = reinterpret_cast<int (*)(Ptr, Ptr *)>(fn("cuStreamEndCapture"));
  auto instantiate = reinterpret_cast<int (*)(Ptr *, Ptr, unsigned long long)>(fn("cuGraphInstantiateWithFlags"));
  auto graph_launch = reinterpret_cast<int (*)(Ptr, Ptr)>(fn("cuGraphLaunch"));
  auto exec_destroy = reinterpret_cast<int (*)(Ptr)>(fn("cuGraphExecDestroy"));
  auto graph_destroy = reinterpret_cast<int (*)(Ptr)>(fn("cuGraphDestroy"));
  ASSERT_FALSE(::testing::Test::HasFailure());

  const uint32_t n = 5000, kernels = 10;
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i * 7u;
  for (const bool first_inside : {true, false}) {
    SCOPED_TRACE(first_inside ? "first launch inside the capture" : "first launch before the capture");
    uint32_t *fused = alloc(init), *unfused = alloc(init);
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "captured_chain", nullptr, &scope), SK_OK) << sk_last_error();
    for (uint32_t i = 0; i < kernels; ++i) {
      const uint32_t blocks = 1 + (i * 7) % 40;
      void *args[] = {&fused, (void *)&n, &i};
      ASSERT_EQ(sk_add_kernel(scope, step, blocks, args, nullptr), SK_OK) << sk_last_error();
    }
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();

    Ptr ctx = nullptr, engine = nullptr, graph = nullptr, exec = nullptr;
    ASSERT_EQ(retain(&ctx, 0), 0);
    ASSERT_EQ(push(ctx), 0);
    ASSERT_EQ(stream_create(&engine, 1 /* CU_STREAM_NON_BLOCKING */), 0);
    sk_stream *s = nullptr;
    ASSERT_EQ(sk_stream_create_cuda(dev_, engine, &s), SK_OK) << sk_last_error();
    int runs = 101;
    if (!first_inside) {
      ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();
      ASSERT_EQ(sk_stream_synchronize(s), SK_OK) << sk_last_error();
      ++runs;
    }
    ASSERT_EQ(begin(engine, 0 /* CU_STREAM_CAPTURE_MODE_GLOBAL */), 0);
    ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_stream_synchronize(s), SK_ERR_STATE);
    ASSERT_EQ(end(engine, &graph), 0) << "the capture was invalidated";
    ASSERT_EQ(instantiate(&exec, graph, 0), 0);
    for (int r = 0; r < 100; ++r) ASSERT_EQ(graph_launch(exec, engine), 0);
    ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(s), SK_OK) << sk_last_error();
    for (int run = 0; run < runs; ++run)
      for (uint32_t i = 0; i < kernels; ++i) {
        const uint32_t blocks = 1 + (i * 7) % 40;
        void *args[] = {&unfused, (void *)&n, &i};
        ASSERT_EQ(sk_launch_kernel(step, blocks, args, nullptr), SK_OK) << sk_last_error();
      }
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    std::vector<uint32_t> a = read(fused, n), b = read(unfused, n), expect = init;
    for (int run = 0; run < runs; ++run)
      for (uint32_t i = 0; i < kernels; ++i)
        for (uint32_t &x : expect) x = x * 3u + i;
    EXPECT_EQ(b, expect);
    EXPECT_EQ(a, b);
    sk_stream_destroy(s);
    EXPECT_EQ(exec_destroy(exec), 0);
    EXPECT_EQ(graph_destroy(graph), 0);
    EXPECT_EQ(stream_destroy(engine), 0);
    EXPECT_EQ(pop(&ctx), 0);
    EXPECT_EQ(release(0), 0);
    sk_superkernel_destroy(sk);
  }
}

// The guard idiom fused: threads past n return early and wait at libsk's barrier 15 while the
// others finish; n is no multiple of the block, and the first step is multiplexed.
TEST_F(CudaGpu, EarlyReturningThreadsFusedEqualUnfused) {
  sk_kernel *pairs = kernel("early_return.cubin", "early_return_pairs");
  ASSERT_NE(pairs, nullptr);
  const uint32_t n = 128 * 37 + 45;
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i * 2654435761u;
  uint32_t *in = alloc(init), *mid_f = alloc(std::vector<uint32_t>(n, 0)),
           *out_f = alloc(std::vector<uint32_t>(n, 0)), *mid_u = alloc(std::vector<uint32_t>(n, 0)),
           *out_u = alloc(std::vector<uint32_t>(n, 0));
  const uint32_t blocks = (n + 127) / 128;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "early_return", nullptr, &scope), SK_OK) << sk_last_error();
  void *a0[] = {&in, &mid_f, (void *)&n};
  void *a1[] = {&mid_f, &out_f, (void *)&n};
  ASSERT_EQ(sk_add_kernel(scope, pairs, blocks, a0, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, pairs, blocks, a1, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  void *u0[] = {&in, &mid_u, (void *)&n};
  void *u1[] = {&mid_u, &out_u, (void *)&n};
  ASSERT_EQ(sk_launch_kernel(pairs, blocks, u0, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(pairs, blocks, u1, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  // The CPU's reference: each block pairs its tile's neighbours, wrapping in the block.
  auto apply = [n](const std::vector<uint32_t> &x) {
    std::vector<uint32_t> y(n);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t base = i / 128 * 128, next = base + (i - base + 1) % 128;
      y[i] = x[i] * 2u + (next < n ? x[next] : 0u);
    }
    return y;
  };
  const std::vector<uint32_t> expect = apply(apply(init));
  EXPECT_EQ(read(out_u, n), expect);
  EXPECT_EQ(read(out_f, n), read(out_u, n));
  sk_superkernel_destroy(sk);
}

namespace {

// chain_step over `blocks[i]` blocks per step, bound to `x`.
sk_superkernel *chain_superkernel(sk_device *dev, sk_kernel *step, const char *name, uint32_t **x, const uint32_t *n,
                                  const std::vector<uint32_t> &blocks, sk_kernel *last = nullptr,
                                  void **last_args = nullptr) {
  sk_scope *scope = nullptr;
  EXPECT_EQ(sk_scope_begin(dev, name, nullptr, &scope), SK_OK) << sk_last_error();
  if (!scope) return nullptr;
  for (uint32_t i = 0; i < blocks.size(); ++i) {
    void *args[] = {x, (void *)n, &i};
    EXPECT_EQ(sk_add_kernel(scope, step, blocks[i], args, nullptr), SK_OK) << sk_last_error();
  }
  if (last) EXPECT_EQ(sk_add_kernel(scope, last, 1, last_args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  return sk;
}

// x = x * 3 + i for each step i, `runs` times.
void expect_chain(std::vector<uint32_t> *x, size_t steps, uint32_t runs) {
  for (uint32_t r = 0; r < runs; ++r)
    for (uint32_t i = 0; i < steps; ++i)
      for (uint32_t &v : *x) v = v * 3u + i;
}

}  // namespace

// One launch of n runs (the entry loops, with the iteration barrier between runs) computes
// what n launches of the same super kernel and n rounds of unfused launches do, bit for bit;
// the launch after it runs at the next epoch.
TEST_F(CudaGpu, RepeatOfNRunsEqualsNLaunches) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  const uint32_t n = 5000, runs = 7;
  const std::vector<uint32_t> blocks = {3, 40, 1, 17, 8, 29};  // idle and multiplexed cores
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i * 5u + 1;
  uint32_t *repeated = alloc(init), *launched = alloc(init), *unfused = alloc(init);
  sk_superkernel *a = chain_superkernel(dev_, step, "repeat_chain", &repeated, &n, blocks);
  sk_superkernel *b = chain_superkernel(dev_, step, "launched_chain", &launched, &n, blocks);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(sk_launch_repeat(a, runs, nullptr, nullptr), SK_OK) << sk_last_error();
  for (uint32_t r = 0; r < runs; ++r) {
    ASSERT_EQ(sk_launch(b, nullptr), SK_OK) << sk_last_error();
    for (uint32_t i = 0; i < blocks.size(); ++i) {
      void *args[] = {&unfused, (void *)&n, &i};
      ASSERT_EQ(sk_launch_kernel(step, blocks[i], args, nullptr), SK_OK) << sk_last_error();
    }
  }
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<uint32_t> expect = init;
  expect_chain(&expect, blocks.size(), runs);
  EXPECT_EQ(read(unfused, n), expect);
  EXPECT_EQ(read(launched, n), expect);
  EXPECT_EQ(read(repeated, n), expect);
  // Epochs go on: a plain launch, then another repeat.
  ASSERT_EQ(sk_launch(a, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_repeat(a, 3, nullptr, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  expect_chain(&expect, blocks.size(), 4);
  EXPECT_EQ(read(repeated, n), expect);
  sk_superkernel_destroy(a);
  sk_superkernel_destroy(b);
}

// A kernel sets the stop flag in run k: the loop ends after run k (not one run later), and a
// flag set before the launch ends it after its first run; a zero flag lets all n run.
TEST_F(CudaGpu, RepeatStopsAfterTheRunThatSetTheFlag) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  sk_kernel *stop = kernel("repeat.cubin", "count_and_stop");
  ASSERT_TRUE(step && stop);
  const uint32_t n = 3000, stop_at = 4;
  const std::vector<uint32_t> blocks = {12, 5, 33};
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i;
  uint32_t *x = alloc(init), *count = alloc(std::vector<uint32_t>{0}), *flag = alloc(std::vector<uint32_t>{0});
  void *stop_args[] = {&count, &flag, (void *)&stop_at};
  sk_superkernel *sk = chain_superkernel(dev_, step, "stopping_chain", &x, &n, blocks, stop, stop_args);
  ASSERT_NE(sk, nullptr);
  ASSERT_EQ(sk_launch_repeat(sk, 100, flag, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<uint32_t> expect = init;
  expect_chain(&expect, blocks.size(), stop_at);
  EXPECT_EQ(read(count, 1)[0], stop_at);
  EXPECT_EQ(read(flag, 1)[0], 1u);
  EXPECT_EQ(read(x, n), expect);
  ASSERT_EQ(sk_launch_repeat(sk, 10, flag, nullptr), SK_OK) << sk_last_error();  // already set: one run
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(read(count, 1)[0], stop_at + 1);
  const uint32_t zero = 0;
  ASSERT_EQ(sk_memcpy(dev_, flag, &zero, 4), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_repeat(sk, 3, flag, nullptr), SK_OK) << sk_last_error();  // stop_at is past: all 3
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(read(count, 1)[0], stop_at + 4);
  EXPECT_EQ(read(flag, 1)[0], 0u);
  expect_chain(&expect, blocks.size(), 4);
  EXPECT_EQ(read(x, n), expect);
  sk_superkernel_destroy(sk);
}

// Structs by value (aggregates.cu: passed as the PTX ABI passes them) and a position read by
// reference from device memory, written between launches: each launch's record equals an
// unfused launch given the position directly and the record the host makes of the values.
TEST_F(CudaGpu, AggregatesAndAPositionReadByReferenceFusedEqualUnfused) {
  sk_kernel *agg = kernel("aggregates.cubin", "cu_agg");
  ASSERT_NE(agg, nullptr);
  struct F2 {
    float x, y;
  } p{1.5f, -2.25f};
  struct DI {
    double d;
    int32_t i;
  } q{-3.0e100, -77};
  struct I5 {
    int32_t a[5];
  } r{{1, -20, 300, -4000, 50000}};
  struct CF {
    int8_t c;
    float f;
  } s{-9, 0.75f};
  int16_t h = -300;
  constexpr int32_t kLaunches = 4;
  unsigned char *fused = alloc(std::vector<unsigned char>(64 * kLaunches, 0));
  unsigned char *unfused = alloc(std::vector<unsigned char>(64 * kLaunches, 0));
  int32_t *pos = alloc(std::vector<int32_t>{0});
  void *args[] = {&fused, pos, &p, &q, &r, &s, &h};  // args[1]: where the position is read
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  o.arg_refs = 1u << 1;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "aggregates", nullptr, &scope), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, agg, 2, args, &o), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  std::vector<unsigned char> expect(64 * kLaunches, 0);
  for (int32_t t = 0; t < kLaunches; ++t) {
    ASSERT_EQ(sk_memcpy(dev_, pos, &t, sizeof t), SK_OK) << sk_last_error();  // after the launches queued
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    int32_t direct = t;
    void *unfused_args[] = {&unfused, &direct, &p, &q, &r, &s, &h};
    ASSERT_EQ(sk_launch_kernel(agg, 2, unfused_args, nullptr), SK_OK) << sk_last_error();
    unsigned char *e = expect.data() + 64 * t;
    for (const auto &[v, n] : std::initializer_list<std::pair<const void *, size_t>>{
             {&p.x, 4}, {&p.y, 4}, {&q.d, 8}, {&q.i, 4}, {r.a, 20}, {&s.c, 1}, {&s.f, 4}, {&h, 2}}) {
      std::memcpy(e, v, n);
      e += n;
    }
  }
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(read(fused, expect.size()), expect);
  EXPECT_EQ(read(unfused, expect.size()), expect);
  sk_superkernel_destroy(sk);
}

namespace {

// recursive.cu's recurse_mix on the CPU.
uint32_t recurse_mix(uint32_t depth, uint32_t v) {
  return depth == 0 ? v : (v + (depth & 7u)) ^ recurse_mix(depth - 1, v * 3u + 1u);
}

// deep_stack.cu's deep_frame_mix on the CPU.
uint32_t deep_frame_mix(const std::vector<uint32_t> &x, uint32_t i) {
  const uint32_t n = (uint32_t)x.size();
  std::vector<uint32_t> local(1536);
  for (uint32_t k = 0; k < 1536; ++k) local[k] = x[(i + k) % n] * (k | 1u);
  uint32_t s = 0;
  for (uint32_t k = 0; k < 1536; k += 1 + (local[k] & 3u)) s += local[(k * 7u + i) % 1536u];
  return s;
}

}  // namespace

// A sub-kernel whose helper recurses 40 deep (about 4 KiB of call stack a thread, past the
// 1 KiB a context starts with), fused after a chain step and launched unfused, on a device
// opened with stack_bytes: libsk raises the context's stack limit to it. == the CPU.
TEST_F(CudaGpu, ARecursiveSubKernelRunsWithTheStackBytesKey) {
  sk_device_close(dev_);
  ASSERT_EQ(sk_device_open("cuda:0,stack_bytes=8192", &dev_), SK_OK) << sk_last_error();
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  sk_kernel *rec = kernel("recursive.cubin", "recurse_sum");
  ASSERT_TRUE(step && rec);
  const uint32_t n = 128 * 24 + 5, depth = 40, zero = 0;
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i * 40503u + 7u;
  uint32_t *fused = alloc(init), *unfused = alloc(init);
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "recursion", nullptr, &scope), SK_OK) << sk_last_error();
  void *a[] = {&fused, (void *)&n, (void *)&zero}, *r[] = {&fused, (void *)&n, (void *)&depth};
  ASSERT_EQ(sk_add_kernel(scope, step, 25, a, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, rec, 25, r, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  void *ua[] = {&unfused, (void *)&n, (void *)&zero}, *ur[] = {&unfused, (void *)&n, (void *)&depth};
  ASSERT_EQ(sk_launch_kernel(step, 25, ua, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(rec, 25, ur, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<uint32_t> expect = init;
  for (uint32_t &x : expect) x = recurse_mix(depth, x * 3u);
  EXPECT_EQ(read(unfused, n), expect);
  EXPECT_EQ(read(fused, n), expect);
  sk_superkernel_destroy(sk);
}

// A helper with a 6 KiB local array: a call stack ptxas bounds, past the context's 1 KiB. The
// entry runs with the limit libsk raised at finalize. == the CPU.
TEST_F(CudaGpu, ADeepKnownStackRuns) {
  sk_kernel *deep = kernel("deep_stack.cubin", "deep_frame");
  ASSERT_NE(deep, nullptr);
  const uint32_t n = 128 * 8;
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i * 2246822519u + 3u;
  uint32_t *in = alloc(init), *out = alloc(std::vector<uint32_t>(n, 0));
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "deep_stack", nullptr, &scope), SK_OK) << sk_last_error();
  void *args[] = {&in, &out, (void *)&n};
  ASSERT_EQ(sk_add_kernel(scope, deep, 8, args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<uint32_t> expect(n);
  for (uint32_t i = 0; i < n; ++i) expect[i] = deep_frame_mix(init, i);
  EXPECT_EQ(read(out, n), expect);
  sk_superkernel_destroy(sk);
}

// A 48 KiB static tile, the most a block holds statically, fused with an extern __shared__
// kernel (the block opts in past 48 KiB) == unfused == the CPU; a 180 KiB extern array beside
// the tile does not fit an sm_90 block, and finalize says so, naming the reservation.
TEST_F(CudaGpu, AFortyEightKiBTileFusedEqualsUnfused) {
  sk_kernel *tile = kernel("tile48.cubin", "tile48");
  sk_kernel *huge = kernel("tile48.cubin", "dyn_huge");
  sk_kernel *small = kernel("shared.cubin", "dyn_small");
  ASSERT_TRUE(tile && huge && small);
  const uint32_t n = 128;
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = (float)(i % 29) - 3.0f;
  float *fused = alloc(x), *unfused = alloc(x);
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "tile48", nullptr, &scope), SK_OK) << sk_last_error();
  void *two[] = {&fused, (void *)&n}, *one[] = {&fused};
  ASSERT_EQ(sk_add_kernel(scope, tile, 1, two, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, small, 1, one, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  void *utwo[] = {&unfused, (void *)&n}, *uone[] = {&unfused};
  ASSERT_EQ(sk_launch_kernel(tile, 1, utwo, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(small, 1, uone, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<float> tile_words(12288), old = x;
  for (uint32_t i = 0; i < 12288; ++i) tile_words[i] = old[i % n] + (float)(i / n);
  for (uint32_t t = 0; t < 128; ++t) x[t] = tile_words[(t * 97u + 11u) % 12288u];
  old = x;
  for (uint32_t t = 0; t < 128; ++t) x[t] = old[127 - t];
  EXPECT_EQ(read(unfused, n), x);
  EXPECT_EQ(read(fused, n), x);
  sk_superkernel_destroy(sk);
  ASSERT_EQ(sk_scope_begin(dev_, "tile48_huge", nullptr, &scope), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, tile, 1, two, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, huge, 1, one, nullptr), SK_OK) << sk_last_error();
  sk = nullptr;
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE);
  EXPECT_NE(std::string(sk_last_error()).find("bytes the GPU reserves in every block"), std::string::npos)
      << sk_last_error();
  EXPECT_EQ(sk, nullptr);
}

// Each step reads, through the read-only path (__ldg, const __restrict__: ld.global.nc), words
// other blocks wrote in the step before, on lines its SM read two steps before; two blocks per
// SM, 24 steps, 3 launches. A stale line would make fused differ from unfused and the CPU: then
// libsk's barrier does not cover the non-coherent path.
TEST_F(CudaGpu, ReadOnlyLoadsSeeTheStepBeforesWrites) {
  sk_kernel *rotate = kernel("readonly.cubin", "ro_rotate");
  ASSERT_NE(rotate, nullptr);
  uint32_t sms = 0;
  ASSERT_EQ(sk_device_cores(dev_, &sms), SK_OK) << sk_last_error();
  const uint32_t blocks = 2 * sms, n = blocks * 128, steps = 24, launches = 3;
  std::vector<uint32_t> init(n);
  for (uint32_t i = 0; i < n; ++i) init[i] = i * 0x9E3779B1u;
  uint32_t *fa = alloc(init), *fb = alloc(init), *ua = alloc(init), *ub = alloc(init);
  auto shift = [n](uint32_t s) { return (s * 37u + 1u) * 131u % n; };
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "readonly", nullptr, &scope), SK_OK) << sk_last_error();
  std::vector<uint32_t> shifts(steps);
  for (uint32_t s = 0; s < steps; ++s) {
    shifts[s] = shift(s);
    void *args[] = {s % 2 ? &fb : &fa, s % 2 ? &fa : &fb, (void *)&n, &shifts[s]};
    ASSERT_EQ(sk_add_kernel(scope, rotate, blocks, args, nullptr), SK_OK) << sk_last_error();
  }
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  for (uint32_t l = 0; l < launches; ++l) {
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    for (uint32_t s = 0; s < steps; ++s) {
      void *args[] = {s % 2 ? &ub : &ua, s % 2 ? &ua : &ub, (void *)&n, &shifts[s]};
      ASSERT_EQ(sk_launch_kernel(rotate, blocks, args, nullptr), SK_OK) << sk_last_error();
    }
  }
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<uint32_t> a = init, b = init;
  for (uint32_t l = 0; l < launches; ++l)
    for (uint32_t s = 0; s < steps; ++s) {
      const std::vector<uint32_t> &in = s % 2 ? b : a;
      std::vector<uint32_t> &out = s % 2 ? a : b;
      for (uint32_t i = 0; i < n; ++i)
        out[i] = in[(i + shifts[s]) % n] * 2654435761u + in[(i + 2u * shifts[s] + 1u) % n] + shifts[s];
    }
  EXPECT_EQ(read(ua, n), a);
  EXPECT_EQ(read(ub, n), b);
  EXPECT_EQ(read(fa, n), a);
  EXPECT_EQ(read(fb, n), b);
  sk_superkernel_destroy(sk);
}

namespace {

// The driver, for launching PTX unfused as an engine does (cuModuleLoadData JIT-compiles it):
// the baseline a fused PTX kernel must equal bit for bit.
struct PtxDriver {
  void *lib = nullptr;
  int (*cuDeviceGet)(int *, int) = nullptr;
  int (*cuDevicePrimaryCtxRetain)(void **, int) = nullptr;
  int (*cuDevicePrimaryCtxRelease)(int) = nullptr;
  int (*cuCtxPushCurrent)(void *) = nullptr;
  int (*cuCtxPopCurrent)(void **) = nullptr;
  int (*cuModuleLoadData)(void **, const void *) = nullptr;
  int (*cuModuleUnload)(void *) = nullptr;
  int (*cuModuleGetFunction)(void **, void *, const char *) = nullptr;
  int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **) = nullptr;
  int (*cuLaunchCooperativeKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   void *, void **) = nullptr;
  int (*cuCtxSynchronize)() = nullptr;
  int (*cuDriverGetVersion)(int *) = nullptr;
  int (*cuFuncSetAttribute)(void *, int, int) = nullptr;
  int (*cuTensorMapEncodeTiled)(void *, int, uint32_t, void *, const uint64_t *, const uint64_t *, const uint32_t *,
                                const uint32_t *, int, int, int, int) = nullptr;
  void *ctx = nullptr;
  std::vector<void *> modules;

  bool open() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    auto get = [&](auto *fn, const char *name) {
      *fn = reinterpret_cast<std::decay_t<decltype(*fn)>>(dlsym(lib, name));
    };
    get(&cuDeviceGet, "cuDeviceGet");
    get(&cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(&cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    get(&cuCtxPushCurrent, "cuCtxPushCurrent_v2");
    get(&cuCtxPopCurrent, "cuCtxPopCurrent_v2");
    get(&cuModuleLoadData, "cuModuleLoadData");
    get(&cuModuleUnload, "cuModuleUnload");
    get(&cuModuleGetFunction, "cuModuleGetFunction");
    get(&cuLaunchKernel, "cuLaunchKernel");
    get(&cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel");
    get(&cuCtxSynchronize, "cuCtxSynchronize");
    get(&cuDriverGetVersion, "cuDriverGetVersion");
    get(&cuFuncSetAttribute, "cuFuncSetAttribute");
    get(&cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
    int dev = 0;
    return cuDeviceGet && cuDriverGetVersion && cuDeviceGet(&dev, 0) == 0 &&
           cuDevicePrimaryCtxRetain(&ctx, dev) == 0;
  }
  ~PtxDriver() {
    if (!lib) return;
    if (ctx && cuCtxPushCurrent(ctx) == 0) {
      for (void *m : modules) cuModuleUnload(m);
      void *popped = nullptr;
      cuCtxPopCurrent(&popped);
      cuDevicePrimaryCtxRelease(0);
    }
  }
  // The text as written, its .version lowered to what this driver's JIT compiles (the one change
  // libsk makes too, for nvJitLink).
  std::string for_jit(std::string text) const {
    int v = 0;
    cuDriverGetVersion(&v);
    const std::string isa =
        sk::cuda::ptx_isa_of_nvjitlink(std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10));
    const size_t at = text.find(".version ");
    if (!isa.empty() && at != std::string::npos) {
      const size_t end = text.find('\n', at);
      const std::string written = text.substr(at + 9, end - at - 9);
      if (std::stod(written) > std::stod(isa)) text.replace(at + 9, end - at - 9, isa);
    }
    return text;
  }
  // Launches kernel `name` of `ptx` unfused (args as sk_add_kernel takes them), on the legacy
  // stream, within the primary context; `threads` in blocks of block_y rows; `cooperative`, as
  // cg::this_grid().sync() needs.
  int launch(const std::string &ptx, const char *name, uint32_t grid, uint32_t threads, uint32_t shared, void **args,
             uint32_t grid_y = 1, uint32_t block_y = 1, bool cooperative = false, uint32_t block_z = 1) {
    if (cuCtxPushCurrent(ctx) != 0) return -1;
    const std::string text = for_jit(ptx);
    void *module = nullptr, *fn = nullptr;
    int r = cuModuleLoadData(&module, text.c_str());
    if (r == 0) modules.push_back(module);
    if (r == 0) r = cuModuleGetFunction(&fn, module, name);
    // Past 48 KiB a block opts in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), as Triton's launcher does.
    if (r == 0 && shared > 48 * 1024) r = cuFuncSetAttribute(fn, 8, (int)shared);
    if (r == 0 && cooperative)
      r = cuLaunchCooperativeKernel(fn, grid, grid_y, 1, threads / block_y / block_z, block_y, block_z, shared,
                                    nullptr, args);
    else if (r == 0)
      r = cuLaunchKernel(fn, grid, grid_y, 1, threads / block_y / block_z, block_y, block_z, shared, nullptr, args,
                         nullptr);
    if (r == 0) r = cuCtxSynchronize();
    void *popped = nullptr;
    cuCtxPopCurrent(&popped);
    return r;
  }
};

// One launch of a decode-step kernel: its PTX, launch shape, and argument values (8-byte slots:
// a pointer, or a 4-byte scalar in the low bytes, or a struct's bytes).
struct PtxStep {
  std::string ptx;
  const char *name;
  uint32_t grid, threads, shared;
  std::vector<uint64_t> slots;
  std::string fused_from;  // the module the super kernel loads where not `ptx`: the LTO-IR `ptx` came from
  std::vector<void *> args() {
    std::vector<void *> a;
    for (uint64_t &s : slots) a.push_back(&s);
    return a;
  }
};

uint64_t f32_slot(float f) {
  uint64_t s = 0;
  std::memcpy(&s, &f, 4);
  return s;
}
uint64_t ptr_slot(const void *p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

// Each decode-step kernel as Triton and nvcc compiled it: fused from its PTX (Triton's five
// 128-thread kernels in one super kernel, gemv reading what rmsnorm wrote; rope alone at 32
// threads; nvcc's six __global__ kernels from a plain nvcc -c object, an nvcc -dc object, LTO-IR
// and a shared library; two nvcc -rdc files that
// define the same weak template function and variable; kernels of several widths in one
// super kernel) == the same PTX launched
// unfused through the driver, bit for bit: as one program the driver's JIT compiled (explain
// says so), and Triton's linked (whole-program=0) too.
TEST_F(CudaGpu, PtxKernelsFusedEqualTheirPtxLaunchedByTheDriver) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr uint32_t B = 4, H = 1024, HEADS = 8, HD = 128, KV = 256, OUT = 1024, SEQ = 200;
  uint32_t seed = 12345;
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float &f : v) f = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
    return v;
  };
  const float *x = alloc(random(B * H)), *w = alloc(random(H)), *gate = alloc(random(B * H)),
              *up = alloc(random(B * H)), *q = alloc(random(B * HEADS * HD)),
              *k = alloc(random((size_t)B * KV * HEADS * HD)), *v = alloc(random((size_t)B * KV * HEADS * HD)),
              *wg = alloc(random((size_t)OUT * H)), *cs = alloc(random(B * HD / 2)), *sn = alloc(random(B * HD / 2));
  const float eps = 1e-6f, scale = 0.08838834764f;
  auto text = [](const std::string &path) {
    const std::vector<uint8_t> b = sk::cuda_test::read_file(path);
    return std::string(b.begin(), b.end());
  };
  const std::string triton = sk::cuda_test::triton_path(""),
                    nvcc = text(sk::cuda_test::kernel_path("decode_global.ptx"));
  struct Outputs {
    float *rms, *gemv, *silu, *add, *attn, *rope;
  };
  auto outputs = [&] {
    return Outputs{alloc(std::vector<float>(B * H)),          alloc(std::vector<float>(OUT)),
                   alloc(std::vector<float>(B * H)),          alloc(std::vector<float>(B * H)),
                   alloc(std::vector<float>(B * HEADS * HD)), alloc(std::vector<float>(B * HEADS * HD))};
  };
  const uint64_t null = 0;
  auto triton_steps = [&](const Outputs &o) {
    return std::vector<PtxStep>{
        {text(triton + "rmsnorm.ptx"),
         "rmsnorm_kernel",
         B,
         128,
         16,
         {ptr_slot(x), ptr_slot(w), ptr_slot(o.rms), H, f32_slot(eps), null, null}},
        {text(triton + "gemv.ptx"),
         "gemv_kernel",
         OUT / 16,
         128,
         512,
         {ptr_slot(wg), ptr_slot(o.rms), ptr_slot(o.gemv), OUT, H, null, null}},
        {text(triton + "silu_mul.ptx"),
         "silu_mul_kernel",
         B * H / 512,
         128,
         0,
         {ptr_slot(gate), ptr_slot(up), ptr_slot(o.silu), B * H, null, null}},
        {text(triton + "residual_add.ptx"),
         "residual_add_kernel",
         B * H / 512,
         128,
         0,
         {ptr_slot(x), ptr_slot(gate), ptr_slot(o.add), B * H, null, null}},
        {text(triton + "decode_attention.ptx"),
         "decode_attention_kernel",
         B * HEADS,
         128,
         2048,
         {ptr_slot(q), ptr_slot(k), ptr_slot(v), ptr_slot(o.attn), SEQ, HEADS, HD, KV, f32_slot(scale), null, null}},
    };
  };
  auto rope_steps = [&](const Outputs &o) {
    return std::vector<PtxStep>{
        {text(triton + "rope.ptx"),
         "rope_kernel",
         B * HEADS,
         32,
         0,
         {ptr_slot(q), ptr_slot(cs), ptr_slot(sn), ptr_slot(o.rope), HEADS, HD, null, null}}};
  };
  // Each kernel's threads per block, in step order (rmsnorm, gemv, silu_mul, residual_add,
  // attention, rope).
  using Widths = std::array<uint32_t, 6>;
  auto nvcc_steps = [&](const Outputs &o, Widths t = {128, 128, 128, 128, 128, 128}) {
    uint64_t rope_shape[2] = {0, 0};
    const int32_t shape[3] = {(int32_t)HEADS, (int32_t)HD, (int32_t)B};
    std::memcpy(rope_shape, shape, sizeof shape);
    return std::vector<PtxStep>{
        {nvcc, "rmsnorm_global", B, t[0], 0, {ptr_slot(x), ptr_slot(w), ptr_slot(o.rms), H, f32_slot(eps)}},
        {nvcc, "gemv_global", 32, t[1], 0, {ptr_slot(wg), ptr_slot(o.rms), ptr_slot(o.gemv), OUT, H}},
        {nvcc, "silu_mul_global", 16, t[2], 0, {ptr_slot(gate), ptr_slot(up), ptr_slot(o.silu), B * H}},
        {nvcc, "residual_add_global", B * H / t[3], t[3], 0, {ptr_slot(x), ptr_slot(gate), ptr_slot(o.add), B * H}},
        {nvcc,
         "decode_attention_global",
         B * HEADS,
         t[4],
         SEQ * 4,
         {ptr_slot(q), ptr_slot(k), ptr_slot(v), ptr_slot(o.attn), SEQ, HEADS, HD, KV, f32_slot(scale)}},
        {nvcc,
         "rope_global",
         B * HEADS,
         t[5],
         0,
         {ptr_slot(q), ptr_slot(cs), ptr_slot(sn), ptr_slot(o.rope), rope_shape[0], rope_shape[1]}},
    };
  };
  auto compare = [&](const Outputs &a, const Outputs &b, const char *what) {
    const std::pair<const float *, const float *> pairs[] = {{a.rms, b.rms}, {a.gemv, b.gemv}, {a.silu, b.silu},
                                                             {a.add, b.add}, {a.attn, b.attn}, {a.rope, b.rope}};
    const size_t sizes[] = {B * H, OUT, B * H, B * H, B * HEADS * HD, B * HEADS * HD};
    for (size_t i = 0; i < 6; ++i) {
      const std::vector<float> fa = read(pairs[i].first, sizes[i]), fb = read(pairs[i].second, sizes[i]);
      EXPECT_EQ(std::memcmp(fa.data(), fb.data(), sizes[i] * 4), 0) << what << ": output " << i;
    }
  };
  // The fused runs: each group of one thread width is one super kernel, compiled as one program
  // by the driver's JIT (PTX sub-kernels alone), or linked under `options` "whole-program=0".
  auto fuse = [&](std::vector<PtxStep> steps, const char *name, const char *options = nullptr) {
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, name, options, &scope), SK_OK) << sk_last_error();
    for (PtxStep &s : steps) {
      sk_kernel *kernel = ptx_kernel(s.fused_from.empty() ? s.ptx : s.fused_from, s.name,
                                     {sizeof(sk_kernel_desc), nullptr, s.threads, s.shared});
      ASSERT_NE(kernel, nullptr) << s.name;
      std::vector<void *> args = s.args();
      ASSERT_EQ(sk_add_kernel(scope, kernel, s.grid, args.data(), nullptr), SK_OK)
          << s.name << ": " << sk_last_error();
    }
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    size_t need = 0;
    ASSERT_EQ(sk_superkernel_explain(sk, nullptr, 0, &need), SK_OK);
    std::string json(need, '\0');
    ASSERT_EQ(sk_superkernel_explain(sk, json.data(), need, nullptr), SK_OK) << sk_last_error();
    const bool linked = options && std::strstr(options, "whole-program=0");
    EXPECT_TRUE(json.find(linked ? R"("compiled":"linked")" : R"("compiled":"whole program")") != std::string::npos)
        << name << ": " << json.substr(0, json.find("\"sub_kernels\""));
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    sk_superkernel_destroy(sk);
  };
  auto unfused = [&](std::vector<PtxStep> steps) {
    for (PtxStep &s : steps) {
      std::vector<void *> args = s.args();
      ASSERT_EQ(drv.launch(s.ptx, s.name, s.grid, s.threads, s.shared, args.data()), 0) << s.name;
    }
  };
  const Outputs fused = outputs(), alone = outputs(), fused_mixed_widths = outputs();
  ASSERT_NO_FATAL_FAILURE(fuse(triton_steps(fused), "triton_decode_step"));
  ASSERT_NO_FATAL_FAILURE(fuse(rope_steps(fused), "triton_rope"));
  ASSERT_NO_FATAL_FAILURE(unfused(triton_steps(alone)));
  ASSERT_NO_FATAL_FAILURE(unfused(rope_steps(alone)));
  compare(fused, alone, "Triton");
  const Outputs linked = outputs();
  ASSERT_NO_FATAL_FAILURE(fuse(triton_steps(linked), "triton_decode_step_linked", "whole-program=0"));
  ASSERT_NO_FATAL_FAILURE(fuse(rope_steps(linked), "triton_rope_linked", "whole-program=0"));
  compare(linked, alone, "Triton, linked");
  const Outputs fused_nvcc = outputs(), alone_nvcc = outputs();
  ASSERT_NO_FATAL_FAILURE(fuse(nvcc_steps(fused_nvcc), "global_decode_step"));
  ASSERT_NO_FATAL_FAILURE(unfused(nvcc_steps(alone_nvcc)));
  compare(fused_nvcc, alone_nvcc, "nvcc __global__");
  // The same kernels compiled to LTO-IR (nvcc -dc -dlto -ltoir): fused from the IR == the PTX it
  // links to alone (what libsk reads its __global__ kernels from), launched by the driver.
  // `to_ir` makes steps of a PTX fixture those of its LTO-IR.
  const size_t target = nvcc.find(".target ");
  ASSERT_NE(target, std::string::npos);
  const std::string arch = nvcc.substr(target + 8, nvcc.find_first_of(" \n", target + 8) - target - 8);
  std::shared_ptr<const sk::cuda::NvJitLink> linker;
  ASSERT_EQ(sk::cuda::NvJitLink::get(&linker), SK_OK) << sk_last_error();
  std::map<std::string, std::pair<std::string, std::string>> ir_of;  // PTX fixture -> its IR, the IR's PTX
  for (const char *name : {"decode_global", "rdc_sum", "rdc_scale"}) {
    const std::vector<uint8_t> ir =
        sk::cuda_test::read_file(sk::cuda_test::kernel_path(std::string(name) + ".ltoir"));
    std::string ptx;
    ASSERT_EQ(linker->lto_to_ptx({sk::cuda::InputKind::LtoIr, ir.data(), ir.size(), name}, arch, &ptx), SK_OK)
        << sk_last_error();
    ir_of[text(sk::cuda_test::kernel_path(std::string(name) + ".ptx"))] = {std::string(ir.begin(), ir.end()), ptx};
  }
  auto to_ir = [&](std::vector<PtxStep> steps) {
    for (PtxStep &s : steps) {
      const auto &[ir, ptx] = ir_of.at(s.ptx);
      s.ptx = ptx, s.fused_from = ir;
    }
    return steps;
  };
  // nvcc's decode step fused from `source` (the bytes libsk loads) == `ptx` launched by the driver.
  auto fused_from = [&](const std::string &source, const std::string &ptx, const char *name, const char *what) {
    auto steps = [&](const Outputs &o) {
      std::vector<PtxStep> v = nvcc_steps(o);
      for (PtxStep &s : v) s.ptx = ptx, s.fused_from = source;
      return v;
    };
    const Outputs fused = outputs(), alone = outputs();
    ASSERT_NO_FATAL_FAILURE(fuse(steps(fused), name));
    ASSERT_NO_FATAL_FAILURE(unfused(steps(alone)));
    compare(fused, alone, what);
  };
  // Text of PTX bytes, without the NUL padding a fatbinary entry ends with.
  auto ptx_text = [](const std::vector<uint8_t> &b) {
    std::string t(b.begin(), b.end());
    t.erase(t.find_last_not_of('\0') + 1);
    return t;
  };
  const auto &[decode_ir, decode_ir_ptx] = ir_of.at(nvcc);
  ASSERT_NO_FATAL_FAILURE(
      fused_from(decode_ir, decode_ir_ptx, "lto_ir_global_decode_step", "nvcc -dc -dlto -ltoir __global__"));
  // And as nvcc -dc writes them (CMake's CUDA_SEPARABLE_COMPILATION): a relocatable cubin, whose
  // __global__ kernels cannot be called, and the PTX beside it, which libsk reads; == that PTX
  // launched by the driver.
  {
    const std::vector<uint8_t> object = sk::cuda_test::read_file(sk::cuda_test::kernel_path("decode_global_rdc.o"));
    std::vector<uint8_t> code;
    std::string what;
    bool is_ptx = false;
    ASSERT_EQ(sk::elf::extract_fatbin_code(object.data(), object.size(), "decode_global_rdc.o", arch, false, &code,
                                           &what, &is_ptx),
              SK_OK)
        << sk_last_error();
    ASSERT_TRUE(is_ptx) << what;
    ASSERT_NO_FATAL_FAILURE(fused_from(std::string(object.begin(), object.end()), ptx_text(code),
                                       "rdc_object_global_decode_step", "nvcc -dc object __global__"));
  }
  // And from a shared library of nvcc -shared (libdecode_two.so), whose kernels are linked SASS:
  // from decode_global.cu's translation unit's PTX, == that PTX launched by the driver.
  {
    const std::vector<uint8_t> lib = sk::cuda_test::read_file(sk::cuda_test::kernel_path("libdecode_two.so"));
    std::vector<sk::elf::FatbinEntry> units, sass;
    uint32_t count = 0;
    ASSERT_EQ(sk::elf::linked_code_entries(lib.data(), lib.size(), "libdecode_two.so", arch, &units, &sass, &count),
              SK_OK)
        << sk_last_error();
    std::string unit_ptx;
    for (const sk::elf::FatbinEntry &u : units) {
      std::vector<uint8_t> bytes;
      ASSERT_EQ(sk::elf::fatbin_entry_bytes(u, "libdecode_two.so", &bytes), SK_OK) << sk_last_error();
      if (const std::string t = ptx_text(bytes); t.find(".entry rmsnorm_global(") != std::string::npos) unit_ptx = t;
    }
    ASSERT_FALSE(unit_ptx.empty());
    ASSERT_NO_FATAL_FAILURE(fused_from(std::string(lib.begin(), lib.end()), unit_ptx, "shared_library_decode_step",
                                       "nvcc -shared library __global__"));
  }
  // Several widths in one super kernel: Triton's rope (one warp) with its four-warp kernels, and
  // nvcc's kernels at 256, 128 and 64 threads, each launched alone at its own.
  std::vector<PtxStep> triton_mixed = triton_steps(fused_mixed_widths), rope_mixed = rope_steps(fused_mixed_widths);
  triton_mixed.insert(triton_mixed.end(), rope_mixed.begin(), rope_mixed.end());
  ASSERT_NO_FATAL_FAILURE(fuse(triton_mixed, "triton_two_widths"));
  compare(fused_mixed_widths, alone, "Triton, rope's one warp beside four");
  const Widths widths = {256, 128, 64, 256, 128, 128};
  const Outputs fused_nvcc_widths = outputs(), alone_nvcc_widths = outputs();
  ASSERT_NO_FATAL_FAILURE(fuse(nvcc_steps(fused_nvcc_widths, widths), "global_three_widths"));
  ASSERT_NO_FATAL_FAILURE(unfused(nvcc_steps(alone_nvcc_widths, widths)));
  compare(fused_nvcc_widths, alone_nvcc_widths, "nvcc __global__ at 256, 128 and 64 threads");
  // One kernel at three widths in one super kernel: the original at the block's, and a copy per
  // narrower count, each compared with a plain launch at its width.
  auto rmsnorm_widths = [&](const Outputs &o) {
    return std::vector<PtxStep>{
        {nvcc, "rmsnorm_global", B, 256, 0, {ptr_slot(x), ptr_slot(w), ptr_slot(o.rms), H, f32_slot(eps)}},
        {nvcc, "rmsnorm_global", B, 128, 0, {ptr_slot(x), ptr_slot(w), ptr_slot(o.silu), H, f32_slot(eps)}},
        {nvcc, "rmsnorm_global", B, 64, 0, {ptr_slot(x), ptr_slot(w), ptr_slot(o.add), H, f32_slot(eps)}}};
  };
  const Outputs fused_rmsnorm = outputs(), alone_rmsnorm = outputs();
  ASSERT_NO_FATAL_FAILURE(fuse(rmsnorm_widths(fused_rmsnorm), "one_kernel_three_widths"));
  ASSERT_NO_FATAL_FAILURE(unfused(rmsnorm_widths(alone_rmsnorm)));
  compare(fused_rmsnorm, alone_rmsnorm, "rmsnorm_global at 256, 128 and 64 threads in one super kernel");
  // Two files of nvcc -rdc=true, each defining the same weak template function and variable
  // (rdc_shared.cuh): one program that keeps one of each, as a link would.
  auto rdc_steps = [&](const float *sums, const float *scaled) {
    return std::vector<PtxStep>{{text(sk::cuda_test::kernel_path("rdc_sum.ptx")),
                                 "rdc_sum",
                                 B * H / 32,
                                 32,
                                 0,
                                 {ptr_slot(x), ptr_slot(sums)}},
                                {text(sk::cuda_test::kernel_path("rdc_scale.ptx")),
                                 "rdc_scale",
                                 B * H / 32,
                                 32,
                                 0,
                                 {ptr_slot(x), ptr_slot(scaled)}}};
  };
  const float *rdc_fused[2] = {alloc(std::vector<float>(B * H / 32)), alloc(std::vector<float>(B * H))},
              *rdc_alone[2] = {alloc(std::vector<float>(B * H / 32)), alloc(std::vector<float>(B * H))};
  ASSERT_NO_FATAL_FAILURE(fuse(rdc_steps(rdc_fused[0], rdc_fused[1]), "rdc_weak_definitions"));
  ASSERT_NO_FATAL_FAILURE(unfused(rdc_steps(rdc_alone[0], rdc_alone[1])));
  for (size_t i = 0; i < 2; ++i) {
    const size_t n = i ? B * H : B * H / 32;
    const std::vector<float> f = read(rdc_fused[i], n), a = read(rdc_alone[i], n);
    EXPECT_EQ(std::memcmp(f.data(), a.data(), n * 4), 0) << "nvcc -rdc: output " << i;
  }
  // The same two files as LTO-IR: each IR's PTX keeps its own copy of the template function and
  // the variable weak; the one program keeps one variable.
  const float *rdc_lto_fused[2] = {alloc(std::vector<float>(B * H / 32)), alloc(std::vector<float>(B * H))},
              *rdc_lto_alone[2] = {alloc(std::vector<float>(B * H / 32)), alloc(std::vector<float>(B * H))};
  ASSERT_NO_FATAL_FAILURE(fuse(to_ir(rdc_steps(rdc_lto_fused[0], rdc_lto_fused[1])), "lto_ir_weak_definitions"));
  ASSERT_NO_FATAL_FAILURE(unfused(to_ir(rdc_steps(rdc_lto_alone[0], rdc_lto_alone[1]))));
  for (size_t i = 0; i < 2; ++i) {
    const size_t n = i ? B * H : B * H / 32;
    const std::vector<float> f = read(rdc_lto_fused[i], n), a = read(rdc_lto_alone[i], n);
    EXPECT_EQ(std::memcmp(f.data(), a.data(), n * 4), 0) << "nvcc -dc -dlto -ltoir: output " << i;
  }
  // Triton's wgmma projection of the normed rows after nvcc's rmsnorm, whose static __shared__
  // variables come before the projection's tiles in the super kernel's shared memory: the tiles
  // are swizzled on absolute addresses, so they must start where a plain launch starts them.
  auto projection_steps = [&](const Outputs &o, const float *projected) {
    return std::vector<PtxStep>{
        {nvcc, "rmsnorm_global", B, 128, 0, {ptr_slot(x), ptr_slot(w), ptr_slot(o.rms), H, f32_slot(eps)}},
        {text(triton + "project.ptx"),
         "project_kernel",
         OUT / 64,
         128,
         49152,
         {ptr_slot(o.rms), ptr_slot(wg), ptr_slot(projected), B, OUT, H, null, null}}};
  };
  const Outputs fused_mix = outputs(), alone_mix = outputs();
  const float *fused_projected = alloc(std::vector<float>(B * OUT)),
              *alone_projected = alloc(std::vector<float>(B * OUT));
  ASSERT_NO_FATAL_FAILURE(fuse(projection_steps(fused_mix, fused_projected), "rmsnorm_then_projection"));
  ASSERT_NO_FATAL_FAILURE(unfused(projection_steps(alone_mix, alone_projected)));
  const std::vector<float> fp = read(fused_projected, B * OUT), ap = read(alone_projected, B * OUT);
  EXPECT_EQ(std::memcmp(fp.data(), ap.data(), fp.size() * 4), 0) << "the projection fused after rmsnorm";
  double largest = 0;
  for (float v : ap) largest = std::max(largest, (double)std::fabs(v));
  EXPECT_GT(largest, 0.0) << "the projection computed something";

  // Triton's program_id(1): a 4 x 4 grid, fused with its shape and launched unfused with it by
  // libsk, equals the driver's launch of (4, 4) blocks, and the CPU (x + 1 in every element).
  const std::string planes = text(triton + "grid2d.ptx");
  const std::vector<float> rows = random(B * H);
  const float *in = alloc(rows);
  float *by_driver = alloc(std::vector<float>(B * H)), *by_fused = alloc(std::vector<float>(B * H)),
        *by_unfused = alloc(std::vector<float>(B * H));
  auto grid_args = [&](float *out) {
    return PtxStep{planes, "grid2d_kernel", H / 256, 128, 0, {ptr_slot(in), ptr_slot(out), H, null, null}};
  };
  PtxStep driver_step = grid_args(by_driver), fused_step = grid_args(by_fused), unfused_step = grid_args(by_unfused);
  std::vector<void *> driver_args = driver_step.args(), fused_args = fused_step.args(),
                      unfused_args = unfused_step.args();
  ASSERT_EQ(drv.launch(planes, "grid2d_kernel", H / 256, 128, 0, driver_args.data(), B), 0);
  sk_module *plane_mod = nullptr;
  ASSERT_EQ(sk_module_load(dev_, planes.data(), planes.size(), &plane_mod), SK_OK) << sk_last_error();
  modules_.push_back(plane_mod);
  sk_kernel *plane = nullptr;
  ASSERT_EQ(sk_module_get_kernel(plane_mod, "grid2d_kernel", &plane), SK_OK) << sk_last_error();
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "planes", nullptr, &scope), SK_OK);
  sk_kernel_options shaped = SK_KERNEL_OPTIONS_INIT;
  shaped.grid[0] = H / 256, shaped.grid[1] = B, shaped.grid[2] = 1;
  ASSERT_EQ(sk_add_kernel(scope, plane, H / 256 * B, fused_args.data(), &shaped), SK_OK) << sk_last_error();
  sk_superkernel *fused_planes = nullptr;
  ASSERT_EQ(sk_finalize(scope, &fused_planes), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(fused_planes, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel_grid(plane, shaped.grid, unfused_args.data(), nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  sk_superkernel_destroy(fused_planes);
  const std::vector<float> d = read(by_driver, B * H), f = read(by_fused, B * H), u = read(by_unfused, B * H);
  EXPECT_EQ(std::memcmp(d.data(), f.data(), d.size() * 4), 0) << "a 4 x 4 grid fused";
  EXPECT_EQ(std::memcmp(d.data(), u.data(), d.size() * 4), 0) << "a 4 x 4 grid unfused by libsk";
  for (size_t i = 0; i < rows.size(); ++i)
    if (d[i] != rows[i] + 1.0f) {
      ADD_FAILURE() << "element " << i << ": " << d[i] << " != " << rows[i] << " + 1";
      break;
    }
}

// Kernels launched with two-dimensional blocks whose PTX does not give the shape
// (block2d.cu, as llama.cpp's mul_mat_vec_q): fused in one super kernel with the shape given
// (sk_kernel_desc.block), == the driver's launches with that blockDim == the CPU, bit for bit;
// a three-dimensional one too, narrower than its super kernel's block.
TEST_F(CudaGpu, TwoDimensionalBlocksFusedEqualTheirPlainLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr uint32_t kBlocks = 8, kCols = 32, kRowsPerBlock = 4, kThreads = kCols * kRowsPerBlock;
  constexpr uint32_t kN = kBlocks * kThreads;
  std::vector<float> in(kN);
  for (uint32_t i = 0; i < kN; ++i) in[i] = (float)(i * 7 % 101) * 0.125f - 6.0f;
  std::vector<float> scaled(kN), sums(kBlocks, 0.0f);
  for (uint32_t i = 0; i < kN; ++i) scaled[i] = std::fmaf(in[i], 1.0f + (float)(i / kCols % kRowsPerBlock), 4.0f);
  for (uint32_t b = 0; b < kBlocks; ++b)
    for (uint32_t t = 0; t < kThreads; ++t) sums[b] += in[b * kThreads + t];
  const std::string ptx = sk::cuda_test::kernel_text("block2d.ptx");
  const float *x = alloc(in);
  uint64_t xs = ptr_slot(x);
  int32_t n_cols = kCols;
  struct Out {
    float *scaled, *sums, *copied;
  };
  auto outputs = [&] {
    return Out{alloc(std::vector<float>(kN)), alloc(std::vector<float>(kBlocks)), alloc(std::vector<float>(kN))};
  };
  const Out plain = outputs(), fused = outputs();
  uint64_t ps = ptr_slot(plain.scaled), pu = ptr_slot(plain.sums), pc = ptr_slot(plain.copied);
  void *a0[] = {&xs, &ps, &n_cols}, *a1[] = {&xs, &pu}, *a2[] = {&xs, &pc};
  ASSERT_EQ(drv.launch(ptx, "scale_rows_2d", kBlocks, kThreads, 0, a0, 1, kRowsPerBlock), 0);
  ASSERT_EQ(drv.launch(ptx, "sum_blocks_2d", kBlocks, kThreads, 0, a1, 1, kRowsPerBlock), 0);
  ASSERT_EQ(drv.launch(ptx, "copy_1d", kBlocks, kThreads, 0, a2), 0);

  const sk_kernel_desc two_d{sizeof two_d, nullptr, 0, 0, {kCols, kRowsPerBlock, 1}},
      one_d{sizeof one_d, nullptr, 0, 0, {kThreads, 1, 1}};
  sk_kernel *scale = ptx_kernel(ptx, "scale_rows_2d", two_d), *sum = ptx_kernel(ptx, "sum_blocks_2d", two_d),
            *copy = ptx_kernel(ptx, "copy_1d", one_d);
  ASSERT_TRUE(scale && sum && copy);
  uint64_t fs = ptr_slot(fused.scaled), fu = ptr_slot(fused.sums), fc = ptr_slot(fused.copied);
  void *f0[] = {&xs, &fs, &n_cols}, *f1[] = {&xs, &fu}, *f2[] = {&xs, &fc};
  ASSERT_NO_FATAL_FAILURE(run_fused("block2d", {{scale, kBlocks, f0}, {sum, kBlocks, f1}, {copy, kBlocks, f2}}));
  auto same = [&](const float *a, const float *b, const std::vector<float> &cpu, const char *what) {
    const std::vector<float> va = read(a, cpu.size()), vb = read(b, cpu.size());
    EXPECT_EQ(std::memcmp(va.data(), vb.data(), cpu.size() * 4), 0) << what << ": fused != the driver's launch";
    EXPECT_EQ(std::memcmp(va.data(), cpu.data(), cpu.size() * 4), 0) << what << ": the driver's launch != the CPU";
  };
  same(plain.scaled, fused.scaled, scaled, "scale_rows_2d");
  same(plain.sums, fused.sums, sums, "sum_blocks_2d");
  same(plain.copied, fused.copied, in, "copy_1d");
  // A (32, 2, 2) block, on the first 128 threads of a super kernel's 256 (copy_1d's): blockDim.z
  // is the kernel's 2, not the block's threads / 64.
  const Out deep_plain = outputs(), deep_fused = outputs();
  uint64_t dp = ptr_slot(deep_plain.sums), dc = ptr_slot(deep_plain.copied), qp = ptr_slot(deep_fused.sums),
           qc = ptr_slot(deep_fused.copied);
  void *d1[] = {&xs, &dp}, *d2[] = {&xs, &dc}, *q1[] = {&xs, &qp}, *q2[] = {&xs, &qc};
  ASSERT_EQ(drv.launch(ptx, "sum_blocks_2d", kBlocks, kThreads, 0, d1, 1, 2, false, 2), 0);
  ASSERT_EQ(drv.launch(ptx, "copy_1d", kBlocks / 2, 2 * kThreads, 0, d2), 0);
  const sk_kernel_desc three_d{sizeof three_d, nullptr, 0, 0, {kCols, 2, 2}},
      wide{sizeof wide, nullptr, 0, 0, {2 * kThreads, 1, 1}};
  sk_kernel *deep = ptx_kernel(ptx, "sum_blocks_2d", three_d), *copy_wide = ptx_kernel(ptx, "copy_1d", wide);
  ASSERT_TRUE(deep && copy_wide);
  ASSERT_NO_FATAL_FAILURE(run_fused("block3d_narrow", {{deep, kBlocks, q1}, {copy_wide, kBlocks / 2, q2}}));
  same(deep_plain.sums, deep_fused.sums, sums, "sum_blocks_2d in (32, 2, 2) of 256");
  same(deep_plain.copied, deep_fused.copied, in, "copy_1d at 256");
}

// Kernels written for programmatic dependent launch (dependent_launch.cu, as llama.cpp writes its
// kernels for sm_90), fused with each griddepcontrol.wait the step's early start: pdl_mirror
// reads what other blocks of pdl_scale wrote, after an early return and a wait in a helper;
// pdl_weighted loads its weight before its wait; in pdl_one_waits thread 0 alone waits. Many
// more blocks than the super kernel's, so a block runs the next step's head while others still
// run the step before. With early start and without (early-start=0: each step waits at its
// start) == the driver's plain launches of the same PTX (where the wait returns at once) == the
// CPU, bit for bit.
TEST_F(CudaGpu, DependentLaunchKernelsFusedEqualTheirPlainLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr int32_t kN = 256 * 1024 - 3;  // a partial last block: its threads past the end return
  constexpr uint32_t kBlocks = (kN + 127) / 128;
  std::vector<float> in(kN), w(kN), mid(kN), mirrored(kN), weighted(kN), sums(kBlocks, 0.0f);
  for (int32_t i = 0; i < kN; ++i) in[i] = (float)(i % 97) * 0.25f - 3.0f;
  for (int32_t i = 0; i < kN; ++i) w[i] = (float)(i % 13) * 0.125f + 0.5f;
  for (int32_t i = 0; i < kN; ++i) mid[i] = std::fmaf(2.0f, in[i], 1.0f);
  for (int32_t i = 0; i < kN; ++i) mirrored[i] = mid[i] * mid[kN - 1 - i];
  for (int32_t i = 0; i < kN; ++i) weighted[i] = w[i] * mirrored[kN - 1 - i];
  for (uint32_t b = 0; b < kBlocks; ++b)
    for (uint32_t t = 0; t < 128; ++t) {
      const uint32_t i = b * 128 + t;
      sums[b] += i < (uint32_t)kN ? weighted[i] : 0.0f;
    }
  const std::string ptx = sk::cuda_test::kernel_text("dependent_launch.ptx");
  int32_t n = kN;
  struct Chain {
    float *mid, *mirrored, *weighted, *sums;
    uint64_t slots[4];
  };
  auto chain = [&] {
    Chain c{alloc(std::vector<float>(kN)),
            alloc(std::vector<float>(kN)),
            alloc(std::vector<float>(kN)),
            alloc(std::vector<float>(kBlocks)),
            {}};
    c.slots[0] = ptr_slot(c.mid), c.slots[1] = ptr_slot(c.mirrored), c.slots[2] = ptr_slot(c.weighted);
    c.slots[3] = ptr_slot(c.sums);
    return c;
  };
  uint64_t xs = ptr_slot(alloc(in)), ws = ptr_slot(alloc(w));
  Chain plain = chain();
  {
    void *a0[] = {&xs, &plain.slots[0], &n}, *a1[] = {&plain.slots[0], &plain.slots[1], &n},
         *a2[] = {&ws, &plain.slots[1], &plain.slots[2], &n}, *a3[] = {&plain.slots[2], &plain.slots[3], &n};
    ASSERT_EQ(drv.launch(ptx, "pdl_scale", kBlocks, 128, 0, a0), 0);
    ASSERT_EQ(drv.launch(ptx, "pdl_mirror", kBlocks, 128, 0, a1), 0);
    ASSERT_EQ(drv.launch(ptx, "pdl_weighted", kBlocks, 128, 0, a2), 0);
    ASSERT_EQ(drv.launch(ptx, "pdl_one_waits", kBlocks, 128, 0, a3), 0);
  }
  const sk_kernel_desc desc{sizeof desc, nullptr, 128, 0};
  sk_kernel *scale = ptx_kernel(ptx, "pdl_scale", desc), *mirror = ptx_kernel(ptx, "pdl_mirror", desc),
            *weigh = ptx_kernel(ptx, "pdl_weighted", desc), *sum = ptx_kernel(ptx, "pdl_one_waits", desc);
  ASSERT_TRUE(scale && mirror && weigh && sum);
  auto same = [&](const float *a, const float *b, const std::vector<float> &cpu, const std::string &what) {
    const std::vector<float> va = read(a, cpu.size()), vb = read(b, cpu.size());
    EXPECT_EQ(std::memcmp(va.data(), vb.data(), cpu.size() * 4), 0) << what << ": fused != the driver's launch";
    EXPECT_EQ(std::memcmp(va.data(), cpu.data(), cpu.size() * 4), 0) << what << ": the driver's launch != the CPU";
  };
  for (const char *options : {"early-start=1", "early-start=0"}) {
    SCOPED_TRACE(options);
    Chain fused = chain();
    void *a0[] = {&xs, &fused.slots[0], &n}, *a1[] = {&fused.slots[0], &fused.slots[1], &n},
         *a2[] = {&ws, &fused.slots[1], &fused.slots[2], &n}, *a3[] = {&fused.slots[2], &fused.slots[3], &n};
    ASSERT_NO_FATAL_FAILURE(run_fused(
        "pdl", {{scale, kBlocks, a0}, {mirror, kBlocks, a1}, {weigh, kBlocks, a2}, {sum, kBlocks, a3}}, options));
    same(plain.mid, fused.mid, mid, "pdl_scale");
    same(plain.mirrored, fused.mirrored, mirrored, "pdl_mirror");
    same(plain.weighted, fused.weighted, weighted, "pdl_weighted");
    same(plain.sums, fused.sums, sums, "pdl_one_waits");
  }
}

// A head written for programmatic dependent launch that writes what the kernel before reads
// before its trigger: pdl_refill_acc refills acc, which pdl_read_acc's blocks read across the
// grid, before its wait. PDL starts that head only once every block before has triggered; fused,
// a block would run it while others still read acc, so its step waits at its start
// (ptx_dependent_wait.hpp). Many more blocks than the super kernel's; 20 launches ==
// the driver's plain launches == the CPU, bit for bit.
TEST_F(CudaGpu, AHeadThatWritesWhatTheStepBeforeReadsWaitsForIt) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr int32_t kN = 256 * 1024;
  constexpr uint32_t kBlocks = kN / 128;
  std::vector<float> acc(kN), in(kN), read_out(kN), refilled(kN), out(kN);
  for (int32_t i = 0; i < kN; ++i) acc[i] = (float)(i % 101) * 0.5f + 1.0f;
  for (int32_t i = 0; i < kN; ++i) in[i] = (float)(i % 89) * 0.25f - 7.0f;
  for (int32_t i = 0; i < kN; ++i) read_out[i] = 3.0f * acc[kN - 1 - i];
  for (int32_t i = 0; i < kN; ++i) refilled[i] = in[i] - 1.0f;
  for (int32_t i = 0; i < kN; ++i) out[i] = refilled[i] + read_out[kN - 1 - i];
  const std::string ptx = sk::cuda_test::kernel_text("dependent_launch.ptx");
  int32_t n = kN;
  const sk_kernel_desc desc{sizeof desc, nullptr, 128, 0};
  sk_kernel *read_acc = ptx_kernel(ptx, "pdl_read_acc", desc), *refill = ptx_kernel(ptx, "pdl_refill_acc", desc);
  ASSERT_TRUE(read_acc && refill);
  float *a = alloc(acc), *r = alloc(std::vector<float>(kN)), *o = alloc(std::vector<float>(kN));
  uint64_t ins = ptr_slot(alloc(in)), as = ptr_slot(a), rs = ptr_slot(r), os = ptr_slot(o);
  void *a0[] = {&as, &rs, &n}, *a1[] = {&ins, &as, &rs, &os, &n};
  auto check = [&](const std::string &what) {
    const std::vector<float> got_read = read(r, kN), got_acc = read(a, kN), got = read(o, kN);
    EXPECT_EQ(std::memcmp(got_read.data(), read_out.data(), kN * 4), 0) << what << ": pdl_read_acc read a new acc";
    EXPECT_EQ(std::memcmp(got_acc.data(), refilled.data(), kN * 4), 0) << what << ": pdl_refill_acc's acc";
    EXPECT_EQ(std::memcmp(got.data(), out.data(), kN * 4), 0) << what << ": pdl_refill_acc's out";
    ASSERT_EQ(sk_memcpy(dev_, a, acc.data(), kN * 4), SK_OK) << sk_last_error();  // for the next run
  };
  ASSERT_EQ(drv.launch(ptx, "pdl_read_acc", kBlocks, 128, 0, a0), 0);
  ASSERT_EQ(drv.launch(ptx, "pdl_refill_acc", kBlocks, 128, 0, a1), 0);
  ASSERT_NO_FATAL_FAILURE(check("the driver's launches"));
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "refill", nullptr, &scope), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, read_acc, kBlocks, a0, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, refill, kBlocks, a1, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  for (int round = 0; round < 20 && !HasFailure(); ++round) {
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    check("fused, round " + std::to_string(round));
  }
  sk_superkernel_destroy(sk);
}

// A module of which the super kernel takes one kernel links only what that kernel reaches
// (cuda/ptx_prune.hpp): prune.cu's prune_taken, whose call through a function pointer a
// module-scope variable holds reaches a function no call names, equals its plain launch and
// the CPU, bit for bit.
TEST_F(CudaGpu, APrunedModuleFusedEqualsItsPlainLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr uint32_t kN = 1024, kBlocks = kN / 128;
  std::vector<float> in(kN), expect(kN);
  for (uint32_t i = 0; i < kN; ++i) in[i] = (float)(i % 89) * 0.5f - 11.0f;
  for (uint32_t i = 0; i < kN; ++i) expect[i] = std::fmaf(in[i], 2.0f, 1.0f) + 7.0f;
  const std::string ptx = sk::cuda_test::kernel_text("prune.ptx");
  float *plain = alloc(in), *fused = alloc(in);
  uint64_t ps = ptr_slot(plain), fs = ptr_slot(fused);
  void *plain_args[] = {&ps}, *fused_args[] = {&fs};
  ASSERT_EQ(drv.launch(ptx, "prune_taken", kBlocks, 128, 0, plain_args), 0);
  sk_kernel *taken = ptx_kernel(ptx, "prune_taken", {sizeof(sk_kernel_desc), nullptr, 128, 0});
  ASSERT_NE(taken, nullptr);
  ASSERT_NO_FATAL_FAILURE(run_fused("prune", {{taken, kBlocks, fused_args}}));
  const std::vector<float> a = read(plain, kN), b = read(fused, kN);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), kN * 4), 0) << "fused != the driver's launch";
  EXPECT_EQ(std::memcmp(a.data(), expect.data(), kN * 4), 0) << "the driver's launch != the CPU";
}

// qk_norm (decode_step.py): Triton's choice between two pointer parameters, a select between
// their parameter-space addresses that the fused kernel makes between generic ones: two steps
// (the weights swapped in the second) fused == the same PTX launched by the driver, bit for bit.
TEST_F(CudaGpu, ASelectBetweenPointerParametersFusedEqualsItsPtxLaunchedByTheDriver) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr uint32_t kRows = 32, kDim = 128;  // q rows, then as many k rows
  uint32_t seed = 777;
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float &f : v) f = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
    return v;
  };
  const float *q = alloc(random(kRows * kDim)), *k = alloc(random(kRows * kDim)), *qw = alloc(random(kDim)),
              *kw = alloc(random(kDim));
  float *plain[2], *fused[2];
  for (int step = 0; step < 2; ++step) {
    plain[step] = alloc(std::vector<float>(2 * kRows * kDim, -1.0f));
    fused[step] = alloc(std::vector<float>(2 * kRows * kDim, -2.0f));
  }
  const std::vector<uint8_t> bytes = sk::cuda_test::read_file(sk::cuda_test::triton_path("qk_norm.ptx"));
  const std::string ptx(bytes.begin(), bytes.end());
  uint32_t q_rows = kRows, dim = kDim;
  float eps = 1e-6f;
  uint64_t null = 0;
  // Step 1 normalises with the weights swapped: the select must follow the parameters, not
  // their positions.
  const float *weights[2][2] = {{qw, kw}, {kw, qw}};
  auto args = [&](float *const *out, int step) {
    return std::vector<void *>{(void *)&q,
                               (void *)&k,
                               (void *)&weights[step][0],
                               (void *)&weights[step][1],
                               (void *)&out[step],
                               &q_rows,
                               &dim,
                               &eps,
                               &null,
                               &null};
  };
  for (int step = 0; step < 2; ++step) {
    std::vector<void *> a = args(plain, step);
    ASSERT_EQ(drv.launch(ptx, "qk_norm_kernel", 2 * kRows, 32, 0, a.data()), 0) << "step " << step;
  }
  sk_kernel *kernel = ptx_kernel(ptx, "qk_norm_kernel", {sizeof(sk_kernel_desc), nullptr, 32, 0});
  ASSERT_NE(kernel, nullptr);
  std::vector<void *> a0 = args(fused, 0), a1 = args(fused, 1);
  ASSERT_NO_FATAL_FAILURE(run_fused("qk_norm", {{kernel, 2 * kRows, a0.data()}, {kernel, 2 * kRows, a1.data()}}));
  for (int step = 0; step < 2; ++step) {
    const std::vector<float> a = read(plain[step], 2 * kRows * kDim), b = read(fused[step], 2 * kRows * kDim);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "step " << step << ": fused != the driver's";
    EXPECT_NE(a[0], -1.0f) << "step " << step << ": the driver's launch wrote nothing";
  }
}

// A struct parameter indexed at run time (param_index.cu, as PyTorch's multi-tensor kernels read
// their metadata): two steps, the second reading what the first wrote, each block finding its
// tensor and chunk in the parameter; then cat's metadata indexed by blockIdx.y, and a table both
// read through a helper and indexed. Fused equals its PTX launched by the driver and the CPU,
// bit for bit.
TEST_F(CudaGpu, AStructParameterIndexedAtRunTimeFusedEqualsItsPlainLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr int kTensors = 4, kChunk = 128;
  struct Metadata {  // param_index.cu's TensorListMetadata
    uint64_t addresses[2][kTensors];
    int32_t numel[kTensors];
    uint8_t block_to_tensor[16];
    int32_t block_to_chunk[16];
  };
  static_assert(sizeof(Metadata) == 160);
  const int sizes[kTensors] = {300, 128, 520, 77};
  std::vector<std::vector<float>> x(kTensors);
  for (int t = 0; t < kTensors; ++t)
    for (int i = 0; i < sizes[t]; ++i) x[t].push_back((float)((i * 7 + t * 13) % 97) * 0.37f - 9.0f);
  // Step 0: y = x * 2.5 + 1; step 1: x = y * -0.75 + 3 (nvcc contracts each to one fma).
  const float scale[2] = {2.5f, -0.75f}, bias[2] = {1.0f, 3.0f};
  std::vector<std::vector<float>> expect = x;
  for (int t = 0; t < kTensors; ++t)
    for (float &v : expect[t]) v = std::fmaf(std::fmaf(v, scale[0], bias[0]), scale[1], bias[1]);
  // Per run (the driver's, libsk's): the tensors and the two steps' metadata.
  struct Run {
    std::vector<float *> xs, ys;
    Metadata meta[2];
  };
  uint32_t blocks = 0;
  auto prepare = [&](Run &r) {
    blocks = 0;
    std::memset(r.meta, 0, sizeof r.meta);
    for (int t = 0; t < kTensors; ++t) {
      r.xs.push_back(alloc(x[t]));
      r.ys.push_back(alloc(std::vector<float>(sizes[t], -1.0f)));
      for (int c = 0; c * kChunk < sizes[t]; ++c, ++blocks)
        for (Metadata &m : r.meta) m.block_to_tensor[blocks] = (uint8_t)t, m.block_to_chunk[blocks] = c;
      for (int step = 0; step < 2; ++step) {
        r.meta[step].numel[t] = sizes[t];
        r.meta[step].addresses[0][t] = ptr_slot(step == 0 ? r.xs[t] : r.ys[t]);
        r.meta[step].addresses[1][t] = ptr_slot(step == 0 ? r.ys[t] : r.xs[t]);
      }
    }
  };
  Run plain, fused;
  prepare(plain);
  prepare(fused);
  ASSERT_EQ(blocks, 10u);
  const std::string ptx = sk::cuda_test::kernel_text("param_index.ptx");
  int32_t chunk = kChunk;
  for (int step = 0; step < 2; ++step) {
    void *args[] = {&chunk, &plain.meta[step], (void *)&scale[step], (void *)&bias[step]};
    ASSERT_EQ(drv.launch(ptx, "multi_tensor_scale", blocks, 128, 0, args), 0) << "step " << step;
  }
  sk_kernel *k = ptx_kernel(ptx, "multi_tensor_scale", {sizeof(sk_kernel_desc), nullptr, 128, 0});
  ASSERT_NE(k, nullptr);
  void *a0[] = {&chunk, &fused.meta[0], (void *)&scale[0], (void *)&bias[0]},
       *a1[] = {&chunk, &fused.meta[1], (void *)&scale[1], (void *)&bias[1]};
  ASSERT_NO_FATAL_FAILURE(run_fused("param_index", {{k, blocks, a0}, {k, blocks, a1}}));
  for (int t = 0; t < kTensors; ++t) {
    const std::vector<float> a = read(plain.xs[t], sizes[t]), b = read(fused.xs[t], sizes[t]);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0)
        << "tensor " << t << ": fused != the driver's launch";
    EXPECT_EQ(std::memcmp(a.data(), expect[t].data(), a.size() * 4), 0)
        << "tensor " << t << ": the driver != the CPU";
  }

  // cat_rows: three inputs, one per blockIdx.y, into every other element of one output; then
  // table_lookup: a table read through a helper and indexed by the kernel.
  struct CatMetadata {
    uint64_t input[8];
    int64_t offset[8], nelem[8];
  } cat_plain{}, cat_fused{};
  const int64_t stride = 2, lengths[3] = {300, 5, 1000};
  std::vector<float> cat_expect(2 * 1305 + 2, -1.0f);
  float *cat_out[2] = {alloc(cat_expect), alloc(cat_expect)};
  int64_t at = 0;
  for (int t = 0; t < 3; ++t) {
    std::vector<float> in(lengths[t]);
    for (int64_t i = 0; i < lengths[t]; ++i)
      in[i] = (float)(t * 1000 + i) * 0.5f, cat_expect[at + i * stride] = in[i];
    cat_plain.input[t] = ptr_slot(alloc(in)), cat_fused.input[t] = ptr_slot(alloc(in));
    cat_plain.offset[t] = cat_fused.offset[t] = at, cat_plain.nelem[t] = cat_fused.nelem[t] = lengths[t];
    at += lengths[t] * stride;
  }
  uint64_t cat_slots[2] = {ptr_slot(cat_out[0]), ptr_slot(cat_out[1])};
  void *cat_args_plain[] = {&cat_slots[0], &cat_plain, (void *)&stride},
       *cat_args_fused[] = {&cat_slots[1], &cat_fused, (void *)&stride};
  ASSERT_EQ(drv.launch(ptx, "cat_rows", 2, 256, 0, cat_args_plain, 3), 0);
  sk_kernel *cat = ptx_kernel(ptx, "cat_rows", {sizeof(sk_kernel_desc), nullptr, 256, 0});
  ASSERT_NE(cat, nullptr);
  sk_kernel_options cat_grid = SK_KERNEL_OPTIONS_INIT;
  cat_grid.grid[0] = 2, cat_grid.grid[1] = 3, cat_grid.grid[2] = 1;

  constexpr uint32_t kLookups = 256;
  struct Table {
    float v[32];
  } table;
  for (int i = 0; i < 32; ++i) table.v[i] = (float)(i * i) * 0.25f - 3.0f;
  std::vector<int32_t> idx(kLookups);
  std::vector<float> lookup_expect(kLookups);
  for (uint32_t i = 0; i < kLookups; ++i)
    idx[i] = (int32_t)(i * 37 % 101), lookup_expect[i] = table.v[idx[i] & 31] + table.v[idx[i] & 7];
  int32_t *idx_dev = alloc(idx);
  float *lookup_out[2] = {alloc(std::vector<float>(kLookups)), alloc(std::vector<float>(kLookups))};
  uint64_t idx_slot = ptr_slot(idx_dev), lookup_slots[2] = {ptr_slot(lookup_out[0]), ptr_slot(lookup_out[1])};
  void *lookup_plain[] = {&table, &idx_slot, &lookup_slots[0]},
       *lookup_fused[] = {&table, &idx_slot, &lookup_slots[1]};
  ASSERT_EQ(drv.launch(ptx, "table_lookup", kLookups / 64, 64, 0, lookup_plain), 0);
  sk_kernel *lookup = ptx_kernel(ptx, "table_lookup", {sizeof(sk_kernel_desc), nullptr, 64, 0});
  ASSERT_NE(lookup, nullptr);
  ASSERT_NO_FATAL_FAILURE(
      run_fused("param_index_cat", {{cat, 6, cat_args_fused, &cat_grid}, {lookup, kLookups / 64, lookup_fused}}));
  const std::vector<float> c0 = read(cat_out[0], cat_expect.size()), c1 = read(cat_out[1], cat_expect.size());
  EXPECT_EQ(std::memcmp(c0.data(), c1.data(), c0.size() * 4), 0) << "cat: fused != the driver's launch";
  EXPECT_EQ(std::memcmp(c0.data(), cat_expect.data(), c0.size() * 4), 0) << "cat: the driver != the CPU";
  const std::vector<float> l0 = read(lookup_out[0], kLookups), l1 = read(lookup_out[1], kLookups);
  EXPECT_EQ(std::memcmp(l0.data(), l1.data(), kLookups * 4), 0) << "table: fused != the driver's launch";
  EXPECT_EQ(std::memcmp(l0.data(), lookup_expect.data(), kLookups * 4), 0) << "table: the driver != the CPU";
}

// Threads that return before a __syncthreads() the others reach (the guard of a partial last
// block; a different round count per thread, the barriers in a helper, __syncthreads_count/and/
// or after the returns): fused, the returned threads wait in __sk_leave and the block does not
// hang; the two kernels in one super kernel equal their PTX launched by the driver, bit for bit,
// in blocks of their own 128 threads and on the first 128 of blocks of 256.
TEST_F(CudaGpu, ThreadsThatReturnBeforeABarrierFusedEqualTheirPlainLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr uint32_t kBlocks = 8, kN = kBlocks * 128, kLive = kN - 37;
  std::vector<float> in(kN), zero(kN, 0.0f);
  std::vector<int> rounds(kN);
  for (uint32_t i = 0; i < kN; ++i) {
    in[i] = (float)(i % 23) - 9.0f;
    rounds[i] = (int)((i * 7 + i / 128) % 6);  // 0 returns at once; every block some of each
  }
  const std::string ptx = sk::cuda_test::kernel_text("early_return_global.ptx");
  float *src = alloc(in), *plain = alloc(zero), *fused = alloc(zero);
  int *r = alloc(rounds);
  uint64_t is = ptr_slot(src), ps = ptr_slot(plain), fs = ptr_slot(fused), rs = ptr_slot(r);
  uint32_t n = kLive;
  void *plain_guard[] = {&is, &ps, &n}, *fused_guard[] = {&is, &fs, &n};
  void *plain_rounds[] = {&ps, &rs}, *fused_rounds[] = {&fs, &rs};
  ASSERT_EQ(drv.launch(ptx, "er_guard", kBlocks, 128, 0, plain_guard), 0);
  ASSERT_EQ(drv.launch(ptx, "er_rounds", kBlocks, 128, 0, plain_rounds), 0);
  sk_kernel *guard = ptx_kernel(ptx, "er_guard", {sizeof(sk_kernel_desc), nullptr, 128, 0});
  sk_kernel *each = ptx_kernel(ptx, "er_rounds", {sizeof(sk_kernel_desc), nullptr, 128, 0});
  ASSERT_NE(guard, nullptr);
  ASSERT_NE(each, nullptr);
  ASSERT_NO_FATAL_FAILURE(run_fused("early_return", {{guard, kBlocks, fused_guard}, {each, kBlocks, fused_rounds}}));
  const std::vector<float> a = read(plain, kN), b = read(fused, kN);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), kN * 4), 0) << "fused != the driver's launch";
  EXPECT_NE(a[0], 0.0f) << "the kernels wrote nothing";
  // The same two at 128 threads beside er_wide at 256: they run on each block's first 128, and
  // their returned threads' wait and two-phase barriers count 128.
  float *narrow = alloc(zero), *wide_plain = alloc(in), *wide_fused = alloc(in);
  uint64_t ns = ptr_slot(narrow), wp = ptr_slot(wide_plain), wf = ptr_slot(wide_fused);
  void *narrow_guard[] = {&is, &ns, &n}, *narrow_rounds[] = {&ns, &rs};
  void *plain_wide[] = {&wp, &n}, *fused_wide[] = {&wf, &n};
  ASSERT_EQ(drv.launch(ptx, "er_wide", kBlocks / 2, 256, 0, plain_wide), 0);
  sk_kernel *wide = ptx_kernel(ptx, "er_wide", {sizeof(sk_kernel_desc), nullptr, 256, 0});
  ASSERT_NE(wide, nullptr);
  ASSERT_NO_FATAL_FAILURE(
      run_fused("early_return_narrow",
                {{guard, kBlocks, narrow_guard}, {wide, kBlocks / 2, fused_wide}, {each, kBlocks, narrow_rounds}}));
  const std::vector<float> c = read(narrow, kN), d = read(wide_plain, kN), e = read(wide_fused, kN);
  EXPECT_EQ(std::memcmp(a.data(), c.data(), kN * 4), 0) << "fused at 128 of 256 != the driver's launch";
  EXPECT_EQ(std::memcmp(d.data(), e.data(), kN * 4), 0) << "er_wide fused != the driver's launch";
  EXPECT_EQ(d[kLive], in[kLive]) << "er_wide wrote past n";
}

// Two kernels with static tiles that add up past a block's 48 KiB (28000 and 24000 bytes), fused
// one after the other: both tiles in the shared overlay, at the same bytes; the second reads the
// first's output. Equal to their PTX launched by the driver, bit for bit.
TEST_F(CudaGpu, KernelsWhoseTilesShareTheOverlayFusedEqualTheirPlainLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  constexpr uint32_t kBlocks = 6, kN = kBlocks * 7000;
  std::vector<float> in(kN), zero(kN, 0.0f);
  for (uint32_t i = 0; i < kN; ++i) in[i] = (float)(i % 97) * 0.25f - 7.0f;
  const std::string ptx = sk::cuda_test::kernel_text("shared_global.ptx");
  float *src = alloc(in), *mid_plain = alloc(zero), *mid_fused = alloc(zero), *plain = alloc(zero),
        *fused = alloc(zero);
  uint64_t is = ptr_slot(src), mp = ptr_slot(mid_plain), mf = ptr_slot(mid_fused), ps = ptr_slot(plain),
           fs = ptr_slot(fused);
  void *plain_reverse[] = {&is, &mp}, *plain_rotate[] = {&mp, &ps};
  void *fused_reverse[] = {&is, &mf}, *fused_rotate[] = {&mf, &fs};
  ASSERT_EQ(drv.launch(ptx, "sg_reverse", kBlocks, 128, 0, plain_reverse), 0);
  ASSERT_EQ(drv.launch(ptx, "sg_rotate", kBlocks, 128, 0, plain_rotate), 0);
  sk_kernel *reverse = ptx_kernel(ptx, "sg_reverse", {sizeof(sk_kernel_desc), nullptr, 128, 0});
  sk_kernel *rotate = ptx_kernel(ptx, "sg_rotate", {sizeof(sk_kernel_desc), nullptr, 128, 0});
  ASSERT_NE(reverse, nullptr);
  ASSERT_NE(rotate, nullptr);
  ASSERT_NO_FATAL_FAILURE(
      run_fused("shared_overlay", {{reverse, kBlocks, fused_reverse}, {rotate, kBlocks, fused_rotate}}));
  const std::vector<float> a = read(plain, kN), b = read(fused, kN);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), kN * 4), 0) << "fused != the driver's launch";
  EXPECT_EQ(a[0], in[6999 - 17] * 2.0f) << "the driver's launch != the CPU";
}

// cg::this_grid().sync() fused: the step's grid syncs in its word of the sync buffer (twice in
// gs_neighbour, the word's top bit flipping back), equal to the driver's cooperative launch of
// the same PTX, bit for bit, launched twice (the words carry over between launches).
TEST_F(CudaGpu, GridSyncsOfCooperativeGroupsFusedEqualTheirCooperativeLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  ASSERT_NE(drv.cuLaunchCooperativeKernel, nullptr);
  constexpr uint32_t kBlocks = 8, kN = kBlocks * 128;
  std::vector<float> in(kN), zero(kN, 0.0f);
  for (uint32_t i = 0; i < kN; ++i) in[i] = (float)(i % 29) * 0.5f + 1.0f;
  const std::string ptx = sk::cuda_test::kernel_text("grid_sync.ptx");
  float *src = alloc(in), *pp = alloc(zero), *pf = alloc(zero), *op = alloc(zero), *of = alloc(zero);
  float *dp = alloc(zero), *df = alloc(zero), *np = alloc(zero), *nf = alloc(zero);
  uint64_t s_ = ptr_slot(src), pp_ = ptr_slot(pp), pf_ = ptr_slot(pf), op_ = ptr_slot(op), of_ = ptr_slot(of);
  uint64_t dp_ = ptr_slot(dp), df_ = ptr_slot(df), np_ = ptr_slot(np), nf_ = ptr_slot(nf);
  void *plain_norm[] = {&s_, &pp_, &op_}, *fused_norm[] = {&s_, &pf_, &of_};
  void *plain_nb[] = {&dp_, &np_}, *fused_nb[] = {&df_, &nf_};
  ASSERT_EQ(drv.launch(ptx, "gs_normalize", kBlocks, 128, 0, plain_norm, 1, 1, true), 0);
  ASSERT_EQ(drv.launch(ptx, "gs_neighbour", kBlocks, 128, 0, plain_nb, 1, 1, true), 0);
  const sk_kernel_desc desc{sizeof(sk_kernel_desc), nullptr, 128, 0, {128, 1, 1}};
  sk_kernel *norm = ptx_kernel(ptx, "gs_normalize", desc);
  sk_kernel *nb = ptx_kernel(ptx, "gs_neighbour", desc);
  ASSERT_NE(norm, nullptr);
  ASSERT_NE(nb, nullptr);
  for (int launch = 0; launch < 2; ++launch)
    ASSERT_NO_FATAL_FAILURE(run_fused("grid_sync", {{norm, kBlocks, fused_norm}, {nb, kBlocks, fused_nb}}));
  const std::vector<float> a = read(op, kN), b = read(of, kN), c = read(np, kN), d = read(nf, kN);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), kN * 4), 0) << "gs_normalize fused != the driver's launch";
  EXPECT_EQ(std::memcmp(c.data(), d.data(), kN * 4), 0) << "gs_neighbour fused != the driver's launch";
  EXPECT_EQ(c[0], 129.0f) << "the driver's launch != the CPU";
}

// A grid barrier of its own (grid_sync.cu's own_barrier_rotate: atomics and a spin, as a kernel
// written for a cooperative launch may have), taken with SK_KERNEL_DESC_COOPERATIVE, fused after
// a kernel whose blocks outnumber the super kernel's (so they are multiplexed) and before itself
// again: equal to the driver's cooperative launches of the same PTX and to the CPU, bit for bit.
TEST_F(CudaGpu, AGridBarrierOfItsOwnFusedEqualsItsCooperativeLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  ASSERT_NE(drv.cuLaunchCooperativeKernel, nullptr);
  constexpr uint32_t kBlocks = 8, kN = kBlocks * 128, kScaleN = 256 * 1024;
  const std::string rotate_ptx = sk::cuda_test::kernel_text("grid_sync.ptx");
  const std::string scale_ptx = sk::cuda_test::kernel_text("dependent_launch.ptx");
  std::vector<float> big(kScaleN);
  for (uint32_t i = 0; i < kScaleN; ++i) big[i] = (float)(i % 31);
  std::vector<uint32_t> in(kN), zero(kN, 0), expect(kN);
  for (uint32_t i = 0; i < kN; ++i) in[i] = i * 40503u + 11u;
  std::vector<uint32_t> mid(kN), first(kN);
  for (uint32_t i = 0; i < kN; ++i) mid[i] = in[i] * 2654435761u + 1u;
  for (uint32_t i = 0; i < kN; ++i) first[i] = mid[(i / 128 + 1) % kBlocks * 128 + i % 128] ^ i;
  for (uint32_t i = 0; i < kN; ++i) mid[i] = first[i] * 2654435761u + 1u;
  for (uint32_t i = 0; i < kN; ++i) expect[i] = mid[(i / 128 + 1) % kBlocks * 128 + i % 128] ^ i;
  struct Run {
    uint32_t *mid, *first, *second, *arrived;
  };
  auto buffers = [&] { return Run{alloc(zero), alloc(zero), alloc(zero), alloc(std::vector<uint32_t>{0, 0})}; };
  const uint32_t *x = alloc(in);
  uint64_t xs = ptr_slot(x), bs = ptr_slot(alloc(big)), bo = ptr_slot(alloc(big));
  int32_t scale_n = kScaleN;
  uint32_t round = 1;
  Run plain = buffers(), fused = buffers();
  uint64_t pm = ptr_slot(plain.mid), p1 = ptr_slot(plain.first), p2 = ptr_slot(plain.second),
           pa = ptr_slot(plain.arrived), pb = pa + 4;
  uint64_t fm = ptr_slot(fused.mid), f1 = ptr_slot(fused.first), f2 = ptr_slot(fused.second),
           fa = ptr_slot(fused.arrived), fb = fa + 4;
  void *plain_first[] = {&xs, &pm, &p1, &pa, &round}, *plain_second[] = {&p1, &pm, &p2, &pb, &round};
  ASSERT_EQ(drv.launch(rotate_ptx, "own_barrier_rotate", kBlocks, 128, 0, plain_first, 1, 1, true), 0);
  ASSERT_EQ(drv.launch(rotate_ptx, "own_barrier_rotate", kBlocks, 128, 0, plain_second, 1, 1, true), 0);
  sk_kernel *scale = ptx_kernel(scale_ptx, "pdl_scale", {sizeof(sk_kernel_desc), nullptr, 128, 0});
  sk_kernel *rotate = ptx_kernel(rotate_ptx, "own_barrier_rotate",
                                 {sizeof(sk_kernel_desc), nullptr, 128, 0, {0, 0, 0}, SK_KERNEL_DESC_COOPERATIVE});
  ASSERT_TRUE(scale && rotate);
  void *scale_args[] = {&bs, &bo, &scale_n};
  void *fused_first[] = {&xs, &fm, &f1, &fa, &round}, *fused_second[] = {&f1, &fm, &f2, &fb, &round};
  ASSERT_NO_FATAL_FAILURE(run_fused(
      "own_barrier",
      {{scale, kScaleN / 128, scale_args}, {rotate, kBlocks, fused_first}, {rotate, kBlocks, fused_second}}));
  const std::vector<uint32_t> a = read(plain.second, kN), b = read(fused.second, kN);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), kN * 4), 0) << "fused != the driver's cooperative launches";
  EXPECT_EQ(std::memcmp(a.data(), expect.data(), kN * 4), 0) << "the driver's launches != the CPU";
}

// TMA. A `__grid_constant__` CUtensorMap (nvcc), a grid-constant struct read both through its
// address and as values (nvcc), Triton's host-side tensor descriptors (their tensor maps then
// the tensor's shape and strides) and its device-side ones (built in the global scratch): each
// fused, and unfused by libsk, equals its PTX launched by the driver, bit for bit, and the CPU;
// the nvcc map also from a super kernel's argument buffer and read by reference.
// sk_tensor_map_encode writes the driver's bytes.
TEST_F(CudaGpu, TensorMapsAndGridConstantsFusedEqualTheirPlainLaunch) {
  PtxDriver drv;
  ASSERT_TRUE(drv.open()) << "the driver libsk opened cannot be opened again";
  ASSERT_NE(drv.cuTensorMapEncodeTiled, nullptr);
  constexpr uint32_t kRows = 64, kCols = 64, kBlocks = kRows / 16;
  constexpr int kFloat32 = 7, kSwizzleNone = 0, kSwizzle128 = 3;  // CUtensorMapDataType, CUtensorMapSwizzle
  std::vector<float> rows(kRows * kCols);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = (float)(i * 37 % 1001) / 7.0f - 50.0f;
  float *in = alloc(rows);
  auto text = [](const std::string &path) {
    const std::vector<uint8_t> b = sk::cuda_test::read_file(path);
    return std::string(b.begin(), b.end());
  };
  // A 2-D float tensor map (a CUtensorMap) of `base` ([kRows, kCols], row-major), `box_cols` x
  // 16 rows a box.
  struct alignas(64) TensorMap {
    uint64_t words[16];
  };
  auto tensor_map = [&](void *base, uint32_t box_cols, int swizzle) {
    TensorMap map{};
    const uint64_t dims[2] = {kCols, kRows}, strides[1] = {kCols * sizeof(float)};
    const uint32_t box[2] = {box_cols, 16}, element[2] = {1, 1};
    EXPECT_EQ(drv.cuTensorMapEncodeTiled(&map, kFloat32, 2, base, dims, strides, box, element, 0, swizzle, 0, 0), 0);
    // libsk's encoding of the same description is the same bytes.
    sk_tensor_map_desc d{};
    d.struct_size = sizeof d, d.data_type = kFloat32, d.rank = 2, d.swizzle = (uint32_t)swizzle, d.address = base;
    std::copy(dims, dims + 2, d.dims), d.strides[0] = strides[0], std::copy(box, box + 2, d.box);
    unsigned char mine[SK_TENSOR_MAP_BYTES + 8];
    EXPECT_EQ(sk_tensor_map_encode(dev_, &d, mine + 8), SK_OK) << sk_last_error();
    EXPECT_EQ(std::memcmp(mine + 8, &map, SK_TENSOR_MAP_BYTES), 0) << "sk_tensor_map_encode differs from the driver";
    return map;
  };
  // Argument values that stay where they are while later ones are added.
  std::deque<uint64_t> out_slots, scratch_slots;
  std::deque<TensorMap> maps;
  // Launches `name` of `ptx` three ways, into three outputs made by `args_for`: the driver's
  // launch, a super kernel of it, libsk's unfused launch; returns what each wrote.
  auto three_ways = [&](const std::string &ptx, const char *name, uint32_t threads, uint32_t shared,
                        const std::function<std::vector<void *>(float *)> &args_for,
                        const uint32_t *grid = nullptr) {
    std::array<std::vector<float>, 3> out;
    std::array<float *, 3> dst;
    for (float *&d : dst) d = alloc(std::vector<float>(kRows * kCols, -1.0f));
    std::vector<void *> a0 = args_for(dst[0]), a1 = args_for(dst[1]), a2 = args_for(dst[2]);
    EXPECT_EQ(drv.launch(ptx, name, kBlocks, threads, shared, a0.data()), 0) << name;
    sk_kernel *k = ptx_kernel(ptx, name, {sizeof(sk_kernel_desc), nullptr, threads, shared});
    if (!k) return out;
    sk_scope *scope = nullptr;
    EXPECT_EQ(sk_scope_begin(dev_, name, nullptr, &scope), SK_OK) << sk_last_error();
    sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
    if (grid) std::copy(grid, grid + 3, opts.grid);
    EXPECT_EQ(sk_add_kernel(scope, k, kBlocks, a1.data(), &opts), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    const uint32_t flat[3] = {kBlocks, 1, 1};
    EXPECT_EQ(sk_launch_kernel_grid(k, grid ? grid : flat, a2.data(), nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    sk_superkernel_destroy(sk);
    for (size_t i = 0; i < 3; ++i) out[i] = read(dst[i], kRows * kCols);
    return out;
  };
  auto same = [&](const std::array<std::vector<float>, 3> &o, const std::vector<float> &cpu, const char *what) {
    EXPECT_EQ(std::memcmp(o[0].data(), o[1].data(), o[0].size() * 4), 0) << what << ": fused";
    EXPECT_EQ(std::memcmp(o[0].data(), o[2].data(), o[0].size() * 4), 0) << what << ": unfused by libsk";
    EXPECT_EQ(std::memcmp(o[0].data(), cpu.data(), o[0].size() * 4), 0) << what << ": the CPU";
  };
  const std::string nvcc = text(sk::cuda_test::kernel_path("grid_constant.ptx")),
                    triton = sk::cuda_test::triton_path("");

  // nvcc: block b copies rows 16b.. through the tensor map (box 64 x 16, unswizzled).
  TensorMap in_map = tensor_map(in, kCols, kSwizzleNone);
  same(three_ways(
           nvcc, "tma_copy_global", 128, 0,
           [&](float *out) {
    out_slots.push_back(reinterpret_cast<uintptr_t>(out));
    return std::vector<void *>{&in_map, &out_slots.back()};
           }),
       rows, "nvcc's __grid_constant__ CUtensorMap");

  // nvcc: a grid-constant struct, read through its address by a helper and as values.
  struct Coefficients {
    float table[8], scale, bias;
  } c{{1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 8.0f, 0.125f, -7.0f}, 0.75f, 10.0f};
  std::vector<float> expect(kRows * kCols);
  for (size_t i = 0; i < expect.size(); ++i) expect[i] = std::fmaf(c.scale, c.table[i % 64 % 8], 0.0f) + c.bias;
  const auto coeffs = three_ways(nvcc, "grid_constant_global", 64, 0, [&](float *out) {
    out_slots.push_back(reinterpret_cast<uintptr_t>(out));
    return std::vector<void *>{&c, &out_slots.back()};
  });
  EXPECT_EQ(std::memcmp(coeffs[0].data(), coeffs[1].data(), coeffs[0].size() * 4), 0) << "the struct, fused";
  EXPECT_EQ(std::memcmp(coeffs[0].data(), coeffs[2].data(), coeffs[0].size() * 4), 0) << "the struct, unfused";
  for (size_t i = 0; i < kBlocks * 64; ++i)
    if (std::fabs(coeffs[0][i] - expect[i]) > 1e-5f) {
      ADD_FAILURE() << "element " << i << ": " << coeffs[0][i] << " != " << expect[i];
      break;
    }

  // Triton's host-side descriptors: tile * 0.5, 16 x 64 a program in boxes of 16 x 32 (swizzled
  // 128 B, as its metadata's tensordesc_meta says), then each tensor's shape and strides.
  const float half = 0.5f;
  std::vector<float> halved(rows);
  for (float &v : halved) v *= half;
  maps.push_back(tensor_map(in, 32, kSwizzle128));
  const uint32_t shape[2] = {kRows, kCols};
  const uint64_t strides[2] = {kCols, 1};
  same(three_ways(
           text(triton + "tma_scale.ptx"), "tma_scale_kernel", 128, 4104,
           [&](float *out) {
    maps.push_back(tensor_map(out, 32, kSwizzle128));
    static const uint64_t null = 0;
    return std::vector<void *>{
        &maps[0],      (void *)&shape[0], (void *)&shape[1], (void *)&strides[0], (void *)&strides[1],
        &maps.back(),  (void *)&shape[0], (void *)&shape[1], (void *)&strides[0], (void *)&strides[1],
        (void *)&half, (void *)&null,     (void *)&null};
           }),
       halved, "Triton's TensorDescriptor");

  // The same nvcc map where the super kernel's arguments do not fit its parameters (160 steps of
  // 256 bytes: they are in its argument buffer, in global memory), each step copying into its
  // own output; and read by reference from device memory.
  {
    sk_kernel *k = ptx_kernel(nvcc, "tma_copy_global", {sizeof(sk_kernel_desc), nullptr, 128, 0});
    ASSERT_NE(k, nullptr);
    constexpr size_t kSteps = 160;
    std::vector<float *> outs;
    std::deque<std::array<void *, 2>> step_args;
    std::vector<Step> steps;
    for (size_t i = 0; i < kSteps; ++i) {
      outs.push_back(alloc(std::vector<float>(kRows * kCols, -1.0f)));
      out_slots.push_back(reinterpret_cast<uintptr_t>(outs.back()));
      step_args.push_back({&in_map, &out_slots.back()});
      steps.push_back({k, kBlocks, step_args.back().data()});
    }
    ASSERT_NO_FATAL_FAILURE(run_fused("tma_buffered", steps));
    for (size_t i = 0; i < kSteps; ++i) {
      const std::vector<float> got = read(outs[i], kRows * kCols);
      EXPECT_EQ(std::memcmp(got.data(), rows.data(), rows.size() * 4), 0) << "the buffered map, step " << i;
    }

    TensorMap *on_device = alloc(std::vector<TensorMap>{in_map});
    float *out = alloc(std::vector<float>(kRows * kCols, -1.0f));
    out_slots.push_back(reinterpret_cast<uintptr_t>(out));
    void *args[] = {on_device, &out_slots.back()};
    sk_kernel_options by_ref = SK_KERNEL_OPTIONS_INIT;
    by_ref.arg_refs = 1;
    ASSERT_NO_FATAL_FAILURE(run_fused("tma_by_ref", {{k, kBlocks, args, &by_ref}}));
    const std::vector<float> got = read(out, kRows * kCols);
    EXPECT_EQ(std::memcmp(got.data(), rows.data(), rows.size() * 4), 0) << "the map read by reference";
  }

  // Triton's device-side descriptors: each program builds two in its 256 bytes of the global
  // scratch, at its linear program index (it reads %ctaid.y/z: a grid shape).
  const uint32_t grid[3] = {kBlocks, 1, 1};
  const uint32_t n_rows = kRows, n_cols = kCols;
  same(three_ways(
           text(triton + "tma_copy.ptx"), "tma_copy_kernel", 128, 4104,
           [&](float *out) {
    out_slots.push_back(reinterpret_cast<uintptr_t>(out));
    scratch_slots.push_back(reinterpret_cast<uintptr_t>(alloc(std::vector<uint8_t>(kBlocks * 256))));
    static const uint64_t null = 0;
    return std::vector<void *>{
        &in, &out_slots.back(), (void *)&n_rows, (void *)&n_cols, &scratch_slots.back(), (void *)&null};
           },
           grid),
       rows, "Triton's tl.make_tensor_descriptor");
}

// A kernel of linked SASS alone (decode_global_sass.cubin's residual_add_global, launched as
// compiled) first and between fused PTX steps of the same decode_global.cu: a chain of adds
// and SiLU products with two plain launches in it (four dispatches), fused == each kernel
// launched alone == the chain with every step fused from PTX, bit for bit.
TEST_F(CudaGpu, AKernelOfLinkedSassBetweenFusedStepsEqualsTheUnfusedChain) {
  sk_kernel *add_sass = kernel("decode_global_sass.cubin", "residual_add_global");
  sk_kernel *add_ptx = kernel("decode_global.ptx", "residual_add_global");
  sk_module *mod = nullptr;
  ASSERT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path("decode_global.ptx").c_str(), &mod), SK_OK);
  modules_.push_back(mod);
  sk_kernel *silu = nullptr;
  const sk_kernel_desc desc{sizeof desc, nullptr, 256, 0, {0, 0, 0}, 0};
  ASSERT_EQ(sk_module_get_kernel_desc(mod, "silu_mul_global", &desc, &silu), SK_OK) << sk_last_error();
  ASSERT_TRUE(add_sass && add_ptx);
  const int n = 5000;
  const uint32_t blocks = (n + 255) / 256;
  std::vector<float> init(n), res(n);
  for (int i = 0; i < n; ++i) init[i] = 0.001f * (float)(i % 977) - 0.3f, res[i] = 0.01f * (float)(i % 31);
  struct Buffers {
    float *x, *y, *r;
  };
  auto buffers = [&] { return Buffers{alloc(init), alloc(init), alloc(res)}; };
  // Step i: x = x + r (add), y = silu(x) * r, x = y + r (add), ...; `sass` picks the adds
  // launched as compiled.
  auto run = [&](Buffers b, bool fused, bool sass) {
    sk_scope *scope = nullptr;
    if (fused) EXPECT_EQ(sk_scope_begin(dev_, "plain_between", nullptr, &scope), SK_OK) << sk_last_error();
    for (int i = 0; i < 6; ++i) {
      const bool add = i % 2 == 0;
      sk_kernel *k = add ? (sass && i != 4 ? add_sass : add_ptx) : silu;
      void *add_args[] = {add && i ? &b.y : &b.x, &b.r, &b.x, (void *)&n};
      void *silu_args[] = {&b.x, &b.r, &b.y, (void *)&n};
      void **args = add ? add_args : silu_args;
      if (fused)
        EXPECT_EQ(sk_add_kernel(scope, k, blocks, args, nullptr), SK_OK) << i << ": " << sk_last_error();
      else
        EXPECT_EQ(sk_launch_kernel(k, blocks, args, nullptr), SK_OK) << i << ": " << sk_last_error();
    }
    if (fused) {
      sk_superkernel *sk = nullptr;
      EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
      if (!sk) return;
      EXPECT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
      sk_superkernel_destroy(sk);
    }
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  };
  const Buffers mixed = buffers(), alone = buffers(), all_ptx = buffers();
  run(mixed, true, true);
  run(alone, false, true);
  run(all_ptx, true, false);
  const std::vector<float> want = read(all_ptx.x, n);
  EXPECT_EQ(read(mixed.x, n), want);
  EXPECT_EQ(read(alone.x, n), want);
  EXPECT_EQ(read(mixed.y, n), read(all_ptx.y, n));
  EXPECT_NE(want, init);
}

// Kernels of linked SASS in thread block clusters: each block reads the next block of its
// cluster from that block's shared memory, so the result shows the cluster the launch had
// (compiled in, or the caller's); and kernels of cooperative groups within a block, launched
// on more blocks than run at once, which a cooperative launch would be refused.
TEST_F(CudaGpu, LinkedSassKernelsRunInTheirClustersAndBlockGroupsAreNotCooperative) {
  sk_module *mod = nullptr;
  ASSERT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path("clusters_sass.cubin").c_str(), &mod), SK_OK)
      << sk_last_error();
  modules_.push_back(mod);
  const uint32_t blocks = 16;
  std::vector<float> init(blocks * 128);
  for (size_t i = 0; i < init.size(); ++i) init[i] = (float)i;
  // out[b * 128 + t] = in[next(b) * 128 + t], next(b) the following block of b's cluster.
  auto expect = [&](uint32_t cluster) {
    std::vector<float> want(init.size());
    for (uint32_t b = 0; b < blocks; ++b)
      for (uint32_t t = 0; t < 128; ++t)
        want[b * 128 + t] = init[(b / cluster * cluster + (b % cluster + 1) % cluster) * 128 + t];
    return want;
  };
  for (auto [name, cluster, runs_in] : {std::tuple{"cluster_pairs", 0u, 2u}, std::tuple{"cluster_any", 4u, 4u},
                                        std::tuple{"cluster_any", 0u, 1u}, std::tuple{"cluster_explicit", 8u, 8u}}) {
    SCOPED_TRACE(std::string(name) + " in clusters of " + std::to_string(runs_in));
    const sk_kernel_desc desc{
        sizeof desc, nullptr, 0, 0, {0, 0, 0}, 0, {cluster, cluster ? 1u : 0u, cluster ? 1u : 0u}};
    sk_kernel *k = nullptr;
    ASSERT_EQ(sk_module_get_kernel_desc(mod, name, &desc, &k), SK_OK) << sk_last_error();
    float *in = alloc(init), *out = alloc(std::vector<float>(init.size(), -1.0f));
    void *args[] = {&in, &out};
    ASSERT_EQ(sk_launch_kernel(k, blocks, args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(read(out, init.size()), expect(runs_in));
  }
  // Cooperative groups of a block, on 65536 blocks: far more than run at once.
  const uint32_t many = 65536;
  std::vector<float> values(many * 128);
  for (size_t i = 0; i < values.size(); ++i) values[i] = (float)(i % 1000);
  sk_kernel *reverse = kernel("cooperative_groups_sass.cubin", "cg_block_reverse");
  ASSERT_NE(reverse, nullptr);
  float *in = alloc(values), *out = alloc(std::vector<float>(values.size(), 0.0f));
  void *args[] = {&in, &out};
  ASSERT_EQ(sk_launch_kernel(reverse, many, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  const std::vector<float> got = read(out, values.size());
  for (uint32_t b = 0; b < many; b += 4099)
    for (uint32_t t = 0; t < 128; t += 17) EXPECT_EQ(got[b * 128 + t], values[b * 128 + 127 - t]) << b << " " << t;
}
