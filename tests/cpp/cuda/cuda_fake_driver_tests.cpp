// The CUDA backend's launch path through the public C API, against a stand-in driver
// (fake_cuda_driver.cpp, via SK_CUDA_DRIVER_LIBRARY): finalize with co-residency clipping,
// launch parameters and epochs, sk_launch_repeat as one launch, stream ordering, argument rebinding, hang reports,
// sk_launch_kernel, shared memory sizes and cooperative launches, the parameter space by driver
// version, graph capture of the application's stream and its replays, the on-disk link cache
// across processes. Real linking (nvJitLink) happens; no kernel code runs.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <sk.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cuda/entry_ptx.hpp"
#include "cuda_test_support.hpp"
#include "fake_cuda_launches.hpp"

namespace {

// finalize_in_child's process: `SK_TEST_FINALIZE_CHILD=N sk_cuda_fake_driver_tests` finalizes a
// chain of N sub-kernels and exits, 0 on success, before any test or other initialization
// here runs (the parent gave it the driver, the cache directory and the nvJitLink to use).
constexpr const char *kFinalizeChild = "SK_TEST_FINALIZE_CHILD";

int finalize_chain(uint32_t steps) {
  sk_device *dev = nullptr;
  sk_module *mod = nullptr;
  sk_kernel *step = nullptr;
  sk_scope *scope = nullptr;
  sk_superkernel *sk = nullptr;
  uint32_t *x = reinterpret_cast<uint32_t *>(0x1234000);
  uint32_t n = 100;
  std::vector<uint32_t> index(steps);
  bool ok = sk_device_open("cuda:0", &dev) == SK_OK &&
            sk_module_load_file(dev, sk::cuda_test::kernel_path("chain.cubin").c_str(), &mod) == SK_OK &&
            sk_module_get_kernel(mod, "chain_step", &step) == SK_OK &&
            sk_scope_begin(dev, "cached", nullptr, &scope) == SK_OK;
  for (uint32_t i = 0; ok && i < steps; ++i) {
    index[i] = i;
    void *a[] = {&x, &n, &index[i]};
    ok = sk_add_kernel(scope, step, 8, a, nullptr) == SK_OK;
  }
  const auto start = std::chrono::steady_clock::now();
  if (ok)
    ok = sk_finalize(scope, &sk) == SK_OK;  // consumes the scope
  else
    sk_scope_abort(scope);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!ok) std::fprintf(stderr, "child: %s\n", sk_last_error());
  if (ok) std::fprintf(stderr, "finalize of %u sub-kernels: %.1f ms\n", steps, ms);
  sk_superkernel_destroy(sk);
  sk_module_unload(mod);
  sk_device_close(dev);
  return ok ? 0 : 1;
}

[[maybe_unused]] const bool g_finalize_child = [] {
  if (const char *steps = std::getenv(kFinalizeChild)) std::_Exit(finalize_chain((uint32_t)std::atoi(steps)));
  return false;
}();

// Before anything opens the driver: libsk caches the first driver it loads.
const bool g_env = [] {
  setenv("SK_CUDA_DRIVER_LIBRARY", SK_FAKE_CUDA_DRIVER, 1);
  return *sk::cuda_test::private_cache_home() != 0;
}();

struct FakeCall {
  const char *name;
  void *stream;
  uint64_t address, size;
};

bool named(const FakeCall &c, const char *name) { return std::strcmp(c.name, name) == 0; }

// Whether the device-memory write log[w] is done before the launch log[l] reads memory: on
// the launch's stream; or the host waited for the write's stream (or the whole context)
// after it; or an event recorded on the write's stream after it is waited for by the
// launch's stream before the launch.
bool ordered_before(const std::vector<FakeCall> &log, size_t w, size_t l) {
  void *const ws = log[w].stream, *const ls = log[l].stream;
  if (ws == ls) return true;
  for (size_t i = w + 1; i < l; ++i) {
    if (named(log[i], "cuCtxSynchronize") || (named(log[i], "cuStreamSynchronize") && log[i].stream == ws))
      return true;
    if (named(log[i], "cuEventRecord") && log[i].stream == ws)
      for (size_t j = i + 1; j < l; ++j)
        if (named(log[j], "cuStreamWaitEvent") && log[j].stream == ls && log[j].address == log[i].address)
          return true;
  }
  return false;
}

struct Fake {
  void *lib = dlopen(SK_FAKE_CUDA_DRIVER, RTLD_NOW);
  int (*launches)(FakeLaunch *,
                  int) = reinterpret_cast<int (*)(FakeLaunch *, int)>(dlsym(lib, "fake_cuda_launches"));
  int (*waits)() = reinterpret_cast<int (*)()>(dlsym(lib, "fake_cuda_stream_waits"));
  void (*reset)(int) = reinterpret_cast<void (*)(int)>(dlsym(lib, "fake_cuda_reset"));
  void (*fail_next)(const char *,
                    int) = reinterpret_cast<void (*)(const char *, int)>(dlsym(lib, "fake_cuda_fail_next"));
  void (*fail_later)(const char *, int,
                     int) = reinterpret_cast<void (*)(const char *, int, int)>(dlsym(lib, "fake_cuda_fail_later"));
  void *(*current)() = reinterpret_cast<void *(*)()>(dlsym(lib, "fake_cuda_current"));
  int (*depth)() = reinterpret_cast<int (*)()>(dlsym(lib, "fake_cuda_context_depth"));
  int (*set_current)(void *) = reinterpret_cast<int (*)(void *)>(dlsym(lib, "cuCtxSetCurrent"));
  int (*calls)(FakeCall *, int) = reinterpret_cast<int (*)(FakeCall *, int)>(dlsym(lib, "fake_cuda_calls"));
  std::vector<FakeCall> log() {
    std::vector<FakeCall> v(4096);
    v.resize((size_t)calls(v.data(), (int)v.size()));
    return v;
  }
  std::vector<FakePlainLaunch> plain() {
    auto get = reinterpret_cast<int (*)(FakePlainLaunch *, int)>(dlsym(lib, "fake_cuda_plain_launches"));
    std::vector<FakePlainLaunch> v(64);
    v.resize((size_t)get(v.data(), (int)v.size()));
    return v;
  }
  std::vector<FakeLaunch> all() {
    std::vector<FakeLaunch> v(256);
    v.resize((size_t)launches(v.data(), (int)v.size()));
    return v;
  }
};

using sk::cuda_test::contains;

struct FakeNode {
  const char *name;
  FakeLaunch launch;
  uint64_t address, size;
};

// The application's side of graph capture, as cudart would call the driver.
struct FakeGraphs {
  void *lib;
  template <class F>
  F fn(const char *name) {
    return reinterpret_cast<F>(dlsym(lib, name));
  }
  int push(void *ctx) { return fn<int (*)(void *)>("cuCtxPushCurrent_v2")(ctx); }
  int pop() {
    void *ctx = nullptr;
    return fn<int (*)(void **)>("cuCtxPopCurrent_v2")(&ctx);
  }
  int stream_create(void **s) { return fn<int (*)(void **, unsigned)>("cuStreamCreate")(s, 1); }
  int stream_destroy(void *s) { return fn<int (*)(void *)>("cuStreamDestroy_v2")(s); }
  int begin(void *s) { return fn<int (*)(void *, int)>("cuStreamBeginCapture_v2")(s, 0); }
  int end(void *s, void **g) { return fn<int (*)(void *, void **)>("cuStreamEndCapture")(s, g); }
  int instantiate(void **e, void *g) {
    return fn<int (*)(void **, void *, unsigned long long)>("cuGraphInstantiateWithFlags")(e, g, 0);
  }
  int launch(void *e, void *s) { return fn<int (*)(void *, void *)>("cuGraphLaunch")(e, s); }
  int exec_destroy(void *e) { return fn<int (*)(void *)>("cuGraphExecDestroy")(e); }
  int destroy(void *g) { return fn<int (*)(void *)>("cuGraphDestroy")(g); }
  std::vector<FakeNode> nodes(void *g) {
    std::vector<FakeNode> v(64);
    v.resize((size_t)fn<int (*)(void *, FakeNode *, int)>("fake_cuda_graph_nodes")(g, v.data(), (int)v.size()));
    return v;
  }
};

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
  // Reopens dev_ on a driver that reports `version` (cuDriverGetVersion), before any module.
  void reopen_on_driver(int version) {
    ASSERT_TRUE(modules_.empty());
    sk_device_close(dev_);
    dev_ = nullptr;
    reinterpret_cast<void (*)(int)>(dlsym(fake_.lib, "fake_cuda_set_driver_version"))(version);
    ASSERT_EQ(sk_device_open("cuda:0", &dev_), SK_OK) << sk_last_error();
  }
  // A super kernel of `steps` chain_step steps on `block_dim` blocks each (the stand-in runs no
  // kernel: the arguments are placeholders); nullptr after a failed expectation.
  sk_superkernel *chain(const char *name, uint32_t steps, uint32_t block_dim) {
    sk_kernel *step = kernel("chain.cubin", "chain_step");
    if (!step) return nullptr;
    uint64_t x = 0x1000;
    uint32_t n = 8, i = 0;
    void *args[] = {&x, &n, &i};
    sk_scope *scope = nullptr;
    EXPECT_EQ(sk_scope_begin(dev_, name, nullptr, &scope), SK_OK) << sk_last_error();
    if (!scope) return nullptr;
    for (uint32_t k = 0; k < steps; ++k)
      EXPECT_EQ(sk_add_kernel(scope, step, block_dim, args, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    return sk;
  }
  // A stop flag for sk_launch_repeat: 4 bytes of device memory holding 0 (nullptr on failure).
  uint32_t *zeroed_flag() {
    void *mem = nullptr;
    EXPECT_EQ(sk_mem_alloc(dev_, 4, &mem), SK_OK) << sk_last_error();
    const uint32_t zero = 0;
    if (mem) EXPECT_EQ(sk_memcpy(dev_, mem, &zero, 4), SK_OK) << sk_last_error();
    return static_cast<uint32_t *>(mem);
  }
  // The super kernel of `scope`, finalized and launched once (nullptr after a failed expectation).
  static sk_superkernel *finalize_and_launch(sk_scope *scope) {
    sk_superkernel *sk = nullptr;
    EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    if (sk && (sk_launch(sk, nullptr) != SK_OK || sk_stream_synchronize(nullptr) != SK_OK)) {
      ADD_FAILURE() << sk_last_error();
      sk_superkernel_destroy(sk);
      sk = nullptr;
    }
    return sk;
  }
  // One kernel of fuse_then_launch_alone, with its blocks and arguments.
  struct Step {
    sk_kernel *kernel;
    uint32_t blocks;
    void **args;
  };
  // Fuses `steps` into super kernel `name`, which finalizes and launches and whose explain holds
  // each of `facts`; then launches each kernel alone.
  void fuse_then_launch_alone(const char *name, std::initializer_list<Step> steps,
                              std::initializer_list<const char *> facts) {
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, name, nullptr, &scope), SK_OK);
    for (const Step &s : steps)
      ASSERT_EQ(sk_add_kernel(scope, s.kernel, s.blocks, s.args, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = finalize_and_launch(scope);
    ASSERT_NE(sk, nullptr);
    const std::string json = explain(sk);
    for (const char *fact : facts) EXPECT_TRUE(contains(json, fact)) << fact << " in " << json;
    sk_superkernel_destroy(sk);
    for (const Step &s : steps)
      ASSERT_EQ(sk_launch_kernel(s.kernel, s.blocks, s.args, nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  }
  // Its explain JSON ("" after a failed expectation).
  static std::string explain(sk_superkernel *sk) {
    size_t need = 0;
    EXPECT_EQ(sk_superkernel_explain(sk, nullptr, 0, &need), SK_OK) << sk_last_error();
    std::string json(need, '\0');
    EXPECT_EQ(sk_superkernel_explain(sk, json.data(), need, nullptr), SK_OK) << sk_last_error();
    return json;
  }
  // The module of the file at `path`, unloaded at the end (nullptr after a failed expectation).
  sk_module *module(const std::string &path) {
    sk_module *mod = nullptr;
    EXPECT_EQ(sk_module_load_file(dev_, path.c_str(), &mod), SK_OK) << path << ": " << sk_last_error();
    if (mod) modules_.push_back(mod);
    return mod;
  }
  sk_kernel *kernel(const char *file, const char *name) {
    sk_module *mod = module(sk::cuda_test::kernel_path(file));
    if (!mod) return nullptr;
    sk_kernel *k = nullptr;
    EXPECT_EQ(sk_module_get_kernel(mod, name, &k), SK_OK) << sk_last_error();
    return k;
  }
  // The step tables uploaded for `launch` (cuMemcpyHtoDAsync past its sync buffer, in the
  // allocation that holds it, since it was made) whose size in words `fits` takes, read back in
  // order. Another super kernel's memory, freed since, may lie past it.
  std::vector<std::vector<uint32_t>> step_tables(const FakeLaunch &launch, const std::function<bool(size_t)> &fits) {
    const std::vector<FakeCall> log = fake_.log();
    size_t from = log.size();
    uint64_t end = 0;
    for (size_t i = 0; i < log.size(); ++i)
      if (named(log[i], "cuMemAlloc") && log[i].address <= launch.sync && launch.sync < log[i].address + log[i].size)
        from = i, end = log[i].address + log[i].size;
    std::vector<std::vector<uint32_t>> out;
    for (size_t i = from; i < log.size(); ++i)
      if (const FakeCall &c = log[i]; named(c, "cuMemcpyHtoDAsync") && c.address > launch.sync &&
                                      c.address + c.size <= end && c.size % 4 == 0 && fits(c.size / 4)) {
        out.emplace_back(c.size / 4);
        EXPECT_EQ(sk_memcpy(dev_, out.back().data(), reinterpret_cast<void *>(c.address), c.size), SK_OK);
      }
    return out;
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

// The same cubin loaded twice (two sk_module_load calls, one from a copy of the file's bytes)
// is one module: kernels of both fuse, and the link has the cubin once (nvJitLink refuses two
// definitions of each function), as it would for kernels of one load.
TEST_F(CudaFakeDriver, TheSameBytesLoadedTwiceLinkOnce) {
  sk_kernel *a = kernel("chain.cubin", "chain_step");
  const std::vector<uint8_t> bytes = sk::cuda_test::kernel_bytes("chain.cubin");
  sk_module *copy = nullptr;
  ASSERT_EQ(sk_module_load(dev_, bytes.data(), bytes.size(), &copy), SK_OK) << sk_last_error();
  modules_.push_back(copy);
  sk_kernel *b = nullptr;
  ASSERT_EQ(sk_module_get_kernel(copy, "chain_step", &b), SK_OK) << sk_last_error();
  ASSERT_NE(a, nullptr);
  uint32_t *x = reinterpret_cast<uint32_t *>(0x1234000);
  uint32_t n = 100, i0 = 0, i1 = 1;
  void *first[] = {&x, &n, &i0}, *second[] = {&x, &n, &i1};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "twice", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, a, 2, first, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, b, 2, second, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  sk_superkernel_destroy(sk);
  // Unloading one of them leaves the other's kernels whole.
  sk_module_unload(modules_.front());
  modules_.erase(modules_.begin());
  ASSERT_EQ(sk_launch_kernel(b, 2, second, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
}

// What nvcc -dc writes by default (a host object), and its fatbinaries (two architectures,
// zstd; plain; LZ4) load through the C API as the cubin inside, and fuse and launch; the same
// host object loaded twice is one module (the link has its cubin once). The linked cubin of
// nvcc -c is refused with the advice to build relocatable code.
TEST_F(CudaFakeDriver, WhatNvccWritesWithoutCubinFusesAndLaunches) {
  for (const char *file : {"chain_host.o", "chain_multi.fatbin", "chain_plain.fatbin", "chain_lz4.fatbin"}) {
    SCOPED_TRACE(file);
    const size_t before = fake_.all().size();
    sk_kernel *step = kernel(file, "chain_step"), *axpy = kernel(file, "chain_axpy");
    const std::vector<uint8_t> bytes = sk::cuda_test::kernel_bytes(file);
    sk_module *again = nullptr;
    ASSERT_EQ(sk_module_load(dev_, bytes.data(), bytes.size(), &again), SK_OK) << sk_last_error();
    modules_.push_back(again);
    sk_kernel *step2 = nullptr;
    ASSERT_EQ(sk_module_get_kernel(again, "chain_step", &step2), SK_OK) << sk_last_error();
    ASSERT_TRUE(step && axpy);
    uint32_t *x = reinterpret_cast<uint32_t *>(0x1234000);
    float *y = reinterpret_cast<float *>(0x1235000), alpha = 2;
    uint32_t n = 100, i0 = 0, i1 = 1;
    void *first[] = {&x, &n, &i0}, *second[] = {&x, &n, &i1}, *third[] = {&y, &alpha, &x, &n};
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, file, nullptr, &scope), SK_OK);
    ASSERT_EQ(sk_add_kernel(scope, step, 2, first, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, step2, 2, second, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, axpy, 4, third, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    const std::vector<FakeLaunch> launches = fake_.all();
    ASSERT_EQ(launches.size(), before + 1);
    EXPECT_EQ(launches.back().grid, 4u);
    sk_superkernel_destroy(sk);
    ASSERT_EQ(sk_launch_kernel(axpy, 4, third, nullptr), SK_OK) << sk_last_error();  // unfused too
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  }
  sk_module *mod = reinterpret_cast<sk_module *>(0x1);
  EXPECT_EQ(sk_module_load_file(dev_, sk::cuda_test::kernel_path("chain_whole.o").c_str(), &mod),
            SK_ERR_UNSUPPORTED);
  EXPECT_EQ(mod, reinterpret_cast<sk_module *>(0x1));
  EXPECT_TRUE(contains(sk_last_error(), "chain_whole.o")) << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "-rdc=true")) << sk_last_error();
}

TEST_F(CudaFakeDriver, TheDeviceCountsItsMultiprocessorsAsCores) {
  uint32_t cores = 0;
  ASSERT_EQ(sk_device_cores(dev_, &cores), SK_OK) << sk_last_error();
  EXPECT_EQ(cores, 4u);                                              // the fake driver's SMs
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
  // The step table the first launch read, written once before it: the clipped plan's, on the
  // entry linked for the first plan (20 blocks on 20 cores).
  using namespace sk::cuda;
  const size_t words = kTableHeaderWords + 2 * kStepWords + 2;  // step 1 waits for step 0
  const auto tables = step_tables(l[0], [&](size_t n) { return n == words; });
  ASSERT_EQ(tables.size(), 1u);
  const std::vector<uint32_t> &table = tables[0];
  EXPECT_EQ(table[0], 2u);
  const uint32_t *r0 = &table[kTableHeaderWords], *r1 = r0 + kStepWords;
  EXPECT_EQ(r0[kStepBlockDim], 20u);
  EXPECT_EQ(r0[kStepCores], 8u);
  EXPECT_EQ(r1[kStepBlockDim], 5u);
  EXPECT_LE(r1[kStepCores], 8u);
  EXPECT_EQ(r1[kStepArgBase], 3u);
  EXPECT_EQ(table[r1[kStepDepBegin]], 0u);      // step 0 ...
  EXPECT_EQ(table[r1[kStepDepBegin] + 1], 8u);  // ... on its 8 cores
  char json[8192];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
  EXPECT_TRUE(contains(json, "cuda")) << json;
  sk_profile_record rec{};
  rec.struct_size = sizeof rec;
  size_t count = 0;
  EXPECT_EQ(sk_superkernel_profile(sk, &rec, 1, &count), SK_ERR_UNSUPPORTED);
  sk_superkernel_destroy(sk);
}

// Block-local edges reach the step table the launch reads: the block-local step has no
// dependency (its block waits for nothing but the block barrier), its predecessor counts no
// arrival, and the step after it (a barrier) waits for it alone; explain says so.
TEST_F(CudaFakeDriver, BlockLocalEdgesAreInTheStepTable) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *args[] = {&x, &n, &i};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "block_local", nullptr, &scope), SK_OK) << sk_last_error();
  for (uint32_t k = 0; k < 3; ++k) {
    sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
    o.flags = k == 1 ? SK_KERNEL_FLAG_BLOCK_LOCAL : 0;
    ASSERT_EQ(sk_add_kernel(scope, step, 4, args, &o), SK_OK) << sk_last_error();
  }
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  using namespace sk::cuda;
  const size_t words = kTableHeaderWords + 3 * kStepWords + 2;  // one dependency pair: step 2's
  const auto tables = step_tables(l[0], [&](size_t n) { return n == words; });
  ASSERT_EQ(tables.size(), 1u);
  const std::vector<uint32_t> &table = tables[0];
  const uint32_t *r0 = &table[kTableHeaderWords], *r1 = r0 + kStepWords, *r2 = r1 + kStepWords;
  EXPECT_EQ(r0[kStepFlags] & kStepNoArrive, kStepNoArrive);
  EXPECT_EQ(r1[kStepDepBegin], r1[kStepDepEnd]);
  EXPECT_EQ(r1[kStepFlags] & (kStepWaitNow | kStepNoArrive), 0u);
  EXPECT_EQ(r1[kStepFirst], r0[kStepFirst]);
  EXPECT_EQ(r1[kStepCores], r0[kStepCores]);
  ASSERT_EQ(r2[kStepDepEnd] - r2[kStepDepBegin], 2u);
  EXPECT_EQ(table[r2[kStepDepBegin]], 1u);
  // The last step waits at its start; nothing waits for it, so it counts no arrival.
  EXPECT_EQ(r2[kStepFlags] & (kStepWaitNow | kStepNoArrive), kStepWaitNow | kStepNoArrive);
  char json[8192];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
  EXPECT_TRUE(contains(json, "\"previous_step\":0,\"edge\":\"block-local\",\"wait_previous\":\"none\"")) << json;
  EXPECT_TRUE(contains(json, "\"previous_step\":1,\"edge\":\"barrier\"")) << json;
  sk_superkernel_destroy(sk);
}

// Kernels written for programmatic dependent launch wait where their griddepcontrol.wait stands:
// in the step table a step of one after a kernel that launches its dependents early waits in
// the kernel (no wait at its start), after one that does not at its start, the first step
// waits for nothing, and explain says which; with early-start=0 every step after the first
// waits at its start. So does a step whose kernel may write global memory before its wait
// (pdl_one_waits: thread 0 alone waits), wherever it stands.
TEST_F(CudaFakeDriver, ADependentLaunchKernelWaitsAtItsGridDependencyWait) {
  sk_kernel *scale = kernel("dependent_launch.ptx", "pdl_scale");
  sk_kernel *weigh = kernel("dependent_launch.ptx", "pdl_weighted");
  sk_kernel *one = kernel("dependent_launch.ptx", "pdl_one_waits");
  ASSERT_TRUE(scale && weigh && one);
  uint64_t x = 0x1000, y = 0x2000, z = 0x3000;
  int32_t n = 1000;
  void *scale_args[] = {&x, &y, &n}, *weigh_args[] = {&x, &y, &z, &n};
  for (const char *options : {"early-start=1", "early-start=0"}) {
    SCOPED_TRACE(options);
    const bool early = std::string(options) == "early-start=1";
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "pdl", options, &scope), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, scale, 8, scale_args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, weigh, 8, weigh_args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, scale, 8, scale_args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, one, 8, scale_args, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    std::vector<FakeLaunch> l = fake_.all();
    ASSERT_FALSE(l.empty());
    using namespace sk::cuda;
    const size_t words = kTableHeaderWords + 4 * kStepWords + 6;  // a dependency pair each: steps 1, 2, 3
    const auto tables = step_tables(l.back(), [&](size_t n) { return n == words; });
    ASSERT_FALSE(tables.empty());
    const std::vector<uint32_t> &table = tables.back();
    const uint32_t *r0 = &table[kTableHeaderWords], *r1 = r0 + kStepWords, *r2 = r1 + kStepWords,
                   *r3 = r2 + kStepWords;
    EXPECT_EQ(r0[kStepFlags] & kStepWaitNow, 0u);
    EXPECT_EQ(r0[kStepDepBegin], r0[kStepDepEnd]);
    ASSERT_EQ(r1[kStepDepEnd] - r1[kStepDepBegin], 2u);
    EXPECT_EQ(table[r1[kStepDepBegin]], 0u);
    EXPECT_EQ(r1[kStepFlags] & kStepWaitNow, early ? 0u : kStepWaitNow);
    ASSERT_EQ(r2[kStepDepEnd] - r2[kStepDepBegin], 2u);
    EXPECT_EQ(table[r2[kStepDepBegin]], 1u);
    EXPECT_EQ(r2[kStepFlags] & kStepWaitNow, kStepWaitNow);  // pdl_weighted launches no dependent early
    ASSERT_EQ(r3[kStepDepEnd] - r3[kStepDepBegin], 2u);
    EXPECT_EQ(table[r3[kStepDepBegin]], 2u);
    EXPECT_EQ(r3[kStepFlags] & kStepWaitNow, kStepWaitNow);  // pdl_one_waits may store before it waits
    char json[8192];
    ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
    EXPECT_TRUE(contains(json, std::string("\"previous_step\":0,\"edge\":\"barrier\",\"wait_previous\":\"") +
                                   (early ? "griddepcontrol.wait" : "kernel start") + "\""))
        << json;
    EXPECT_TRUE(contains(json, "\"previous_step\":1,\"edge\":\"barrier\",\"wait_previous\":\"kernel start\""))
        << json;
    EXPECT_TRUE(contains(json, "\"constructs\":[\"griddepcontrol.wait\",\"griddepcontrol.launch_dependents\"]"))
        << json;
    EXPECT_TRUE(contains(json, "\"constructs\":[\"griddepcontrol.wait\"]")) << json;  // pdl_weighted
    EXPECT_TRUE(contains(json,
                         "\"constructs\":[\"griddepcontrol.wait\",\"a write before griddepcontrol.wait\"],"
                         "\"previous_step\":2,\"edge\":\"barrier\",\"wait_previous\":\"kernel start\""))
        << json;
    sk_superkernel_destroy(sk);
  }
}

// A kernel with a grid barrier of its own, taken with SK_KERNEL_DESC_COOPERATIVE: its blocks are
// each a block of the super kernel, all co-resident (the stand-in holds 8); 9 are refused at
// sk_finalize and by sk_launch_kernel, naming the barrier; taken without the flag it is another
// kernel handle, planned as any other.
TEST_F(CudaFakeDriver, AKernelWithAGridBarrierOfItsOwnRunsEveryBlockAtOnce) {
  sk_module *mod = module(sk::cuda_test::kernel_path("grid_sync.ptx"));
  ASSERT_NE(mod, nullptr);
  sk_kernel_desc desc{sizeof desc, nullptr, 0, 0, {0, 0, 0}, SK_KERNEL_DESC_COOPERATIVE};
  sk_kernel *k = nullptr, *plain = nullptr;
  ASSERT_EQ(sk_module_get_kernel_desc(mod, "own_barrier_rotate", &desc, &k), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(mod, "own_barrier_rotate", &plain), SK_OK) << sk_last_error();
  EXPECT_NE(k, plain);
  uint64_t p = 0x1000;
  uint32_t round = 1;
  void *args[] = {&p, &p, &p, &p, &round};
  for (const uint32_t blocks : {8u, 9u}) {
    SCOPED_TRACE(blocks);
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "own_barrier", nullptr, &scope), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, k, blocks, args, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    if (blocks == 9) {
      EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE);
      EXPECT_TRUE(contains(sk_last_error(),
                           "'own_barrier_rotate' synchronises its cores (a grid barrier of its own, "
                           "SK_KERNEL_DESC_COOPERATIVE) on block_dim 9"))
          << sk_last_error();
      EXPECT_EQ(sk_launch_kernel(k, 9, args, nullptr), SK_ERR_INCOMPATIBLE);
      continue;
    }
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    char json[8192];
    ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
    EXPECT_TRUE(contains(json, "\"sync_all_scope\":\"own cores\"")) << json;
    EXPECT_TRUE(contains(json, "\"constructs\":[\"SK_KERNEL_DESC_COOPERATIVE\"]")) << json;
    ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    sk_superkernel_destroy(sk);
  }
}

// Dependencies, not order: a decode step's two independent branches (b on scope stream 1, a on
// stream 0) and a join after an event b recorded. The step table the launch uploads gives each
// step only what it depends on: a branch's steps their own predecessor, the join a's last step
// and b's last (the event), never a step of the other branch before it; the branches run on
// blocks of their own (the planner places them side by side), so neither waits for the other.
TEST_F(CudaFakeDriver, TwoBranchesWaitOnlyForWhatTheyDependOn) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *args[] = {&x, &n, &i};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "two_branches", "stream-fusion=1", &scope), SK_OK) << sk_last_error();
  sk_kernel_options on1 = SK_KERNEL_OPTIONS_INIT;
  on1.stream = 1;
  const uint32_t k = 3;  // b: steps 0..2 on stream 1; a: steps 3..4 on stream 0; the join: step 5
  for (uint32_t s = 0; s < k; ++s) ASSERT_EQ(sk_add_kernel(scope, step, 2, args, &on1), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_scope_record_event(scope, 1, 0), SK_OK) << sk_last_error();
  for (uint32_t s = 0; s + 1 < k; ++s) ASSERT_EQ(sk_add_kernel(scope, step, 2, args, nullptr), SK_OK);
  ASSERT_EQ(sk_scope_wait_event(scope, 0, 0), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, step, 2, args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  using namespace sk::cuda;
  const size_t steps = 2 * k, records = kTableHeaderWords + steps * kStepWords;
  const auto tables = step_tables(l[0], [&](size_t n) { return n > records; });  // records and dependencies
  ASSERT_EQ(tables.size(), 1u);
  const std::vector<uint32_t> &table = tables[0];
  ASSERT_EQ(table[0], steps);
  auto deps = [&](uint32_t s) {
    const uint32_t *r = &table[kTableHeaderWords + s * kStepWords];
    std::set<uint32_t> d;
    for (uint32_t w = r[kStepDepBegin]; w + 2 <= r[kStepDepEnd]; w += 2) d.insert(table[w]);
    return d;
  };
  auto record = [&](uint32_t s) { return &table[kTableHeaderWords + s * kStepWords]; };
  EXPECT_EQ(deps(0), std::set<uint32_t>{});
  EXPECT_EQ(deps(1), std::set<uint32_t>{0});
  EXPECT_EQ(deps(2), std::set<uint32_t>{1});
  EXPECT_EQ(deps(3), std::set<uint32_t>{});  // a's first step: nothing of b
  EXPECT_EQ(deps(4), std::set<uint32_t>{3});
  EXPECT_EQ(deps(5), (std::set<uint32_t>{2, 4}));  // the join: a's last and the event's step
  EXPECT_EQ(record(0)[kStepFlags] & kStepWaitNow, 0u);
  EXPECT_EQ(record(3)[kStepFlags] & kStepWaitNow, 0u);
  EXPECT_EQ(record(5)[kStepFlags] & kStepWaitNow, kStepWaitNow);
  // Side by side: a's blocks and b's blocks are disjoint.
  const uint32_t b_first = record(0)[kStepFirst], a_first = record(3)[kStepFirst];
  EXPECT_TRUE(b_first + record(0)[kStepCores] <= a_first || a_first + record(3)[kStepCores] <= b_first)
      << b_first << " " << a_first;
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
  // Explain: the join's stream predecessor, and the step of the event it waits for.
  EXPECT_EQ(std::string(json).find("\"waits_for_steps\":"), std::string(json).rfind("\"waits_for_steps\":")) << json;
  EXPECT_TRUE(contains(json, "\"previous_step\":4,")) << json;
  EXPECT_TRUE(contains(json, "\"waits_for_steps\":[2]")) << json;
  sk_superkernel_destroy(sk);
}

// sk_launch_repeat is one launch: the entry gets the run count and the stop flag's address
// as parameters and counts the runs' epochs on the device (the stand-in does what its blocks
// do); sk_launch passes 1 and no flag.
TEST_F(CudaFakeDriver, LaunchRepeatIsOneLaunchOfNRuns) {
  sk_superkernel *sk = chain("repeated", 2, 4);
  ASSERT_NE(sk, nullptr);
  const size_t logged = fake_.log().size();
  ASSERT_EQ(sk_launch_repeat(sk, 5, nullptr, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  const std::vector<FakeCall> log = fake_.log();
  size_t kernel_launches = 0;
  for (size_t c = logged; c < log.size(); ++c) kernel_launches += named(log[c], "cuLaunchKernelEx");
  EXPECT_EQ(kernel_launches, 2u);  // the repeat's one and sk_launch's
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].runs, 5u);
  EXPECT_EQ(l[0].stop, 0u);
  EXPECT_EQ(l[0].epoch, 1u);
  EXPECT_EQ(l[0].last_epoch, 5u);  // the runs are epochs 1..5
  EXPECT_EQ(l[1].runs, 1u);
  EXPECT_EQ(l[1].stop, 0u);
  EXPECT_EQ(l[1].epoch, 6u);
  EXPECT_EQ(l[1].last_epoch, 6u);
  EXPECT_EQ(l[0].cooperative, 1);
  // The largest n is one launch too.
  ASSERT_EQ(sk_launch_repeat(sk, SK_LAUNCH_REPEAT_MAX, nullptr, nullptr), SK_OK) << sk_last_error();
  l = fake_.all();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[2].runs, SK_LAUNCH_REPEAT_MAX);
  EXPECT_EQ(l[2].last_epoch, 6u + SK_LAUNCH_REPEAT_MAX);
  sk_superkernel_destroy(sk);
}

// The stop flag is device memory the entry reads after each run but the last: a flag already
// set at the launch stops it after one run; a zero one lets all n run. A flag the device
// cannot read (pageable host memory), n 0 or a misaligned flag queue nothing.
TEST_F(CudaFakeDriver, LaunchRepeatStopsOnTheDeviceFlagAndRefusesBadOnes) {
  sk_superkernel *sk = chain("stopping", 1, 4);
  ASSERT_NE(sk, nullptr);
  uint32_t *flag = zeroed_flag();
  ASSERT_NE(flag, nullptr);
  const uint32_t one = 1;
  ASSERT_EQ(sk_launch_repeat(sk, 4, flag, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_memcpy(dev_, flag, &one, 4), SK_OK);
  ASSERT_EQ(sk_launch_repeat(sk, 4, flag, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].stop, reinterpret_cast<uint64_t>(flag));
  EXPECT_EQ(l[0].runs, 4u);
  EXPECT_EQ(l[0].last_epoch - l[0].epoch + 1, 4u);  // a zero flag: all four runs
  EXPECT_EQ(l[1].runs, 4u);
  EXPECT_EQ(l[1].epoch, 5u);
  EXPECT_EQ(l[1].last_epoch, 5u);  // set before the launch: one run

  uint32_t host_flag = 0;  // pageable host memory: no kernel reads it
  EXPECT_EQ(sk_launch_repeat(sk, 4, &host_flag, nullptr), SK_ERR_INVALID_ARGUMENT);
  std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "sk_launch_repeat: super kernel 'stopping'")) << msg;
  EXPECT_TRUE(contains(msg, "stop_flag")) << msg;
  EXPECT_TRUE(contains(msg, "is not memory")) << msg;
  EXPECT_EQ(sk_launch_repeat(sk, 0, flag, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "n is 0")) << sk_last_error();
  EXPECT_EQ(sk_launch_repeat(sk, SK_LAUNCH_REPEAT_MAX + 1, nullptr, nullptr), SK_ERR_INVALID_ARGUMENT);
  const uint32_t *misaligned = reinterpret_cast<const uint32_t *>(reinterpret_cast<char *>(flag) + 2);
  EXPECT_EQ(sk_launch_repeat(sk, 4, misaligned, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "not aligned")) << sk_last_error();
  EXPECT_EQ(fake_.all().size(), 2u);                            // nothing queued
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();  // and the epochs go on
  l = fake_.all();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[2].epoch, 6u);
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  sk_superkernel_destroy(sk);
  sk_mem_free(dev_, flag);
}

// A hang in run k of a repeat raises the launch's abort word (the epoch of run k): the
// iteration barrier's last arriver ends the loop there, the next sync reports it once, and the
// next launch starts the counters afresh.
TEST_F(CudaFakeDriver, AHangInARunEndsTheRepeatAndIsReportedOnce) {
  sk_superkernel *sk = chain("hung_repeat", 2, 4);
  ASSERT_NE(sk, nullptr);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK);  // epoch 1
  // A wait of step 1, block 2 (point 0: task start) past its deadline in run 3 (0-based).
  const uint64_t words[8] = {0, 1, 1, 2, 0, 3, 4, 0};
  reinterpret_cast<void (*)(unsigned, const uint64_t *)>(dlsym(fake_.lib, "fake_cuda_hang_in_run"))(3, words);
  ASSERT_EQ(sk_launch_repeat(sk, 10, nullptr, nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[1].epoch, 2u);
  EXPECT_EQ(l[1].last_epoch, 5u);  // runs 0..3: none after the hung one
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_HANG);
  const std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "'hung_repeat'")) << msg;
  EXPECT_TRUE(contains(msg, "block 2 of step 1 'chain_step'")) << msg;
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();  // once
  ASSERT_EQ(sk_launch_repeat(sk, 3, nullptr, nullptr), SK_OK) << sk_last_error();
  l = fake_.all();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[2].epoch, 1u);  // zeroed after the report
  EXPECT_EQ(l[2].last_epoch, 3u);
  uint64_t after[8];
  ASSERT_EQ(sk_memcpy(dev_, after, reinterpret_cast<void *>(l[2].report), sizeof after), SK_OK);
  EXPECT_EQ(after[0], 0u);
  EXPECT_EQ(after[7], 0u);
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  sk_superkernel_destroy(sk);
}

// With stream fusion, 1-block kernels of three streams run on three blocks of the grid (one
// each, explain's first_unit), not all on block 0; a pin puts a kernel on the block it names.
TEST_F(CudaFakeDriver, StreamsArePlacedOnDistinctBlocks) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint32_t *x = reinterpret_cast<uint32_t *>(0x1234000);
  uint32_t n = 100, index[3] = {0, 1, 2};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "placed", "stream-fusion=1", &scope), SK_OK);
  for (uint32_t k = 0; k < 3; ++k) {
    void *args[] = {&x, &n, &index[k]};
    sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
    o.stream = k;
    ASSERT_EQ(sk_add_kernel(scope, step, 1, args, &o), SK_OK) << sk_last_error();
  }
  void *args[] = {&x, &n, &index[0]};
  sk_kernel_options pin = SK_KERNEL_OPTIONS_INIT;
  pin.first_core = 5;
  pin.core_count = 1;
  ASSERT_EQ(sk_add_kernel(scope, step, 1, args, &pin), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].grid, 6u);  // widened to the pinned block 5
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK);
  EXPECT_TRUE(contains(json, "\"index\":1,")) << json;
  EXPECT_TRUE(contains(json, "\"first_unit\":1,\"placement\":\"packed\"")) << json;
  EXPECT_TRUE(contains(json, "\"first_unit\":2,\"placement\":\"packed\"")) << json;
  EXPECT_TRUE(contains(json, "\"first_unit\":5,\"placement\":\"pinned\"")) << json;
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
  reopen_on_driver(12000);  // a 4 KiB parameter space
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
      EXPECT_EQ(l[0].args_buffer, l[1].args_buffer);
      EXPECT_NE(l[0].args_buffer, 0u);
      EXPECT_EQ(l[0].first_slot, x);  // what each launch read from the buffer
      EXPECT_EQ(l[1].first_slot, y);
      uint64_t slots[4] = {0};
      ASSERT_EQ(sk_memcpy(dev_, slots, reinterpret_cast<void *>(l[1].args_buffer), sizeof slots), SK_OK);
      EXPECT_EQ(slots[0], y);
      EXPECT_EQ(slots[1], n);
      EXPECT_EQ(slots[3], x);  // step 1 keeps its value
    }
    sk_superkernel_destroy(sk);
  }
}

// An argument read by reference keeps its address in its slot, which the GPU reads from at
// each call: memory the driver does not know is refused at finalize and at set_arg, naming the
// step and the argument. A struct takes its bytes' slots, and set_arg rebinds them all.
TEST_F(CudaFakeDriver, ArgumentsReadByReferenceAndAggregatesInTheirSlots) {
  reopen_on_driver(12000);  // a 4 KiB parameter space: 60 steps of 10 slots go to a buffer
  sk_kernel *agg = kernel("aggregates.cubin", "cu_agg");
  ASSERT_NE(agg, nullptr);
  void *pos = nullptr;
  ASSERT_EQ(sk_mem_alloc(dev_, 4, &pos), SK_OK) << sk_last_error();
  uint64_t out = 0x1000;
  int32_t host_pos = 0;  // pageable host memory: the GPU cannot read it
  float p[2] = {1.5f, 2.5f}, p2[2] = {-4.0f, 8.0f};
  double q[2] = {3.0, 0.0};
  int32_t r[5] = {1, 2, 3, 4, 5};
  int32_t cf[2] = {7, 0};
  int16_t h = 9;
  void *args[] = {&out, &host_pos, p, q, r, cf, &h};
  sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
  o.arg_refs = 1u << 1;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "refs", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, agg, 2, args, &o), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sk_last_error()).find("step 0 'cu_agg' reads argument 1 by reference from 0x"),
            std::string::npos)
      << sk_last_error();
  args[1] = pos;
  ASSERT_EQ(sk_scope_begin(dev_, "refs", nullptr, &scope), SK_OK);
  for (int k = 0; k < 60; ++k) ASSERT_EQ(sk_add_kernel(scope, agg, 2, args, &o), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_superkernel_set_arg(sk, 0, 1, &host_pos), SK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sk_last_error()).find("reads argument 1 by reference"), std::string::npos)
      << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_superkernel_set_arg(sk, 0, 2, p2), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  ASSERT_NE(l[1].args_buffer, 0u);
  EXPECT_EQ(l[1].first_slot, out);
  // Step 0's slots as the second launch read them: out, the address, the rebound {f32,f32},
  // {f64,i32} in two slots, {i32[5]} in three, {i8,f32}, i16; step 1 starts at slot 10.
  uint64_t slots[11] = {0};
  ASSERT_EQ(sk_memcpy(dev_, slots, reinterpret_cast<void *>(l[1].args_buffer), sizeof slots), SK_OK);
  EXPECT_EQ(slots[1], reinterpret_cast<uint64_t>(pos));
  EXPECT_EQ(std::memcmp(&slots[2], p2, sizeof p2), 0);
  EXPECT_EQ(std::memcmp(&slots[3], q, sizeof q), 0);
  EXPECT_EQ(std::memcmp(&slots[5], r, sizeof r), 0);
  EXPECT_EQ(slots[7] >> 32, 0u);  // the struct's last 4 bytes of 24: zero
  EXPECT_EQ(std::memcmp(&slots[8], cf, sizeof cf), 0);
  EXPECT_EQ(slots[9], uint64_t(h));
  EXPECT_EQ(slots[10], out);
  sk_superkernel_destroy(sk);
  sk_mem_free(dev_, pos);
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

// Launches run on non-blocking streams, which do not wait for the legacy stream: what a
// launch reads (sync counters, argument buffer, hang report) must be written in its order.
TEST_F(CudaFakeDriver, EverythingALaunchReadsIsWrittenInItsStreamOrder) {
  reopen_on_driver(12000);  // a 4 KiB parameter space
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000, y = 0x2000;
  uint32_t n = 8, i = 0;
  void *args[] = {&x, &n, &i};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "ordered", nullptr, &scope), SK_OK);
  const uint32_t kernels = 200;  // 600 slots, past 4 KiB: arguments in a device buffer
  for (uint32_t k = 0; k < kernels; ++k) ASSERT_EQ(sk_add_kernel(scope, step, 2, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  sk_stream *s1 = nullptr, *s2 = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s1), SK_OK);
  ASSERT_EQ(sk_stream_create(dev_, &s2), SK_OK);
  ASSERT_EQ(sk_launch(sk, s1), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_superkernel_set_arg(sk, 0, 0, &y), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, s2), SK_OK) << sk_last_error();
  // A hang the second launch reports: reading it clears the report for the next launch.
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  const uint64_t report[7] = {1, 1, 0, 1, 0, 1, 2};
  ASSERT_EQ(sk_memcpy(dev_, reinterpret_cast<void *>(l[1].report), report, sizeof report), SK_OK);
  EXPECT_EQ(sk_stream_synchronize(s2), SK_ERR_HANG);
  ASSERT_EQ(sk_launch(sk, s1), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(step, 4, args, s2), SK_OK) << sk_last_error();  // its own sync buffer
  EXPECT_EQ(sk_stream_synchronize(s1), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(s2), SK_OK) << sk_last_error();
  l = fake_.all();
  ASSERT_EQ(l.size(), 4u);
  const std::vector<FakeCall> log = fake_.log();
  std::vector<size_t> at;  // log index of each launch
  for (size_t c = 0; c < log.size(); ++c)
    if (named(log[c], "cuLaunchKernelEx")) at.push_back(c);
  ASSERT_EQ(at.size(), l.size());
  auto writes = [](const FakeCall &c, uint64_t begin, uint64_t size) {
    const bool write = named(c, "cuMemsetD8") || named(c, "cuMemsetD8Async") || named(c, "cuMemcpyHtoD") ||
                       named(c, "cuMemcpyHtoDAsync") || named(c, "cuMemcpy");
    return write && c.address < begin + size && begin < c.address + c.size;
  };
  for (size_t k = 0; k < l.size(); ++k) {
    struct Region {
      const char *what;
      uint64_t begin, size;
    };
    std::vector<Region> reads = {{"sync counters", l[k].sync, 8}, {"hang report", l[k].report, 8 * 8}};
    if (k < 3) reads.push_back({"argument buffer", l[k].args_buffer, 8ull * 3 * kernels});
    // The step table, past the report in the sync buffer's allocation (the one write of its size).
    const uint64_t table_bytes =
        4 * (k < 3 ? sk::cuda::kTableHeaderWords + kernels * sk::cuda::kStepWords + 2 * (kernels - 1)
                   : sk::cuda::kTableHeaderWords + sk::cuda::kStepWords);
    for (size_t w = 0; w < at[k]; ++w)
      if (named(log[w], "cuMemcpyHtoDAsync") && log[w].size == table_bytes && log[w].address > l[k].report)
        reads.push_back({"step table", log[w].address, table_bytes});
    EXPECT_EQ(reads.back().what, std::string("step table")) << "launch " << k;
    for (const Region &r : reads) {
      size_t seen = 0;
      for (size_t w = 0; w < at[k]; ++w) {
        if (!writes(log[w], r.begin, r.size)) continue;
        ++seen;
        EXPECT_TRUE(ordered_before(log, w, at[k]))
            << log[w].name << " of the " << r.what << " (call " << w << ") is not ordered before launch " << k;
      }
      EXPECT_GT(seen, 0u) << "nothing initialised the " << r.what << " of launch " << k;
    }
    EXPECT_EQ(log[at[k]].stream, l[k].stream);
  }
  // The slots set between the launches went to the buffer on the second launch's stream.
  bool rebound = false;
  for (size_t w = at[0]; w < at[1]; ++w)
    rebound |=
        named(log[w], "cuMemcpyHtoDAsync") && log[w].stream == l[1].stream && log[w].address == l[1].args_buffer;
  EXPECT_TRUE(rebound);
  sk_superkernel_destroy(sk);
  sk_stream_destroy(s1);
  sk_stream_destroy(s2);
}

// What a flag call with an id past 15 records (entry_ptx.cpp's __sk_bad_flag) is
// SK_ERR_INVALID_ARGUMENT naming the call and the id, as sk.h says, once.
TEST_F(CudaFakeDriver, FlagIdOutOfRangeBecomesInvalidArgument) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "flags", nullptr, &scope), SK_OK);
  void *a[] = {&x, &n, &i};
  ASSERT_EQ(sk_add_kernel(scope, step, 4, a, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK);
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  // abort flag, super kernel id, step 0, block 2, point 5 (invalid flag), id 17, call 2.
  const uint64_t report[7] = {1, 1, 0, 2, 5, 17, 2};
  ASSERT_EQ(sk_memcpy(dev_, reinterpret_cast<void *>(l[0].report), report, sizeof report), SK_OK);
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_INVALID_ARGUMENT);
  const std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "'flags'")) << msg;
  EXPECT_TRUE(contains(msg, "block 2 of step 0 'chain_step'")) << msg;
  EXPECT_TRUE(contains(msg, "sk_cross_core_set_flag_all(17): flag ids are 0..15")) << msg;
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK);  // reported once
  sk_superkernel_destroy(sk);
}

// A hang belongs to one launch of one super kernel (entry_ptx.cpp's __sk_wait: the report's
// first word and the abort word are the hung launch's epoch, in that super kernel's own
// report): another super kernel's launches and syncs never see it, later launches wait again,
// the sync that covers it reports it once, and the next launch starts the counters afresh.
TEST_F(CudaFakeDriver, AHangAbortsOnlyItsOwnLaunchAndIsReportedOnce) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *a[] = {&x, &n, &i};
  auto make = [&](const char *name) {
    sk_scope *scope = nullptr;
    sk_superkernel *sk = nullptr;
    EXPECT_EQ(sk_scope_begin(dev_, name, nullptr, &scope), SK_OK);
    EXPECT_EQ(sk_add_kernel(scope, step, 4, a, nullptr), SK_OK);
    EXPECT_EQ(sk_add_kernel(scope, step, 4, a, nullptr), SK_OK);
    EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    return sk;
  };
  sk_superkernel *hung = make("hung"), *other = make("other");
  ASSERT_TRUE(hung && other);
  sk_stream *s1 = nullptr, *s2 = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s1), SK_OK);
  ASSERT_EQ(sk_stream_create(dev_, &s2), SK_OK);
  ASSERT_EQ(sk_launch(hung, s1), SK_OK);
  ASSERT_EQ(sk_launch(other, s2), SK_OK);
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_NE(l[0].report, l[1].report);  // each super kernel has its own report
  // What a wait of the first launch writes past its deadline: epoch, super kernel id (the
  // device's first), step 1, block 2, point 0 (task start), counter seen, target, abort word.
  const uint64_t report[8] = {l[0].epoch, 1, 1, 2, 0, 3, 4, l[0].epoch};
  ASSERT_EQ(sk_memcpy(dev_, reinterpret_cast<void *>(l[0].report), report, sizeof report), SK_OK);
  EXPECT_EQ(sk_stream_synchronize(s2), SK_OK) << sk_last_error();  // the other super kernel's stream
  ASSERT_EQ(sk_launch(other, s1), SK_OK);
  ASSERT_EQ(sk_launch(hung, s1), SK_OK);  // before any sync of s1
  l = fake_.all();
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[3].report, l[0].report);
  EXPECT_NE(l[3].epoch, report[7]) << "a later launch would see the abort word as its own";
  EXPECT_EQ(sk_stream_synchronize(s1), SK_ERR_HANG);
  const std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "'hung'")) << msg;
  EXPECT_TRUE(contains(msg, "block 2 of step 1 'chain_step'")) << msg;
  EXPECT_EQ(sk_stream_synchronize(s1), SK_OK) << sk_last_error();  // once
  EXPECT_EQ(sk_stream_synchronize(s2), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_device_synchronize(dev_), SK_OK) << sk_last_error();
  // The next launch zeroes the counters and the report on its own stream, then counts epochs
  // from 1 again; the other super kernel's state is left alone.
  const size_t logged = fake_.log().size();
  ASSERT_EQ(sk_launch(hung, s2), SK_OK);
  ASSERT_EQ(sk_launch(other, s2), SK_OK);
  l = fake_.all();
  ASSERT_EQ(l.size(), 6u);
  EXPECT_EQ(l[4].epoch, 1u);
  EXPECT_EQ(l[5].epoch, l[2].epoch + 1);
  const std::vector<FakeCall> log = fake_.log();
  bool zeroed = false, other_zeroed = false;
  for (size_t c = logged; c < log.size(); ++c)
    if (named(log[c], "cuMemsetD8Async")) {
      zeroed |= log[c].stream == l[4].stream && log[c].address <= l[4].sync &&
                l[4].report + 64 <= log[c].address + log[c].size;
      other_zeroed |= log[c].address <= l[5].report && l[5].report < log[c].address + log[c].size;
    }
  EXPECT_TRUE(zeroed);
  EXPECT_FALSE(other_zeroed);
  uint64_t after[8];
  ASSERT_EQ(sk_memcpy(dev_, after, reinterpret_cast<void *>(l[4].report), sizeof after), SK_OK);
  EXPECT_EQ(after[0], 0u);
  EXPECT_EQ(after[7], 0u);
  EXPECT_EQ(sk_stream_synchronize(s2), SK_OK) << sk_last_error();
  sk_superkernel_destroy(hung);
  sk_superkernel_destroy(other);
  sk_stream_destroy(s1);
  sk_stream_destroy(s2);
}

// sk_device_synchronize, sk_stream_query and sk_stream_synchronize(NULL) each report a hang
// of the default stream once; destroying the super kernel drops an unread one.
TEST_F(CudaFakeDriver, EverySyncPathReportsAHangOnce) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *a[] = {&x, &n, &i};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "paths", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, step, 4, a, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  int done = 0;
  auto device_sync = [&] { return sk_device_synchronize(dev_); };
  auto query = [&] { return sk_stream_query(dev_, nullptr, &done); };
  auto stream_sync = [&] { return sk_stream_synchronize(nullptr); };
  const std::vector<std::function<sk_status()>> paths = {device_sync, query, stream_sync};
  auto hang = [&](sk_superkernel *s) {
    ASSERT_EQ(sk_launch(s, nullptr), SK_OK);
    const FakeLaunch last = fake_.all().back();
    const uint64_t report[8] = {last.epoch, 1, 0, 1, 3, 1, 4, last.epoch};
    ASSERT_EQ(sk_memcpy(dev_, reinterpret_cast<void *>(last.report), report, sizeof report), SK_OK);
  };
  for (size_t p = 0; p < paths.size(); ++p) {
    hang(sk);
    EXPECT_EQ(paths[p](), SK_ERR_HANG) << "path " << p;
    EXPECT_TRUE(contains(sk_last_error(), "'paths'")) << sk_last_error();
    for (size_t q = 0; q < paths.size(); ++q) EXPECT_EQ(paths[q](), SK_OK) << "path " << p << " then " << q;
  }
  hang(sk);
  sk_superkernel_destroy(sk);
  for (size_t q = 0; q < paths.size(); ++q) EXPECT_EQ(paths[q](), SK_OK) << "after destroy, path " << q;
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

// An application that keeps its own context current (cudart, another runtime) finds it
// current again after every libsk call.
TEST_F(CudaFakeDriver, TheCallersContextIsCurrentAfterEveryCall) {
  void *const mine = reinterpret_cast<void *>(0x5000);
  ASSERT_EQ(fake_.set_current(mine), 0);
  const int depth = fake_.depth();
  auto unchanged = [&](const char *after) {
    EXPECT_EQ(fake_.current(), mine) << "after " << after;
    EXPECT_EQ(fake_.depth(), depth) << "after " << after;
  };
  sk_device *dev = nullptr;
  ASSERT_EQ(sk_device_open("cuda:0", &dev), SK_OK) << sk_last_error();
  unchanged("sk_device_open");
  void *p = nullptr;
  ASSERT_EQ(sk_mem_alloc(dev, 64, &p), SK_OK) << sk_last_error();
  unchanged("sk_mem_alloc");
  uint64_t word = 7;
  ASSERT_EQ(sk_memcpy(dev, p, &word, sizeof word), SK_OK) << sk_last_error();
  unchanged("sk_memcpy");
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *args[] = {&x, &n, &i};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "contexts", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, step, 4, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  unchanged("sk_finalize");
  sk_stream *s = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s), SK_OK) << sk_last_error();
  unchanged("sk_stream_create");
  ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();
  unchanged("sk_launch");
  ASSERT_EQ(sk_superkernel_set_arg(sk, 0, 0, &x), SK_OK) << sk_last_error();
  unchanged("sk_superkernel_set_arg");
  ASSERT_EQ(sk_launch_kernel(step, 4, args, s), SK_OK) << sk_last_error();
  unchanged("sk_launch_kernel");
  ASSERT_EQ(sk_stream_synchronize(s), SK_OK) << sk_last_error();
  unchanged("sk_stream_synchronize");
  ASSERT_EQ(sk_device_synchronize(dev_), SK_OK) << sk_last_error();
  unchanged("sk_device_synchronize");
  sk_superkernel_destroy(sk);
  unchanged("sk_superkernel_destroy");
  sk_stream_destroy(s);
  unchanged("sk_stream_destroy");
  sk_mem_free(dev, p);
  unchanged("sk_mem_free");
  sk_device_close(dev);
  unchanged("sk_device_close");
  fake_.set_current(nullptr);
}

// After a sticky error the context is gone: every later call fails naming the first error,
// instead of each reporting whatever the dead context answers.
TEST_F(CudaFakeDriver, AStickyErrorLeavesTheDeviceFailingWithTheFirstError) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *args[] = {&x, &n, &i};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "sticky", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, step, 4, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  fake_.fail_next("cuStreamSynchronize", 700);  // CUDA_ERROR_ILLEGAL_ADDRESS
  EXPECT_EQ(sk_device_synchronize(dev_), SK_ERR_DEVICE);
  EXPECT_TRUE(contains(sk_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS")) << sk_last_error();
  auto lost = [](sk_status st, const char *call) {
    EXPECT_EQ(st, SK_ERR_DEVICE) << call;
    const std::string msg = sk_last_error();
    EXPECT_TRUE(contains(msg, call)) << msg;
    EXPECT_TRUE(contains(msg, "is lost since an earlier error")) << msg;
    EXPECT_TRUE(contains(msg, "CUDA_ERROR_ILLEGAL_ADDRESS")) << msg;
  };
  lost(sk_launch(sk, nullptr), "sk_launch");
  lost(sk_superkernel_set_arg(sk, 0, 0, &x), "sk_superkernel_set_arg");
  lost(sk_launch_kernel(step, 4, args, nullptr), "sk_launch_kernel");
  lost(sk_device_synchronize(dev_), "sk_stream_synchronize");
  void *p = nullptr;
  lost(sk_mem_alloc(dev_, 64, &p), "sk_mem_alloc");
  sk_stream *s = nullptr;
  lost(sk_stream_create(dev_, &s), "sk_stream_create");
  sk_module *mod = nullptr;
  lost(sk_module_load_file(dev_, sk::cuda_test::kernel_path("chain.cubin").c_str(), &mod), "sk_module_load");
  ASSERT_EQ(sk_scope_begin(dev_, "after", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, step, 4, args, nullptr), SK_OK);
  sk_superkernel *again = nullptr;
  lost(sk_finalize(scope, &again), "sk_finalize");
  sk_superkernel_destroy(sk);
}

namespace {

// Cubins of libsk sub-kernels are objects of one module too: kernels of both fuse and launch
// alone; a function no object of the set defines still fails the link, naming it.
TEST_F(CudaFakeDriver, SeveralCubinsAreOneModule) {
  const std::string chain = sk::cuda_test::kernel_path("chain.cubin"),
                    misc = sk::cuda_test::kernel_path("misc.cubin");
  const char *two[] = {chain.c_str(), misc.c_str()};
  sk_module *mod = nullptr;
  ASSERT_EQ(sk_module_load_files(dev_, two, 2, &mod), SK_OK) << sk_last_error();
  modules_.push_back(mod);
  sk_kernel *step = nullptr, *plain = nullptr, *missing = nullptr;
  ASSERT_EQ(sk_module_get_kernel(mod, "chain_step", &step), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel_with_signature(mod, "no_metadata", "ptr,u32", &plain), SK_OK) << sk_last_error();
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *step_args[] = {&x, &n, &i};
  void *plain_args[] = {&x, &n};
  fuse_then_launch_alone("two_cubins", {{step, 4, step_args}, {plain, 4, plain_args}},
                         {R"("compiled":"linked")", "misc.cubin"});
  ASSERT_EQ(sk_module_get_kernel(mod, "calls_missing", &missing), SK_OK) << sk_last_error();
  void *missing_args[] = {&x};
  EXPECT_EQ(sk_launch_kernel(missing, 2, missing_args, nullptr), SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(sk_last_error(), "nobody_defines_this")) << sk_last_error();
}

}  // namespace

namespace {

// fake_cuda_driver.cpp's record of shared memory requests.
struct FakeShared {
  int max_dynamic;
  unsigned occupancy_dynamic;
  unsigned launches;
  unsigned launch_dynamic[64];
};

FakeShared shared_requests(void *lib) {
  FakeShared s{};
  reinterpret_cast<void (*)(FakeShared *)>(dlsym(lib, "fake_cuda_shared"))(&s);
  return s;
}

}  // namespace

TEST_F(CudaFakeDriver, LaunchesPassTheLargestDynamicSharedAndOptInPast48KiB) {
  sk_module *mod = module(sk::cuda_test::kernel_path("shared.cubin"));
  ASSERT_NE(mod, nullptr);
  sk_kernel *big = nullptr, *small = nullptr, *tile = nullptr;
  ASSERT_EQ(sk_module_get_kernel(mod, "dyn_big", &big), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(mod, "dyn_small", &small), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(mod, "tile_a", &tile), SK_OK) << sk_last_error();
  // Each launch passes the largest sub-kernel's extern __shared__ bytes, then libsk's block
  // state (under 1 KiB).
  float *x = reinterpret_cast<float *>(0x1234000);
  uint32_t n = 128;
  void *one[] = {&x};
  void *two[] = {&x, &n};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "dynamic_shared", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, small, 4, one, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, big, 4, one, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, tile, 4, two, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  FakeShared s = shared_requests(fake_.lib);
  ASSERT_EQ(s.launches, 1u);
  const unsigned dynamic = s.launch_dynamic[0];
  EXPECT_GE(dynamic, 65536u);
  EXPECT_LT(dynamic, 65536u + 1024);       // the largest sub-kernel's, not the 69632-byte sum
  EXPECT_EQ(s.max_dynamic, (int)dynamic);  // 24 KiB static + 64 KiB dynamic: opted in
  EXPECT_EQ(s.occupancy_dynamic, dynamic);
  sk_superkernel_destroy(sk);

  fake_.reset(2);
  ASSERT_EQ(sk_scope_begin(dev_, "small_dynamic_shared", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, small, 4, one, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  s = shared_requests(fake_.lib);
  EXPECT_EQ(s.max_dynamic, 0);  // 4 KiB needs no opt-in
  ASSERT_EQ(s.launches, 1u);
  EXPECT_GE(s.launch_dynamic[0], 4096u);
  EXPECT_LT(s.launch_dynamic[0], 4096u + 1024);
  sk_superkernel_destroy(sk);
}

// sk_sync_all behind a call through a pointer: planned as a syncing kernel, and the refusal says
// through what.
TEST_F(CudaFakeDriver, SyncAllBehindAPointerIsPlannedAsSyncing) {
  sk_kernel *k = kernel("reach.cubin", "reach_hook_call");
  ASSERT_NE(k, nullptr);
  uint32_t *partial = reinterpret_cast<uint32_t *>(0x1234000);
  uint32_t v = 1;
  void *args[] = {&partial, &v};
  ASSERT_EQ(sk_launch_kernel(k, 4, args, nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].cooperative, 1);
  EXPECT_EQ(sk_launch_kernel(k, 12, args, nullptr), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "synchronises its blocks")) << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "'reach_hook_call' may call")) << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "through a pointer")) << sk_last_error();

  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "pointer_sync", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, k, 4, args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK) << sk_last_error();
  EXPECT_TRUE(contains(json, "\"conservative\":true")) << json;
  EXPECT_TRUE(contains(json, "\"sync_all_scope\":\"own cores\"")) << json;
  sk_superkernel_destroy(sk);

  // A kernel of the same cubin that calls nothing through a pointer is not cooperative.
  sk_kernel *plain = kernel("reach.cubin", "reach_plain");
  ASSERT_NE(plain, nullptr);
  fake_.reset(2);
  ASSERT_EQ(sk_launch_kernel(plain, 12, args, nullptr), SK_OK) << sk_last_error();
  l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].cooperative, 0);
}

TEST_F(CudaFakeDriver, SyncAllInAHelperIsPlannedAsSyncingAndLaunchedCooperatively) {
  sk_kernel *k = kernel("callgraph.cubin", "sync_in_helper");
  ASSERT_NE(k, nullptr);
  uint32_t *partial = reinterpret_cast<uint32_t *>(0x1234000);
  uint32_t v = 1;
  void *args[] = {&partial, &v};
  ASSERT_EQ(sk_launch_kernel(k, 4, args, nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].grid, 4u);
  EXPECT_EQ(l[0].cooperative, 1);
  // Past the 8 co-resident blocks it is refused, as a kernel that calls sk_sync_all itself.
  EXPECT_EQ(sk_launch_kernel(k, 12, args, nullptr), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "synchronises its blocks")) << sk_last_error();

  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "helper_sync", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, k, 4, args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK) << sk_last_error();
  EXPECT_TRUE(contains(json, "\"sk_sync_all\"")) << json;
  EXPECT_TRUE(contains(json, "\"sync_all_scope\":\"own cores\"")) << json;
  sk_superkernel_destroy(sk);
}

namespace {

// What the loaded image itself says of function `name`, read from its section headers and
// .nv.info without libsk's cubin reader: .nv.shared.<name>'s size, and the EIATTR_REGCOUNT,
// EIATTR_FRAME_SIZE and MIN/MAX_STACK_SIZE of its symbol.
struct ImageResources {
  bool found = false;
  uint32_t registers = 0, shared = 0, frame = 0, stack = 0;
};

ImageResources image_resources(const std::vector<uint8_t> &img, const std::string &name) {
  ImageResources r;
  const auto *eh = reinterpret_cast<const Elf64_Ehdr *>(img.data());
  const auto *sh = reinterpret_cast<const Elf64_Shdr *>(img.data() + eh->e_shoff);
  const char *names = reinterpret_cast<const char *>(img.data() + sh[eh->e_shstrndx].sh_offset);
  uint32_t symbol = 0;
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_SYMTAB) continue;
    const auto *syms = reinterpret_cast<const Elf64_Sym *>(img.data() + sh[i].sh_offset);
    const char *strs = reinterpret_cast<const char *>(img.data() + sh[sh[i].sh_link].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k)
      if (name == strs + syms[k].st_name) symbol = (uint32_t)k;
  }
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    const std::string sec = names + sh[i].sh_name;
    r.found |= sec == ".text." + name;
    if (sec == ".nv.shared." + name) r.shared = (uint32_t)sh[i].sh_size;
    if (sec != ".nv.info") continue;
    // Attributes: format, id, then (format 4) a 16-bit size and the bytes: symbol, value.
    const uint8_t *p = img.data() + sh[i].sh_offset, *end = p + sh[i].sh_size;
    while (p + 2 <= end) {
      const uint8_t format = p[0], id = p[1];
      uint16_t size = 0;
      if (format == 0x04) std::memcpy(&size, p + 2, 2);
      const size_t step = format == 0x04 ? 4u + size : 4u;  // the others pad their value to 2 bytes
      uint32_t words[2] = {0, 0};
      if (format == 0x04 && size == 8) std::memcpy(words, p + 4, 8);
      if (words[0] == symbol && id == 0x2f) r.registers = words[1];
      if (words[0] == symbol && id == 0x11) r.frame = words[1];
      if (words[0] == symbol && (id == 0x12 || id == 0x23)) r.stack = std::max(r.stack, words[1]);
      p += step;
    }
  }
  return r;
}

// What NVIDIA's cuobjdump -res-usage prints of function `name` in `img` ("REG:32 STACK:8
// SHARED:1024 LOCAL:0 ..."), or "" without cuobjdump (SK_CUOBJDUMP, else the one CMake found).
std::string cuobjdump_res_usage(const std::vector<uint8_t> &img, const std::string &name) {
  const char *env = std::getenv("SK_CUOBJDUMP");
  const std::string tool = env && *env ? env : SK_CUOBJDUMP;
  if (tool.empty()) return "";
  char path[] = "/tmp/sk-res-usage-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "mkstemp failed";
  const bool written = write(fd, img.data(), img.size()) == static_cast<ssize_t>(img.size());
  close(fd);
  std::string out;
  if (FILE *p = written ? popen((tool + " -res-usage " + path + " 2>&1").c_str(), "r") : nullptr) {
    char buf[4096];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, got);
    pclose(p);
  }
  std::remove(path);
  const size_t at = out.find("Function " + name + ":\n");
  if (at == std::string::npos) return "no function " + name + " in:\n" + out;
  const size_t begin = at + name.size() + 11;
  return out.substr(begin, out.find('\n', begin) - begin);
}

// The number after "KEY:" in a cuobjdump -res-usage line (-1: absent).
long long res_usage_number(const std::string &line, const std::string &key) {
  const size_t at = line.find(" " + key + ":");
  return at == std::string::npos ? -1 : std::atoll(line.c_str() + at + key.size() + 2);
}

// The number after "key": inside the "cuda_entry" object of an explain document (-1: absent).
long long entry_number(const std::string &json, const std::string &key) {
  const size_t at = json.find("\"cuda_entry\":{");
  if (at == std::string::npos) return -1;
  const size_t k = json.find("\"" + key + "\":", at);
  if (k == std::string::npos || k > json.find('}', at)) return -1;
  return std::atoll(json.c_str() + k + key.size() + 3);
}

}  // namespace

TEST_F(CudaFakeDriver, ExplainReportsTheLinkedEntrysResourcesAsItsCubinSays) {
  sk_module *mod = module(sk::cuda_test::kernel_path("shared.cubin"));
  ASSERT_NE(mod, nullptr);
  sk_kernel *tile = nullptr, *helper = nullptr;
  ASSERT_EQ(sk_module_get_kernel(mod, "tile_a", &tile), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(mod, "tile_in_helper", &helper), SK_OK) << sk_last_error();
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  float *x = reinterpret_cast<float *>(0x1234000);
  uint32_t n = 128, s = 1;
  void *two[] = {&x, &n}, *one[] = {&x}, *three[] = {&x, &n, &s};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "resources", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, tile, 4, two, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, helper, 4, one, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, step, 4, three, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  std::vector<uint8_t> img(1 << 22);
  img.resize(reinterpret_cast<size_t (*)(uint8_t *, size_t)>(dlsym(fake_.lib, "fake_cuda_last_image"))(img.data(),
                                                                                                       img.size()));
  ASSERT_GT(img.size(), sizeof(Elf64_Ehdr));
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK) << sk_last_error();
  const std::string doc = json;
  const size_t e = doc.find("\"entry\":\"");
  ASSERT_NE(e, std::string::npos) << doc;
  const std::string entry = doc.substr(e + 9, doc.find('"', e + 9) - e - 9);
  const ImageResources want = image_resources(img, entry);
  ASSERT_TRUE(want.found) << entry;
  EXPECT_GT(want.registers, 0u);
  EXPECT_EQ(entry_number(doc, "registers"), want.registers) << doc;
  EXPECT_EQ(entry_number(doc, "static_shared_bytes"), want.shared) << doc;
  // tile_a's tile; the helper's line lies over it in the shared overlay (the steps run one
  // after another), and sm_90 reserves 1 KiB of every block's shared memory.
  EXPECT_GE(want.shared, 24u * 1024);
  EXPECT_LE(want.shared, 25u * 1024);
  EXPECT_EQ(entry_number(doc, "local_bytes"), want.frame) << doc;
  EXPECT_EQ(entry_number(doc, "stack_bytes"), want.stack) << doc;
  EXPECT_GT(want.stack, 0u);  // the entry calls its sub-kernels, which keep a frame on the stack
  EXPECT_GE(entry_number(doc, "dynamic_shared_bytes"), 48);  // libsk's per-block state
  EXPECT_EQ(entry_number(doc, "blocks_per_sm"), 2);
  EXPECT_TRUE(contains(doc, "\"arch\":\"sm_")) << doc;
  // The step loop's synchronisation, counted in the entry's code: a barrier after the wait and
  // one before the arrival, one release, one acquire-only fence after the relaxed polls.
  EXPECT_TRUE(contains(doc, "\"step_loop\":{\"block_barriers\":2,\"releases\":1,\"acquires\":1,")) << doc;
  // And as NVIDIA's own reader says (where cuobjdump is installed: scripts/deps).
  const std::string usage = cuobjdump_res_usage(img, entry);
  if (!usage.empty()) {
    EXPECT_EQ(entry_number(doc, "registers"), res_usage_number(usage, "REG")) << usage;
    EXPECT_EQ(entry_number(doc, "stack_bytes"), res_usage_number(usage, "STACK")) << usage;
    EXPECT_EQ(entry_number(doc, "static_shared_bytes"), res_usage_number(usage, "SHARED")) << usage;
    EXPECT_EQ(entry_number(doc, "local_bytes"), res_usage_number(usage, "LOCAL")) << usage;
  }
  sk_superkernel_destroy(sk);
}

namespace {

// The image the stand-in driver loaded last, and its `.nv.shared.<entry>` bytes.
uint32_t last_image_shared(void *lib, const std::string &entry) {
  std::vector<uint8_t> img(1 << 22);
  img.resize(
      reinterpret_cast<size_t (*)(uint8_t *, size_t)>(dlsym(lib, "fake_cuda_last_image"))(img.data(), img.size()));
  if (img.size() <= sizeof(Elf64_Ehdr)) return 0;
  const ImageResources r = image_resources(img, entry);
  return r.found ? r.shared : 0;
}

}  // namespace

// Three 24 KiB tiles of two modules, fused: explain's cuda_entry gives the loaded image's
// static shared memory, one tile's (the shared overlay), where the sum (72 KiB) would not link;
// sk_launch_kernel's entry of one of them holds that kernel's tile.
TEST_F(CudaFakeDriver, ExplainGivesTheOverlaysStaticSharedMemoryNotTheSum) {
  sk_module *shared_cu = module(sk::cuda_test::kernel_path("shared.cubin"));
  ASSERT_NE(shared_cu, nullptr);
  sk_kernel *a = nullptr, *b = nullptr, *c = kernel("overlay.cubin", "tile_c");
  ASSERT_EQ(sk_module_get_kernel(shared_cu, "tile_a", &a), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(shared_cu, "tile_b", &b), SK_OK) << sk_last_error();
  ASSERT_NE(c, nullptr);
  float *x = reinterpret_cast<float *>(0x1234000);
  uint32_t n = 128;
  void *args[] = {&x, &n};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "three_tiles", nullptr, &scope), SK_OK);
  for (sk_kernel *k : {a, b, c}) ASSERT_EQ(sk_add_kernel(scope, k, 1, args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK) << sk_last_error();
  const std::string doc = json;
  const size_t e = doc.find("\"entry\":\"");
  ASSERT_NE(e, std::string::npos) << doc;
  const std::string entry = doc.substr(e + 9, doc.find('"', e + 9) - e - 9);
  const uint32_t shared = last_image_shared(fake_.lib, entry);
  EXPECT_EQ(entry_number(doc, "static_shared_bytes"), shared) << doc;
  EXPECT_GE(shared, 24u * 1024);
  EXPECT_LE(shared, 25u * 1024);  // one tile and the 1 KiB sm_90 reserves
  sk_superkernel_destroy(sk);

  ASSERT_EQ(sk_launch_kernel(c, 1, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  const uint32_t alone = last_image_shared(fake_.lib, entry);
  EXPECT_GE(alone, 24u * 1024);
  EXPECT_LE(alone, 25u * 1024);
}

namespace {

// Finalizes a chain of `steps` sub-kernels in a process of its own (this test binary run
// again: a fresh libsk, nothing loaded or cached in memory) with `env` set there, and says
// whether finalize succeeded (0) or not (1). With nvJitLink pointed at a library that does not
// exist, success means the cubin came from the disk cache. The time finalize took goes to the
// test log.
int finalize_in_child(const std::vector<std::pair<const char *, const char *>> &env, uint32_t steps = 2) {
  const std::string count = std::to_string(steps);
  const pid_t pid = fork();
  if (pid == 0) {
    for (const auto &[name, value] : env) setenv(name, value, 1);
    setenv(kFinalizeChild, count.c_str(), 1);
    execl("/proc/self/exe", "sk_cuda_fake_driver_tests", static_cast<char *>(nullptr));
    _exit(3);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 2;
  return WEXITSTATUS(status);
}

std::vector<std::filesystem::path> cached_files(const std::string &dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(dir + "/libsk", ec)) files.push_back(e.path());
  return files;
}

}  // namespace

TEST(CudaLinkCache, ASecondProcessLoadsTheLinkedCubinFromDisk) {
  ASSERT_TRUE(g_env);
  const std::string home = std::string(sk::cuda_test::private_cache_home()) + "/processes";
  const std::pair<const char *, const char *> cache{"XDG_CACHE_HOME", home.c_str()};
  const std::pair<const char *, const char *> no_linker{"SK_CUDA_NVJITLINK_LIBRARY", "/nonexistent/libnvJitLink.so"};
  // Without nvJitLink and nothing cached, finalize fails: the checks below can tell a link.
  EXPECT_EQ(finalize_in_child({cache, no_linker}), 1);
  EXPECT_EQ(finalize_in_child({cache}), 0);
  const auto files = cached_files(home);
  ASSERT_EQ(files.size(), 1u);  // one cubin, no temporary file left
  EXPECT_EQ(files[0].extension(), ".cubin");
  EXPECT_EQ(finalize_in_child({cache, no_linker}), 0);  // warm: no link
  // A corrupt file is not trusted: it is linked again and rewritten.
  const auto size = std::filesystem::file_size(files[0]);
  for (const auto damage : {0, 1, 2}) {
    std::string bytes;
    {
      std::ifstream in(files[0], std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    ASSERT_EQ(bytes.size(), size);
    if (damage == 0) bytes[bytes.size() - 1] ^= 1;    // a flipped bit in the cubin
    if (damage == 1) bytes.resize(bytes.size() / 2);  // truncated
    if (damage == 2) bytes[12] ^= 1;                  // the key in the header
    std::ofstream(files[0], std::ios::binary | std::ios::trunc) << bytes;
    EXPECT_EQ(finalize_in_child({cache, no_linker}), 1) << "damage " << damage;
    EXPECT_EQ(finalize_in_child({cache}), 0) << "damage " << damage;
    EXPECT_EQ(std::filesystem::file_size(files[0]), size) << "damage " << damage;
    EXPECT_EQ(finalize_in_child({cache, no_linker}), 0) << "damage " << damage;
  }
  // SK_CUDA_LINK_CACHE=0 turns it off.
  EXPECT_EQ(finalize_in_child({cache, no_linker, {"SK_CUDA_LINK_CACHE", "0"}}), 1);
}

TEST(CudaLinkCache, AnUnwritableCacheDirectoryOnlyTurnsTheCacheOff) {
  ASSERT_TRUE(g_env);
  const std::string file = std::string(sk::cuda_test::private_cache_home()) + "/a-file";
  std::ofstream(file) << "not a directory";
  // /proc refuses new directories even to root, where permission bits would not.
  for (const char *home : {"/proc/self", file.c_str()}) {
    EXPECT_EQ(finalize_in_child({{"XDG_CACHE_HOME", home}}), 0) << home;
    EXPECT_EQ(finalize_in_child({{"XDG_CACHE_HOME", home}, {"SK_CUDA_NVJITLINK_LIBRARY", "/nonexistent/x.so"}}), 1)
        << home;
  }
}

// Finalize's cost at scale, in the test log (not asserted: timing is the benchmark's business):
// cold (nvJitLink and ptxas on the whole entry) and warm (a second process, from the disk cache).
TEST(CudaLinkCache, AThousandSubKernelsFinalizeColdThenWarm) {
  ASSERT_TRUE(g_env);
  const std::string home = std::string(sk::cuda_test::private_cache_home()) + "/thousand";
  const std::pair<const char *, const char *> cache{"XDG_CACHE_HOME", home.c_str()};
  EXPECT_EQ(finalize_in_child({cache}, 1000), 0);
  EXPECT_EQ(finalize_in_child({cache, {"SK_CUDA_NVJITLINK_LIBRARY", "/nonexistent/libnvJitLink.so"}}, 1000), 0);
}

TEST_F(CudaFakeDriver, ArgumentsStayInTheParameterSpaceUpTo32KiBFromDriver12_1) {
  // many_args (params.cu) takes 32 argument slots: 256 bytes a step.
  int64_t *out = reinterpret_cast<int64_t *>(0x1234000);
  int64_t v[31];
  void *args[32] = {&out};
  for (int i = 0; i < 31; ++i) {
    v[i] = i;
    args[i + 1] = &v[i];
  }
  // Finalizes `steps` steps on `dev`, launches once and says where the launch found the
  // arguments: "params" (the first slot is `out`), "buffer" (the first parameter is a device
  // buffer that starts with `out`), or "neither".
  auto where = [&](sk_device *dev, uint32_t steps) -> std::string {
    fake_.reset(2);
    sk_kernel *k = nullptr;
    sk_module *mod = nullptr;
    EXPECT_EQ(sk_module_load_file(dev, sk::cuda_test::kernel_path("params.cubin").c_str(), &mod), SK_OK);
    EXPECT_EQ(sk_module_get_kernel(mod, "many_args", &k), SK_OK) << sk_last_error();
    sk_scope *scope = nullptr;
    sk_superkernel *sk = nullptr;
    EXPECT_EQ(sk_scope_begin(dev, "params", nullptr, &scope), SK_OK);
    for (uint32_t i = 0; i < steps; ++i)
      EXPECT_EQ(sk_add_kernel(scope, k, 2, args, nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    std::vector<FakeLaunch> l = fake_.all();
    EXPECT_EQ(l.size(), 1u);
    std::string found = "neither";
    uint64_t first = 0;
    if (!l.empty() && !l[0].args_buffer && l[0].first_slot == reinterpret_cast<uint64_t>(out))
      found = "params";
    else if (!l.empty() && l[0].args_buffer &&
             sk_memcpy(dev, &first, reinterpret_cast<void *>(l[0].args_buffer), 8) == SK_OK &&
             first == reinterpret_cast<uint64_t>(out))
      found = "buffer";
    sk_superkernel_destroy(sk);
    sk_module_unload(mod);
    return found;
  };
  // 16 steps are 4 KiB of arguments: past the parameter space of a CUDA 12.0 driver...
  auto set_version = reinterpret_cast<void (*)(int)>(dlsym(fake_.lib, "fake_cuda_set_driver_version"));
  ASSERT_NE(set_version, nullptr);
  set_version(12000);
  sk_device *old_driver = nullptr;
  ASSERT_EQ(sk_device_open("cuda:0", &old_driver), SK_OK) << sk_last_error();
  EXPECT_EQ(where(old_driver, 15), "params");  // 3840 bytes fit
  EXPECT_EQ(where(old_driver, 16), "buffer");
  sk_device_close(old_driver);
  // ... and well inside that of 12.1 and later (dev_: the stand-in says 13.0), up to 32 KiB.
  set_version(12010);
  sk_device *new_driver = nullptr;
  ASSERT_EQ(sk_device_open("cuda:0", &new_driver), SK_OK) << sk_last_error();
  EXPECT_EQ(where(new_driver, 16), "params");
  sk_device_close(new_driver);
  EXPECT_EQ(where(dev_, 127), "params");  // 32512 bytes and the entry's own 16
  EXPECT_EQ(where(dev_, 128), "buffer");  // 32768 bytes
}

TEST_F(CudaFakeDriver, AModuleDeclaresItsKernelsAndEachSaysItsSignatureAndCoreType) {
  // What the Python binding reads instead of the cubin: the SK_KERNEL_CUDA metadata.
  sk_module *mod = module(sk::cuda_test::kernel_path("chain.cubin"));
  ASSERT_NE(mod, nullptr);
  size_t count = 0;
  ASSERT_EQ(sk_module_kernel_count(mod, &count), SK_OK) << sk_last_error();
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    size_t size = 0;
    ASSERT_EQ(sk_module_kernel_name(mod, i, nullptr, 0, &size), SK_OK) << sk_last_error();
    std::string name(size, '\0');
    ASSERT_EQ(sk_module_kernel_name(mod, i, name.data(), size, nullptr), SK_OK) << sk_last_error();
    names.push_back(name.c_str());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"chain_axpy", "chain_step", "mark_blocks"}));
  sk_kernel *k = nullptr;
  ASSERT_EQ(sk_module_get_kernel(mod, "chain_axpy", &k), SK_OK) << sk_last_error();
  char text[32] = {};
  size_t needed = 0;
  ASSERT_EQ(sk_kernel_signature(k, text, sizeof text, &needed), SK_OK) << sk_last_error();
  EXPECT_STREQ(text, "ptr,f32,ptr,u32");
  EXPECT_EQ(needed, 16u);
  ASSERT_EQ(sk_kernel_core_type(k, text, sizeof text, nullptr), SK_OK) << sk_last_error();
  EXPECT_STREQ(text, "vector");
  EXPECT_EQ(sk_module_kernel_name(mod, count, text, sizeof text, nullptr), SK_ERR_INVALID_ARGUMENT);
}

// An inference engine captures a decode step that launches a super kernel, then replays the
// graph: only the kernel launch goes into the graph, with parameters that stay valid for every
// replay (the launch epoch lives in the sync buffer and the device advances it: the stand-in
// does what the entry's blocks do to it), and argument slots in a buffer are rebound for the
// replays by writing the buffer.
TEST_F(CudaFakeDriver, ACapturedLaunchReplaysAHundredTimesWithItsOwnEpochs) {
  reopen_on_driver(12000);  // a 4 KiB parameter space
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  FakeGraphs cu{fake_.lib};
  void *const ctx = reinterpret_cast<void *>(0x1000);  // the stand-in's primary context
  uint64_t x = 0x1000, y = 0x2000;
  uint32_t n = 8, i = 0;
  for (uint32_t kernels : {2u, 200u}) {  // arguments in the parameters; in a device buffer
    SCOPED_TRACE(kernels);
    fake_.reset(2);
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "captured", nullptr, &scope), SK_OK);
    void *args[] = {&x, &n, &i};
    for (uint32_t k = 0; k < kernels; ++k) ASSERT_EQ(sk_add_kernel(scope, step, 2, args, nullptr), SK_OK);
    sk_superkernel *sk = nullptr;
    ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    void *engine = nullptr;  // the engine's stream, made in the device's context
    ASSERT_EQ(cu.push(ctx), 0);
    ASSERT_EQ(cu.stream_create(&engine), 0);
    ASSERT_EQ(cu.pop(), 0);
    sk_stream *s = nullptr;
    ASSERT_EQ(sk_stream_create_cuda(dev_, engine, &s), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();  // before the capture: zeroes the counters

    ASSERT_EQ(cu.begin(engine), 0);
    const size_t logged = fake_.log().size();
    ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();
    // Waiting for a stream being captured would end the capture.
    EXPECT_EQ(sk_stream_synchronize(s), SK_ERR_STATE);
    EXPECT_TRUE(contains(sk_last_error(), "captured into a CUDA graph")) << sk_last_error();
    void *graph = nullptr;
    ASSERT_EQ(cu.end(engine, &graph), 0) << "the capture was invalidated";
    std::vector<FakeCall> log = fake_.log();
    for (size_t c = logged; c < log.size(); ++c) EXPECT_NE(log[c].stream, engine) << log[c].name;
    const std::vector<FakeNode> nodes = cu.nodes(graph);
    ASSERT_EQ(nodes.size(), 1u);  // the launch alone: no write, no event
    EXPECT_STREQ(nodes[0].name, "cuLaunchKernelEx");
    std::vector<FakeLaunch> l = fake_.all();
    ASSERT_EQ(l.size(), 1u);  // the captured launch did not run
    EXPECT_EQ(nodes[0].launch.grid, l[0].grid);
    EXPECT_EQ(nodes[0].launch.sync, l[0].sync);
    EXPECT_EQ(nodes[0].launch.report, l[0].report);
    EXPECT_EQ(nodes[0].launch.first_slot, kernels == 2 ? x : l[0].args_buffer);  // as libsk passed it
    EXPECT_EQ(nodes[0].launch.cooperative, 1);

    void *exec = nullptr;
    ASSERT_EQ(cu.instantiate(&exec, graph), 0);
    const size_t before_replays = fake_.log().size();
    for (int r = 0; r < 100; ++r) {
      if (kernels == 200 && r == 50) {
        // Rebinding between replays: the replays after it read the new value.
        ASSERT_EQ(sk_stream_synchronize(s), SK_OK) << sk_last_error();
        ASSERT_EQ(sk_superkernel_set_arg(sk, 0, 0, &y), SK_OK) << sk_last_error();
      }
      ASSERT_EQ(cu.launch(exec, engine), 0);
    }
    ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();  // libsk's own launch after the replays
    ASSERT_EQ(sk_stream_synchronize(s), SK_OK) << sk_last_error();
    l = fake_.all();
    ASSERT_EQ(l.size(), 102u);
    for (size_t k = 0; k < l.size(); ++k) {
      EXPECT_EQ(l[k].epoch, k + 1) << "launch " << k;  // no replay runs at a stale epoch
      EXPECT_EQ(l[k].sync, l[0].sync);
      EXPECT_EQ(l[k].report, l[0].report);
      EXPECT_EQ(l[k].stream, engine);
    }
    // Nothing the host wrote after the capture touched the sync buffer, which holds the epoch.
    log = fake_.log();
    const uint64_t sync_end = l[0].report + 64;  // the hang report ends the buffer
    for (size_t c = before_replays; c < log.size(); ++c)
      if (named(log[c], "cuMemsetD8Async") || named(log[c], "cuMemcpyHtoDAsync"))
        EXPECT_FALSE(log[c].address < sync_end && log[c].address + log[c].size > l[0].sync) << log[c].name;
    for (size_t r = 0; r < 100; ++r) {
      if (kernels == 2) {
        EXPECT_EQ(l[1 + r].first_slot, x) << "replay " << r;  // the values captured
      } else {
        EXPECT_EQ(l[1 + r].args_buffer, nodes[0].launch.first_slot) << "replay " << r;  // the buffer's address
        EXPECT_EQ(l[1 + r].first_slot, r < 50 ? x : y) << "replay " << r;               // what the buffer held then
      }
    }
    EXPECT_EQ(l[101].first_slot, kernels == 2 ? x : y);
    EXPECT_EQ(cu.exec_destroy(exec), 0);
    EXPECT_EQ(cu.destroy(graph), 0);
    sk_stream_destroy(s);
    for (const FakeCall &c : fake_.log()) EXPECT_FALSE(named(c, "cuStreamDestroy") && c.stream == engine);
    ASSERT_EQ(cu.push(ctx), 0);
    EXPECT_EQ(cu.stream_destroy(engine), 0);  // still the engine's to destroy
    ASSERT_EQ(cu.pop(), 0);
    sk_superkernel_destroy(sk);
  }
}

// A captured sk_launch_repeat is one kernel node with its run count and flag: each replay
// runs n epochs on from the last, as the launch would.
TEST_F(CudaFakeDriver, ACapturedRepeatReplaysWithItsRunCount) {
  FakeGraphs cu{fake_.lib};
  void *const ctx = reinterpret_cast<void *>(0x1000);  // the stand-in's primary context
  sk_superkernel *sk = chain("captured_repeat", 1, 2);
  ASSERT_NE(sk, nullptr);
  uint32_t *flag = zeroed_flag();
  ASSERT_NE(flag, nullptr);
  const uint32_t zero = 0, one = 1;
  void *engine = nullptr;
  ASSERT_EQ(cu.push(ctx), 0);
  ASSERT_EQ(cu.stream_create(&engine), 0);
  ASSERT_EQ(cu.pop(), 0);
  sk_stream *s = nullptr;
  ASSERT_EQ(sk_stream_create_cuda(dev_, engine, &s), SK_OK) << sk_last_error();
  ASSERT_EQ(cu.begin(engine), 0);
  ASSERT_EQ(sk_launch_repeat(sk, 5, flag, s), SK_OK) << sk_last_error();
  void *graph = nullptr;
  ASSERT_EQ(cu.end(engine, &graph), 0) << "the capture was invalidated";
  const std::vector<FakeNode> nodes = cu.nodes(graph);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_STREQ(nodes[0].name, "cuLaunchKernelEx");
  EXPECT_EQ(nodes[0].launch.runs, 5u);
  EXPECT_EQ(nodes[0].launch.stop, reinterpret_cast<uint64_t>(flag));
  EXPECT_EQ(fake_.all().size(), 0u);  // captured, not run
  void *exec = nullptr;
  ASSERT_EQ(cu.instantiate(&exec, graph), 0);
  for (int r = 0; r < 3; ++r) ASSERT_EQ(cu.launch(exec, engine), 0);
  ASSERT_EQ(sk_memcpy(dev_, flag, &one, 4), SK_OK);  // the next replay stops after its first run
  ASSERT_EQ(cu.launch(exec, engine), 0);
  ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(s), SK_OK) << sk_last_error();
  const std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 5u);
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(l[r].epoch, 1 + 5 * r) << "replay " << r;
    EXPECT_EQ(l[r].last_epoch, 5 + 5 * r) << "replay " << r;
    EXPECT_EQ(l[r].runs, 5u);
  }
  EXPECT_EQ(l[3].epoch, 16u);
  EXPECT_EQ(l[3].last_epoch, 16u);
  EXPECT_EQ(l[4].epoch, 17u);
  EXPECT_EQ(l[4].runs, 1u);
  EXPECT_EQ(cu.exec_destroy(exec), 0);
  EXPECT_EQ(cu.destroy(graph), 0);
  sk_stream_destroy(s);
  ASSERT_EQ(cu.push(ctx), 0);
  EXPECT_EQ(cu.stream_destroy(engine), 0);
  ASSERT_EQ(cu.pop(), 0);
  sk_superkernel_destroy(sk);
  sk_mem_free(dev_, flag);
}

TEST_F(CudaFakeDriver, StreamCreateCudaRefusesWhatIsNotACudaStream) {
  sk_stream *s = nullptr;
  EXPECT_EQ(sk_stream_create_cuda(dev_, nullptr, &s), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "cu_stream is NULL")) << sk_last_error();
  EXPECT_EQ(s, nullptr);
  int dummy = 0;
  EXPECT_EQ(sk_stream_create_cuda(dev_, &dummy, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "out is NULL")) << sk_last_error();
  fake_.fail_next("cuStreamIsCapturing", 400);  // CUDA_ERROR_INVALID_HANDLE
  EXPECT_EQ(sk_stream_create_cuda(dev_, &dummy, &s), SK_ERR_DEVICE);
  EXPECT_TRUE(contains(sk_last_error(), "cuStreamIsCapturing of cu_stream")) << sk_last_error();
  EXPECT_EQ(s, nullptr);
  sk_device *host = nullptr;
  ASSERT_EQ(sk_device_open("host:cores=1", &host), SK_OK);
  EXPECT_EQ(sk_stream_create_cuda(host, &dummy, &s), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk_last_error(), "not a CUDA device")) << sk_last_error();
  EXPECT_EQ(s, nullptr);
  sk_device_close(host);
}

// A CUDA super kernel has no profiler: both profile calls are refused (api/capabilities.cpp),
// naming the call and the super kernel.
TEST_F(CudaFakeDriver, ProfileCallsAreRefusedForACudaSuperKernel) {
  sk_superkernel *sk = chain("unprofiled", 2, 4);
  ASSERT_NE(sk, nullptr);
  size_t count = 0;
  EXPECT_EQ(sk_superkernel_profile(sk, nullptr, 0, &count), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(
      contains(sk_last_error(), "sk_superkernel_profile: super kernel 'unprofiled' is not on the host device"))
      << sk_last_error();
  EXPECT_EQ(sk_superkernel_write_trace(sk, "unprofiled.json"), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk_last_error(), "sk_superkernel_write_trace: super kernel 'unprofiled' is not on the host"))
      << sk_last_error();
  sk_superkernel_destroy(sk);
}

// A reset the launch owes (the first launch's zeros, or those after a reported hang) is made
// outside the capture, on libsk's own stream, before the capture's kernel launch.
TEST_F(CudaFakeDriver, ACapturedFirstLaunchZeroesTheCountersOutsideTheGraph) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  FakeGraphs cu{fake_.lib};
  void *const ctx = reinterpret_cast<void *>(0x1000);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "first_captured", nullptr, &scope), SK_OK);
  void *args[] = {&x, &n, &i};
  ASSERT_EQ(sk_add_kernel(scope, step, 2, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  void *engine = nullptr;
  ASSERT_EQ(cu.push(ctx), 0);
  ASSERT_EQ(cu.stream_create(&engine), 0);
  ASSERT_EQ(cu.pop(), 0);
  sk_stream *s = nullptr;
  ASSERT_EQ(sk_stream_create_cuda(dev_, engine, &s), SK_OK) << sk_last_error();
  ASSERT_EQ(cu.begin(engine), 0);
  ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();
  void *graph = nullptr;
  ASSERT_EQ(cu.end(engine, &graph), 0);
  const std::vector<FakeNode> nodes = cu.nodes(graph);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_STREQ(nodes[0].name, "cuLaunchKernelEx");
  const std::vector<FakeCall> log = fake_.log();
  bool zeroed = false, waited = false;
  for (const FakeCall &c : log) {
    if (named(c, "cuMemsetD8Async") && c.address == nodes[0].launch.sync) {
      EXPECT_NE(c.stream, engine);
      zeroed = true;
    }
    if (zeroed && named(c, "cuStreamSynchronize") && c.stream != engine) waited = true;
  }
  EXPECT_TRUE(zeroed);
  EXPECT_TRUE(waited) << "the zeros must have landed before any replay";
  void *exec = nullptr;
  ASSERT_EQ(cu.instantiate(&exec, graph), 0);
  for (int r = 0; r < 3; ++r) ASSERT_EQ(cu.launch(exec, engine), 0);
  const std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 3u);
  for (size_t k = 0; k < l.size(); ++k) EXPECT_EQ(l[k].epoch, k + 1);
  EXPECT_EQ(cu.exec_destroy(exec), 0);
  EXPECT_EQ(cu.destroy(graph), 0);
  sk_stream_destroy(s);
  ASSERT_EQ(cu.push(ctx), 0);
  EXPECT_EQ(cu.stream_destroy(engine), 0);
  ASSERT_EQ(cu.pop(), 0);
  sk_superkernel_destroy(sk);
}

TEST_F(CudaFakeDriver, ACaptureRecordsLaunchesAndFinalizesAsTheScope) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *args[] = {&x, &n, &i};
  sk_stream *s = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s), SK_OK);
  ASSERT_EQ(sk_stream_begin_capture(s, "captured", nullptr), SK_OK) << sk_last_error();
  for (uint32_t k = 0; k < 3; ++k) ASSERT_EQ(sk_launch_kernel(step, 2 + k, args, s), SK_OK) << sk_last_error();
  EXPECT_EQ(fake_.all().size(), 0u);  // recorded, not launched
  EXPECT_EQ(sk_stream_synchronize(s), SK_ERR_STATE);
  EXPECT_TRUE(contains(sk_last_error(), "capturing into 'captured'")) << sk_last_error();
  sk_superkernel *bad = nullptr;
  EXPECT_EQ(sk_stream_end_capture(s, &bad), SK_ERR_STATE);
  EXPECT_EQ(bad, nullptr);

  ASSERT_EQ(sk_stream_begin_capture(s, "captured", nullptr), SK_OK) << sk_last_error();
  for (uint32_t k = 0; k < 3; ++k) ASSERT_EQ(sk_launch_kernel(step, 2 + k, args, s), SK_OK) << sk_last_error();
  sk_superkernel *captured = nullptr;
  ASSERT_EQ(sk_stream_end_capture(s, &captured), SK_OK) << sk_last_error();
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "captured", nullptr, &scope), SK_OK);
  for (uint32_t k = 0; k < 3; ++k) ASSERT_EQ(sk_add_kernel(scope, step, 2 + k, args, nullptr), SK_OK);
  sk_superkernel *built = nullptr;
  ASSERT_EQ(sk_finalize(scope, &built), SK_OK) << sk_last_error();
  std::string a(8192, '\0'), b(8192, '\0');
  ASSERT_EQ(sk_superkernel_explain(captured, a.data(), a.size(), nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_superkernel_explain(built, b.data(), b.size(), nullptr), SK_OK) << sk_last_error();
  EXPECT_STREQ(a.c_str(), b.c_str());
  ASSERT_EQ(sk_launch(captured, s), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(built, s), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].grid, l[1].grid);
  EXPECT_EQ(l[0].first_slot, x);
  EXPECT_EQ(sk_stream_synchronize(s), SK_OK) << sk_last_error();
  sk_superkernel_destroy(captured);
  sk_superkernel_destroy(built);
  sk_stream_destroy(s);
}

// A captured launch is checked as the unfused one: a kernel that waits on its blocks past the
// co-resident ones fails at the call, naming it, and the capture stays valid.
TEST_F(CudaFakeDriver, ACapturedLaunchIsCheckedAsTheUnfusedOne) {
  sk_kernel *sum = kernel("sync.cubin", "sync_sum");
  ASSERT_NE(sum, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8;
  void *args[] = {&x, &x, &n};
  EXPECT_EQ(sk_launch_kernel(sum, 12, args, nullptr), SK_ERR_INCOMPATIBLE);
  const std::string unfused = sk_last_error();
  sk_stream *s = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s), SK_OK);
  ASSERT_EQ(sk_stream_begin_capture(s, "captured", nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(sum, 4, args, s), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_launch_kernel(sum, 12, args, s), SK_ERR_INCOMPATIBLE);
  EXPECT_EQ(sk_last_error(), unfused);
  EXPECT_TRUE(contains(unfused, "sk_launch_kernel: kernel 'sync_sum'")) << unfused;
  EXPECT_TRUE(contains(unfused, "co-resident")) << unfused;
  sk_superkernel *captured = nullptr;
  ASSERT_EQ(sk_stream_end_capture(s, &captured), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(captured, s), SK_OK) << sk_last_error();
  const std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].grid, 4u);
  EXPECT_EQ(sk_stream_synchronize(s), SK_OK) << sk_last_error();
  sk_superkernel_destroy(captured);
  sk_stream_destroy(s);
}

TEST_F(CudaFakeDriver, EventsOutsideACaptureAreDriverEvents) {
  sk_stream *s1 = nullptr, *s2 = nullptr;
  sk_event *e = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s1), SK_OK);
  ASSERT_EQ(sk_stream_create(dev_, &s2), SK_OK);
  ASSERT_EQ(sk_event_create(dev_, &e), SK_OK) << sk_last_error();
  const int waits = fake_.waits();
  ASSERT_EQ(sk_event_record(e, s1), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_wait_event(s2, e), SK_OK) << sk_last_error();
  EXPECT_EQ(fake_.waits(), waits + 1);
  std::vector<FakeCall> log = fake_.log();
  bool recorded = false, waited = false;
  for (const FakeCall &c : log) {
    recorded = recorded || named(c, "cuEventRecord");
    waited = waited || named(c, "cuStreamWaitEvent");
  }
  EXPECT_TRUE(recorded);
  EXPECT_TRUE(waited);
  sk_event_destroy(e);
  sk_stream_destroy(s1);
  sk_stream_destroy(s2);
}

namespace {

// A hang report of step `step` (block 1, at the start of the step) that the next launch's first
// run writes, as a wait past its deadline would.
void inject_hang(void *lib, uint64_t step) {
  const uint64_t words[sk::cuda::kReportWords] = {0, 1, step, 1, 0, 1, 2, 0};
  reinterpret_cast<void (*)(unsigned, const uint64_t *)>(dlsym(lib, "fake_cuda_hang_in_run"))(0, words);
}

// The files of `dir` whose name ends with `suffix`.
std::vector<std::filesystem::path> files_ending(const std::string &dir, const std::string &suffix) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  return out;
}

std::string file_text(const std::filesystem::path &path) {
  const std::vector<uint8_t> bytes = sk::cuda_test::read_file(path.string());
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

// $SK_CUDA_TIMEOUT_MS changes timeout_ms's default (a device run lowers every deadline at once);
// the key still overrides it, and a value that is no deadline fails the open, naming the variable.
TEST_F(CudaFakeDriver, TheTimeoutVariableLowersTheDefaultDeadline) {
  sk_device_close(dev_);
  dev_ = nullptr;
  setenv("SK_CUDA_TIMEOUT_MS", "1234", 1);
  ASSERT_EQ(sk_device_open("cuda:0", &dev_), SK_OK) << sk_last_error();
  sk_superkernel *sk = chain("deadline", 2, 2);
  ASSERT_NE(sk, nullptr);
  inject_hang(fake_.lib, 1);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_HANG);
  EXPECT_TRUE(contains(sk_last_error(), "past the 1234 ms deadline")) << sk_last_error();
  sk_superkernel_destroy(sk);
  for (sk_module *m : modules_) sk_module_unload(m);
  modules_.clear();
  sk_device_close(dev_);
  dev_ = nullptr;
  ASSERT_EQ(sk_device_open("cuda:0,timeout_ms=77", &dev_), SK_OK) << sk_last_error();
  sk = chain("deadline_key", 2, 2);
  ASSERT_NE(sk, nullptr);
  inject_hang(fake_.lib, 1);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_HANG);
  EXPECT_TRUE(contains(sk_last_error(), "past the 77 ms deadline")) << sk_last_error();
  sk_superkernel_destroy(sk);
  for (const char *bad : {"0", "2s", "-5", "3600001"}) {
    setenv("SK_CUDA_TIMEOUT_MS", bad, 1);
    sk_device *other = nullptr;
    EXPECT_EQ(sk_device_open("cuda:0", &other), SK_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_TRUE(contains(sk_last_error(), std::string("SK_CUDA_TIMEOUT_MS='") + bad + "'")) << sk_last_error();
    EXPECT_EQ(other, nullptr);
  }
  unsetenv("SK_CUDA_TIMEOUT_MS");
}

// With $SK_CUDA_DUMP_DIR, each linked cubin is written there as it is loaded, and a hang's
// synchronisation writes the super kernel's sync buffer, word by word, under its report.
TEST_F(CudaFakeDriver, TheDumpDirectoryGetsTheLinkedCubinAndTheSyncBufferOfAHang) {
  const std::string dir = std::string(sk::cuda_test::private_cache_home()) + "/dump";
  std::filesystem::create_directories(dir);
  setenv("SK_CUDA_DUMP_DIR", dir.c_str(), 1);
  sk_superkernel *sk = chain("dumped one", 3, 2);
  ASSERT_NE(sk, nullptr);
  const std::vector<std::filesystem::path> cubins = files_ending(dir, "-dumped_one.cubin");
  ASSERT_EQ(cubins.size(), 1u);
  EXPECT_EQ(cubins[0].filename().string().rfind(std::to_string(getpid()) + "-", 0), 0u) << cubins[0];
  std::vector<uint8_t> img(1 << 22);
  img.resize(reinterpret_cast<size_t (*)(uint8_t *, size_t)>(dlsym(fake_.lib, "fake_cuda_last_image"))(img.data(),
                                                                                                       img.size()));
  EXPECT_EQ(sk::cuda_test::read_file(cubins[0].string()), img);
  EXPECT_TRUE(files_ending(dir, ".sync.txt").empty());

  inject_hang(fake_.lib, 2);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_ERR_HANG);
  const std::string message = sk_last_error();
  const std::vector<std::filesystem::path> dumps = files_ending(dir, "-dumped_one.sync.txt");
  ASSERT_EQ(dumps.size(), 1u);
  const std::string text = file_text(dumps[0]);
  EXPECT_EQ(text.rfind("# " + message + "\n", 0), 0u) << text;
  EXPECT_TRUE(contains(text, "\nepoch 1\n")) << text;  // the launch that hung
  EXPECT_TRUE(contains(text, "\narrivals[2] 0 'chain_step'\n")) << text;
  EXPECT_TRUE(contains(text, "\nflag[15] 0\n")) << text;
  EXPECT_TRUE(contains(text, "\nreport.step 2 'chain_step'\n")) << text;
  EXPECT_TRUE(contains(text, "\nreport.block 1\n")) << text;
  EXPECT_TRUE(contains(text, "\nreport.abort 1\n")) << text;
  sk_superkernel_destroy(sk);

  unsetenv("SK_CUDA_DUMP_DIR");
  sk = chain("not dumped", 1, 2);
  ASSERT_NE(sk, nullptr);
  EXPECT_TRUE(files_ending(dir, "-not_dumped.cubin").empty());
  sk_superkernel_destroy(sk);
}

// A sub-kernel whose helper recurses: ptxas cannot bound the entry's call stack, so finalize and
// sk_launch_kernel refuse it, naming it and the way out, unless the device has stack_bytes; with
// it the context's stack limit is raised to that, and explain reports it.
TEST_F(CudaFakeDriver, AStackPtxasCannotBoundNeedsTheStackBytesKey) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  sk_kernel *rec = kernel("recursive.cubin", "recurse_sum");
  ASSERT_TRUE(step && rec);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0, depth = 4;
  void *a[] = {&x, &n, &i}, *r[] = {&x, &n, &depth};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "recursing", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, step, 2, a, nullptr), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, rec, 2, r, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE);
  const std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "super kernel 'recursing'")) << msg;
  EXPECT_TRUE(contains(msg, "'recurse_sum' (step 1) recurses through 'recurse_mix'")) << msg;
  EXPECT_TRUE(contains(msg, "stack_bytes=")) << msg;
  EXPECT_EQ(sk, nullptr);
  EXPECT_EQ(sk_launch_kernel(rec, 2, r, nullptr), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "'recurse_sum' (step 0) recurses through 'recurse_mix'")) << sk_last_error();
  EXPECT_EQ(fake_.all().size(), 0u);
  for (const FakeCall &c : fake_.log()) EXPECT_FALSE(named(c, "cuCtxSetLimit"));

  for (sk_module *m : modules_) sk_module_unload(m);
  modules_.clear();
  sk_device_close(dev_);
  dev_ = nullptr;
  ASSERT_EQ(sk_device_open("cuda:0,stack_bytes=16384", &dev_), SK_OK) << sk_last_error();
  step = kernel("chain.cubin", "chain_step");
  rec = kernel("recursive.cubin", "recurse_sum");
  ASSERT_TRUE(step && rec);
  ASSERT_EQ(sk_scope_begin(dev_, "recursing", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, step, 2, a, nullptr), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, rec, 2, r, nullptr), SK_OK);
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  EXPECT_EQ(reinterpret_cast<size_t (*)()>(dlsym(fake_.lib, "fake_cuda_stack_limit"))(), 16384u);
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(entry_number(json, "stack_bytes"), 16384) << json;
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(rec, 2, r, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  sk_superkernel_destroy(sk);
  // The key bounds only what ptxas cannot: a chain's own stack stays its own, and the limit is
  // never lowered.
  sk = chain("small_stack", 2, 2);
  ASSERT_NE(sk, nullptr);
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK) << sk_last_error();
  EXPECT_GT(entry_number(json, "stack_bytes"), 0) << json;
  EXPECT_LT(entry_number(json, "stack_bytes"), 1024) << json;
  EXPECT_EQ(reinterpret_cast<size_t (*)()>(dlsym(fake_.lib, "fake_cuda_stack_limit"))(), 16384u);
  sk_superkernel_destroy(sk);
  sk_device *bad = nullptr;
  EXPECT_EQ(sk_device_open("cuda:0,stack_bytes=0", &bad), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "'stack_bytes'")) << sk_last_error();
}

// A call stack ptxas bounds above the context's limit (1 KiB per thread to begin with): finalize
// raises the limit to the linked entry's need, as its cubin says; an entry within the limit
// leaves it alone.
TEST_F(CudaFakeDriver, AKnownStackAboveTheLimitRaisesIt) {
  sk_superkernel *small = chain("small_stack", 2, 2);
  ASSERT_NE(small, nullptr);
  for (const FakeCall &c : fake_.log()) EXPECT_FALSE(named(c, "cuCtxSetLimit"));
  sk_kernel *deep = kernel("deep_stack.cubin", "deep_frame");
  ASSERT_NE(deep, nullptr);
  uint64_t in = 0x1000, out = 0x2000;
  uint32_t n = 8;
  void *args[] = {&in, &out, &n};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "deep", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, deep, 2, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  std::vector<uint8_t> img(1 << 22);
  img.resize(reinterpret_cast<size_t (*)(uint8_t *, size_t)>(dlsym(fake_.lib, "fake_cuda_last_image"))(img.data(),
                                                                                                       img.size()));
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK) << sk_last_error();
  const std::string doc = json;
  const size_t e = doc.find("\"entry\":\"");
  ASSERT_NE(e, std::string::npos) << doc;
  const ImageResources want = image_resources(img, doc.substr(e + 9, doc.find('"', e + 9) - e - 9));
  EXPECT_GT(want.stack, 6144u);  // the helper's 6 KiB array, and the frames above it
  EXPECT_EQ(entry_number(doc, "stack_bytes"), want.stack) << doc;
  EXPECT_EQ(reinterpret_cast<size_t (*)()>(dlsym(fake_.lib, "fake_cuda_stack_limit"))(), want.stack);
  sk_superkernel_destroy(sk);
  sk_superkernel_destroy(small);
}

// A sub-kernel with a 48 KiB static tile (the most a block may hold statically) fuses: the tile
// is the shared overlay, the sm_90 reservation comes on top, and libsk's block state, dynamic,
// makes the launch opt in past 48 KiB. With a 180 KiB extern __shared__ array beside it the
// block cannot fit the GPU's opt-in: finalize says so, naming both and the reservation.
TEST_F(CudaFakeDriver, AFortyEightKiBTileFusesAndWhatCannotFitIsNamed) {
  sk_kernel *tile = kernel("tile48.cubin", "tile48");
  sk_kernel *huge = kernel("tile48.cubin", "dyn_huge");
  sk_kernel *small = kernel("shared.cubin", "dyn_small");
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_TRUE(tile && huge && small && step);
  float *x = reinterpret_cast<float *>(0x1234000);
  uint32_t n = 128, s = 0;
  void *two[] = {&x, &n}, *one[] = {&x}, *three[] = {&x, &n, &s};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "tile48", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, step, 1, three, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, tile, 1, two, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, small, 1, one, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  char json[16384];
  ASSERT_EQ(sk_superkernel_explain(sk, json, sizeof json, nullptr), SK_OK) << sk_last_error();
  const std::string doc = json;
  const size_t e = doc.find("\"entry\":\"");
  ASSERT_NE(e, std::string::npos) << doc;
  const std::string entry = doc.substr(e + 9, doc.find('"', e + 9) - e - 9);
  EXPECT_EQ(last_image_shared(fake_.lib, entry), 48u * 1024 + 1024);
  EXPECT_EQ(entry_number(doc, "static_shared_bytes"), 48 * 1024 + 1024) << doc;
  const long long dynamic = entry_number(doc, "dynamic_shared_bytes");
  EXPECT_GT(dynamic, 4096) << doc;  // dyn_small's array and libsk's block state
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  FakeShared shared{};
  reinterpret_cast<void (*)(FakeShared *)>(dlsym(fake_.lib, "fake_cuda_shared"))(&shared);
  EXPECT_EQ(shared.max_dynamic, dynamic);
  ASSERT_GE(shared.launches, 1u);
  EXPECT_EQ(shared.launch_dynamic[shared.launches - 1], dynamic);
  sk_superkernel_destroy(sk);
  sk = nullptr;

  ASSERT_EQ(sk_scope_begin(dev_, "too_much_shared", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, tile, 1, two, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, huge, 1, one, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE);
  const std::string msg = sk_last_error();
  EXPECT_TRUE(contains(msg, "super kernel 'too_much_shared'")) << msg;
  EXPECT_TRUE(contains(msg, "may use 232448 besides the 1024 bytes the GPU reserves in every block")) << msg;
  EXPECT_TRUE(contains(msg, "'tile48', step 0, 49152 bytes")) << msg;
  EXPECT_TRUE(contains(msg, "'dyn_huge', step 1, 184320 bytes")) << msg;
  EXPECT_EQ(sk, nullptr);
}

// An engine's thread captures its stream in global mode, the mode that forbids it synchronous
// calls and copies from pageable memory (the stand-in refuses them as a driver does, and
// invalidates the capture): libsk's first launch of a super kernel finalized inside the
// capture, whose zeros and step table it writes outside the capture, leaves the capture valid
// and the thread's mode as it was. The other order (the first launch before the capture) is
// ACapturedLaunchReplaysAHundredTimesWithItsOwnEpochs.
TEST_F(CudaFakeDriver, FinalizeAndAFirstLaunchInsideAGlobalModeCaptureKeepItValid) {
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);
  FakeGraphs cu{fake_.lib};
  void *const ctx = reinterpret_cast<void *>(0x1000);
  auto mode = reinterpret_cast<int (*)()>(dlsym(fake_.lib, "fake_cuda_capture_mode"));
  void *engine = nullptr;
  ASSERT_EQ(cu.push(ctx), 0);
  ASSERT_EQ(cu.stream_create(&engine), 0);
  ASSERT_EQ(cu.pop(), 0);
  sk_stream *s = nullptr;
  ASSERT_EQ(sk_stream_create_cuda(dev_, engine, &s), SK_OK) << sk_last_error();
  ASSERT_EQ(cu.begin(engine), 0);  // CU_STREAM_CAPTURE_MODE_GLOBAL
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *args[] = {&x, &n, &i};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "inside", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, step, 2, args, nullptr), SK_OK);
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  EXPECT_EQ(mode(), 0);
  ASSERT_EQ(sk_launch(sk, s), SK_OK) << sk_last_error();
  EXPECT_EQ(mode(), 0);  // the application's mode again
  void *graph = nullptr;
  ASSERT_EQ(cu.end(engine, &graph), 0) << "the capture was invalidated";
  const std::vector<FakeNode> nodes = cu.nodes(graph);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_STREQ(nodes[0].name, "cuLaunchKernelEx");
  EXPECT_EQ(cu.destroy(graph), 0);
  sk_stream_destroy(s);
  ASSERT_EQ(cu.push(ctx), 0);
  EXPECT_EQ(cu.stream_destroy(engine), 0);
  ASSERT_EQ(cu.pop(), 0);
  sk_superkernel_destroy(sk);
}

// Another thread's global-mode capture forbids this thread's unsafe calls too: libsk's first
// launch on its own stream, which copies the step table from pageable memory, leaves that
// capture valid.
TEST_F(CudaFakeDriver, AGlobalCaptureOnAnotherThreadSurvivesAFirstLaunch) {
  sk_superkernel *sk = chain("beside_a_capture", 2, 2);
  ASSERT_NE(sk, nullptr);
  FakeGraphs cu{fake_.lib};
  void *const ctx = reinterpret_cast<void *>(0x1000);
  void *engine = nullptr;
  ASSERT_EQ(cu.push(ctx), 0);
  ASSERT_EQ(cu.stream_create(&engine), 0);
  ASSERT_EQ(cu.pop(), 0);
  std::thread([&] { EXPECT_EQ(cu.begin(engine), 0); }).join();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  void *graph = nullptr;
  std::thread([&] { EXPECT_EQ(cu.end(engine, &graph), 0) << "the capture was invalidated"; }).join();
  if (graph) EXPECT_EQ(cu.destroy(graph), 0);
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(cu.push(ctx), 0);
  EXPECT_EQ(cu.stream_destroy(engine), 0);
  ASSERT_EQ(cu.pop(), 0);
  sk_superkernel_destroy(sk);
}

// Kernels as their compilers wrote them, through the C API: Triton's decode-step kernels (PTX,
// checked in) with the dynamic shared bytes of their metadata, nvcc's __global__ kernels from a
// plain nvcc -c object at the threads the caller gives, and a libsk __device__ sub-kernel, in
// one super kernel that finalizes (a real nvJitLink link) and launches, and unfused; explain
// names each sub-kernel's launch facts and rewrites.
TEST_F(CudaFakeDriver, TritonAndGlobalKernelsFuseWithDeviceSubKernels) {
  sk_module *rms_mod = module(sk::cuda_test::triton_path("rmsnorm.ptx")),
            *gemv_mod = module(sk::cuda_test::triton_path("gemv.ptx")),
            *global = module(sk::cuda_test::kernel_path("decode_global.o"));
  ASSERT_TRUE(rms_mod && gemv_mod && global);
  size_t count = 0;
  ASSERT_EQ(sk_module_kernel_count(rms_mod, &count), SK_OK);
  EXPECT_EQ(count, 1u);
  sk_kernel *rms = nullptr, *gemv = nullptr, *add = nullptr;
  // Triton's rmsnorm uses global_smem: without its metadata's 16 bytes it cannot be taken.
  EXPECT_EQ(sk_module_get_kernel(rms_mod, "rmsnorm_kernel", &rms), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "dynamic_shared")) << sk_last_error();
  sk_kernel_desc desc{sizeof desc, nullptr, 0, 16};
  ASSERT_EQ(sk_module_get_kernel_desc(rms_mod, "rmsnorm_kernel", &desc, &rms), SK_OK) << sk_last_error();
  desc.dynamic_shared = 512;
  ASSERT_EQ(sk_module_get_kernel_desc(gemv_mod, "gemv_kernel", &desc, &gemv), SK_OK) << sk_last_error();
  sk_kernel_desc threads{sizeof threads, nullptr, 128, 0};
  ASSERT_EQ(sk_module_get_kernel_desc(global, "residual_add_global", &threads, &add), SK_OK) << sk_last_error();
  char sig[64];
  ASSERT_EQ(sk_kernel_signature(rms, sig, sizeof sig, nullptr), SK_OK);
  EXPECT_STREQ(sig, "ptr,ptr,ptr,u32,f32,ptr,ptr");
  // Refused facts name the kernel and the directive.
  sk_kernel *bad = nullptr;
  sk_kernel_desc wide{sizeof wide, nullptr, 256, 16};
  EXPECT_EQ(sk_module_get_kernel_desc(rms_mod, "rmsnorm_kernel", &wide, &bad), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "rmsnorm_kernel") && contains(sk_last_error(), ".reqntid 128"))
      << sk_last_error();
  wide.threads = 2048;
  EXPECT_EQ(sk_module_get_kernel_desc(rms_mod, "rmsnorm_kernel", &wide, &bad), SK_ERR_INVALID_ARGUMENT);
  sk_kernel_desc tiny{4, nullptr, 0, 0};
  EXPECT_EQ(sk_module_get_kernel_desc(rms_mod, "rmsnorm_kernel", &tiny, &bad), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "struct_size")) << sk_last_error();
  // A block's shape: .reqntid's, or refused naming both; a desc from before `block` has none.
  sk_kernel_desc shaped{sizeof shaped, nullptr, 0, 16, {128, 1, 1}};
  EXPECT_EQ(sk_module_get_kernel_desc(rms_mod, "rmsnorm_kernel", &shaped, &bad), SK_OK) << sk_last_error();
  shaped.block[0] = 32, shaped.block[1] = 4;
  EXPECT_EQ(sk_module_get_kernel_desc(rms_mod, "rmsnorm_kernel", &shaped, &bad), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "requires a block of 128 x 1 x 1 threads (.reqntid), not {32, 4, 1}"))
      << sk_last_error();
  shaped.struct_size = offsetof(sk_kernel_desc, block);
  EXPECT_EQ(sk_module_get_kernel_desc(rms_mod, "rmsnorm_kernel", &shaped, &bad), SK_OK) << sk_last_error();
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  ASSERT_NE(step, nullptr);

  float *x = reinterpret_cast<float *>(0x1234000), *w = x + 4096, *y = x + 8192, eps = 1e-6f;
  void *null = nullptr;
  uint32_t n = 1024, m = 1024, i0 = 0;
  void *rms_args[] = {&x, &w, &y, &n, &eps, &null, &null};
  void *gemv_args[] = {&w, &y, &x, &n, &m, &null, &null};
  void *add_args[] = {&x, &y, &w, &n};
  void *step_args[] = {&x, &n, &i0};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "decode_step", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, rms, 4, rms_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, gemv, 8, gemv_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, add, 8, add_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, step, 8, step_args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = finalize_and_launch(scope);
  ASSERT_NE(sk, nullptr);
  const std::string json = explain(sk);
  for (const char *fact :
       {R"("name":"rmsnorm_kernel")", R"("threads_from":".reqntid")", R"("dynamic_shared_bytes":512)",
        R"("dynamic_shared_from":"caller")", R"("name":"residual_add_global")", R"("threads_from":"caller")",
        R"("threads_from":"metadata")", R"("reqntid":[128,1,1])", R"("maxntid":[256,1,1])",
        "%ctaid.x read as sk_block_idx()", ".entry made a .func", R"("arch":"sm_90")", "decode_global.o (compute_"})
    EXPECT_TRUE(contains(json, fact)) << fact << " in " << json;
  sk_superkernel_destroy(sk);
  // Unfused, each as its own launch.
  ASSERT_EQ(sk_launch_kernel(rms, 4, rms_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(add, 8, add_args, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
}

// One nvcc kernel at three widths in one super kernel, beside a wider one: each narrower width
// calls its own copy of the kernel (explain's `function`), the block's width the original; the
// super kernel finalizes, runs as one program and launches.
TEST_F(CudaFakeDriver, OneKernelAtThreeWidthsCallsACopyPerNarrowerWidth) {
  sk_module *global = module(sk::cuda_test::kernel_path("decode_global.o"));
  ASSERT_NE(global, nullptr);
  sk_kernel *rms[3] = {}, *silu = nullptr;
  const uint32_t widths[3] = {256, 128, 64};
  for (int i = 0; i < 3; ++i) {
    sk_kernel_desc desc{sizeof desc, nullptr, widths[i], 0};
    ASSERT_EQ(sk_module_get_kernel_desc(global, "rmsnorm_global", &desc, &rms[i]), SK_OK) << sk_last_error();
  }
  sk_kernel_desc desc{sizeof desc, nullptr, 256, 0};
  ASSERT_EQ(sk_module_get_kernel_desc(global, "silu_mul_global", &desc, &silu), SK_OK) << sk_last_error();
  float *x = reinterpret_cast<float *>(0x1234000), *w = x + 4096, *y = x + 8192, eps = 1e-6f;
  uint32_t n = 1024;
  void *rms_args[] = {&x, &w, &y, &n, &eps};
  void *silu_args[] = {&x, &w, &y, &n};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "widths", nullptr, &scope), SK_OK);
  for (sk_kernel *k : {rms[1], rms[2], rms[0]}) ASSERT_EQ(sk_add_kernel(scope, k, 4, rms_args, nullptr), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, silu, 4, silu_args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = finalize_and_launch(scope);
  ASSERT_NE(sk, nullptr);
  const std::string json = explain(sk);
  for (const char *fact :
       {R"("threads":256,)", R"("compiled":"whole program")", R"("function":"rmsnorm_global$w128")",
        R"("function":"rmsnorm_global$w64")", R"("function":"rmsnorm_global")", R"("function":"silu_mul_global")"})
    EXPECT_TRUE(contains(json, fact)) << fact << " in " << json;
  sk_superkernel_destroy(sk);
}

// nvcc -dc -dlto -ltoir's __global__ kernels through the C API: the module lists them, each is
// taken with its launch facts, a narrower one beside a wider one in one super kernel that
// finalizes (nvJitLink links the IR to PTX at load), runs as one program and launches; each
// also launches alone. A name the IR does not define says which kernels it has.
TEST_F(CudaFakeDriver, AnLtoIrsGlobalKernelsFuseAndLaunch) {
  sk_module *ir = module(sk::cuda_test::kernel_path("decode_global.ltoir"));
  ASSERT_NE(ir, nullptr);
  size_t count = 0;
  ASSERT_EQ(sk_module_kernel_count(ir, &count), SK_OK);
  EXPECT_EQ(count, 6u);
  sk_kernel *rms = nullptr, *add = nullptr, *missing = nullptr;
  ASSERT_EQ(sk_module_get_kernel(ir, "rmsnorm_global", &rms), SK_OK) << sk_last_error();
  sk_kernel_desc desc{sizeof desc, nullptr, 128, 0};
  ASSERT_EQ(sk_module_get_kernel_desc(ir, "residual_add_global", &desc, &add), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_module_get_kernel(ir, "no_such_kernel", &missing), SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(sk_last_error(), "no_such_kernel")) << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "none of its __global__ kernels (rmsnorm_global, rope_global,"))
      << sk_last_error();
  float *x = reinterpret_cast<float *>(0x1234000), *w = x + 4096, *y = x + 8192, eps = 1e-6f;
  uint32_t n = 1024;
  void *rms_args[] = {&x, &w, &y, &n, &eps};
  void *add_args[] = {&x, &y, &w, &n};
  fuse_then_launch_alone("lto_ir_step", {{rms, 4, rms_args}, {add, 8, add_args}},
                         {R"("threads":256,)", R"("compiled":"whole program")", R"("threads_from":".maxntid")",
                          R"("threads_from":"caller")", "decode_global.ltoir (the PTX of its LTO-IR)"});
}

// A shared library of nvcc -shared through the C API: its kernels, from both translation
// units' PTX, are listed, taken, fused into one program that finalizes and launches (explain
// names each unit), and launched alone.
TEST_F(CudaFakeDriver, ASharedLibrarysKernelsFuseAndLaunch) {
  sk_module *lib = module(sk::cuda_test::kernel_path("libdecode_two.so"));
  ASSERT_NE(lib, nullptr);
  size_t count = 0;
  ASSERT_EQ(sk_module_kernel_count(lib, &count), SK_OK);
  EXPECT_EQ(count, 13u) << "six kernels of decode_global.cu, seven of early_return_global.cu";
  sk_kernel *rms = nullptr, *guard = nullptr;
  ASSERT_EQ(sk_module_get_kernel(lib, "rmsnorm_global", &rms), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(lib, "er_guard", &guard), SK_OK) << sk_last_error();
  float *x = reinterpret_cast<float *>(0x1234000), *w = x + 4096, *y = x + 8192, eps = 1e-6f;
  uint32_t n = 1024;
  int count_n = 1000;
  void *rms_args[] = {&x, &w, &y, &n, &eps};
  void *guard_args[] = {&x, &y, &count_n};
  fuse_then_launch_alone("library_step", {{rms, 4, rms_args}, {guard, 8, guard_args}},
                         {R"("compiled":"whole program")", "libdecode_two.so (compute_90 PTX, translation unit "});
}

// Objects of separable compilation through the C API: nvcc -dc objects given together
// (sk_module_load_files) and their static library (nvcc -lib, sk_module_load_file). cross_apply
// uses cross_b.o's function and variable: fused with cross_scale, and alone, its program holds
// them (the stand-in compiles every program with ptxas) and explain says it was linked with
// that object; so from a shared library of them compiled -rdc. Two objects that define one name
// strongly are refused, naming both.
TEST_F(CudaFakeDriver, ObjectsOfSeparableCompilationFuseAndLaunch) {
  const std::string a = sk::cuda_test::kernel_path("cross_a.o"), b = sk::cuda_test::kernel_path("cross_b.o"),
                    b_again = sk::cuda_test::kernel_path("cross_b_lineinfo.o");
  const char *paths[] = {a.c_str(), b.c_str()};
  sk_module *objects = nullptr;
  ASSERT_EQ(sk_module_load_files(dev_, paths, 2, &objects), SK_OK) << sk_last_error();
  modules_.push_back(objects);
  size_t count = 0;
  ASSERT_EQ(sk_module_kernel_count(objects, &count), SK_OK);
  EXPECT_EQ(count, 4u) << "cross_apply, cross_normalize, cross_scale and cross_b.cu's instance of the template";
  sk_kernel *apply = nullptr, *scale = nullptr;
  ASSERT_EQ(sk_module_get_kernel(objects, "cross_apply", &apply), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(objects, "cross_scale", &scale), SK_OK) << sk_last_error();
  float *x = reinterpret_cast<float *>(0x1234000), *y = x + 4096, factor = 2.0f;
  int n = 512;
  void *apply_args[] = {&x, &y, &n};
  void *scale_args[] = {&y, &factor, &n};
  fuse_then_launch_alone("separable_step", {{apply, 4, apply_args}, {scale, 4, scale_args}},
                         {R"("compiled":"whole program")", R"x(cross_b.o (compute_90 PTX)"],)x"});

  sk_module *library = module(sk::cuda_test::kernel_path("libcross.a"));
  ASSERT_NE(library, nullptr);
  ASSERT_EQ(sk_module_kernel_count(library, &count), SK_OK);
  EXPECT_EQ(count, 5u);
  sk_kernel *apply_member = nullptr, *square = nullptr;
  ASSERT_EQ(sk_module_get_kernel(library, "cross_apply", &apply_member), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(library, "cross_square", &square), SK_OK) << sk_last_error();
  void *square_args[] = {&y, &n};
  // Its members cross_a.o and cross_b.o are the bytes loaded above: the same modules, named as
  // first loaded.
  fuse_then_launch_alone(
      "static_library_step", {{apply_member, 4, apply_args}, {square, 4, square_args}},
      {R"x(cross_b.o (compute_90 PTX)"],)x", R"("module":")", "libcross.a(cross_c.o) (compute_90 PTX)"});

  // And compiled -rdc into a shared library: its units, as the device link resolved them.
  sk_module *shared = module(sk::cuda_test::kernel_path("libcross_rdc.so"));
  ASSERT_NE(shared, nullptr);
  sk_kernel *apply_unit = nullptr;
  ASSERT_EQ(sk_module_get_kernel(shared, "cross_apply", &apply_unit), SK_OK) << sk_last_error();
  fuse_then_launch_alone("shared_library_rdc_step", {{apply_unit, 4, apply_args}},
                         {R"x(libcross_rdc.so (compute_90 PTX, translation unit 3 of 4)"],)x"});

  const char *twice[] = {b.c_str(), b_again.c_str()};
  sk_module *refused = nullptr;
  EXPECT_EQ(sk_module_load_files(dev_, twice, 2, &refused), SK_ERR_BAD_BINARY);
  EXPECT_EQ(refused, nullptr);
  EXPECT_TRUE(contains(sk_last_error(),
                       "sk_module_load_files: '_Z16cross_activationf' (cross_activation(float)) is "
                       "defined by "))
      << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "cross_b_lineinfo.o: a device link holds one definition"))
      << sk_last_error();
}

// A module through a pipe (sk_module_load_file reads a stream in chunks): PTX, LTO-IR and a
// fatbinary load as from their files, and each takes its kernel; bytes no module begins with
// are refused at the first chunk.
TEST_F(CudaFakeDriver, ModulesLoadThroughAPipe) {
  const std::pair<const char *, const char *> files[] = {{"decode_global.ptx", "residual_add_global"},
                                                         {"decode_global.ltoir", "residual_add_global"},
                                                         {"chain_plain.fatbin", "chain_step"}};
  for (const auto &[file, kernel_name] : files) {
    SCOPED_TRACE(file);
    const std::vector<uint8_t> bytes = sk::cuda_test::read_file(sk::cuda_test::kernel_path(file));
    ASSERT_FALSE(bytes.empty());
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::thread writer([&, w = fds[1]] {
      for (size_t at = 0; at < bytes.size();) {
        const ssize_t n = write(w, bytes.data() + at, bytes.size() - at);
        if (n <= 0) break;
        at += (size_t)n;
      }
      close(w);
    });
    const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
    sk_module *mod = nullptr;
    const sk_status st = sk_module_load_file(dev_, path.c_str(), &mod);
    writer.join();
    close(fds[0]);
    ASSERT_EQ(st, SK_OK) << sk_last_error();
    sk_kernel *k = nullptr;
    sk_kernel_desc desc{sizeof desc, nullptr, 128, 0};
    EXPECT_EQ(sk_module_get_kernel_desc(mod, kernel_name, &desc, &k), SK_OK) << sk_last_error();
    sk_module_unload(mod);
  }
  sk_module *mod = nullptr;
  EXPECT_EQ(sk_module_load_file(dev_, "/dev/zero", &mod), SK_ERR_BAD_BINARY);
  EXPECT_TRUE(contains(sk_last_error(), "nor an archive, a fatbinary, LTO-IR or text")) << sk_last_error();
}

// A kernel that numbers its blocks in two dimensions (Triton's program_id(1)): fused with its
// grid's shape (sk_kernel_options.grid), which explain shows and the step table carries;
// launched unfused with sk_launch_kernel_grid, captured as such; refused without a shape, and
// every malformed shape refused naming the kernel and the field.
TEST_F(CudaFakeDriver, ATwoDimensionalGridIsGivenWithItsShape) {
  sk_module *mod = module(sk::cuda_test::triton_path("grid2d.ptx"));
  ASSERT_NE(mod, nullptr);
  sk_kernel *k = nullptr;
  ASSERT_EQ(sk_module_get_kernel(mod, "grid2d_kernel", &k), SK_OK) << sk_last_error();
  uint64_t x = 0x1000, null = 0;
  uint32_t n = 1024;
  void *args[] = {&x, &x, &n, &null, &null};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "planes", nullptr, &scope), SK_OK);
  auto refused = [&](const sk_kernel_options *o, uint32_t blocks, const char *what) {
    EXPECT_EQ(sk_add_kernel(scope, k, blocks, args, o), SK_ERR_INVALID_ARGUMENT) << what;
    EXPECT_TRUE(contains(sk_last_error(), "grid2d_kernel")) << sk_last_error();
    EXPECT_TRUE(contains(sk_last_error(), what)) << sk_last_error();
  };
  refused(nullptr, 16,
          "numbers its blocks in more than one dimension (reads %ctaid.y/z or %nctaid.y/z): give "
          "its grid's shape, opts->grid ({block_dim, 1, 1} for one dimension)");
  sk_kernel_options opts = SK_KERNEL_OPTIONS_INIT;
  refused(&opts, 16, "opts->grid ({block_dim, 1, 1}");
  opts.grid[0] = 4, opts.grid[1] = 0, opts.grid[2] = 1;
  refused(&opts, 16, "opts->grid {4, 0, 1} has an extent of 0");
  opts.grid[1] = 4, opts.grid[2] = 2;
  refused(&opts, 16, "opts->grid {4, 4, 2} is not block_dim 16 blocks");
  opts.grid[0] = 65536, opts.grid[1] = 65536, opts.grid[2] = 1;
  refused(&opts, 16, "opts->grid {65536, 65536, 1} is not block_dim 16 blocks");
  // A caller built against an sk.h without the field gives no shape.
  sk_kernel_options older = SK_KERNEL_OPTIONS_INIT;
  older.struct_size = offsetof(sk_kernel_options, grid);
  older.grid[0] = 16, older.grid[1] = 1, older.grid[2] = 1;
  refused(&older, 16, "opts->grid ({block_dim, 1, 1}");
  opts.grid[0] = 4, opts.grid[1] = 4, opts.grid[2] = 1;
  ASSERT_EQ(sk_add_kernel(scope, k, 16, args, &opts), SK_OK) << sk_last_error();
  opts.grid[0] = 2, opts.grid[1] = 2, opts.grid[2] = 3;
  ASSERT_EQ(sk_add_kernel(scope, k, 12, args, &opts), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  std::string json(1 << 16, '\0');
  ASSERT_EQ(sk_superkernel_explain(sk, json.data(), json.size(), nullptr), SK_OK) << sk_last_error();
  EXPECT_TRUE(contains(json, R"("block_dim":16,"grid":[4,4,1])")) << json;
  EXPECT_TRUE(contains(json, R"("block_dim":12,"grid":[2,2,3])")) << json;
  EXPECT_TRUE(contains(json, "%ctaid.y read from the step's grid shape (__sk_grid)")) << json;
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  using namespace sk::cuda;
  const size_t records = kTableHeaderWords + 2 * kStepWords;
  const auto tables = step_tables(l[0], [&](size_t n) { return n >= records; });
  ASSERT_EQ(tables.size(), 1u);
  const std::vector<uint32_t> &table = tables[0];
  EXPECT_EQ(table[kTableHeaderWords + kStepGridX], 4u);
  EXPECT_EQ(table[kTableHeaderWords + kStepGridY], 4u);
  EXPECT_EQ(table[kTableHeaderWords + kStepWords + kStepGridX], 2u);
  EXPECT_EQ(table[kTableHeaderWords + kStepWords + kStepGridY], 2u);
  sk_superkernel_destroy(sk);

  // Unfused: its shape, or a refusal that says how to give it.
  EXPECT_EQ(sk_launch_kernel(k, 16, args, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "sk_launch_kernel: kernel 'grid2d_kernel' numbers its blocks"))
      << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "launch it with sk_launch_kernel_grid")) << sk_last_error();
  const uint32_t shape[3] = {4, 4, 1}, flat[3] = {0, 4, 1}, huge[3] = {4096, 4096, 2};
  EXPECT_EQ(sk_launch_kernel_grid(k, nullptr, args, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "sk_launch_kernel_grid: kernel 'grid2d_kernel': grid is NULL"))
      << sk_last_error();
  EXPECT_EQ(sk_launch_kernel_grid(k, flat, args, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "grid {0, 4, 1} has an extent of 0")) << sk_last_error();
  EXPECT_EQ(sk_launch_kernel_grid(k, huge, args, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "grid {4096, 4096, 2} has more than the 16777216 blocks"))
      << sk_last_error();
  ASSERT_EQ(sk_launch_kernel_grid(k, shape, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[1].grid, 16u) << "one block per block of the grid";

  // Captured: the launch records its shape.
  sk_stream *s = nullptr;
  ASSERT_EQ(sk_stream_create(dev_, &s), SK_OK);
  ASSERT_EQ(sk_stream_begin_capture(s, "captured", nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_launch_kernel(k, 16, args, s), SK_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(sk_launch_kernel_grid(k, shape, args, s), SK_OK) << sk_last_error();
  sk_superkernel *captured = nullptr;
  ASSERT_EQ(sk_stream_end_capture(s, &captured), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_superkernel_explain(captured, json.data(), json.size(), nullptr), SK_OK) << sk_last_error();
  EXPECT_TRUE(contains(json, R"("block_dim":16,"grid":[4,4,1])")) << json;
  // Updated from a capture of the same launch with another shape: the step table is fixed.
  const uint32_t other[3] = {2, 8, 1};
  ASSERT_EQ(sk_stream_begin_capture(s, "captured", nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel_grid(k, other, args, s), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_superkernel_update_from_capture(captured, s), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "step 0 'grid2d_kernel': grid {4, 4, 1} where {2, 8, 1} was captured"))
      << sk_last_error();
  sk_superkernel_destroy(captured);
  sk_stream_destroy(s);
}

// A struct parameter nvcc indexes at run time (param_index.cu): passed as the address of its
// 160 bytes, two steps fused (the stand-in compiles the program with ptxas) and launched alone.
TEST_F(CudaFakeDriver, AStructParameterIndexedAtRunTimeFusesAndLaunches) {
  sk_kernel *k = kernel("param_index.ptx", "multi_tensor_scale");
  ASSERT_NE(k, nullptr);
  char signature[64];
  ASSERT_EQ(sk_kernel_signature(k, signature, sizeof signature, nullptr), SK_OK) << sk_last_error();
  EXPECT_STREQ(signature, "u32,{u64[20]},f32,f32");
  uint64_t metadata[20] = {};
  int32_t chunk = 128;
  float scale = 2.0f, bias = 1.0f;
  void *args[] = {&chunk, metadata, &scale, &bias};
  fuse_then_launch_alone("param_index", {{k, 10, args}, {k, 10, args}},
                         {"parameter 'multi_tensor_scale_param_1' passed as the address of its bytes",
                          "the kernel computes addresses in it at run time"});
}

// sk_module_inspect: what a module holds for an architecture, without a GPU, and its refusals.
// A `__grid_constant__` tensor map through the C API: its signature as libsk reads the PTX
// parameter (128 bytes aligned 128), its bytes the argument, the super kernel launched with them
// in its parameters, or in its argument buffer when the arguments do not fit them; read by
// reference, the address itself, which must be aligned as the map (checked at finalize and at
// set_arg, naming the step and the parameter).
TEST_F(CudaFakeDriver, ATensorMapParameterIsPassedAsItsBytes) {
  reopen_on_driver(12000);  // a 4 KiB parameter space: 20 steps of 32 slots go to a buffer
  sk_kernel *tma = kernel("grid_constant.ptx", "tma_copy_global");
  ASSERT_NE(tma, nullptr);
  char signature[64];
  ASSERT_EQ(sk_kernel_signature(tma, signature, sizeof signature, nullptr), SK_OK) << sk_last_error();
  EXPECT_STREQ(signature, "{u64[16]}@128,ptr");
  alignas(128) uint64_t tensor_map[16];
  for (uint64_t i = 0; i < 16; ++i) tensor_map[i] = 0x0123456789abcdefull ^ i;
  uint64_t out = 0x1000;
  void *args[] = {tensor_map, &out};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "tma", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, tma, 4, args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  std::string json(1 << 16, '\0');
  ASSERT_EQ(sk_superkernel_explain(sk, json.data(), json.size(), nullptr), SK_OK) << sk_last_error();
  EXPECT_TRUE(contains(json, "parameter 'tma_copy_global_param_0' passed as the address of its bytes")) << json;
  EXPECT_TRUE(contains(json, "\"arguments\":\"parameters\",\"argument_bytes\":136,")) << json;
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(tma, 4, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].args_buffer, 0u) << "in the parameters";
  EXPECT_EQ(l[0].first_slot, tensor_map[0]);
  EXPECT_EQ(l[1].first_slot, tensor_map[0]);
  sk_superkernel_destroy(sk);

  // Read by reference: the address of a map in device memory, aligned as the map.
  sk_kernel_options by_ref = SK_KERNEL_OPTIONS_INIT;
  by_ref.arg_refs = 1;
  void *maps_on_device = nullptr;
  ASSERT_EQ(sk_mem_alloc(dev_, 4 * sizeof tensor_map, &maps_on_device), SK_OK) << sk_last_error();
  // The stand-in's memory is malloc's; past its base, which the stand-in would take for an
  // argument buffer's.
  const uintptr_t at = (reinterpret_cast<uintptr_t>(maps_on_device) + 128) / 128 * 128;
  void *aligned = reinterpret_cast<void *>(at), *unaligned = reinterpret_cast<void *>(at + 64);
  void *ref_args[] = {unaligned, &out};
  ASSERT_EQ(sk_scope_begin(dev_, "tma_by_ref", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, tma, 4, ref_args, &by_ref), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(),
                       "step 0 'tma_copy_global' takes the address of parameter 0 (a grid "
                       "constant), read by reference at 0x"))
      << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "not aligned to 128 bytes")) << sk_last_error();
  ref_args[0] = aligned;
  ASSERT_EQ(sk_scope_begin(dev_, "tma_by_ref", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, tma, 4, ref_args, &by_ref), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_superkernel_set_arg(sk, 0, 0, unaligned), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "not aligned to 128 bytes")) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  l = fake_.all();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[2].first_slot, reinterpret_cast<uint64_t>(aligned)) << "the address, which set_arg kept";
  sk_superkernel_destroy(sk);
  sk_mem_free(dev_, maps_on_device);

  // 20 steps take more than the parameter space: the maps are in the argument buffer.
  ASSERT_EQ(sk_scope_begin(dev_, "tma_buffered", nullptr, &scope), SK_OK);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(sk_add_kernel(scope, tma, 4, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  l = fake_.all();
  ASSERT_EQ(l.size(), 4u);
  ASSERT_NE(l[3].args_buffer, 0u) << "in a buffer";
  ASSERT_EQ(sk_superkernel_explain(sk, json.data(), json.size(), nullptr), SK_OK) << sk_last_error();
  // 19 steps of 32 slots (a 128-byte boundary after 17), the last of 17.
  EXPECT_TRUE(contains(json, "\"arguments\":\"buffer\",\"argument_bytes\":5000,")) << json;
  alignas(128) uint64_t slots[16 * 2 + 16];
  ASSERT_EQ(sk_memcpy(dev_, slots, reinterpret_cast<void *>(l[3].args_buffer), sizeof slots), SK_OK);
  EXPECT_EQ(std::memcmp(slots, tensor_map, sizeof tensor_map), 0);
  EXPECT_EQ(slots[16], out);
  EXPECT_EQ(std::memcmp(slots + 32, tensor_map, sizeof tensor_map), 0) << "step 1 on a 128-byte boundary";
  sk_superkernel_destroy(sk);
}

// sk_tensor_map_encode hands the driver the caller's description as cuTensorMapEncodeTiled takes
// it (the stand-in writes its parameters as text), into a buffer of any alignment; each field
// the driver would refuse is named first, and the host device has no tensor maps.
TEST_F(CudaFakeDriver, TensorMapsAreEncodedByTheDriverEachFieldCheckedFirst) {
  void *tensor = nullptr;
  ASSERT_EQ(sk_mem_alloc(dev_, 1 << 16, &tensor), SK_OK) << sk_last_error();
  sk_tensor_map_desc d = {};
  d.struct_size = sizeof d;
  d.data_type = 7;  // f32
  d.rank = 2;
  d.swizzle = 3;
  d.address = tensor;
  d.dims[0] = 64, d.dims[1] = 16;
  d.strides[0] = 256;
  d.box[0] = 32, d.box[1] = 16;  // 128 bytes: the 128-byte swizzle's span
  d.l2_promotion = 2;
  unsigned char bytes[SK_TENSOR_MAP_BYTES + 1];
  std::memset(bytes, 0xee, sizeof bytes);
  ASSERT_EQ(sk_tensor_map_encode(dev_, &d, bytes + 1), SK_OK) << sk_last_error();  // unaligned: copied out
  char address[24];
  std::snprintf(address, sizeof address, "%#llx", (unsigned long long)reinterpret_cast<uintptr_t>(tensor));
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(bytes + 1)),
            std::string("t7 r2 a") + address + " d64,16 s256 b32,16 e1,1 i0 w3 l2 f0");
  EXPECT_EQ(bytes[0], 0xee);

  // Each refusal names its field, and writes nothing.
  struct Bad {
    const char *field;
    void (*set)(sk_tensor_map_desc *);
  };
  const Bad bad[] = {
      {"desc->struct_size 8 is too small", [](sk_tensor_map_desc *x) { x->struct_size = 8; }},
      {"desc->data_type is 13", [](sk_tensor_map_desc *x) { x->data_type = 13; }},
      {"desc->rank is 0", [](sk_tensor_map_desc *x) { x->rank = 0; }},
      {"desc->rank is 6", [](sk_tensor_map_desc *x) { x->rank = 6; }},
      {"desc->rank is 2: an interleaved tensor map has 3 to 5", [](sk_tensor_map_desc *x) { x->interleave = 1; }},
      {"desc->swizzle is 4", [](sk_tensor_map_desc *x) { x->swizzle = 4; }},
      {"desc->swizzle is 3: interleave 2 (32 B) needs swizzle 1",
       [](sk_tensor_map_desc *x) { x->interleave = 2, x->rank = 3, x->dims[2] = 1, x->box[2] = 1; }},
      {"desc->l2_promotion is 4", [](sk_tensor_map_desc *x) { x->l2_promotion = 4; }},
      {"desc->oob_fill is 1: NaN fills only a floating-point",
       [](sk_tensor_map_desc *x) { x->oob_fill = 1, x->data_type = 3; }},
      {"is not 16-byte aligned", [](sk_tensor_map_desc *x) { x->address = static_cast<char *>(x->address) + 8; }},
      {"desc->address (nil) is not", [](sk_tensor_map_desc *x) { x->address = nullptr; }},
      {"desc->dims[1] is 0", [](sk_tensor_map_desc *x) { x->dims[1] = 0; }},
      {"desc->dims[0] is 4294967297", [](sk_tensor_map_desc *x) { x->dims[0] = (uint64_t{1} << 32) + 1; }},
      {"desc->strides[0] is 250", [](sk_tensor_map_desc *x) { x->strides[0] = 250; }},
      {"desc->strides[0] is 1099511627776", [](sk_tensor_map_desc *x) { x->strides[0] = uint64_t{1} << 40; }},
      {"desc->box[1] is 257", [](sk_tensor_map_desc *x) { x->box[1] = 257; }},
      {"desc->box[0] is 2: its elements are not a multiple of 16 bytes",
       [](sk_tensor_map_desc *x) { x->box[0] = 2; }},
      {"desc->box[0] is 64: its elements span more bytes than the swizzle",
       [](sk_tensor_map_desc *x) { x->box[0] = 64; }},
      {"desc->element_strides[0] is 9", [](sk_tensor_map_desc *x) { x->element_strides[0] = 9; }},
      {"desc->element_strides[0] is 0: give every element stride or none",
       [](sk_tensor_map_desc *x) { x->element_strides[1] = 2; }},
  };
  for (const Bad &b : bad) {
    sk_tensor_map_desc x = d;
    b.set(&x);
    std::memset(bytes, 0xee, sizeof bytes);
    EXPECT_EQ(sk_tensor_map_encode(dev_, &x, bytes), SK_ERR_INVALID_ARGUMENT) << b.field;
    EXPECT_TRUE(contains(sk_last_error(), b.field)) << b.field << ": " << sk_last_error();
    EXPECT_TRUE(contains(sk_last_error(), "sk_tensor_map_encode")) << sk_last_error();
    EXPECT_EQ(bytes[0], 0xee) << b.field;
  }
  // Given element strides and a 32-byte interleave pass through.
  sk_tensor_map_desc x = d;
  x.rank = 3, x.dims[2] = 2, x.box[2] = 1, x.strides[1] = 4096, x.interleave = 2, x.swizzle = 1, x.box[0] = 8;
  x.address = reinterpret_cast<void *>((reinterpret_cast<uintptr_t>(tensor) + 31) & ~uintptr_t{31});
  for (uint32_t i = 0; i < 3; ++i) x.element_strides[i] = i + 1;
  ASSERT_EQ(sk_tensor_map_encode(dev_, &x, bytes), SK_OK) << sk_last_error();
  EXPECT_TRUE(contains(reinterpret_cast<const char *>(bytes), " d64,16,2 s256,4096 b8,16,1 e1,2,3 i2 w1 l2 f0"))
      << bytes;
  EXPECT_EQ(sk_tensor_map_encode(dev_, nullptr, bytes), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "desc is NULL")) << sk_last_error();
  EXPECT_EQ(sk_tensor_map_encode(dev_, &d, nullptr), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "tensor_map is NULL")) << sk_last_error();
  // What the driver refuses is SK_ERR_DEVICE naming the call, and the device stays usable.
  fake_.fail_next("cuTensorMapEncodeTiled", 1);
  EXPECT_EQ(sk_tensor_map_encode(dev_, &d, bytes), SK_ERR_DEVICE);
  EXPECT_TRUE(contains(sk_last_error(), "cuTensorMapEncodeTiled")) << sk_last_error();
  EXPECT_EQ(sk_tensor_map_encode(dev_, &d, bytes), SK_OK) << sk_last_error();
  sk_mem_free(dev_, tensor);

  sk_device *host = nullptr;
  ASSERT_EQ(sk_device_open("host:cores=1", &host), SK_OK) << sk_last_error();
  EXPECT_EQ(sk_tensor_map_encode(host, &d, bytes), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk_last_error(), "not a CUDA device")) << sk_last_error();
  sk_device_close(host);
}

TEST(CudaModuleInspect, SaysWhatEachKernelWouldBeOrWhyNot) {
  const std::vector<uint8_t> rms = sk::cuda_test::read_file(sk::cuda_test::triton_path("rmsnorm.ptx"));
  size_t need = 0;
  ASSERT_EQ(sk_module_inspect("cuda:arch=sm_90", rms.data(), rms.size(), nullptr, 0, &need), SK_OK)
      << sk_last_error();
  std::string json(need, '\0');
  ASSERT_EQ(sk_module_inspect("cuda:arch=sm_90", rms.data(), rms.size(), json.data(), need, nullptr), SK_OK);
  for (const char *fact : {R"("kind":"ptx")", R"("version":"9.4")", R"("link_arch":"sm_90a")",
                           R"("name":"rmsnorm_kernel")", "sk_kernel_desc.dynamic_shared"})
    EXPECT_TRUE(contains(json, fact)) << fact << " in " << json;
  const std::vector<uint8_t> global = sk::cuda_test::kernel_bytes("decode_global.ptx");
  ASSERT_EQ(sk_module_inspect("cuda:arch=sm_90", global.data(), global.size(), nullptr, 0, &need), SK_OK);
  json.assign(need, '\0');
  ASSERT_EQ(sk_module_inspect("cuda:arch=sm_90", global.data(), global.size(), json.data(), need, nullptr), SK_OK);
  for (const char *fact : {R"("name":"rmsnorm_global")", R"("maxntid":[256,1,1])", R"("min_blocks_per_sm":2)",
                           "%nctaid.x read as sk_block_num()", "sk_kernel_desc.threads"})
    EXPECT_TRUE(contains(json, fact)) << fact << " in " << json;
  // A kernel refused only for launch facts its PTX does not say: the sk_kernel_desc fields to
  // give, and its facts with stand-ins for them (a block {1, T, 1} for one that reads threadIdx.y).
  const std::vector<uint8_t> shaped = sk::cuda_test::kernel_bytes("block2d.ptx");
  ASSERT_EQ(sk_module_inspect("cuda:arch=sm_90", shaped.data(), shaped.size(), nullptr, 0, &need), SK_OK);
  json.assign(need, '\0');
  ASSERT_EQ(sk_module_inspect("cuda:arch=sm_90", shaped.data(), shaped.size(), json.data(), need, nullptr), SK_OK);
  for (const char *fact :
       {R"("name":"scale_rows_2d","module":)", R"("threads":128,"threads_from":"stand-in","block":[1,128,1],)",
        R"("needs":["block"],"error":"sk_module_get_kernel: kernel 'scale_rows_2d')", "(sk_kernel_desc.block)"})
    EXPECT_TRUE(contains(json, fact)) << fact << " in " << json;
  const std::vector<uint8_t> refused = sk::cuda_test::kernel_bytes("refuse_global.ptx");
  ASSERT_EQ(sk_module_inspect("cuda:arch=sm_90", refused.data(), refused.size(), nullptr, 0, &need), SK_OK);
  json.assign(need, '\0');
  ASSERT_EQ(sk_module_inspect("cuda:arch=sm_90", refused.data(), refused.size(), json.data(), need, nullptr), SK_OK);
  EXPECT_TRUE(contains(json, R"({"name":"refuse_cluster","error":)")) << json;
  EXPECT_TRUE(contains(json, R"("threads_from":"stand-in")")) << json;  // refuse_child
  EXPECT_TRUE(contains(json, R"("needs":["threads"])")) << json;
  EXPECT_EQ(sk_module_inspect("cuda", rms.data(), rms.size(), nullptr, 0, &need), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "arch=sm_XY")) << sk_last_error();
  // The host backend reads ELF objects: PTX is none.
  EXPECT_EQ(sk_module_inspect("host", rms.data(), rms.size(), nullptr, 0, &need), SK_ERR_BAD_BINARY);
  EXPECT_EQ(sk_module_inspect("nope", rms.data(), rms.size(), nullptr, 0, &need), SK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sk_module_inspect("cuda:arch=sm_80", rms.data(), rms.size(), nullptr, 0, &need), SK_ERR_INCOMPATIBLE);
  EXPECT_EQ(sk_module_inspect("cuda:arch=sm_90", rms.data(), 0, nullptr, 0, &need), SK_ERR_BAD_BINARY);
  char small[8];
  EXPECT_EQ(sk_module_inspect("cuda:arch=sm_90", rms.data(), rms.size(), small, sizeof small, nullptr),
            SK_ERR_INVALID_ARGUMENT);
}

// A super kernel of PTX sub-kernels alone runs as one program: finalize gives the joined PTX to
// cuModuleLoadDataEx (the stand-in compiles it with ptxas, whole, as the driver's JIT would)
// and launches that in place of the linked cubin, which explain says, with both register
// counts. Where the JIT fails, the program fits fewer blocks on an SM, or the scope option
// says whole-program=0, the linked cubin runs, and explain says why; max-registers caps the
// program (its entry's .maxnreg).
TEST_F(CudaFakeDriver, ASuperKernelOfPtxSubKernelsRunsAsOneProgram) {
  sk_module *rms_mod = module(sk::cuda_test::triton_path("rmsnorm.ptx")),
            *gemv_mod = module(sk::cuda_test::triton_path("gemv.ptx"));
  ASSERT_TRUE(rms_mod && gemv_mod);
  sk_kernel *rms = nullptr, *gemv = nullptr;
  sk_kernel_desc desc{sizeof desc, nullptr, 0, 16};
  ASSERT_EQ(sk_module_get_kernel_desc(rms_mod, "rmsnorm_kernel", &desc, &rms), SK_OK) << sk_last_error();
  desc.dynamic_shared = 512;
  ASSERT_EQ(sk_module_get_kernel_desc(gemv_mod, "gemv_kernel", &desc, &gemv), SK_OK) << sk_last_error();
  float *x = reinterpret_cast<float *>(0x1234000), *w = x + 4096, *y = x + 8192, eps = 1e-6f;
  void *null = nullptr;
  uint32_t n = 1024, m = 1024;
  void *rms_args[] = {&x, &w, &y, &n, &eps, &null, &null};
  void *gemv_args[] = {&w, &y, &x, &n, &m, &null, &null};
  // Finalizes and launches the two under `options`; their explain.
  auto fused = [&](const char *options) -> std::string {
    sk_scope *scope = nullptr;
    EXPECT_EQ(sk_scope_begin(dev_, "decode", options, &scope), SK_OK) << sk_last_error();
    if (!scope) return "";
    EXPECT_EQ(sk_add_kernel(scope, rms, 4, rms_args, nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_add_kernel(scope, gemv, 8, gemv_args, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    EXPECT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
    if (!sk) return "";
    EXPECT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    const std::string json = explain(sk);
    sk_superkernel_destroy(sk);
    return json;
  };
  auto number = [](const std::string &json, const std::string &key) {
    const size_t at = json.find("\"" + key + "\":");
    return at == std::string::npos ? -1 : std::atoi(json.c_str() + at + key.size() + 3);
  };
  auto program = [&] {
    std::vector<uint8_t> img(1 << 20);
    img.resize(reinterpret_cast<size_t (*)(uint8_t *, size_t)>(dlsym(fake_.lib, "fake_cuda_last_program"))(
        img.data(), img.size()));
    return img;
  };
  const std::string whole = fused(nullptr);
  EXPECT_TRUE(contains(whole, R"("compiled":"whole program")")) << whole;
  EXPECT_FALSE(contains(whole, "why_linked")) << whole;
  EXPECT_GT(number(whole, "registers"), 0);
  EXPECT_LT(number(whole, "registers"), number(whole, "linked_registers")) << whole;
  const std::vector<uint8_t> compiled = program();
  ASSERT_GT(compiled.size(), 4u);
  EXPECT_EQ(std::memcmp(compiled.data(), "\177ELF", 4), 0);
  // With the line tables of the Triton source, which the JIT was asked for.
  EXPECT_EQ(reinterpret_cast<int (*)()>(dlsym(fake_.lib, "fake_cuda_last_program_line_info"))(), 1);
  const std::string bytes(compiled.begin(), compiled.end());
  EXPECT_TRUE(contains(bytes, ".debug_line") && contains(bytes, "decode_step.py"));
  EXPECT_EQ(fake_.all().size(), 1u);  // launched

  fake_.fail_next("cuModuleLoadDataEx", 218);  // CUDA_ERROR_INVALID_PTX
  const std::string failed = fused(nullptr);
  EXPECT_TRUE(contains(failed, R"("compiled":"linked")")) << failed;
  EXPECT_TRUE(contains(failed, "the driver's JIT did not compile it as one program (CUDA_ERROR_INVALID_PTX"))
      << failed;
  EXPECT_FALSE(contains(failed, "linked_registers")) << failed;

  reinterpret_cast<void (*)(int)>(dlsym(fake_.lib, "fake_cuda_set_program_occupancy"))(1);
  const std::string fewer = fused(nullptr);
  EXPECT_TRUE(contains(fewer, R"("compiled":"linked")")) << fewer;
  EXPECT_TRUE(contains(fewer, "1 blocks fit on an SM where 2 of the linked entry (")) << fewer;
  EXPECT_EQ(number(fewer, "blocks_per_sm"), 2);
  reinterpret_cast<void (*)(int)>(dlsym(fake_.lib, "fake_cuda_set_program_occupancy"))(0);

  const std::string off = fused("whole-program=0");
  EXPECT_TRUE(contains(off, R"("compiled":"linked")") &&
              contains(off, R"("why_linked":"the scope option whole-program=0")"))
      << off;

  const std::string capped = fused("max-registers=24");
  EXPECT_TRUE(contains(capped, R"("compiled":"whole program")") && contains(capped, R"("register_cap":24)"))
      << capped;
  EXPECT_LE(number(capped, "registers"), 24) << capped;
}

// A __global__ kernel of linked SASS alone (nvcc -cubin; nvcc -c code=sm_90) cannot be called,
// so it is launched as compiled: its signature and block read from the cubin's .nv.info, a
// dispatch of its own between the super kernel's, its arguments the step's (rebound by
// set_arg), launched alone by sk_launch_kernel the same way. What it cannot do is refused by
// name.
TEST_F(CudaFakeDriver, AKernelOfLinkedSassIsLaunchedAsCompiledBetweenDispatches) {
  sk_kernel *fused = kernel("decode_global.ptx", "residual_add_global");
  sk_kernel *sass = kernel("decode_global_sass.cubin", "residual_add_global");
  ASSERT_NE(fused, nullptr);
  ASSERT_NE(sass, nullptr);
  char signature[64];
  ASSERT_EQ(sk_kernel_signature(sass, signature, sizeof signature, nullptr), SK_OK) << sk_last_error();
  EXPECT_STREQ(signature, "ptr,ptr,ptr,u32");
  uint64_t a = 0x1000, b = 0x2000, c = 0x3000;
  uint32_t n = 1000;
  void *args[] = {&a, &b, &c, &n};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "mixed", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, fused, 4, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, sass, 6, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, fused, 4, args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  const std::string json = explain(sk);
  for (const char *fact :
       {"\"dispatches\":3", "\"split_reason\":\"kernel 1 'residual_add_global' is launched as compiled, on its own",
        "\"split_reason\":\"kernel 1 'residual_add_global' before it is launched as compiled, on its own\"",
        "\"launch\":\"plain\",\"function\":\"residual_add_global\",\"grid\":[6,1,1],\"block\":[256,1,1]",
        "\"launch\":\"super kernel\""})
    EXPECT_TRUE(contains(json, fact)) << fact << " in " << json;
  const size_t logged = fake_.log().size();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  uint32_t rebound = 77;
  ASSERT_EQ(sk_superkernel_set_arg(sk, 1, 3, &rebound), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_repeat(sk, 2, nullptr, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  // In order: super kernel, plain launch, super kernel, three times.
  const std::vector<FakeCall> log = fake_.log();
  size_t launches = 0;
  for (size_t i = logged; i < log.size(); ++i) launches += named(log[i], "cuLaunchKernelEx");
  EXPECT_EQ(launches, 9u);
  EXPECT_EQ(fake_.all().size(), 6u);
  const std::vector<FakePlainLaunch> plain = fake_.plain();
  ASSERT_EQ(plain.size(), 3u);
  for (size_t r = 0; r < plain.size(); ++r) {
    const FakePlainLaunch &l = plain[r];
    EXPECT_STREQ(l.function, "residual_add_global");
    EXPECT_EQ(l.grid[0] * 100 + l.grid[1] * 10 + l.grid[2], 611u);
    EXPECT_EQ(l.block[0] * 100 + l.block[1] * 10 + l.block[2], 25611u);
    EXPECT_EQ(l.shared, 0u);
    ASSERT_EQ(l.param_bytes, 28u);
    uint64_t p[3];
    uint32_t count;
    std::memcpy(p, l.params, 24);
    std::memcpy(&count, l.params + 24, 4);
    EXPECT_EQ(p[0] + p[1] + p[2], a + b + c);
    EXPECT_EQ(p[2], c);
    EXPECT_EQ(count, r == 0 ? n : rebound) << "run " << r;
  }
  // The driver refusing the plain launch: the super kernel before it is queued, and the error
  // says so; the next launch runs whole.
  fake_.fail_later("cuLaunchKernelEx", 1, 701);  // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
  EXPECT_EQ(sk_launch(sk, nullptr), SK_ERR_DEVICE);
  EXPECT_TRUE(
      contains(sk_last_error(),
               "super kernel 'mixed': dispatch 2 of 3 (kernel 1 'residual_add_global') failed after the 1 "
               "before it were queued, which run: sk_launch: cuLaunchKernelEx of kernel 'residual_add_global'"))
      << sk_last_error();
  EXPECT_EQ(fake_.all().size(), 7u);
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(fake_.all().size(), 9u);
  EXPECT_EQ(fake_.plain().size(), 4u);
  // Several dispatches repeat from the host, which cannot read a stop flag on the device.
  uint32_t *flag = zeroed_flag();
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(sk_launch_repeat(sk, 2, flag, nullptr), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "step 1 'residual_add_global' is launched as compiled")) << sk_last_error();
  sk_mem_free(dev_, flag);
  sk_superkernel_destroy(sk);
  // Alone: the same launch, on its own grid.
  ASSERT_EQ(sk_launch_kernel(sass, 5, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(fake_.plain().size(), 5u);
  EXPECT_EQ(fake_.plain()[4].grid[0], 5u);

  // A host object of nvcc -c with SASS alone: its cubin, taken the same way.
  sk_kernel *from_object = kernel("decode_global_sass.o", "rmsnorm_global");
  ASSERT_NE(from_object, nullptr);
  ASSERT_EQ(sk_kernel_signature(from_object, signature, sizeof signature, nullptr), SK_OK) << sk_last_error();
  EXPECT_STREQ(signature, "ptr,ptr,ptr,u32,u32");

  // Refused by name: nothing to fuse; an argument read by reference; a block-local edge to it;
  // no threads said; a signature of other sizes; more threads than its __launch_bounds__.
  auto finalize = [&](sk_kernel *first, sk_kernel *second, const sk_kernel_options *options) {
    sk_scope *s = nullptr;
    EXPECT_EQ(sk_scope_begin(dev_, "refused", nullptr, &s), SK_OK);
    EXPECT_EQ(sk_add_kernel(s, first, 4, args, nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_add_kernel(s, second, 4, args, options), SK_OK) << sk_last_error();
    sk_superkernel *made = nullptr;
    const sk_status st = sk_finalize(s, &made);
    if (made) sk_superkernel_destroy(made);
    return st;
  };
  EXPECT_EQ(finalize(sass, sass, nullptr), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "each of its 2 kernels is launched as compiled")) << sk_last_error();
  sk_kernel_options by_ref = SK_KERNEL_OPTIONS_INIT;
  by_ref.arg_refs = 1;
  void *device = nullptr;
  ASSERT_EQ(sk_mem_alloc(dev_, 64, &device), SK_OK);
  void *ref_args[] = {device, &b, &c, &n};
  {
    sk_scope *s = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "refs", nullptr, &s), SK_OK);
    ASSERT_EQ(sk_add_kernel(s, fused, 4, args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(s, sass, 4, ref_args, &by_ref), SK_OK) << sk_last_error();
    sk_superkernel *made = nullptr;
    EXPECT_EQ(sk_finalize(s, &made), SK_ERR_INCOMPATIBLE);
    EXPECT_TRUE(contains(sk_last_error(), "kernel 1 'residual_add_global' reads arguments by reference"))
        << sk_last_error();
  }
  sk_mem_free(dev_, device);
  sk_kernel_options block_local = SK_KERNEL_OPTIONS_INIT;
  block_local.flags = SK_KERNEL_FLAG_BLOCK_LOCAL;
  EXPECT_NE(finalize(fused, sass, &block_local), SK_OK);
  EXPECT_TRUE(contains(sk_last_error(), "residual_add_global")) << sk_last_error();
  sk_module *mod = module(sk::cuda_test::kernel_path("decode_global_sass.cubin"));
  sk_kernel *k = nullptr;
  EXPECT_EQ(sk_module_get_kernel(mod, "silu_mul_global", &k), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "silu_mul_global")) << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "sk_kernel_desc.threads")) << sk_last_error();
  sk_kernel_desc desc{sizeof desc, nullptr, 64, 0, {0, 0, 0}, 0};
  ASSERT_EQ(sk_module_get_kernel_desc(mod, "silu_mul_global", &desc, &k), SK_OK) << sk_last_error();
  desc = {sizeof desc, "ptr,ptr,ptr,u64", 0, 0, {0, 0, 0}, 0};
  EXPECT_EQ(sk_module_get_kernel_desc(mod, "residual_add_global", &desc, &k), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "parameter 3 is 4 bytes in its cubin, which u64 (8 bytes)"))
      << sk_last_error();
  desc = {sizeof desc, nullptr, 512, 0, {0, 0, 0}, 0};
  EXPECT_EQ(sk_module_get_kernel_desc(mod, "residual_add_global", &desc, &k), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "at most 256 threads per block")) << sk_last_error();
}

// A kernel of linked SASS that syncs its grid with cooperative groups (its .nv.info records
// the instructions): launched cooperatively, alone and as a plain launch, and said so in
// explain; a kernel taken with SK_KERNEL_DESC_COOPERATIVE too; an ordinary one not.
TEST_F(CudaFakeDriver, ALinkedSassKernelThatSyncsItsGridIsLaunchedCooperatively) {
  sk_kernel *gs = kernel("grid_sync_sass.cubin", "gs_neighbour");
  sk_kernel *add = kernel("decode_global_sass.cubin", "residual_add_global");
  sk_kernel *fused = kernel("decode_global.ptx", "residual_add_global");
  ASSERT_TRUE(gs && add && fused);
  uint64_t p = 0x1000;
  uint32_t n = 100;
  void *gs_args[] = {&p, &p};
  void *add_args[] = {&p, &p, &p, &n};
  ASSERT_EQ(sk_launch_kernel(gs, 4, gs_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(add, 4, add_args, nullptr), SK_OK) << sk_last_error();
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "cooperative", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, fused, 4, add_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, gs, 4, gs_args, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = finalize_and_launch(scope);
  ASSERT_NE(sk, nullptr);
  EXPECT_TRUE(contains(explain(sk), "\"constructs\":[\"cg::this_grid().sync()\"]")) << explain(sk);
  sk_superkernel_destroy(sk);
  sk_module *mod = module(sk::cuda_test::kernel_path("decode_global_sass.cubin"));
  sk_kernel_desc desc{sizeof desc, nullptr, 0, 0, {0, 0, 0}, SK_KERNEL_DESC_COOPERATIVE};
  sk_kernel *own = nullptr;
  ASSERT_EQ(sk_module_get_kernel_desc(mod, "residual_add_global", &desc, &own), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(own, 4, add_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  const std::vector<FakePlainLaunch> l = fake_.plain();
  ASSERT_EQ(l.size(), 4u);
  EXPECT_STREQ(l[0].function, "gs_neighbour");
  EXPECT_EQ(l[0].cooperative, 1);
  EXPECT_EQ(l[1].cooperative, 0);
  EXPECT_STREQ(l[2].function, "gs_neighbour");
  EXPECT_EQ(l[2].cooperative, 1);
  EXPECT_EQ(l[3].cooperative, 1);
  // Cooperative groups of the block, a warp or a cluster leave the record a grid sync leaves:
  // launched as any kernel (a cooperative launch of more blocks than run at once is refused).
  for (const char *name : {"cg_block_reverse", "cg_warp_sum", "cg_cluster_rotate", "cg_grid_sync_call"}) {
    sk_kernel *cg = kernel("cooperative_groups_sass.cubin", name);
    ASSERT_NE(cg, nullptr) << name;
    ASSERT_EQ(sk_launch_kernel(cg, 4, gs_args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    const std::vector<FakePlainLaunch> after = fake_.plain();
    ASSERT_FALSE(after.empty());
    EXPECT_STREQ(after.back().function, name);
    EXPECT_EQ(after.back().cooperative, std::string(name) == "cg_grid_sync_call") << name;
  }
}

// A kernel of linked SASS runs in the cluster it was compiled for (the driver's to apply), or in
// the one its caller gives (sk_kernel_desc.cluster, the launch's attribute), which a kernel
// compiled for a cluster its launch gives needs; grids that do not hold whole clusters, a
// cluster for a fused kernel and malformed ones are refused by name.
TEST_F(CudaFakeDriver, ALinkedSassKernelRunsInItsClusterOrTheOneItsCallerGives) {
  sk_module *mod = module(sk::cuda_test::kernel_path("clusters_sass.cubin"));
  ASSERT_NE(mod, nullptr);
  uint64_t p = 0x1000;
  void *args[] = {&p, &p};
  auto take = [&](const char *name, std::array<uint32_t, 3> cluster, sk_kernel **out) {
    sk_kernel_desc desc{sizeof desc, nullptr, 0, 0, {0, 0, 0}, 0, {cluster[0], cluster[1], cluster[2]}};
    return sk_module_get_kernel_desc(mod, name, &desc, out);
  };
  auto last = [&] {
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    const std::vector<FakePlainLaunch> l = fake_.plain();
    return l.empty() ? FakePlainLaunch{} : l.back();
  };
  // Compiled for pairs: the driver's cluster, no attribute; a grid of odd blocks is refused.
  sk_kernel *pairs = nullptr;
  ASSERT_EQ(take("cluster_pairs", {0, 0, 0}, &pairs), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(pairs, 4, args, nullptr), SK_OK) << sk_last_error();
  FakePlainLaunch l = last();
  EXPECT_STREQ(l.function, "cluster_pairs");
  EXPECT_EQ(l.cluster[0], 0u);
  EXPECT_EQ(sk_launch_kernel(pairs, 3, args, nullptr), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(),
                       "kernel 'cluster_pairs' runs in clusters of {2, 1, 1} blocks (__cluster_dims__), "
                       "which its grid {3, 1, 1} does not hold whole"))
      << sk_last_error();
  sk_kernel *same = nullptr;
  EXPECT_EQ(take("cluster_pairs", {2, 1, 1}, &same), SK_OK) << sk_last_error();
  EXPECT_EQ(take("cluster_pairs", {4, 1, 1}, &same), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(
      contains(sk_last_error(), "was compiled for clusters of {2, 1, 1} blocks (__cluster_dims__), not {4, 1, 1}"))
      << sk_last_error();
  // .explicitcluster: needs the caller's, then launched with it.
  sk_kernel *explicit_cluster = nullptr;
  EXPECT_EQ(take("cluster_explicit", {0, 0, 0}, &explicit_cluster), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "'cluster_explicit'")) << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(),
                       "(.explicitcluster): give the cluster its launches have when taking it "
                       "(sk_kernel_desc.cluster)"))
      << sk_last_error();
  ASSERT_EQ(take("cluster_explicit", {2, 1, 1}, &explicit_cluster), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(explicit_cluster, 6, args, nullptr), SK_OK) << sk_last_error();
  l = last();
  EXPECT_EQ((std::array<unsigned, 3>{l.cluster[0], l.cluster[1], l.cluster[2]}), (std::array<unsigned, 3>{2, 1, 1}));
  // Any cluster: in a scope between fused steps, the plain launch carries the caller's.
  sk_kernel *any = nullptr, *fused = kernel("decode_global.ptx", "residual_add_global");
  ASSERT_NE(fused, nullptr);
  ASSERT_EQ(take("cluster_any", {4, 1, 1}, &any), SK_OK) << sk_last_error();
  uint32_t n = 100;
  void *add_args[] = {&p, &p, &p, &n};
  for (uint32_t blocks : {6u, 8u}) {
    sk_scope *scope = nullptr;
    ASSERT_EQ(sk_scope_begin(dev_, "clusters", nullptr, &scope), SK_OK);
    ASSERT_EQ(sk_add_kernel(scope, fused, 4, add_args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, any, blocks, args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_add_kernel(scope, fused, 4, add_args, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    if (blocks == 6) {
      EXPECT_EQ(sk_finalize(scope, &sk), SK_ERR_INCOMPATIBLE);
      EXPECT_TRUE(contains(sk_last_error(), "'cluster_any'")) << sk_last_error();
      EXPECT_TRUE(
          contains(sk_last_error(), "runs in clusters of {4, 1, 1} blocks (caller), which its grid {6, 1, 1}"))
          << sk_last_error();
      continue;
    }
    sk = finalize_and_launch(scope);
    ASSERT_NE(sk, nullptr);
    EXPECT_TRUE(contains(explain(sk),
                         "\"function\":\"cluster_any\",\"grid\":[8,1,1],\"block\":[128,1,1],\"cluster\":[4,1,1]"))
        << explain(sk);
    sk_superkernel_destroy(sk);
    l = last();
    EXPECT_STREQ(l.function, "cluster_any");
    EXPECT_EQ((std::array<unsigned, 3>{l.cluster[0], l.cluster[1], l.cluster[2]}),
              (std::array<unsigned, 3>{4, 1, 1}));
  }
  // Refused: a cluster for a fused kernel, an extent of 0, more than 8 blocks.
  sk_module *ptx = module(sk::cuda_test::kernel_path("decode_global.ptx"));
  ASSERT_NE(ptx, nullptr);
  sk_kernel_desc on_fused{sizeof on_fused, nullptr, 0, 0, {0, 0, 0}, 0, {2, 1, 1}};
  sk_kernel *out = nullptr;
  EXPECT_EQ(sk_module_get_kernel_desc(ptx, "residual_add_global", &on_fused, &out), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk_last_error(), "'residual_add_global'")) << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "is fused, and a super kernel runs in no thread block cluster"))
      << sk_last_error();
  EXPECT_EQ(take("cluster_any", {2, 0, 1}, &out), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "cluster {2, 0, 1} has an extent of 0")) << sk_last_error();
  EXPECT_EQ(take("cluster_any", {4, 4, 1}, &out), SK_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sk_last_error(), "cluster {4, 4, 1} is 16 blocks, more than the 8 of a portable cluster"))
      << sk_last_error();
  // A caller built before the field: its desc ends before it, and nothing past is read.
  sk_kernel_desc old{};
  old.struct_size = offsetof(sk_kernel_desc, cluster);
  old.cluster[0] = 3;  // garbage past the caller's struct
  ASSERT_EQ(sk_module_get_kernel_desc(mod, "cluster_any", &old, &out), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(out, 5, args, nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(last().cluster[0], 0u);
}

// A hang in a dispatch after a plain launch names the super kernel's step, not its program's.
TEST_F(CudaFakeDriver, AHangAfterAPlainLaunchNamesTheSuperKernelsStep) {
  sk_kernel *add = kernel("decode_global_sass.cubin", "residual_add_global");
  sk_kernel *step = kernel("chain.cubin", "chain_step");
  sk_kernel *sum = kernel("sync.cubin", "sync_sum");
  ASSERT_TRUE(add && step && sum);
  uint64_t x = 0x1000;
  uint32_t n = 8, i = 0;
  void *p[] = {&x, &x, &x, &n};
  void *a[] = {&x, &n, &i};
  void *b[] = {&x, &x, &n};
  sk_scope *scope = nullptr;
  ASSERT_EQ(sk_scope_begin(dev_, "hangs_later", nullptr, &scope), SK_OK);
  ASSERT_EQ(sk_add_kernel(scope, add, 4, p, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, step, 4, a, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_add_kernel(scope, sum, 4, b, nullptr), SK_OK) << sk_last_error();
  sk_superkernel *sk = nullptr;
  ASSERT_EQ(sk_finalize(scope, &sk), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
  std::vector<FakeLaunch> l = fake_.all();
  ASSERT_EQ(l.size(), 1u);
  // The program's own step 1, block 3, at sk_sync_all (as HangReportBecomesSkErrHangOnce).
  const uint64_t report[7] = {1, 1, 1, 3, 3, 5, 8};
  ASSERT_EQ(sk_memcpy(dev_, reinterpret_cast<void *>(l[0].report), report, sizeof report), SK_OK);
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_HANG);
  EXPECT_TRUE(contains(sk_last_error(), "block 3 of step 2 'sync_sum'")) << sk_last_error();
  sk_superkernel_destroy(sk);
}

// The driver refusing a plain kernel's function fails sk_finalize naming the kernel, unloads
// the module it loaded, and the next finalize loads it afresh. Kernels of one cubin share one
// module on the device, unloaded with the last of them.
TEST_F(CudaFakeDriver, APlainKernelTheDriverRefusesFailsFinalizeAndLoadsOnTheNextTry) {
  const std::string path = sk::cuda_test::kernel_path("decode_global_sass.cubin");
  sk_module *first = nullptr, *second = nullptr;  // the same bytes twice: one module of them
  ASSERT_EQ(sk_module_load_file(dev_, path.c_str(), &first), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_load_file(dev_, path.c_str(), &second), SK_OK) << sk_last_error();
  sk_kernel *add = nullptr, *gemv = nullptr;
  ASSERT_EQ(sk_module_get_kernel(first, "residual_add_global", &add), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_module_get_kernel(second, "gemv_global", &gemv), SK_OK) << sk_last_error();
  sk_kernel *fused = kernel("decode_global.ptx", "residual_add_global");
  ASSERT_NE(fused, nullptr);
  uint64_t x = 0x1000;
  uint32_t n = 8;
  void *args[] = {&x, &x, &x, &n};
  void *gemv_args[] = {&x, &x, &x, &n, &n};
  auto finalize = [&] {
    sk_scope *scope = nullptr;
    EXPECT_EQ(sk_scope_begin(dev_, "refused_function", nullptr, &scope), SK_OK);
    EXPECT_EQ(sk_add_kernel(scope, add, 4, args, nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_add_kernel(scope, fused, 4, args, nullptr), SK_OK) << sk_last_error();
    sk_superkernel *sk = nullptr;
    const sk_status st = sk_finalize(scope, &sk);
    if (sk) sk_superkernel_destroy(sk);
    return st;
  };
  auto loaded = reinterpret_cast<int (*)()>(dlsym(fake_.lib, "fake_cuda_modules_loaded"));
  const int before = loaded();
  fake_.fail_next("cuModuleGetFunction", 500);  // CUDA_ERROR_NOT_FOUND
  EXPECT_NE(finalize(), SK_OK);
  EXPECT_TRUE(contains(sk_last_error(), "cuModuleGetFunction 'residual_add_global'")) << sk_last_error();
  EXPECT_EQ(loaded(), before);
  EXPECT_EQ(finalize(), SK_OK) << sk_last_error();
  EXPECT_EQ(loaded(), before + 1);
  ASSERT_EQ(sk_launch_kernel(add, 2, args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_launch_kernel(gemv, 2, gemv_args, nullptr), SK_OK) << sk_last_error();
  ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
  EXPECT_EQ(fake_.plain().size(), 2u);
  EXPECT_EQ(loaded(), before + 1);  // one module of the cubin for both kernels
  sk_module_unload(second);
  EXPECT_EQ(loaded(), before + 1);
  sk_module_unload(first);
  EXPECT_EQ(loaded(), before);
}

// Large by-value parameters of a linked cubin are passed whole: a 4 KiB one (in
// EIATTR_KPARAM_INFO's top bits), and those of a kernel of more than 4 KiB of parameters, which
// nvcc records in another form, up to PyTorch's 27 KB; past what libsk passes, refused by name.
TEST_F(CudaFakeDriver, ALinkedSassKernelsLargeParametersArePassedWhole) {
  // 4096 bytes in EIATTR_KPARAM_INFO; 5000 and 27648 in the record of more than 4 KiB.
  const std::tuple<const char *, size_t, const char *> tables[] = {{"table_4k", 4096, "ptr,{u64[512]}"},
                                                                   {"table_5k", 5000, "ptr,{u64[625]}"},
                                                                   {"table_27k", 27648, "ptr,{u64[3456]}"}};
  for (const auto &[name, bytes, expected] : tables) {
    SCOPED_TRACE(name);
    sk_kernel *k = kernel("large_params.cubin", name);
    ASSERT_NE(k, nullptr);
    char signature[64];
    ASSERT_EQ(sk_kernel_signature(k, signature, sizeof signature, nullptr), SK_OK) << sk_last_error();
    EXPECT_STREQ(signature, expected);
    uint64_t out = 0x1000;
    std::vector<uint64_t> table(bytes / 8);
    for (size_t i = 0; i < table.size(); ++i) table[i] = 0x0101010101010101ull * (i % 251) + bytes;
    void *args[] = {&out, table.data()};
    ASSERT_EQ(sk_launch_kernel(k, 2, args, nullptr), SK_OK) << sk_last_error();
    ASSERT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    const std::vector<FakePlainLaunch> l = fake_.plain();
    ASSERT_FALSE(l.empty());
    ASSERT_EQ(l.back().param_bytes, 8u + bytes);
    EXPECT_EQ(std::memcmp(l.back().params + 8, table.data(), bytes), 0);
  }
  // A parameter past what libsk passes (no compiler writes one: the record made to say 40000).
  std::vector<uint8_t> image = sk::cuda_test::kernel_bytes("large_params.cubin");
  const uint8_t record[] = {1, 0, 8, 0, 0x88, 0x13, 0, 0};  // ordinal 1, offset 8, 5000 bytes
  auto at = std::search(image.begin(), image.end(), std::begin(record), std::end(record));
  ASSERT_NE(at, image.end());
  at[4] = 0x40, at[5] = 0x9c;  // 40000
  sk_module *mod = nullptr;
  ASSERT_EQ(sk_module_load(dev_, image.data(), image.size(), &mod), SK_OK) << sk_last_error();
  modules_.push_back(mod);
  sk_kernel *t5 = nullptr;
  EXPECT_EQ(sk_module_get_kernel(mod, "table_5k", &t5), SK_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(sk_last_error(), "'table_5k'")) << sk_last_error();
  EXPECT_TRUE(contains(sk_last_error(), "parameter 1 is 40000 bytes, more than the 32768 libsk passes by value"))
      << sk_last_error();
}
