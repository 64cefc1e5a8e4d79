// The planner's rules without running anything: core layouts (docs/semantics.md, "Core types
// and layouts"), core numbering, scope splitting by the hard-sync rule, and stream links.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/core_layout.hpp"
#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "common/plan.hpp"

namespace sk {
namespace {

CoreLayout layout_of(std::initializer_list<std::pair<KernelKind, uint32_t>> kernels) {
  LayoutDemand d;
  for (const auto &k : kernels) d.add(k.first, k.second);
  return d.nominal();
}

TEST(CoreLayout, RatioRulesOfTheVendorOptimiser) {
  using K = KernelKind;
  CoreLayout l = layout_of({{K::Vector, 4}, {K::Vector, 7}});
  EXPECT_STREQ(l.ratio_name(), "vector-only");
  EXPECT_EQ(l.vector, 7u);
  l = layout_of({{K::Cube, 3}});
  EXPECT_STREQ(l.ratio_name(), "cube-only");
  EXPECT_EQ(l.cube, 3u);
  // Only 1:1 kernels (and pure ones that fit): 1:1.
  l = layout_of({{K::Mix11, 4}, {K::Vector, 2}, {K::Cube, 3}});
  EXPECT_STREQ(l.ratio_name(), "1:1");
  EXPECT_EQ(l.groups, 4u);
  // Vector demand above cube demand: 1:2, groups = max(cube, ceil(vector / 2)).
  l = layout_of({{K::Mix11, 2}, {K::Vector, 7}});
  EXPECT_STREQ(l.ratio_name(), "1:2");
  EXPECT_EQ(l.groups, 4u);
  EXPECT_EQ(l.vector, 8u);
  l = layout_of({{K::Cube, 5}, {K::Vector, 3}});
  EXPECT_STREQ(l.ratio_name(), "1:1");
  EXPECT_EQ(l.groups, 5u);
  // A 1:2 kernel forces 1:2, even where 1:1 would cover the counts.
  l = layout_of({{K::Mix12, 1}, {K::Cube, 6}});
  EXPECT_STREQ(l.ratio_name(), "1:2");
  EXPECT_EQ(l.groups, 6u);
  EXPECT_EQ(l.units_for(K::Mix12), 6u);
  EXPECT_EQ(layout_of({{K::Mix11, 2}}).units_for(K::Mix12), 0u);  // a 1:2 kernel cannot join 1:1
}

TEST(CoreLayout, CoresOfAGroupAreNeighbours) {
  CoreLayout l = layout_of({{KernelKind::Mix12, 2}});
  ASSERT_EQ(l.cores(), 6u);
  const uint32_t want_type[] = {1, 0, 0, 1, 0, 0}, want_vector[] = {~0u, 0, 1, ~0u, 2, 3};
  for (uint32_t c = 0; c < 6; ++c) {
    CoreSlot s = core_slot(l, c);
    EXPECT_EQ(s.type, want_type[c]) << c;
    EXPECT_EQ(s.group, c / 3) << c;
    EXPECT_EQ(s.index[2], c / 3) << c;
    EXPECT_EQ(s.index[0], want_vector[c]) << c;
    EXPECT_EQ(s.index[1], s.type == 1 ? c / 3 : CoreSlot::kNoUnit) << c;
  }
}

TEST(CoreLayout, FitsTheDeviceAndTheDebugCounts) {
  ScopeOptions o;
  CoreLayout l;
  std::string note;
  ASSERT_EQ(fit_layout(layout_of({{KernelKind::Mix12, 4}}), 7, o, "s", &l, &note), SK_OK);
  EXPECT_EQ(l.groups, 2u);  // 7 cores hold two groups of 3
  EXPECT_NE(note.find("groups clipped from 4 to the device's 2"), std::string::npos);
  EXPECT_EQ(fit_layout(layout_of({{KernelKind::Mix11, 1}}), 1, o, "s", &l, &note), SK_ERR_INCOMPATIBLE);
  o.debug_aic_num = 1;
  o.debug_aiv_num = 2;
  ASSERT_EQ(fit_layout(layout_of({{KernelKind::Mix12, 2}}), 6, o, "s", &l, &note), SK_OK);
  EXPECT_EQ(l.groups, 1u);
  EXPECT_EQ(l.vector, 2u);
  o.debug_aiv_num = 1;  // 1:1 counts for a 1:2 super kernel
  EXPECT_EQ(fit_layout(layout_of({{KernelKind::Mix12, 2}}), 6, o, "s", &l, &note), SK_ERR_INCOMPATIBLE);
  EXPECT_NE(std::string(last_error()).find("debug-aic-num=1, debug-aiv-num=1"), std::string::npos);
}

PlanInput kernel(const char *name, KernelKind kind, uint32_t block_dim, uint32_t usage = 0, uint32_t stream = 0) {
  PlanInput in;
  in.name = name;
  in.kind = kind;
  in.block_dim = block_dim;
  in.usage = usage;
  in.stream = stream;
  return in;
}

TEST(Plan, HardSyncSplitsOnlyWhereCountsDiffer) {
  ScopeOptions o;
  Plan plan;
  const uint32_t hard = kUsesCrossCoreSetFlagAll | kUsesCrossCoreWaitFlagAll;
  const uint32_t release_early = kUsesSetNextTaskStart, wait_late = kUsesWaitPreTaskEnd;
  std::vector<PlanInput> ks = {
      kernel("a", KernelKind::Vector, 4, release_early), kernel("b", KernelKind::Vector, 4, hard | wait_late),
      kernel("c", KernelKind::Vector, 2, release_early), kernel("d", KernelKind::Vector, 2, hard | wait_late),
      kernel("e", KernelKind::Vector, 8)};
  ASSERT_EQ(build_plan("s", o, ks, 8, &plan), SK_OK) << last_error();
  // a,b,c share 4 cores (b's count); d syncs on 2 -> split; e needs 8 -> split after d.
  ASSERT_EQ(plan.segments.size(), 3u);
  EXPECT_EQ(plan.segments[0].first, 0u);
  EXPECT_EQ(plan.segments[0].end, 3u);
  EXPECT_EQ(plan.segments[1].end, 4u);
  EXPECT_EQ(plan.segments[2].layout.vector, 8u);
  EXPECT_NE(plan.segments[1].reason.find("kernel 3 'd' uses hard cross-core sync on 2"), std::string::npos);
  EXPECT_NE(plan.segments[2].reason.find("kernel 4 'e' needs 8 vector cores"), std::string::npos);
  EXPECT_EQ(plan.steps[2].cores, 2u);
  EXPECT_EQ(plan.steps[3].segment, 1u);
  // Task overlap inside a dispatch, never across a split: a -> b overlap, c -> d do not.
  EXPECT_TRUE(plan.steps[0].arrive_in_kernel);
  EXPECT_TRUE(plan.steps[1].wait_in_kernel);
  EXPECT_FALSE(plan.steps[2].arrive_in_kernel);
  EXPECT_FALSE(plan.steps[3].wait_in_kernel);
  o.strict_scope_abort = true;
  EXPECT_EQ(build_plan("s", o, ks, 8, &plan), SK_ERR_INCOMPATIBLE);
}

// Each device-API function that synchronises cores (kUsesSync) makes a kernel refuse more
// blocks than the device's cores, with one sentence; the others multiplex. (Group flags pair a
// group's cores: only a mixed kernel may use them.)
TEST(Plan, OnlyKernelsThatSynchroniseRefuseMultiplexing) {
  for (const char *name : device_api_names(UINT32_MAX)) {
    const uint32_t bit = device_api_bit(name);
    const KernelKind kind = bit & kUsesGroupFlags ? KernelKind::Mix11 : KernelKind::Vector;
    Plan plan;
    const sk_status st = build_plan("s", ScopeOptions{}, {kernel("k", kind, 8, bit)}, 4, &plan);
    if (!(bit & kUsesSync)) {
      EXPECT_EQ(st, SK_OK) << name << ": " << last_error();
      continue;
    }
    ASSERT_EQ(st, SK_ERR_INCOMPATIBLE) << name;
    const std::string error = last_error();
    EXPECT_EQ(error.rfind("scope 's': kernel 0 'k' synchronises its cores (", 0), 0u) << error;
    EXPECT_NE(error.find(") on block_dim 8, more than the "), std::string::npos) << error;
    EXPECT_NE(error.find("the super kernel has on this device (blocks of a kernel that synchronises cannot be "
                         "multiplexed)"),
              std::string::npos)
        << error;
  }
}

TEST(Plan, StreamsLinkWithinAStreamAndAcrossEventsAndSegments) {
  ScopeOptions o;
  o.stream_fusion = true;
  const uint32_t hard = kUsesCrossCoreSetFlagAll | kUsesCrossCoreWaitFlagAll;
  std::vector<PlanInput> ks = {
      kernel("a0", KernelKind::Vector, 2, 0, 0),   kernel("b0", KernelKind::Vector, 2, 0, 1),
      kernel("a1", KernelKind::Vector, 2, 0, 0),   kernel("b1", KernelKind::Vector, 2, 0, 1),
      kernel("h", KernelKind::Vector, 1, hard, 1), kernel("a2", KernelKind::Vector, 1, 0, 0)};
  ks[3].after = {0};  // b1 waits for an event recorded after a0
  Plan plan;
  ASSERT_EQ(build_plan("s", o, ks, 2, &plan), SK_OK) << last_error();
  EXPECT_TRUE(plan.streams);
  EXPECT_EQ(plan.steps[0].pred, -1);
  EXPECT_EQ(plan.steps[1].pred, -1);
  EXPECT_EQ(plan.steps[2].pred, 0);
  EXPECT_EQ(plan.steps[3].pred, 1);
  EXPECT_EQ(plan.steps[3].after, std::vector<uint32_t>{0});
  // h (hard sync on 1 core) starts segment 1: it waits for the last steps of both streams.
  ASSERT_EQ(plan.segments.size(), 2u);
  EXPECT_EQ(plan.steps[4].segment, 1u);
  EXPECT_EQ(plan.steps[4].after, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(plan.steps[5].after, (std::vector<uint32_t>{2, 3}));  // first of stream 0 in segment 1
  // Without the option every step follows the one before it.
  o.stream_fusion = false;
  for (auto &k : ks) k.stream = 0;
  ASSERT_EQ(build_plan("s", o, ks, 2, &plan), SK_OK);
  EXPECT_FALSE(plan.streams);
  for (uint32_t i = 0; i < plan.steps.size(); ++i) EXPECT_EQ(plan.steps[i].pred, static_cast<int32_t>(i) - 1);
}

}  // namespace
}  // namespace sk
