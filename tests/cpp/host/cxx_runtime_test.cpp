// C++ objects compiled with the compilers' default flags, for every variant of the kernel
// matrix: constructors and destructors run at load and unload in the order a normal link and
// dlopen give (checked against the same object linked by `gcc -shared` and dlopen'ed),
// exceptions caught inside a kernel, one escaping a kernel (fused and unfused), RTTI, local
// statics, a throwing constructor, and what is refused (.preinit_array, --coverage, -fno-pic
// objects that throw on x86-64, C++ library symbols under symbols=strict).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sk.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "linker_test_support.hpp"
#include "sk_assert.hpp"

namespace {

using sk::test::is_nopic;
using sk::test::kernel_path;
using sk::test::kernel_variants;

// x86-64 -fno-pic objects reach libstdc++'s type_info with 32-bit absolute addresses: refused
// when they throw (the message says to rebuild with -fPIC or -fPIE).
bool throwing_objects_load(const std::string &variant) {
#if defined(__x86_64__)
  return !is_nopic(variant);
#else
  (void)variant;
  return true;
#endif
}

// The -pic variant of the same compiler and level: the one linked into a reference .so.
std::string pic_variant(const std::string &variant) { return variant.substr(0, variant.rfind('-')) + "-pic"; }

using Log = std::array<int32_t, 128>;  // [0]: count, then the events

std::vector<int32_t> events(const Log &log) {
  return std::vector<int32_t>(log.begin() + 1, log.begin() + 1 + log[0]);
}

// What cxx_lifecycle logs when dlopen'ed, its log attached and its local static used, then dlclose'd.
std::vector<int32_t> reference_events(const std::string &variant) {
  const std::string so = std::string(SK_TEST_KERNEL_DIR) + "/" + pic_variant(variant) + "/cxx_lifecycle.so";
  void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(h, nullptr) << dlerror();
  if (!h) return {};
  static Log log;  // the .so's destructors write it during dlclose
  log = {};
  auto attach = reinterpret_cast<void (*)(int32_t *)>(dlsym(h, "cxx_attach_log"));
  auto local = reinterpret_cast<void (*)(int32_t *)>(dlsym(h, "cxx_local_static"));
  EXPECT_TRUE(attach && local);
  int32_t out = 0;
  if (attach && local) attach(log.data()), local(&out);
  dlclose(h);
  return events(log);
}

class CxxRuntime : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_SK(sk_device_open("host:cores=2", &dev_)); }
  void TearDown() override { sk_device_close(dev_); }
  sk_status load(const char *name, sk_module **out) {
    return sk_module_load_file(dev_, kernel_path(GetParam(), name).c_str(), out);
  }
  void launch1(sk_kernel *k, uint32_t blocks, std::vector<void *> args) {
    ASSERT_SK(sk_launch_kernel(k, blocks, args.data(), nullptr));
    ASSERT_SK(sk_stream_synchronize(nullptr));
  }
  sk_device *dev_ = nullptr;
};

TEST_P(CxxRuntime, ConstructorsAndDestructorsRunInLinkOrder) {
  sk_module *mod = nullptr;
  ASSERT_SK(load("cxx_lifecycle", &mod));
  sk_kernel *attach = nullptr, *local = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_attach_log", &attach));
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_local_static", &local));
  Log log{};
  int32_t *p = log.data(), out = 0, *po = &out;
  launch1(attach, 1, {&p});
  launch1(local, 1, {&po});
  EXPECT_EQ(out, 41);
  launch1(local, 1, {&po});
  EXPECT_EQ(out, 42);  // the local static was constructed once
  const std::vector<int32_t> loaded = events(log);
  // Numbered constructors first, by priority; the unnumbered ones after them; the local static
  // at its first use. No destructor has run yet.
  ASSERT_GE(loaded.size(), 8u);
  EXPECT_EQ(std::vector<int32_t>(loaded.begin(), loaded.begin() + 3), (std::vector<int32_t>{101, 102, 65000}));
  EXPECT_EQ(loaded.back(), 4000);
  sk_module_unload(mod);
  const std::vector<int32_t> all = events(log);
  EXPECT_EQ(all, reference_events(GetParam())) << "libsk's order differs from gcc -shared + dlopen/dlclose";
  // The old .ctors list runs backwards, .dtors forwards; the last destructor is the numbered one.
  auto at = [&](int32_t e) { return std::find(all.begin(), all.end(), e) - all.begin(); };
  EXPECT_LT(at(3002), at(3001));
  EXPECT_LT(at(-3001), at(-3002));
  EXPECT_EQ(all.size(), 2 * loaded.size());
  EXPECT_EQ(all.back(), -102);
}

TEST_P(CxxRuntime, DestructorsWaitForTheLastSuperKernel) {
  sk_module *mod = nullptr;
  ASSERT_SK(load("cxx_lifecycle", &mod));
  sk_kernel *attach = nullptr, *local = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_attach_log", &attach));
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_local_static", &local));
  Log log{};
  int32_t *p = log.data(), out = 0, *po = &out;
  launch1(attach, 1, {&p});
  sk_scope *scope = nullptr;
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "lifecycle", nullptr, &scope));
  void *args[] = {&po};
  ASSERT_SK(sk_add_kernel(scope, local, 1, args, nullptr));
  ASSERT_SK(sk_finalize(scope, &sk));
  const int32_t loaded = log[0];
  sk_module_unload(mod);
  EXPECT_EQ(log[0], loaded) << "destructors ran while a super kernel still holds the code";
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  EXPECT_EQ(out, 41);
  sk_superkernel_destroy(sk);
  EXPECT_EQ(log[0], 2 * (loaded + 1));  // every constructor's destructor, the local static's too
  EXPECT_EQ(log[log[0]], -102);
}

// out[0..3] of cxx_try_catch(v) for v = -2..3 (see the kernel).
const int32_t kTryCatch[6][4] = {{-1899, 6, 6, 102}, {-899, 1, 5, 102}, {-7, 0, 6, 102},
                                 {2, 1, 5, 102},     {4, -6, 6, 102},   {6, 9, 5, 102}};

TEST_P(CxxRuntime, ExceptionsRttiAndLocalStaticsFusedEqualsUnfused) {
  sk_module *mod = nullptr;
  if (!throwing_objects_load(GetParam())) {
    EXPECT_EQ(load("cxx_features", &mod), SK_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(sk_last_error()).find("-fPIC or -fPIE"), std::string::npos) << sk_last_error();
    EXPECT_NE(std::string(sk_last_error()).find("cxx_features.o"), std::string::npos) << sk_last_error();
    return;
  }
  ASSERT_SK(load("cxx_features", &mod));
  sk_kernel *k = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_try_catch", &k));
  int32_t unfused[6][4] = {}, fused[6][4] = {};
  int32_t values[6];
  int32_t *outs[6];
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "cxx", nullptr, &scope));
  for (int i = 0; i < 6; ++i) {
    values[i] = i - 2;
    outs[i] = unfused[i];
    launch1(k, 1, {&outs[i], &values[i]});
    outs[i] = fused[i];
    void *args[] = {&outs[i], &values[i]};
    ASSERT_SK(sk_add_kernel(scope, k, 1, args, nullptr));
  }
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(unfused[i][j], kTryCatch[i][j]) << "v=" << i - 2 << " out[" << j << "]";
      EXPECT_EQ(fused[i][j], unfused[i][j]) << "v=" << i - 2 << " out[" << j << "]";
    }
  sk_superkernel_destroy(sk);
  sk_module_unload(mod);
}

TEST_P(CxxRuntime, EscapingExceptionFailsTheLaunchOnly) {
  if (!throwing_objects_load(GetParam())) GTEST_SKIP() << "x86-64 -fno-pic objects that throw are refused";
  sk_module *mod = nullptr;
  ASSERT_SK(load("cxx_features", &mod));
  sk_kernel *escape = nullptr, *k = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_escape", &escape));
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_try_catch", &k));
  int32_t out[4] = {}, v = 1, *po = out;
  void *args[] = {&po, &v};
  // Unfused, on 2 blocks (core 0 on this thread, core 1 on the executor's).
  ASSERT_SK(sk_launch_kernel(escape, 2, args, nullptr));
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_KERNEL);
  std::string msg = sk_last_error();
  EXPECT_NE(msg.find("kernel 'cxx_escape'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cxxk::Oops: negative input"), std::string::npos) << msg;
  v = 0;
  launch1(escape, 2, {&po, &v});
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 2);
  // Fused: the steps around it run; the launch fails naming it; the next launch is whole.
  int32_t before[4] = {}, after[4] = {}, three = 3, two = 2;
  int32_t *pb = before, *pa = after;
  void *a1[] = {&pb, &three}, *a3[] = {&pa, &two};
  v = 1;
  sk_scope *scope = nullptr;
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_scope_begin(dev_, "escaping", nullptr, &scope));
  ASSERT_SK(sk_add_kernel(scope, k, 1, a1, nullptr));
  ASSERT_SK(sk_add_kernel(scope, escape, 2, args, nullptr));
  ASSERT_SK(sk_add_kernel(scope, k, 1, a3, nullptr));
  ASSERT_SK(sk_finalize(scope, &sk));
  ASSERT_SK(sk_launch(sk, nullptr));
  EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_KERNEL);
  msg = sk_last_error();
  EXPECT_NE(msg.find("super kernel 'escaping'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel 'cxx_escape' (step 1"), std::string::npos) << msg;
  EXPECT_EQ(before[0], 6);
  int32_t zero = 0;
  ASSERT_SK(sk_superkernel_set_arg(sk, 1, 1, &zero));
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  EXPECT_EQ(after[0], 4);
  EXPECT_EQ(out[0], 2);
  sk_superkernel_destroy(sk);
  sk_module_unload(mod);
}

// Through the register-map call and libffi's frames too.
TEST_P(CxxRuntime, EscapingExceptionThroughEveryCallPath) {
  if (!throwing_objects_load(GetParam())) GTEST_SKIP() << "x86-64 -fno-pic objects that throw are refused";
  sk_module *mod = nullptr;
  ASSERT_SK(load("cxx_features", &mod));
  sk_kernel *mapped = nullptr, *ffi = nullptr;
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_escape_mapped", &mapped));
  ASSERT_SK(sk_module_get_kernel(mod, "cxx_escape_ffi", &ffi));
  int32_t out[2] = {}, *po = out;
  float f = 1.0f;
  double d[17];
  std::vector<void *> args{&po};
  for (double &x : d) x = 1.0, args.push_back(&x);
  for (int round = 0; round < 2; ++round) {
    ASSERT_SK(sk_launch_kernel(mapped, 2, std::vector<void *>{&po, &f}.data(), nullptr));
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_KERNEL);
    EXPECT_NE(std::string(sk_last_error()).find("kernel 'cxx_escape_mapped'"), std::string::npos) << sk_last_error();
    ASSERT_SK(sk_launch_kernel(ffi, 2, args.data(), nullptr));
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_ERR_KERNEL);
    EXPECT_NE(std::string(sk_last_error()).find("kernel 'cxx_escape_ffi'"), std::string::npos) << sk_last_error();
  }
  f = 0.0f;
  d[0] = 0.0;
  d[16] = 5.0;
  launch1(mapped, 2, {&po, &f});
  EXPECT_EQ(out[0], 2);
  launch1(ffi, 2, args);
  EXPECT_EQ(out[1], 10);
  sk_module_unload(mod);
}

TEST_P(CxxRuntime, ThrowingConstructorFailsTheLoad) {
  sk_module *mod = nullptr;
  const sk_status st = load("cxx_ctor_throws", &mod);
  const std::string msg = sk_last_error();
  EXPECT_NE(msg.find("cxx_ctor_throws.o"), std::string::npos) << msg;
  if (!throwing_objects_load(GetParam())) {
    EXPECT_EQ(st, SK_ERR_UNSUPPORTED) << msg;
    return;
  }
  EXPECT_EQ(st, SK_ERR_KERNEL) << msg;
  EXPECT_NE(msg.find("constructor '_GLOBAL__sub_I_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("std::runtime_error: cxx_ctor_throws: refused to construct"), std::string::npos) << msg;
}

TEST_P(CxxRuntime, PreinitArrayIsRefused) {
  sk_module *mod = nullptr;
  EXPECT_EQ(load("reloc_preinit", &mod), SK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(sk_last_error()).find("'.preinit_array'"), std::string::npos) << sk_last_error();
}

TEST_P(CxxRuntime, StrictPolicyAllowsTheAbiNotTheLibrary) {
  sk_device *strict = nullptr;
  ASSERT_SK(sk_device_open("host:symbols=strict", &strict));
  sk_module *mod = nullptr;
  // __cxa_atexit, the guards, the personality routine: the C++ ABI's runtime.
  EXPECT_EQ(sk_module_load_file(strict, kernel_path(GetParam(), "cxx_lifecycle").c_str(), &mod), SK_OK)
      << sk_last_error();
  sk_module_unload(mod);
  mod = nullptr;
  // std::runtime_error and operator delete (a virtual destructor's deleting variant calls it)
  // are the standard library's.
  EXPECT_EQ(sk_module_load_file(strict, kernel_path(GetParam(), "cxx_features").c_str(), &mod), SK_ERR_UNSUPPORTED);
  const std::string msg = sk_last_error();
  if (throwing_objects_load(GetParam())) {
    EXPECT_TRUE(msg.find("St13runtime_error") != std::string::npos || msg.find("'_ZdlPv") != std::string::npos)
        << msg;
    EXPECT_NE(msg.find("symbols=strict"), std::string::npos) << msg;
  }
  sk_device_close(strict);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, CxxRuntime, testing::ValuesIn(kernel_variants()), sk::test::variant_name);

TEST(CxxRuntimeCoverage, CoverageObjectsNameTheRuntime) {
  sk_device *dev = nullptr;
  ASSERT_SK(sk_device_open("host", &dev));
  for (const char *variant : {"gcc-O0-coverage", "clang-O0-coverage"}) {
    sk_module *mod = nullptr;
    EXPECT_EQ(sk_module_load_file(dev, kernel_path(variant, "cxx_lifecycle").c_str(), &mod), SK_ERR_UNSUPPORTED)
        << variant;
    const std::string msg = sk_last_error();
    EXPECT_NE(msg.find("--coverage"), std::string::npos) << msg;
    EXPECT_TRUE(msg.find("'__gcov_") != std::string::npos || msg.find("'llvm_gc") != std::string::npos) << msg;
  }
  sk_device_close(dev);
}

// Internal API: the throwing constructor's neighbour, constructed before it, is destroyed when
// the load fails; the hook is bound by the link's resolver.
std::vector<int32_t> g_ctor_events;
extern "C" void cxx_ctor_event_hook(int32_t e) { g_ctor_events.push_back(e); }

TEST(CxxRuntimeLink, FailedLoadDestroysWhatWasConstructed) {
  for (const std::string &v : kernel_variants()) {
    if (!throwing_objects_load(v)) continue;
    sk::test::Resolver r;
    r.names["cxx_ctor_event"] = reinterpret_cast<void *>(&cxx_ctor_event_hook);
    sk::test::Loaded l;
    g_ctor_events.clear();
    EXPECT_EQ(sk::test::load_kernel(v, "cxx_ctor_throws", r.options(), &l), SK_ERR_KERNEL) << v << ": " << l.message;
    EXPECT_EQ(l.linked, nullptr);
    EXPECT_EQ(g_ctor_events, (std::vector<int32_t>{1, -1, 1001})) << v;
  }
}

// A malformed unwind table fails the load (the unwinder would abort the process on it later).
TEST(CxxRuntimeLink, MalformedUnwindTableIsRefused) {
  const std::vector<uint8_t> good = sk::test::kernel_bytes("gcc-O2-pic", "cxx_features");
  sk::test::Loaded parsed;
  ASSERT_EQ(sk::test::load_bytes(good, "cxx_features.o", sk::test::Resolver().options(), &parsed), SK_OK)
      << parsed.message;
  const int eh = parsed.object.find_section(".eh_frame");
  ASSERT_GT(eh, 0);
  const size_t at = static_cast<size_t>(parsed.object.sections[eh].data - parsed.object.image.data());
  struct Damage {
    size_t offset;  // in the first record, a CIE
    uint8_t value;
    const char *says;
  };
  for (const Damage &d : {Damage{8, 7, "CIE version"}, Damage{0, 0xf0, "overruns the section"},
                          Damage{3, 0xff, "64-bit extended lengths"}}) {
    std::vector<uint8_t> bytes = good;
    if (d.offset == 3)
      std::memset(&bytes[at], 0xff, 4);
    else
      bytes[at + d.offset] = d.value;
    if (d.offset == 0) bytes[at + 3] = 0x7f;  // a length far past the section
    sk::test::Loaded l;
    EXPECT_EQ(sk::test::load_bytes(bytes, "damaged.o", sk::test::Resolver().options(), &l), SK_ERR_BAD_BINARY)
        << d.says;
    EXPECT_NE(l.message.find("damaged.o: section '.eh_frame', record at offset 0x0"), std::string::npos)
        << l.message;
    EXPECT_NE(l.message.find(d.says), std::string::npos) << l.message;
  }
}

// Two objects sharing a throwing template, from different compilers and levels, linked as one
// module: the COMDAT copy kept comes with its own object's unwind table (the other's FDE for
// its dropped copy is dropped too), so the exception is caught in both kernels.
TEST(CxxRuntimeLink, ComdatKeptAcrossObjectsUnwindsWithItsOwnTable) {
  sk_device *dev = nullptr;
  ASSERT_SK(sk_device_open("host", &dev));
  const char *variants[] = {"gcc-O2-pic", "clang-O0-pie", "gcc-O0-pie", "clang-O2-pic"};
  for (const char *va : variants)
    for (const char *vb : variants) {
      const std::string a = kernel_path(va, "cxx_comdat_a"), b = kernel_path(vb, "cxx_comdat_b");
      const char *paths[] = {a.c_str(), b.c_str()};
      sk_module *mod = nullptr;
      ASSERT_SK(sk_module_load_files(dev, paths, 2, &mod));
      for (const char *name : {"cxx_comdat_a", "cxx_comdat_b"}) {
        sk_kernel *k = nullptr;
        ASSERT_SK(sk_module_get_kernel(mod, name, &k));
        const int32_t add = name[11] == 'a' ? 1 : 2;
        for (int32_t v : {-3, 4}) {
          int32_t out = 0, *po = &out;
          void *args[] = {&po, &v};
          ASSERT_SK(sk_launch_kernel(k, 1, args, nullptr));
          ASSERT_SK(sk_stream_synchronize(nullptr));
          EXPECT_EQ(out, v < 0 ? -add : 2 * v + add) << va << " + " << vb << ": " << name << "(" << v << ")";
        }
      }
      sk_module_unload(mod);
    }
  sk_device_close(dev);
}

// Modules that come and go deregister their unwind tables: exceptions keep working in the ones
// that stay, and in new ones.
TEST(CxxRuntimeLink, UnwindTablesComeAndGo) {
  const std::string v = "gcc-O2-pic";
  sk::test::Resolver r;
  sk::test::Loaded keep;
  ASSERT_EQ(sk::test::load_kernel(v, "cxx_features", r.options(), &keep), SK_OK) << keep.message;
  auto try_catch = keep.fn<void (*)(int32_t *, int32_t)>("cxx_try_catch");
  for (int i = 0; i < 20; ++i) {
    sk::test::Loaded other;
    ASSERT_EQ(sk::test::load_kernel(i % 2 ? "clang-O0-pie" : v, "cxx_features", r.options(), &other), SK_OK)
        << other.message;
    int32_t out[4] = {};
    other.fn<void (*)(int32_t *, int32_t)>("cxx_try_catch")(out, -1);
    EXPECT_EQ(out[0], kTryCatch[1][0]);
  }
  int32_t out[4] = {};
  try_catch(out, 0);
  EXPECT_EQ(out[0], kTryCatch[2][0]);
  try_catch(out, -2);
  EXPECT_EQ(out[0], kTryCatch[0][0]);
}

// thread_local destructors run when a thread exits while the module is loaded; those still
// pending when it is unloaded are dropped, not run from unmapped code when the thread exits.
TEST(CxxThreadLocal, DestructorsAtThreadExitDroppedWithTheModule) {
  for (const std::string &variant : kernel_variants()) {
    sk::test::Loaded l;
    ASSERT_EQ(sk::test::load_kernel(variant, "cxx_thread_local", sk::test::Resolver().options(), &l), SK_OK)
        << variant << ": " << l.message;
    auto count = l.fn<void (*)(int *)>("cxx_thread_local_count");
    int sink = 0;
    std::thread([&] {
      for (int i = 0; i < 3; ++i) count(&sink);
    }).join();
    EXPECT_EQ(sink, 3) << variant << ": the thread's tally was not destroyed at its exit";
    std::mutex m;
    std::condition_variable cv;
    bool counted = false, unloaded = false;
    std::thread late([&] {
      count(&sink);
      std::unique_lock<std::mutex> lock(m);
      counted = true;
      cv.notify_all();
      cv.wait(lock, [&] { return unloaded; });
    });  // exits after the unload: its destructor must not run
    {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return counted; });
    }
    l.linked.reset();
    {
      std::lock_guard<std::mutex> lock(m);
      unloaded = true;
    }
    cv.notify_all();
    late.join();
    EXPECT_EQ(sink, 3) << variant;
  }
}

}  // namespace
