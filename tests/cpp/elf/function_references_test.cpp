// Per-function device-API use, read from the binary: each kernel sees its own calls (direct, via
// a static helper the assembler resolved without a relocation, via a function-pointer table),
// never those of another kernel in the same section.
#include <gtest/gtest.h>

#include "common/device_api_usage.hpp"
#include "elf/function_references.hpp"
#include "linker_test_support.hpp"

namespace {

class FunctionReferences : public ::testing::TestWithParam<std::string> {};

TEST_P(FunctionReferences, EachKernelSeesOnlyWhatItCanReach) {
  const std::string path = sk::test::kernel_path(GetParam(), "usage_paths");
  const std::vector<uint8_t> bytes = sk::test::read_bytes(path);
  ASSERT_FALSE(bytes.empty()) << path;
  sk::elf::Object obj;
  ASSERT_EQ(sk::elf::parse_object(bytes.data(), bytes.size(), path, &obj), SK_OK);
  auto refs = sk::elf::undefined_references_by_function(obj);
  auto usage = [&](const char *fn) { return sk::device_api_usage(refs.at(fn)); };
  EXPECT_EQ(usage("uses_nothing"), 0u);
  EXPECT_EQ(usage("uses_via_static_helper"), uint32_t{sk::kUsesSyncAll});
  EXPECT_EQ(usage("uses_via_pointer_table"), uint32_t{sk::kUsesSetNextTaskStart | sk::kUsesWaitPreTaskEnd});
  EXPECT_EQ(usage("uses_block_idx"), uint32_t{sk::kUsesBlockIdx});
}

INSTANTIATE_TEST_SUITE_P(AllVariants, FunctionReferences, ::testing::ValuesIn(sk::test::kernel_variants()),
                         sk::test::variant_name);

}  // namespace
