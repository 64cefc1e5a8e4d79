// Compiler helpers kernels call but no shared library exports: AArch64's outline atomics are
// bound to libsk's own copies (linked from libgcc.a); other machines have none.
#include <gtest/gtest.h>

#include <cstdint>

#include "host/linker/compiler_runtime.hpp"

namespace {

using sk::host::resolve_compiler_runtime;

TEST(CompilerRuntime, OutlineAtomicsOnAArch64Only) {
#if defined(__aarch64__)
  // __aarch64_<op><bytes>_<model>(value, address) returns the old value.
  auto ldadd =
      reinterpret_cast<uint32_t (*)(uint32_t, uint32_t *)>(resolve_compiler_runtime("__aarch64_ldadd4_acq_rel"));
  ASSERT_NE(ldadd, nullptr);
  uint32_t x = 5;
  EXPECT_EQ(ldadd(3, &x), 5u);
  EXPECT_EQ(x, 8u);
  auto cas = reinterpret_cast<uint64_t (*)(uint64_t, uint64_t, uint64_t *)>(
      resolve_compiler_runtime("__aarch64_cas8_sync"));
  ASSERT_NE(cas, nullptr);
  uint64_t y = 1;
  EXPECT_EQ(cas(1, 9, &y), 1u);
  EXPECT_EQ(y, 9u);
  for (const char *name : {"__aarch64_swp1_relax", "__aarch64_ldclr2_acq", "__aarch64_ldeor8_rel",
                           "__aarch64_ldset4_sync", "__aarch64_cas16_acq_rel"})
    EXPECT_NE(resolve_compiler_runtime(name), nullptr) << name;
#else
  EXPECT_EQ(resolve_compiler_runtime("__aarch64_ldadd4_acq_rel"), nullptr);
#endif
  EXPECT_EQ(resolve_compiler_runtime("__aarch64_ldadd3_relax"), nullptr);
  EXPECT_EQ(resolve_compiler_runtime("memcpy"), nullptr);
}

TEST(CompilerRuntime, CpuModelVariablesOnX86_64Only) {
  size_t size = 0;
#if defined(__x86_64__)
  // libgcc's layout: vendor, type, subtype, one feature word; libgcc's constructor set them.
  const auto *model = static_cast<const unsigned *>(sk::host::compiler_runtime_variable("__cpu_model", &size));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(size, 4 * sizeof(unsigned));
  __builtin_cpu_init();
  EXPECT_EQ(model[3] != 0, __builtin_cpu_supports("sse2") != 0);  // this build's own copy agrees
  EXPECT_NE(sk::host::compiler_runtime_variable("__cpu_features2", &size), nullptr);
  EXPECT_NE(resolve_compiler_runtime("__cpu_indicator_init"), nullptr);
#else
  EXPECT_EQ(sk::host::compiler_runtime_variable("__cpu_model", &size), nullptr);
#endif
  EXPECT_EQ(sk::host::compiler_runtime_variable("__cpu_indicator_init", &size), nullptr);  // a function
}

TEST(CompilerRuntime, LibcNonsharedFunctionsAreWrittenIntoTheModule) {
  const sk::host::ModuleForward *atexit_forward = sk::host::module_forward("atexit");
  ASSERT_NE(atexit_forward, nullptr);
  EXPECT_STREQ(atexit_forward->target, "__cxa_atexit");
  EXPECT_EQ(atexit_forward->dso_arg, 2u);  // __cxa_atexit(f, NULL, __dso_handle)
  const sk::host::ModuleForward *atfork = sk::host::module_forward("pthread_atfork");
  ASSERT_NE(atfork, nullptr);
  EXPECT_STREQ(atfork->target, "__register_atfork");
  EXPECT_EQ(atfork->dso_arg, 3u);
  EXPECT_EQ(sk::host::module_forward("exit"), nullptr);
  EXPECT_STREQ(sk::host::static_only_origin("at_quick_exit"), "glibc's libc_nonshared.a");
  EXPECT_NE(sk::host::static_only_origin("__aarch64_have_lse_atomics"), nullptr);  // a prefix
  EXPECT_EQ(sk::host::static_only_origin("printf"), nullptr);
}

}  // namespace
