// Compiler helpers kernels call but no shared library exports: AArch64's outline atomics are
// bound to libsk's own copies (linked from libgcc.a); other machines have none.
#include <gtest/gtest.h>

#include <cstdint>

#include "host/compiler_runtime.hpp"

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

}  // namespace
