// Where the planner puts each step's blocks (common/step_placement.hpp): with stream fusion,
// steps that may run at the same time on disjoint units, widening the dispatch up to the device;
// pins as given; layouts that cannot widen keep their steps from unit 0.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "common/plan.hpp"

namespace sk {
namespace {

PlanInput kernel(const char *name, uint32_t block_dim, uint32_t stream = 0, std::vector<uint32_t> after = {},
                 KernelKind kind = KernelKind::Vector, uint32_t usage = 0) {
  PlanInput in;
  in.name = name;
  in.kind = kind;
  in.block_dim = block_dim;
  in.stream = stream;
  in.after = std::move(after);
  in.usage = usage;
  return in;
}

std::vector<uint32_t> firsts(const Plan &plan) {
  std::vector<uint32_t> f;
  for (const PlanStep &s : plan.steps) f.push_back(s.first_unit);
  return f;
}

ScopeOptions streams() {
  ScopeOptions o;
  o.stream_fusion = true;
  return o;
}

TEST(StepPlacement, ConcurrentStepsGetDisjointUnitsAndAJoinStartsAtZero) {
  // a, b, c on three streams, then d on stream 0 after events of b and c: d waits for all.
  Plan plan;
  ASSERT_EQ(
      build_plan("s", streams(),
                 {kernel("a", 1, 0), kernel("b", 1, 1), kernel("c", 1, 2), kernel("d", 1, 0, {1, 2})}, 8, &plan),
      SK_OK)
      << last_error();
  EXPECT_EQ(firsts(plan), (std::vector<uint32_t>{0, 1, 2, 0}));
  EXPECT_EQ(plan.steps[0].placement, StepPlacement::Default);
  EXPECT_EQ(plan.steps[1].placement, StepPlacement::Packed);
  EXPECT_EQ(plan.steps[3].placement, StepPlacement::Default);  // nothing may run beside it
  EXPECT_EQ(plan.cores, 3u);
  EXPECT_EQ(plan.segments[0].layout.vector, 3u);
  EXPECT_NE(plan.segments[0].layout_note.find("cores widened from 1 to 3"), std::string::npos);
}

TEST(StepPlacement, AStreamKeepsItsUnitsAndTheDeviceBoundsTheWidening) {
  // a0 b0 a1 b1: b keeps unit 1 beside stream 0's steps.
  Plan plan;
  ASSERT_EQ(build_plan("s", streams(),
                       {kernel("a0", 1, 0), kernel("b0", 1, 1), kernel("a1", 1, 0), kernel("b1", 1, 1)}, 8, &plan),
            SK_OK);
  EXPECT_EQ(firsts(plan), (std::vector<uint32_t>{0, 1, 0, 1}));
  EXPECT_EQ(plan.cores, 2u);
  // Three streams on a 2-core device: the third shares the cores of the fewest others.
  ASSERT_EQ(build_plan("s", streams(), {kernel("a", 1, 0), kernel("b", 1, 1), kernel("c", 1, 2)}, 2, &plan), SK_OK);
  EXPECT_EQ(firsts(plan), (std::vector<uint32_t>{0, 1, 0}));
  EXPECT_EQ(plan.cores, 2u);
  // A step as wide as the device leaves no room: the narrow one beside it starts at 0.
  ASSERT_EQ(build_plan("s", streams(), {kernel("wide", 4, 0), kernel("narrow", 1, 1)}, 4, &plan), SK_OK);
  EXPECT_EQ(firsts(plan), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(plan.cores, 4u);
}

TEST(StepPlacement, WithoutStreamFusionEveryStepStartsAtZero) {
  Plan plan;
  ASSERT_EQ(build_plan("s", ScopeOptions{}, {kernel("a", 1), kernel("b", 1), kernel("c", 2)}, 8, &plan), SK_OK);
  EXPECT_EQ(firsts(plan), (std::vector<uint32_t>{0, 0, 0}));
  EXPECT_EQ(plan.cores, 2u);
}

TEST(StepPlacement, PinsAreKeptAndOthersAvoidThem) {
  std::vector<PlanInput> ks = {kernel("p", 3, 0), kernel("q", 1, 1)};
  ks[0].first_core = 2;
  ks[0].core_count = 2;  // 3 blocks multiplexed on units 2 and 3
  Plan plan;
  ASSERT_EQ(build_plan("s", streams(), ks, 8, &plan), SK_OK) << last_error();
  EXPECT_EQ(plan.steps[0].placement, StepPlacement::Pinned);
  EXPECT_EQ(plan.steps[0].units, 2u);
  EXPECT_EQ(plan.steps[0].blocks_per_core, 2u);
  EXPECT_EQ(firsts(plan), (std::vector<uint32_t>{2, 0}));
  EXPECT_EQ(plan.cores, 4u);
}

TEST(StepPlacement, LayoutsThatCannotWidenKeepTheirSteps) {
  const uint32_t hard = kUsesCrossCoreSetFlagAll | kUsesCrossCoreWaitFlagAll;
  // A hard-sync kernel's dispatch keeps its count: the other stream's step shares its cores.
  Plan plan;
  ASSERT_EQ(
      build_plan("s", streams(), {kernel("h", 2, 0, {}, KernelKind::Vector, hard), kernel("v", 1, 1)}, 8, &plan),
      SK_OK)
      << last_error();
  EXPECT_EQ(plan.cores, 2u);
  EXPECT_EQ(firsts(plan), (std::vector<uint32_t>{0, 0}));
  // A mixed dispatch places nothing.
  ASSERT_EQ(build_plan("s", streams(), {kernel("m", 1, 0, {}, KernelKind::Mix11), kernel("v", 1, 1)}, 8, &plan),
            SK_OK);
  EXPECT_EQ(firsts(plan), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(plan.steps[1].placement, StepPlacement::Default);
  // Forced counts do not widen: a pin past them is refused naming the kernel and the fields.
  ScopeOptions o = streams();
  o.debug_aiv_num = 1;
  std::vector<PlanInput> ks = {kernel("a", 1, 0), kernel("pinned", 1, 1)};
  ks[1].first_core = 1;
  ks[1].core_count = 1;
  EXPECT_EQ(build_plan("s", o, ks, 8, &plan), SK_ERR_INCOMPATIBLE);
  EXPECT_NE(std::string(last_error()).find("kernel 1 'pinned' is pinned to first_core 1, core_count 1"),
            std::string::npos)
      << last_error();
}

// A long two-stream scope (a decode loop unrolled): every step beside the other stream's, each
// stream on its own core. Placement is linear in the steps (this took minutes when it was not).
TEST(StepPlacement, ALongTwoStreamScopeAlternatesItsCores) {
  std::vector<PlanInput> ks;
  for (uint32_t i = 0; i < 100000; ++i) ks.push_back(kernel("k", 1, i % 2));
  Plan plan;
  ASSERT_EQ(build_plan("s", streams(), std::move(ks), 8, &plan), SK_OK) << last_error();
  EXPECT_EQ(plan.cores, 2u);
  for (uint32_t i = 0; i < plan.steps.size(); ++i) ASSERT_EQ(plan.steps[i].first_unit, i % 2) << i;
}

}  // namespace
}  // namespace sk
