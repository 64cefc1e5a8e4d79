// Per-function device-API use, read from the binary: each kernel sees its own calls (direct, via
// a helper the assembler resolved without a relocation, via a tail jump, a jump table or a
// function pointer), never those of another kernel in the same section, and says how it gets
// there.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "common/device_api_usage.hpp"
#include "elf/function_references.hpp"
#include "linker_test_support.hpp"

namespace {

using sk::ReachHow;
using sk::elf::FunctionReach;

// The build's variants and the other machine's (tests/kernels/CMakeLists.txt, "foreign").
std::vector<std::string> all_variants() {
  std::vector<std::string> out = sk::test::kernel_variants();
  std::stringstream ss(SK_TEST_FOREIGN_VARIANTS);
  for (std::string v; std::getline(ss, v, ',');)
    if (!v.empty()) out.push_back(v);
  return out;
}

sk::elf::Object parse(const std::string &variant, const char *name) {
  const std::string path = sk::test::kernel_path(variant, name);
  const std::vector<uint8_t> bytes = sk::test::read_bytes(path);
  sk::elf::Object obj;
  EXPECT_FALSE(bytes.empty()) << path;
  EXPECT_EQ(sk::elf::parse_object(bytes.data(), bytes.size(), path, &obj), SK_OK) << sk::last_error();
  return obj;
}

std::map<std::string, FunctionReach> reach(const sk::elf::Object &obj) {
  return sk::elf::reach_by_function(obj, [](std::string_view n) { return sk::device_api_bit(n) != 0; });
}

uint32_t usage(const std::map<std::string, FunctionReach> &r, const char *fn) {
  auto it = r.find(fn);
  EXPECT_NE(it, r.end()) << fn;
  return it == r.end() ? 0 : sk::device_api_usage(it->second.undefined);
}

const std::vector<sk::ReachStep> &sync_path(const std::map<std::string, FunctionReach> &r, const char *fn) {
  static const std::vector<sk::ReachStep> none;
  auto it = r.find(fn);
  if (it == r.end()) return none;
  auto p = it->second.paths.find("sk_sync_all");
  return p == it->second.paths.end() ? none : p->second;
}

bool direct(ReachHow h) { return h == ReachHow::Call || h == ReachHow::Jump; }

// This build decodes the machine's code: AArch64 always, x86-64 where Zydis is (x86-64 builds).
bool decodes(const sk::elf::Object &obj) {
#if defined(__x86_64__)
  return true;
#else
  return obj.machine == EM_AARCH64;
#endif
}

class FunctionReferences : public ::testing::TestWithParam<std::string> {};

TEST_P(FunctionReferences, EachKernelSeesOnlyWhatItCanReach) {
  const sk::elf::Object obj = parse(GetParam(), "usage_paths");
  auto refs = reach(obj);
  EXPECT_EQ(usage(refs, "uses_nothing"), 0u);
  EXPECT_EQ(usage(refs, "uses_via_static_helper"), uint32_t{sk::kUsesSyncAll});
  EXPECT_EQ(usage(refs, "uses_via_pointer_table"), uint32_t{sk::kUsesSetNextTaskStart | sk::kUsesWaitPreTaskEnd});
  EXPECT_EQ(usage(refs, "uses_block_idx"), uint32_t{sk::kUsesBlockIdx});
}

INSTANTIATE_TEST_SUITE_P(AllVariants, FunctionReferences, ::testing::ValuesIn(sk::test::kernel_variants()),
                         sk::test::variant_name);

class ReachPaths : public ::testing::TestWithParam<std::string> {};

// gcc and clang at -O2 compile the tail calls into jumps the assembler resolves with no
// relocation (to a global helper too), the switch into a jump table, the hook's call into an
// indirect jump: each kernel whose helper syncs is seen to sync, and says through what.
TEST_P(ReachPaths, HelpersReachedByJumpsTablesAndPointersSync) {
  const sk::elf::Object obj = parse(GetParam(), "reach_paths");
  auto r = reach(obj);
  for (const char *k :
       {"reach_tail_global", "reach_tail_static", "reach_switch_sync", "reach_hook_call", "reach_table_call"}) {
    EXPECT_NE(usage(r, k) & sk::kUsesSyncAll, 0u) << k;
    const auto &path = sync_path(r, k);
    ASSERT_GE(path.size(), 2u) << k;
    EXPECT_EQ(path.front().from, k);
    EXPECT_EQ(path.back().to, "sk_sync_all");
    EXPECT_EQ(path.back().how, ReachHow::Call) << k;
  }
  if (!decodes(obj)) return;  // the rest needs the code decoded
  const auto &tail = sync_path(r, "reach_tail_global");
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0].to, "reach_sync_sum");
  EXPECT_TRUE(direct(tail[0].how)) << sk::describe(tail);
  const auto &tail_static = sync_path(r, "reach_tail_static");
  ASSERT_EQ(tail_static.size(), 2u);
  EXPECT_EQ(tail_static[0].to, "sync_sum_static");
  EXPECT_TRUE(direct(tail_static[0].how)) << sk::describe(tail_static);
  // Through the jump table's case, which jumps on: no step is a guess.
  const auto &sw = sync_path(r, "reach_switch_sync");
  EXPECT_EQ(sw[0].to, "reach_sync_sum");
  EXPECT_FALSE(sk::conservative(sw)) << sk::describe(sw);
  // Through the hook: only a guess, at the call or jump through it.
  const auto &hook = sync_path(r, "reach_hook_call");
  ASSERT_EQ(hook.size(), 2u) << sk::describe(hook);
  EXPECT_TRUE(hook[0].how == ReachHow::IndirectCall || hook[0].how == ReachHow::IndirectJump) << sk::describe(hook);
  EXPECT_TRUE(hook[0].to == "reach_sync_sum" || hook[0].to == "sync_sum_static") << hook[0].to;
  EXPECT_GE(hook[0].at, 0);
  EXPECT_TRUE(sk::conservative(hook));
  EXPECT_NE(sk::describe(hook).find("through a pointer"), std::string::npos) << sk::describe(hook);
  // Its jump table leads only into itself, and on to helpers that do not sync.
  EXPECT_EQ(usage(r, "reach_switch_plain"), uint32_t{sk::kUsesBlockIdx});
  EXPECT_EQ(usage(r, "reach_own_add"), uint32_t{sk::kUsesBlockIdx});
  EXPECT_EQ(usage(r, "reach_switch_loop"), uint32_t{sk::kUsesBlockIdx | sk::kUsesBlockNum});
}

// A call through a pointer reaches the functions whose address is taken, and no other.
TEST_P(ReachPaths, PointerCallsReachOnlyAddressTakenFunctions) {
  const sk::elf::Object obj = parse(GetParam(), "reach_pointer_plain");
  auto r = reach(obj);
  EXPECT_EQ(usage(r, "reach_plain_sync") & sk::kUsesSyncAll, uint32_t{sk::kUsesSyncAll});
  if (!decodes(obj)) return;
  EXPECT_EQ(usage(r, "reach_plain_pointer_call"), uint32_t{sk::kUsesBlockIdx});
  // The kernel calls sk_block_idx only through the hook's helpers: a guess, said so.
  auto it = r.at("reach_plain_pointer_call").paths.find("sk_block_idx");
  ASSERT_NE(it, r.at("reach_plain_pointer_call").paths.end());
  EXPECT_TRUE(sk::conservative(it->second)) << sk::describe(it->second);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, ReachPaths, ::testing::ValuesIn(all_variants()), sk::test::variant_name);

// Code of a machine no decoder reads is taken to reach every function of its section, and
// whatever a pointer can: never less than the decoded graph finds.
TEST(FunctionReferencesUndecoded, OverApproximatesTheDecodedGraph) {
  sk::elf::Object obj = parse("gcc-O2-pie", "reach_paths");
  const auto decoded = reach(obj);
  obj.machine = EM_RISCV;
  const auto undecoded = reach(obj);
  ASSERT_EQ(decoded.size(), undecoded.size());
  for (const auto &[fn, d] : decoded) {
    const auto &u = undecoded.at(fn).undefined;
    for (const std::string &name : d.undefined)
      EXPECT_TRUE(std::count(u.begin(), u.end(), name)) << fn << " lost " << name;
  }
  EXPECT_NE(usage(undecoded, "reach_switch_plain") & sk::kUsesSyncAll, 0u);
  EXPECT_TRUE(sk::conservative(sync_path(undecoded, "reach_switch_plain")));
}

// Addends at the ends of their range (a corrupted or hostile object), against section symbols
// and labels, where the reader adds the PC-relative adjustments to them: the sums wrap as
// addresses do (UBSan reported a signed overflow here), and every function is still read.
TEST(FunctionReferencesHostile, ExtremeAddendsWrapAsAddresses) {
  const sk::elf::Object good = parse("gcc-O2-pie", "reach_paths");
  const auto expected = reach(good);
  for (int64_t addend : {INT64_MAX, INT64_MAX - 3, INT64_MIN, INT64_MIN + 2, int64_t{-1}}) {
    sk::elf::Object obj = parse("gcc-O2-pie", "reach_paths");
    size_t changed = 0;
    for (sk::elf::RelocationSection &rs : obj.relocation_sections)
      for (sk::elf::Relocation &r : rs.relocations)
        if (r.symbol < obj.symbols.size() && obj.symbols[r.symbol].type == STT_SECTION) {
          r.addend = addend;
          ++changed;
        }
    ASSERT_GT(changed, 0u) << "no relocation against a section symbol to corrupt";
    for (uint16_t machine : {obj.machine, uint16_t{EM_RISCV}}) {
      obj.machine = machine;
      const auto r = reach(obj);
      ASSERT_EQ(r.size(), expected.size()) << addend;
      for (const auto &[fn, _] : expected) EXPECT_TRUE(r.count(fn)) << fn << " lost with addend " << addend;
    }
  }
}

}  // namespace
