// CUDA super kernels built without a GPU: the generated PTX (accepted by ptxas), the link
// through nvJitLink for sm_90, the linked cubin read back with libelf, the link cache, and
// the error paths (threads per block, missing symbols, architecture) and the call graph of the
// kernels' cubins (shared memory: test_cuda_shared.cpp).
#include <gtest/gtest.h>
#include <sk.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "common/plan.hpp"
#include "common/scope_options.hpp"
#include "cuda/cuda_kernel.hpp"
#include "cuda/entry_ptx.hpp"
#include "cuda/superkernel_build.hpp"
#include "cuda_link_support.hpp"
#include "cuda_test_support.hpp"
#include "elf/cubin.hpp"

using namespace sk::cuda;

namespace {

[[maybe_unused]] const bool g_private_cache = *sk::cuda_test::private_cache_home() != 0;

using sk::cuda_test::contains;
using sk::cuda_test::count;

using sk::cuda_test::disassemble;
using sk::cuda_test::kernel;
using sk::cuda_test::kNoNvdisasm;
using sk::cuda_test::load;
using sk::cuda_test::nvdisasm_path;
using sk::cuda_test::ptxas;
using sk::cuda_test::sass_function;
using sk::cuda_test::Scope;

// The body of PTX function `name` (from its `.func` line to the closing brace at column 0).
std::string ptx_function(const std::string &ptx, const std::string &name) {
  size_t at = ptx.find(".func " + name + "(");
  if (at == std::string::npos) at = ptx.find(") " + name + "(");
  if (at == std::string::npos) return {};
  return ptx.substr(at, ptx.find("\n}\n", at) - at);
}

}  // namespace

TEST(CudaEntryPtx, PtxasAcceptsTheGeneratedEntry) {
  auto chain = load("chain.cubin");
  Scope s;
  s.add(kernel(chain, "chain_step"), 4);
  s.add(kernel(chain, "chain_axpy"), 16);
  s.add(kernel(chain, "mark_blocks"), 2);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK) << sk::last_error();
  ASSERT_EQ(spec.steps.size(), 3u);
  EXPECT_EQ(spec.steps[1].cores, 8u);  // 16 blocks multiplexed on 8 cores
  EXPECT_EQ(spec.steps[1].deps, std::vector<uint32_t>{0});
  EXPECT_TRUE(spec.steps[0].deps.empty());
  const std::string ptx = generate_entry_ptx(spec);
  EXPECT_TRUE(contains(ptx, ".extern .func chain_step(.param .b64 p0, .param .b32 p1, .param .b32 p2);")) << ptx;
  EXPECT_TRUE(contains(ptx, ".extern .func mark_blocks(.param .b64 p0, .param .b32 p1, .param .b64 p2);"));
  EXPECT_TRUE(contains(ptx, ".reqntid 128, 1, 1"));
  EXPECT_TRUE(contains(ptx, "fence.acq_rel.gpu"));
  EXPECT_TRUE(contains(ptx, "red.release.gpu.global.add.u64"));
  // Arguments in the parameter space, from the step's first slot (%t5).
  EXPECT_TRUE(contains(ptx, "mov.u64 %t6, sk_args;")) << ptx;
  EXPECT_TRUE(contains(ptx, "ld.param.u64 %x0, [%t5+0]")) << ptx;
  std::string log;
  EXPECT_EQ(ptxas(ptx, "sm_90", &log), 0) << log;
  // Arguments in a device buffer.
  BuildRequest r = s.request();
  r.force_buffer = true;
  ASSERT_EQ(make_entry_spec(r, 128, &spec), SK_OK);
  const std::string buffered = generate_entry_ptx(spec);
  EXPECT_TRUE(contains(buffered, "ld.param.u64 %t6, [sk_args];\n  add.u64 %t5, %t5, %t6;")) << buffered;
  EXPECT_TRUE(contains(buffered, "ld.global.nc.u64 %x0, [%t5+0]")) << buffered;
  EXPECT_EQ(ptxas(buffered, "sm_90", &log), 0) << log;
  // And for another architecture (the PTX is arch-neutral but for .target).
  spec.arch = "sm_80";
  EXPECT_EQ(ptxas(generate_entry_ptx(spec), "sm_80", &log), 0) << log;
}

// Steps of three streams on blocks 0, 1 and 2: each block runs a step's blocks from the step's
// first unit, and a pinned step narrower than its block_dim strides by its own cores.
TEST(CudaEntryPtx, PlacedStepsStartAtTheirFirstBlock) {
  auto chain = load("chain.cubin");
  Scope s;
  s.options = "stream-fusion=1";
  for (uint32_t k = 0; k < 3; ++k) s.add(kernel(chain, "mark_blocks"), 1, k);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  EXPECT_EQ(s.plan.cores, 3u);
  EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK) << sk::last_error();
  ASSERT_EQ(spec.steps.size(), 3u);
  for (uint32_t k = 0; k < 3; ++k) {
    EXPECT_EQ(spec.steps[k].first, k);
    EXPECT_EQ(spec.steps[k].cores, 1u);
  }
  // The step table holds the placement; the loop reads it per step.
  const std::vector<uint32_t> table = step_table(spec);
  for (uint32_t k = 0; k < 3; ++k) {
    const uint32_t *r = &table[kTableHeaderWords + kStepWords * k];
    EXPECT_EQ(r[kStepFirst], k);
    EXPECT_EQ(r[kStepCores], 1u);
    EXPECT_EQ(r[kStepBlockDim], 1u);
    EXPECT_EQ(r[kStepKernel], 0u);  // one distinct sub-kernel, one call site
  }
  const std::string ptx = generate_entry_ptx(spec);
  // Thread 0 reads the record's (kernel, block_dim, cores, first) as one vector.
  static_assert(kStepKernel == 0 && kStepCores == 2 && kStepFirst == 3);
  EXPECT_TRUE(contains(ptx, "ld.global.nc.v4.u32 {%s3, %s4, %s5, %s6}, [%t2+0];")) << ptx;
  EXPECT_TRUE(contains(ptx, "@!%q4 sub.u32 %r5, %r3, %s6;")) << ptx;  // from the first block
  // After the call, the slot's copy of the record's first 16 bytes, as one vector: the cores.
  EXPECT_TRUE(contains(ptx, "ld.shared.v4.u32 {%s3, %s4, %s5, %s6}, [%sk_slot+")) << ptx;
  EXPECT_TRUE(contains(ptx, "add.u32 %r5, %r5, %s5;")) << ptx;  // by the step's cores
  std::string log;
  EXPECT_EQ(ptxas(ptx, "sm_90", &log), 0) << log;
}

// A flag id past SK_CROSS_CORE_FLAGS-1 is reported, not masked onto another flag's counter.
TEST(CudaEntryPtx, FlagIdsOutOfRangeAreReportedNotMasked) {
  auto chain = load("chain.cubin");
  Scope s;
  s.add(kernel(chain, "chain_step"), 4);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK) << sk::last_error();
  const std::string ptx = generate_entry_ptx(spec);
  EXPECT_FALSE(contains(ptx, ", 15;")) << ptx;  // no `and.b32 %r, %r, 15`
  // Each of the four flag calls checks its id against the count and reports past it.
  size_t checks = 0, calls = 0;
  for (size_t at = ptx.find("setp.lt.u32 %p2, %r2, 16;"); at != std::string::npos;
       at = ptx.find("setp.lt.u32 %p2, %r2, 16;", at + 1))
    ++checks;
  for (size_t at = ptx.find("call __sk_bad_flag"); at != std::string::npos;
       at = ptx.find("call __sk_bad_flag", at + 1))
    ++calls;
  EXPECT_EQ(checks, 4u) << ptx;
  EXPECT_EQ(calls, 4u) << ptx;
  std::string log;
  EXPECT_EQ(ptxas(ptx, "sm_90", &log), 0) << log;
}

TEST(CudaEntryPtx, StreamFusionWaitsForStreamPredecessorsAndEvents) {
  auto chain = load("chain.cubin");
  auto k = kernel(chain, "chain_step");
  Scope s;
  s.options = "stream-fusion=1";
  s.add(k, 4, 0);       // 0: stream 0
  s.add(k, 4, 1);       // 1: stream 1, independent of 0
  s.add(k, 4, 0);       // 2: stream 0, after 0
  s.add(k, 4, 1, {2});  // 3: stream 1, after 1 and (event) after 2
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  ASSERT_TRUE(s.plan.streams);
  EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK) << sk::last_error();
  EXPECT_TRUE(spec.steps[0].deps.empty());
  EXPECT_TRUE(spec.steps[1].deps.empty());
  EXPECT_EQ(spec.steps[2].deps, std::vector<uint32_t>{0});
  std::vector<uint32_t> d3 = spec.steps[3].deps;
  std::sort(d3.begin(), d3.end());
  EXPECT_EQ(d3, (std::vector<uint32_t>{1, 2}));
  // Each step's record indexes its (step, cores) pairs in the table's dependency list.
  const std::vector<uint32_t> table = step_table(spec);
  std::vector<std::vector<uint32_t>> pairs(4);
  for (uint32_t i = 0; i < 4; ++i) {
    const uint32_t *r = &table[kTableHeaderWords + kStepWords * i];
    ASSERT_LE(r[kStepDepBegin], r[kStepDepEnd]);
    ASSERT_LE(r[kStepDepEnd], table.size());
    ASSERT_GE(r[kStepDepBegin], kTableHeaderWords + kStepWords * 4);  // past the records
    pairs[i].assign(table.begin() + r[kStepDepBegin], table.begin() + r[kStepDepEnd]);
    // The record's copy of the first pair, which the step loop polls before reading the list.
    const std::vector<uint32_t> first = pairs[i].empty()
                                            ? std::vector<uint32_t>{0, 0}
                                            : std::vector<uint32_t>(pairs[i].begin(), pairs[i].begin() + 2);
    EXPECT_EQ((std::vector<uint32_t>{r[kStepDep0Step], r[kStepDep0Cores]}), first) << "step " << i;
  }
  EXPECT_TRUE(pairs[0].empty());
  EXPECT_TRUE(pairs[1].empty());
  EXPECT_EQ(pairs[2], (std::vector<uint32_t>{0, spec.steps[0].cores}));
  std::vector<uint32_t> p3 = pairs[3];
  ASSERT_EQ(p3.size(), 4u);
  if (p3[0] > p3[2]) std::swap_ranges(p3.begin(), p3.begin() + 2, p3.begin() + 2);
  EXPECT_EQ(p3, (std::vector<uint32_t>{1, spec.steps[1].cores, 2, spec.steps[2].cores}));
  const std::string ptx = generate_entry_ptx(spec);
  std::string log;
  EXPECT_EQ(ptxas(ptx, "sm_90", &log), 0) << log;
}

TEST(CudaEntryPtx, OverlapAndCacheOptionsShapeTheEntry) {
  auto o = load("overlap.cubin");
  Scope s;
  s.options = "dcci-before-kernel-start=overlap_consume";
  s.add(kernel(o, "overlap_produce"), 4);
  s.add(kernel(o, "overlap_consume"), 4);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK);
  EXPECT_TRUE(spec.steps[0].arrive_in_kernel);
  EXPECT_TRUE(spec.steps[1].wait_in_kernel);
  EXPECT_TRUE(spec.steps[1].dcci_before);
  EXPECT_FALSE(spec.steps[1].gm_flush);
  EXPECT_TRUE(spec.steps[0].gm_flush);
  // The table's flags say the same: the fence before step 1 only, the in-kernel overlap calls.
  const std::vector<uint32_t> table = step_table(spec);
  const uint32_t f0 = table[kTableHeaderWords + kStepFlags], f1 = table[kTableHeaderWords + kStepWords + kStepFlags];
  EXPECT_EQ(f0 & (kStepFenceBefore | kStepFenceAfter), 0u);
  EXPECT_EQ(f1 & (kStepFenceBefore | kStepFenceAfter), kStepFenceBefore);
  EXPECT_EQ(f1 & kStepWaitNow, 0u);  // it waits in the kernel, at sk_wait_pre_task_end
  // Thread 0 fills each instance's state from the step's flags: the record's flags under one
  // mask are a fresh instance's state, among them the permission to arrive in the kernel as
  // sk_set_next_task_start reads it (step 0's, not step 1's); a multiplexed step's next block on
  // a core (%q4) counts as waited where the step waited at its start, and is marked anew whether
  // it is the core's last.
  const std::string ptx = generate_entry_ptx(spec);
  const size_t fill_at = ptx.find("$step_fill:");
  ASSERT_NE(fill_at, std::string::npos) << ptx;
  const std::string fill = ptx.substr(fill_at, ptx.find("$step_state:", fill_at) - fill_at);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(fill, m, std::regex("and\\.b32 %s12, %s7, ([0-9]+);"))) << fill;
  const unsigned long fresh = std::stoul(m[1]);
  ASSERT_TRUE(std::regex_search(
      fill, m, std::regex("setp\\.ge\\.u32 %q1, %s11, %s4;\\s+@%q1 or\\.b32 %s12, %s12, ([0-9]+);")))
      << fill;
  const unsigned long last = std::stoul(m[1]);
  EXPECT_EQ(fresh & last, 0u) << "the last-block mark is thread 0's";
  const std::string arrive = ptx_function(ptx, "sk_set_next_task_start");
  ASSERT_TRUE(std::regex_search(arrive, m, std::regex("setp\\.ne\\.u32 %p2, %r3, ([0-9]+);"))) << arrive;
  const unsigned long may_arrive = std::stoul(m[1]) & ~last;
  ASSERT_NE(may_arrive, 0u) << arrive;
  EXPECT_EQ(f0 & fresh & may_arrive, may_arrive) << f0;
  EXPECT_EQ(f1 & fresh & may_arrive, 0u) << f1;
  EXPECT_TRUE(contains(fill, "setp.ne.and.u32 %q1, %s11, 0, %q4;\n  @%q1 or.b32 %s12, %s12, ")) << fill;
  std::string log;
  EXPECT_EQ(ptxas(ptx, "sm_90", &log), 0) << log;
}

TEST(CudaLink, LinkedCubinHasTheEntryAndEveryCallee) {
  clear_link_cache();
  auto chain = load("chain.cubin");
  auto sync = load("sync.cubin");
  Scope s;
  s.add(kernel(chain, "chain_step"), 8);
  s.add(kernel(sync, "sync_sum"), 3);
  s.add(kernel(chain, "chain_axpy"), 8);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_FALSE(img.cached);
  EXPECT_EQ(img.threads, 128u);
  EXPECT_EQ(img.args, ArgSource::Params);
  const sk::elf::Cubin &c = img.info;
  EXPECT_EQ(c.type, 2u);  // ET_EXEC: linked
  EXPECT_EQ(c.sm, 90u);
  const sk::elf::CubinFunction *entry = c.find("sk_superkernel_entry");
  ASSERT_NE(entry, nullptr);
  EXPECT_TRUE(entry->entry);
  EXPECT_GT(entry->registers, 0u);
  EXPECT_LE(entry->registers, 255u);
  // The entry's registers cover its deepest callee's.
  EXPECT_GE(entry->registers, c.find("chain_axpy")->registers);
  EXPECT_EQ(entry->param_bytes, 8u * 10 + kEntryOwnParamBytes);  // 3+3+4 argument slots + sync, report, runs, stop
  for (const char *callee : {"chain_step", "sync_sum", "chain_axpy", "sk_block_idx", "sk_block_num", "sk_sync_all"})
    EXPECT_NE(c.find(callee), nullptr) << callee;
  EXPECT_TRUE(c.undefined.empty());
  // The same inputs again come from the cache.
  BuiltImage again;
  ASSERT_EQ(build_superkernel(s.request(), &again), SK_OK);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.cubin, img.cubin);
  // Another placement of the same steps is the same entry: only its step table differs.
  s.block_dims[0] = 4;
  ASSERT_EQ(s.make_plan(8), SK_OK);
  BuiltImage placed;
  ASSERT_EQ(build_superkernel(s.request(), &placed), SK_OK);
  EXPECT_TRUE(placed.cached);
  EXPECT_EQ(placed.cubin, img.cubin);
  EXPECT_NE(placed.table, img.table);
  // Another step is another key.
  s.add(kernel(chain, "chain_step"), 8);
  ASSERT_EQ(s.make_plan(8), SK_OK);
  BuiltImage other;
  ASSERT_EQ(build_superkernel(s.request(), &other), SK_OK);
  EXPECT_FALSE(other.cached);
  EXPECT_EQ(link_cache_size(), 2u);
}

// Structs by value, declared and passed as nvcc declares the callee's (the PTX ABI: a byte
// array with the struct's alignment), each copied from its argument slots in pieces of that
// alignment; a position read by reference loaded from the address in its slot, at a call site
// of its own. ptxas accepts the entry, and nvJitLink links it with the cubin.
TEST(CudaLink, AggregatesAndArgumentsReadByReferenceFollowThePtxAbi) {
  clear_link_cache();
  auto agg = load("aggregates.cubin");
  Scope s;
  s.add(kernel(agg, "cu_agg"), 2);
  s.add(kernel(agg, "cu_agg"), 2, 0, {}, 1u << 1 | 1u << 2);  // pos and p read by reference
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK) << sk::last_error();
  EXPECT_EQ(spec.arg_slots, 2u * (1 + 1 + 1 + 2 + 3 + 1 + 1));
  EXPECT_EQ(spec.steps[1].arg_base, 10u);
  const std::string ptx = generate_entry_ptx(spec);
  EXPECT_TRUE(contains(ptx,
                       ".extern .func cu_agg(.param .b64 p0, .param .b32 p1, .param .align 4 .b8 p2[8], "
                       ".param .align 8 .b8 p3[16], .param .align 4 .b8 p4[20], .param .align 4 .b8 p5[8], "
                       ".param .b32 p6);"))
      << ptx;
  EXPECT_EQ(count(ptx, ".extern .func cu_agg("), 1u) << ptx;
  EXPECT_EQ(count(ptx, "call cu_agg, ("), 2u) << ptx;  // one site per set of references
  // {f64,i32} from slots 3 and 4 in two 8-byte pieces; {i32[5]} from slots 5-7 in 4-byte ones.
  EXPECT_TRUE(contains(ptx, "ld.param.u64 %x3, [%t5+24+8];")) << ptx;
  EXPECT_TRUE(contains(ptx, "st.param.b64 [c3+8], %x3;")) << ptx;
  EXPECT_TRUE(contains(ptx, "ld.param.u32 %y4, [%t5+40+16];")) << ptx;
  // By reference: the address from the slot, the value through it (generic, not .nc).
  EXPECT_TRUE(contains(ptx, "ld.param.u64 %a1, [%t5+8];")) << ptx;
  EXPECT_TRUE(contains(ptx, "ld.u32 %y1, [%a1];")) << ptx;
  EXPECT_TRUE(contains(ptx, "ld.u32 %y2, [%a2+4];")) << ptx;
  std::string log;
  EXPECT_EQ(ptxas(ptx, "sm_90", &log), 0) << log;
  BuildRequest r = s.request();
  r.force_buffer = true;
  ASSERT_EQ(make_entry_spec(r, 128, &spec), SK_OK);
  const std::string buffered = generate_entry_ptx(spec);
  EXPECT_TRUE(contains(buffered, "ld.global.nc.u32 %y5, [%t5+64+0];")) << buffered;  // {i8,f32}: align 4
  EXPECT_EQ(ptxas(buffered, "sm_90", &log), 0) << log;
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_NE(img.info.find("cu_agg"), nullptr);
  EXPECT_TRUE(img.info.undefined.empty());
}

TEST(CudaLink, ACubinLinkedOnceIsReadFromDiskWhenMemoryForgotIt) {
  const std::string home = std::string(sk::cuda_test::private_cache_home()) + "/memory";
  setenv("XDG_CACHE_HOME", home.c_str(), 1);
  clear_link_cache();
  auto chain = load("chain.cubin");
  Scope s;
  s.add(kernel(chain, "chain_step"), 8);
  s.add(kernel(chain, "chain_axpy"), 8);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  const uint64_t links = link_count();
  BuiltImage first;
  ASSERT_EQ(build_superkernel(s.request(), &first), SK_OK) << sk::last_error();
  EXPECT_FALSE(first.cached);
  EXPECT_EQ(link_count(), links + 1);
  clear_link_cache();  // as a new process would start
  BuiltImage second;
  ASSERT_EQ(build_superkernel(s.request(), &second), SK_OK) << sk::last_error();
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(link_count(), links + 1);
  EXPECT_EQ(*second.cubin, *first.cubin);
  EXPECT_EQ(second.info.find("sk_superkernel_entry")->registers, first.info.find("sk_superkernel_entry")->registers);
  setenv("XDG_CACHE_HOME", sk::cuda_test::private_cache_home(), 1);
}

TEST(CudaLink, HundredKernelChainKeepsArgumentsInTheParameterSpace) {
  auto chain = load("chain.cubin");
  auto k = kernel(chain, "chain_step");
  Scope s;
  for (int i = 0; i < 100; ++i) s.add(k, 1 + (i % 7));
  ASSERT_EQ(s.make_plan(132), SK_OK);
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_EQ(img.args, ArgSource::Params);  // 300 slots: 2400 bytes fit
  ASSERT_NE(img.info.find("sk_superkernel_entry"), nullptr);
  EXPECT_EQ(img.info.find("sk_superkernel_entry")->param_bytes, 8u * 300 + kEntryOwnParamBytes);
}

// The link's time goes to the log (no timed assertion): the entry is the same few KiB of PTX
// for 10 or 1000 steps, so ptxas compiles it in about the same time.
TEST(CudaLink, ThousandTinyKernelsLinkWithArgumentsInABuffer) {
  auto tiny = load("tiny.cubin");
  auto k = kernel(tiny, "tiny_add");
  Scope s;
  s.name = "thousand_tiny";  // its own PTX: not a cubin another test linked
  for (int i = 0; i < 1000; ++i) s.add(k, 1);
  ASSERT_EQ(s.make_plan(132), SK_OK);
  BuiltImage img;
  clear_link_cache();
  const uint64_t links = link_count();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("build of 1000 steps: %.1f ms (%s), entry PTX %zu bytes, step table %zu bytes\n", ms,
              link_count() > links ? "linked" : "from the disk cache", img.ptx.size(), 4 * img.table.size());
  EXPECT_EQ(img.table.size(), kTableHeaderWords + 1000 * kStepWords + 2 * 999);  // each waits for the one before
  EXPECT_EQ(img.args, ArgSource::Buffer);  // 2000 slots exceed the parameter space
  ASSERT_NE(img.info.find("sk_superkernel_entry"), nullptr);
  EXPECT_EQ(img.info.find("sk_superkernel_entry")->param_bytes,
            8u + kEntryOwnParamBytes);  // the buffer, and the rest
}

// Steps are data: the PTX depends on the step count and the distinct sub-kernels only. 10 and
// 1000 steps give the same entry (but for the digits of the sync buffer's offsets), and a plan
// for fewer co-resident blocks gives the same PTX, so a re-plan needs no second link.
TEST(CudaEntryPtx, TheEntryDoesNotGrowWithTheSteps) {
  auto chain = load("chain.cubin");
  auto tiny = load("tiny.cubin");
  auto entry_of = [&](int steps, uint32_t cores, std::vector<uint32_t> *table) {
    Scope s;
    for (int i = 0; i < steps; ++i) s.add(kernel(i % 2 ? tiny : chain, i % 2 ? "tiny_add" : "chain_step"), 16);
    EXPECT_EQ(s.make_plan(cores), SK_OK) << sk::last_error();
    BuildRequest r = s.request();
    r.force_buffer = true;  // as 1000 steps' arguments are: the same parameters for both
    EntrySpec spec;
    EXPECT_EQ(make_entry_spec(r, 128, &spec), SK_OK) << sk::last_error();
    if (table) *table = step_table(spec);
    return generate_entry_ptx(spec);
  };
  const std::string ten = entry_of(10, 16, nullptr), thousand = entry_of(1000, 16, nullptr);
  const auto body = [](const std::string &ptx) { return ptx.substr(ptx.find(".visible .entry")); };
  const std::regex digits("[0-9]+");
  EXPECT_EQ(std::regex_replace(body(ten), digits, "N"), std::regex_replace(body(thousand), digits, "N"));
  EXPECT_LE(body(thousand).size(), body(ten).size() + 4) << "the step table's offset has more digits, no more";
  EXPECT_LE(thousand.size(), ten.size() + 64);
  EXPECT_EQ(count(thousand, "call chain_step"), 1u);
  EXPECT_EQ(count(thousand, "call tiny_add"), 1u);
  // Placed for 16 or for 4 co-resident blocks: the same PTX, another table.
  std::vector<uint32_t> wide, narrow;
  EXPECT_EQ(entry_of(10, 16, &wide), entry_of(10, 4, &narrow));
  EXPECT_EQ(wide.size(), narrow.size());
  EXPECT_NE(wide, narrow);
  EXPECT_EQ(wide[kTableHeaderWords + kStepCores], 16u);
  EXPECT_EQ(narrow[kTableHeaderWords + kStepCores], 4u);
}

// What finalize does after the occupancy query: the re-planned table, for the entry already
// linked; no second link.
TEST(CudaLink, AReplanReusesTheLinkedEntry) {
  auto chain = load("chain.cubin");
  Scope s;
  s.name = "replanned";
  for (int i = 0; i < 3; ++i) s.add(kernel(chain, "chain_step"), 16);
  ASSERT_EQ(s.make_plan(16), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  const uint64_t links = link_count();
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  std::vector<uint32_t> table;
  ASSERT_EQ(replanned_table(s.request(), img, &table), SK_OK) << sk::last_error();
  EXPECT_EQ(link_count(), links);
  EXPECT_EQ(table[kTableHeaderWords + kStepCores], 4u);
  EXPECT_EQ(img.table[kTableHeaderWords + kStepCores], 16u);
  // Other kernels need another entry: refused, not run on the wrong call sites.
  Scope other;
  other.name = "replanned";
  for (int i = 0; i < 3; ++i) other.add(kernel(chain, "mark_blocks"), 16);
  ASSERT_EQ(other.make_plan(4), SK_OK) << sk::last_error();
  EXPECT_EQ(replanned_table(other.request(), img, &table), SK_ERR_STATE);
  EXPECT_TRUE(contains(sk::last_error(), "'replanned'")) << sk::last_error();
}

TEST(CudaLink, LtoIrLinksWithCubins) {
  auto chain = load("chain.cubin");
  auto lto = load("lto.ltoir");
  Scope s;
  s.add(kernel(chain, "chain_step"), 4);
  s.add(kernel(lto, "lto_scale", "ptr,u32,u32"), 4);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  EXPECT_NE(img.info.find("sk_superkernel_entry"), nullptr);
}

// An LTO-IR holding a libsk sub-kernel and a __global__ kernel: the first links as the IR, the
// second as the PTX the IR links to, each alone; together each would define the IR's functions
// and its __device__ variable, and the refusal names both kernels and what to do.
TEST(CudaLink, AnLtoIrsTwoKindsOfKernelLinkApartAndAreRefusedTogether) {
  auto m = load("lto_global.ltoir");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->ptx_units.size(), 1u) << m->global_kernels_note;
  auto device = kernel(m, "lto_add", nullptr);
  auto global = kernel(m, "lto_double_global", nullptr);
  ASSERT_TRUE(device && global);
  EXPECT_EQ(device->module, m);
  EXPECT_EQ(device->module->kind, sk::cuda::InputKind::LtoIr);
  EXPECT_EQ(global->module, m->ptx_unit(0));
  EXPECT_EQ(global->module->kind, sk::cuda::InputKind::Ptx);
  EXPECT_EQ(global->threads, 128u);
  for (const auto &k : {device, global}) {
    Scope alone;
    alone.add(k, 4);
    ASSERT_EQ(alone.make_plan(8), SK_OK) << sk::last_error();
    BuiltImage img;
    EXPECT_EQ(build_superkernel(alone.request(), &img), SK_OK) << k->symbol << ": " << sk::last_error();
  }
  Scope both;
  both.add(device, 4);
  both.add(global, 4);
  ASSERT_EQ(both.make_plan(8), SK_OK) << sk::last_error();
  BuiltImage img;
  EXPECT_EQ(build_superkernel(both.request(), &img), SK_ERR_INCOMPATIBLE);
  const std::string msg = sk::last_error();
  EXPECT_TRUE(contains(msg, "'lto_add'") && contains(msg, "'lto_double_global'")) << msg;
  EXPECT_TRUE(contains(msg, "lto_global.ltoir")) << msg;
  EXPECT_TRUE(contains(msg, "two super kernels") && contains(msg, "-rdc=true")) << msg;
}

TEST(CudaLink, MismatchedThreadsPerBlockNameBothKernels) {
  auto chain = load("chain.cubin");
  auto misc = load("misc.cubin");
  Scope s;
  s.add(kernel(chain, "chain_step"), 4);
  s.add(kernel(misc, "wide_block"), 4);
  ASSERT_EQ(s.make_plan(8), SK_OK);
  BuiltImage img;
  EXPECT_EQ(build_superkernel(s.request(), &img), SK_ERR_INCOMPATIBLE);
  const std::string msg = sk::last_error();
  EXPECT_TRUE(contains(msg, "'chain_step'") && contains(msg, "'wide_block'")) << msg;
  EXPECT_TRUE(contains(msg, "128") && contains(msg, "256")) << msg;
}

// A build with line information (-lineinfo) fuses as it was compiled; beside the plain build of
// the same source, which defines the same functions, it is refused naming the function and
// both files, before nvJitLink would fail with an internal error that names neither.
TEST(CudaLink, OneFunctionDefinedByTwoCubinsIsNamed) {
  auto chain = load("chain.cubin");
  auto lineinfo = load("chain_lineinfo.cubin");
  ASSERT_NE(chain->bytes, lineinfo->bytes);
  {
    Scope s;
    s.add(kernel(lineinfo, "chain_step"), 4);
    s.add(kernel(lineinfo, "chain_axpy"), 4);
    ASSERT_EQ(s.make_plan(8), SK_OK);
    BuiltImage img;
    EXPECT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  }
  Scope s;
  s.add(kernel(chain, "chain_step"), 4);
  s.add(kernel(lineinfo, "chain_axpy"), 4);
  ASSERT_EQ(s.make_plan(8), SK_OK);
  BuiltImage img;
  EXPECT_EQ(build_superkernel(s.request(), &img), SK_ERR_INCOMPATIBLE);
  const std::string msg = sk::last_error();
  bool named = false;  // one of chain.cu's functions
  for (const char *f : {"chain_step", "chain_axpy", "mark_blocks"})
    named |= contains(msg, std::string("'") + f + "'");
  EXPECT_TRUE(named) << msg;
  EXPECT_TRUE(contains(msg, "defined by " + sk::cuda_test::kernel_path("chain.cubin")) ||
              contains(msg, "defined by chain.cubin"))
      << msg;
  EXPECT_TRUE(contains(msg, "chain_lineinfo.cubin")) << msg;
}

TEST(CudaLink, MissingSymbolIsNamed) {
  auto misc = load("misc.cubin");
  Scope s;
  s.add(kernel(misc, "calls_missing"), 2);
  ASSERT_EQ(s.make_plan(8), SK_OK);
  BuiltImage img;
  EXPECT_EQ(build_superkernel(s.request(), &img), SK_ERR_NOT_FOUND);
  EXPECT_TRUE(contains(sk::last_error(), "nobody_defines_this")) << sk::last_error();
  // nvJitLink's log spans lines ("... ERROR 9: finish"); the message is one.
  EXPECT_EQ(std::string(sk::last_error()).find_first_of("\r\n"), std::string::npos) << sk::last_error();
  EXPECT_FALSE(contains(sk::last_error(), "finish")) << sk::last_error();
}

TEST(CudaLink, LtoIrSymbolMissingAtLink) {
  auto lto = load("lto.ltoir");
  Scope s;
  s.add(kernel(lto, "not_in_the_ir", "ptr"), 1);
  ASSERT_EQ(s.make_plan(8), SK_OK);
  BuiltImage img;
  EXPECT_NE(build_superkernel(s.request(), &img), SK_OK);
  EXPECT_TRUE(contains(sk::last_error(), "not_in_the_ir")) << sk::last_error();
  EXPECT_EQ(std::string(sk::last_error()).find_first_of("\r\n"), std::string::npos) << sk::last_error();
}

TEST(CudaLink, CubinForAnotherArchitectureIsRefused) {
  auto chain = load("chain.cubin");
  Scope s;
  s.add(kernel(chain, "chain_step"), 2);
  ASSERT_EQ(s.make_plan(8), SK_OK);
  BuiltImage img;
  EXPECT_NE(build_superkernel(s.request("sm_80"), &img), SK_OK);
  EXPECT_TRUE(contains(sk::last_error(), "sm_80")) << sk::last_error();
  EXPECT_TRUE(contains(sk::last_error(), "chain.cubin") || contains(sk::last_error(), "arch")) << sk::last_error();
}

TEST(CudaLink, SyncAllWithMoreBlocksThanCoResidentIsRefused) {
  auto sync = load("sync.cubin");
  Scope s;
  s.add(kernel(sync, "sync_sum"), 64);
  EXPECT_EQ(s.make_plan(32), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "sync_sum")) << sk::last_error();
}

TEST(CudaLink, DeviceApiLibraryCoversTheHeader) {
  auto misc = load("misc.cubin");
  Scope s;
  s.add(kernel(misc, "scalar_flags"), 4);
  ASSERT_EQ(s.make_plan(4), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  for (const char *fn : {"sk_gm_load", "sk_gm_store", "sk_dcci_line", "sk_dcci_all", "sk_cross_core_set_flag_all",
                         "sk_cross_core_wait_flag_all"})
    EXPECT_NE(img.info.find(fn), nullptr) << fn;
}

TEST(CudaCallGraph, SyncAllInANoinlineHelperMakesTheKernelSync) {
  auto m = load("callgraph.cubin");
  const sk::elf::CubinFunction *fn = m->cubin.find("sync_in_helper");
  ASSERT_NE(fn, nullptr);
  // Its own EIATTR_EXTERNS does not name sk_sync_all; the helper's does.
  EXPECT_EQ(std::count(fn->externs.begin(), fn->externs.end(), "sk_sync_all"), 0);
  const sk::elf::CubinReach reach = m->cubin.reach("sync_in_helper");
  EXPECT_EQ(reach.functions.size(), 2u);
  EXPECT_EQ(std::count(reach.externs.begin(), reach.externs.end(), "sk_sync_all"), 1);
  auto k = kernel(m, "sync_in_helper");
  EXPECT_NE(k->usage & sk::kUsesSyncAll, 0u);
  // Planned as a syncing kernel: never multiplexed past the co-resident blocks.
  Scope s;
  s.add(k, 64);
  EXPECT_EQ(s.make_plan(32), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "sync_in_helper")) << sk::last_error();
}

// A tail call is an ordinary call in .nv.callgraph; a call through a pointer reaches every
// function whose address the cubin takes (and says so), and a kernel that calls nothing
// through a pointer stays what it is.
TEST(CudaCallGraph, TailCallsAndPointerCallsReachTheHelperThatSyncs) {
  auto m = load("reach.cubin");
  const sk::elf::CubinReach tail = m->cubin.reach("reach_tail");
  ASSERT_EQ(tail.paths.count("sk_sync_all"), 1u);
  const auto &tail_path = tail.paths.at("sk_sync_all");
  ASSERT_EQ(tail_path.size(), 2u) << sk::describe(tail_path);
  EXPECT_EQ(tail_path[0].to, "_Z17reach_tail_helperPjj");
  EXPECT_FALSE(sk::conservative(tail_path));

  auto hook = kernel(m, "reach_hook_call");
  EXPECT_NE(hook->usage & sk::kUsesSyncAll, 0u);
  ASSERT_FALSE(hook->usage_paths.empty());
  bool pointer = false;
  for (const sk::DeviceApiPath &p : hook->usage_paths)
    if (p.function == "sk_sync_all")
      pointer = sk::conservative(p.steps) && p.steps[0].how == sk::ReachHow::IndirectCall;
  EXPECT_TRUE(pointer);
  // Taking a helper's address is not calling it; a kernel with no call through a pointer does not sync.
  EXPECT_EQ(kernel(m, "reach_set_hook")->usage & sk::kUsesSyncAll, 0u);
  EXPECT_EQ(kernel(m, "reach_plain")->usage & sk::kUsesSyncAll, 0u);

  Scope s;
  s.add(hook, 64);
  EXPECT_EQ(s.make_plan(32), SK_ERR_INCOMPATIBLE);
  EXPECT_TRUE(contains(sk::last_error(), "'reach_hook_call' may call '_Z17reach_tail_helperPjj' through a pointer"))
      << sk::last_error();
}

TEST(CudaCallGraph, PointerCallsReachOnlyAddressTakenFunctions) {
  auto m = load("reach_plain_pointer.cubin");
  EXPECT_NE(kernel(m, "reach_plain_sync")->usage & sk::kUsesSyncAll, 0u);
  auto k = kernel(m, "reach_plain_pointer_call");
  EXPECT_EQ(k->usage & sk::kUsesSyncAll, 0u);
  EXPECT_NE(k->usage & sk::kUsesBlockIdx, 0u);  // its helpers' call, through the pointer
}

// The fused entry needs no more registers per thread than its largest sub-kernel, and at most
// kEntryRegisterFloor when the sub-kernels need no more: libsk's waits and arrivals, nested
// calls included, fit under the cap.
TEST(CudaRegisters, TheEntryAddsNoRegistersAboveItsLargestSubKernel) {
  auto tiny = load("tiny.cubin");
  auto chain = load("chain.cubin");
  auto sync = load("sync.cubin");
  auto shared = load("shared.cubin");
  auto entry_registers = [](const Scope &s) -> uint32_t {
    BuiltImage img;
    EXPECT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
    const sk::elf::CubinFunction *e = img.info.find("sk_superkernel_entry");
    return e ? e->registers : 0;
  };
  Scope small;  // dependent steps: each waits for the one before and arrives at its end
  for (int i = 0; i < 8; ++i) small.add(kernel(tiny, "tiny_add"), 8);
  small.add(kernel(chain, "chain_step"), 8);
  ASSERT_EQ(small.make_plan(8), SK_OK) << sk::last_error();
  uint32_t most = 0;
  for (const auto &k : small.kernels) most = std::max(most, k->registers);
  ASSERT_GT(most, 0u);
  ASSERT_LE(most, kEntryRegisterFloor);  // the premise: every sub-kernel fits in the floor
  EXPECT_EQ(register_caps(small.kernels).link, kEntryRegisterFloor);
  const uint32_t small_entry = entry_registers(small);
  EXPECT_GT(small_entry, 0u);
  EXPECT_LE(small_entry, kEntryRegisterFloor);

  Scope wide = small;                     // sub-kernels above the floor: the largest sets the cap
  wide.add(kernel(sync, "sync_sum"), 4);  // an in-kernel grid barrier
  wide.add(kernel(shared, "tile_in_helper"), 8);
  ASSERT_EQ(wide.make_plan(8), SK_OK) << sk::last_error();
  const uint32_t helper = wide.kernels.back()->registers;  // its own count, or its callee's
  ASSERT_GT(helper, wide.kernels[wide.kernels.size() - 2]->registers);
  ASSERT_GT(wide.kernels[wide.kernels.size() - 2]->registers, kEntryRegisterFloor);
  EXPECT_EQ(register_caps(wide.kernels).link, helper);
  EXPECT_EQ(entry_registers(wide), helper);

  auto lto = load("lto.ltoir");  // compiled in the link: no cap that could spill it
  std::vector<std::shared_ptr<CudaKernel>> with_lto = small.kernels;
  with_lto.push_back(kernel(lto, "lto_scale", "ptr,u32,u32"));
  EXPECT_EQ(register_caps(with_lto).link, 0u);
}

// A dependent step spins on relaxed loads and acquires once (an acquire-only fence after the
// polls, which a relaxed load that saw the target makes an acquire), and each arrival or
// barrier entry is one release operation: no fence of its own. Counted in the generated PTX
// (the linked SASS: CudaEntrySass.ADependentStepIsTwoBarriersOneReleaseOneAcquire).
TEST(CudaEntryPtx, ADependentStepFencesOnceToAcquireAndOnceToRelease) {
  auto chain = load("chain.cubin");
  Scope s;
  s.add(kernel(chain, "chain_step"), 8);
  s.add(kernel(chain, "chain_step"), 8);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK) << sk::last_error();
  const std::string ptx = generate_entry_ptx(spec);
  const std::string wait = ptx_function(ptx, "__sk_wait");
  ASSERT_FALSE(wait.empty()) << ptx;
  EXPECT_EQ(count(wait, "ld.acquire"), 0u) << wait;
  EXPECT_EQ(count(wait, "ld.relaxed.gpu.global.u64 %rd3, [%rd1]"), 2u) << wait;  // before and in the loop
  EXPECT_EQ(count(wait, "fence."), 1u) << wait;
  EXPECT_GT(wait.find("fence.acquire.gpu"), wait.rfind("bra $W_spin")) << wait;  // after the loop, not in it
  EXPECT_GT(wait.find("fence.acquire.gpu"), wait.find("$W_done:")) << wait;      // on every way out
  const std::string arrive = ptx_function(ptx, "__sk_arrive");
  ASSERT_FALSE(arrive.empty()) << ptx;
  EXPECT_EQ(count(arrive, "fence."), 0u) << arrive;
  EXPECT_EQ(count(arrive, "red.release.gpu"), 1u) << arrive;
  for (const char *barrier : {"sk_sync_all", "sk_cross_core_set_flag_all"}) {
    const std::string body = ptx_function(ptx, barrier);
    ASSERT_FALSE(body.empty()) << barrier;
    EXPECT_EQ(count(body, "fence."), 0u) << body;
    EXPECT_EQ(count(body, "atom.release.gpu"), 1u) << body;
  }
  // The step loop's own wait: relaxed polls, then one acquire-only fence after every pair;
  // its arrival: one release reduction. Its other fences run only where a cache option asks
  // (the step's table flags), and no step of this plan asks for one.
  const std::string entry = ptx.substr(ptx.find(".entry " + spec.entry_name));
  EXPECT_EQ(count(entry, "fence."), 3u) << entry;
  EXPECT_EQ(count(entry, "@%q1 fence.acq_rel.gpu;"), 2u) << entry;
  EXPECT_EQ(count(entry, "  fence.acquire.gpu;"), 1u) << entry;
  EXPECT_GT(entry.find("fence.acquire.gpu"), entry.find("$deps_done:")) << entry;
  EXPECT_EQ(count(entry, "ld.relaxed.gpu.global.u64 %t5, [%t8];"), 1u) << entry;
  EXPECT_EQ(count(entry, "red.release.gpu.global.add.u64"), 1u) << entry;
  EXPECT_EQ(count(entry, "and.b32 %s9, %s7, " + std::to_string(kStepFenceBefore) + ";"), 1u) << entry;
  EXPECT_EQ(count(entry, "and.b32 %s9, %s7, " + std::to_string(kStepFenceAfter) + ";"), 1u) << entry;
  EXPECT_EQ(count(entry, "membar"), 0u) << entry;
  const std::vector<uint32_t> table = step_table(spec);
  for (size_t i = 0; i < spec.steps.size(); ++i)
    EXPECT_EQ(table[kTableHeaderWords + kStepWords * i + kStepFlags] & (kStepFenceBefore | kStepFenceAfter), 0u)
        << i;
  std::string log;
  EXPECT_EQ(ptxas(ptx, "sm_90", &log), 0) << log;
}

// A sub-kernel's early return: the returned threads wait at libsk's next block barrier while
// the others finish. libsk's barriers are all `barrier.sync 15` (kBlockBarrier): not barrier 0,
// whose arrivals would complete the sub-kernel's __syncthreads(), and not `.aligned`, as a
// warp's threads reach them apart. Every thread of a block makes each sub-kernel call: the step
// code branches only on the block (%ctaid, uniform), never on the thread.
TEST(CudaEntryPtx, LibsksBlockBarriersAreBarrier15AndEveryThreadCallsTheSubKernel) {
  auto early = load("early_return.cubin");
  Scope s;
  s.add(kernel(early, "early_return_pairs"), 20);  // multiplexed on 8 cores
  s.add(kernel(early, "early_return_pairs"), 3);
  ASSERT_EQ(s.make_plan(8), SK_OK) << sk::last_error();
  EntrySpec spec;
  ASSERT_EQ(make_entry_spec(s.request(), 128, &spec), SK_OK) << sk::last_error();
  std::string ptx = generate_entry_ptx(spec);
  // The wait of a kernel's returned threads keeps step with the kernel's barrier 0, in its two
  // phases, unaligned: the one place libsk's own code names barrier 0.
  const size_t leave_at = ptx.find(".visible .func __sk_leave(.param .b32 threads)");
  ASSERT_NE(leave_at, std::string::npos);
  const size_t leave_end = ptx.find("\n}\n", leave_at) + 3;
  const std::string leave = ptx.substr(leave_at, leave_end - leave_at);
  ptx.erase(leave_at, leave_end - leave_at);
  EXPECT_TRUE(
      std::regex_search(leave, std::regex("\n  barrier\\.sync 0, (%r[0-9]+);[^]*\n  barrier\\.red\\.popc\\.u32 "
                                          "%r[0-9]+, 0, \\1, %p[0-9]+;")))
      << leave;
  EXPECT_FALSE(contains(leave, "bar.") || contains(leave, ".aligned")) << leave;
  // Every barrier instruction (a line that starts with one, maybe predicated).
  const std::regex barrier("^\\s*(@!?%p[0-9]+\\s+)?(bar|barrier)\\.");
  size_t barriers = 0, at = 0;
  while (at < ptx.size()) {
    size_t eol = ptx.find('\n', at);
    if (eol == std::string::npos) eol = ptx.size();
    const std::string line = ptx.substr(at, eol - at);
    at = eol + 1;
    if (!std::regex_search(line, barrier)) continue;
    // The step loop's barrier after the call also says whether thread 0 needs a second one.
    if (line != "  barrier.red.or.pred %q1, " + std::to_string(kBlockBarrier) + ", %q2;")
      EXPECT_EQ(line, "  barrier.sync " + std::to_string(kBlockBarrier) + ";");
    ++barriers;
  }
  EXPECT_GE(barriers, 12u);  // the step loop's two, __sk_next's two, and the device API's block-wide calls
  EXPECT_NE(kBlockBarrier, 0u);
  EXPECT_LT(kBlockBarrier, 16u);  // barriers 0..15 exist
  const std::string entry = ptx.substr(ptx.find(".entry " + spec.entry_name));
  // %tid only in thread 0's bookkeeping, which the other threads skip to a barrier or to their
  // own move to the next slot (the start's, the run's first instance, an instance's end and what
  // follows the barrier after it), and in the thread's own selector byte: its setting at the
  // start and the moves (the run's first instance, an instance's end, thread 0's move to a slot
  // it filled, and to the run's end).
  EXPECT_EQ(count(entry, "%tid"), 4u + 5u) << entry;
  EXPECT_EQ(count(entry, "mov.u32 %sk_v, %tid.x;"), 4u) << entry;
  const std::regex skip("mov\\.u32 %r1, %tid\\.x;\\s+setp\\.ne\\.u32 %p1, %r1, 0;\\s+@%p1 bra \\$([a-z_]+);");
  std::set<std::string> skipped_to;
  for (auto it = std::sregex_iterator(entry.begin(), entry.end(), skip); it != std::sregex_iterator(); ++it)
    skipped_to.insert((*it)[1].str());
  EXPECT_EQ(skipped_to, (std::set<std::string>{"init_done", "step_first", "step_others", "step_barrier"})) << entry;
  // From the barrier to the call: the run's end, the cache fence a step's flags may ask for,
  // and the jump to the call site on the step's kernel index, uniform over the block (.uni).
  const size_t begin = entry.find("$step_call:");
  ASSERT_NE(begin, std::string::npos) << entry;
  EXPECT_EQ(count(entry, "$step_call:"), 1u) << entry;
  const size_t call = entry.find("call early_return_pairs", begin);
  ASSERT_NE(call, std::string::npos) << entry;
  const std::string between = entry.substr(begin, call - begin);
  EXPECT_EQ(count(between, "bra "), 1u) << between;
  EXPECT_EQ(count(between, "@%q1 bra $steps_done;"), 1u) << between;
  EXPECT_EQ(count(between, "bra.uni "), 0u) << between;
  EXPECT_EQ(count(between, "brx.idx.uni %s3, $sk_calls;"), 1u) << between;
  EXPECT_EQ(count(between, "@%"), 2u) << between;  // the run's end's and the fence's predicates
  EXPECT_EQ(count(between, "@%q1 fence.acq_rel.gpu;"), 1u) << between;
  std::string log;
  EXPECT_EQ(ptxas(ptx, "sm_90", &log), 0) << log;
}

namespace {

// Plans `s` on `grid` blocks, links it and disassembles the linked cubin into *sass.
void linked_sass(Scope &s, uint32_t grid, std::string *sass) {
  ASSERT_EQ(s.make_plan(grid), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  int rc = 0;
  *sass = disassemble(img, &rc);
  ASSERT_EQ(rc, 0) << *sass;
}

}  // namespace

// The same in the linked SASS: every BAR of libsk's code (the entry and its library) is on
// barrier 15; the sub-kernel's own __syncthreads() stays on barrier 0.
TEST(CudaEntrySass, LibsksBarriersStayOffTheSubKernelsBarrier0) {
  if (nvdisasm_path().empty()) GTEST_SKIP() << kNoNvdisasm;
  auto early = load("early_return.cubin");
  Scope s;
  s.add(kernel(early, "early_return_pairs"), 20);
  s.add(kernel(early, "early_return_pairs"), 3);
  std::string sass;
  ASSERT_NO_FATAL_FAILURE(linked_sass(s, 8, &sass));
  // Functions start at ".text.<name>:" section labels; BAR's first operand is the barrier.
  const std::regex section("^\\s*\\.section\\s+\\.text\\.([A-Za-z0-9_$.]+)"), bar("\\bBAR\\.[A-Z_.]*\\s+([^ ,;]+)");
  // A non-aligned barrier.sync becomes BAR.SYNC 0xf for a converged warp and, for a diverged
  // one, WARPSYNC.COLLECTIVE then BAR.SYNC on a register whose low bits ptxas sets to the
  // barrier (LOP3.LUT Rn, Rn, 0xf, ...): that form counts as barrier 0xf.
  std::string function;
  std::map<std::string, std::set<std::string>> ids;  // function -> barrier operands
  std::map<std::string, std::string> lines;          // function -> its BAR lines, for messages
  std::vector<std::string> recent;                   // the function's lines before this one
  size_t at = 0, collective = 0;
  while (at < sass.size()) {
    size_t eol = sass.find('\n', at);
    if (eol == std::string::npos) eol = sass.size();
    const std::string line = sass.substr(at, eol - at);
    at = eol + 1;
    std::smatch m;
    if (std::regex_search(line, m, section)) {
      function = m[1];
      recent.clear();
    } else if (std::regex_search(line, m, bar)) {
      std::string id = m[1];
      if (id[0] == 'R')
        for (size_t back = 1; back <= 4 && back <= recent.size(); ++back)
          if (contains(recent[recent.size() - back], "LOP3.LUT " + id + ", " + id + ", 0xf,")) {
            id = "0xf";
            ++collective;
          }
      ids[function].insert(id);
      lines[function] += line + "\n";
    }
    recent.push_back(line);
  }
  EXPECT_GT(collective, 0u) << "no diverged-warp path: is libsk's barrier .aligned?\n" << sass;
  ASSERT_FALSE(ids.empty()) << sass;
  EXPECT_EQ(ids["early_return_pairs"], std::set<std::string>{"0x0"}) << sass;
  size_t libsk = 0;
  for (const auto &[fn, operands] : ids) {
    if (fn == "early_return_pairs") continue;
    EXPECT_EQ(operands, std::set<std::string>{"0xf"}) << fn << ":\n" << lines[fn];
    ++libsk;
  }
  EXPECT_GT(libsk, 0u) << sass;
}

// 1000 steps of two sub-kernels: the linked entry calls each from one place (direct calls the
// linker sees, so its register count and call graph cover them), however many steps run it.
TEST(CudaEntrySass, OneCallPerDistinctSubKernel) {
  if (nvdisasm_path().empty()) GTEST_SKIP() << kNoNvdisasm;
  auto chain = load("chain.cubin");
  auto tiny = load("tiny.cubin");
  Scope s;
  s.name = "two_kernels_1000_steps";
  for (int i = 0; i < 1000; ++i) s.add(kernel(i % 2 ? tiny : chain, i % 2 ? "tiny_add" : "chain_step"), 4);
  std::string sass;
  ASSERT_NO_FATAL_FAILURE(linked_sass(s, 8, &sass));
  const std::string entry = sass_function(sass, "sk_superkernel_entry");
  ASSERT_FALSE(entry.empty()) << sass;
  const std::regex call("\\bCALL\\.[A-Z.]*\\s+`?\\(?([A-Za-z0-9_$.]+)\\)?");
  std::map<std::string, size_t> calls;
  for (auto it = std::sregex_iterator(entry.begin(), entry.end(), call); it != std::sregex_iterator(); ++it)
    ++calls[(*it)[1].str()];
  EXPECT_EQ(calls["chain_step"], 1u) << entry;
  EXPECT_EQ(calls["tiny_add"], 1u) << entry;
  size_t total = 0;
  for (const auto &[fn, n] : calls) total += n;
  EXPECT_LE(total, 5u) << entry;  // the two sub-kernels, __sk_wait, __sk_wait_previous, __sk_next
  // Reached through one jump table; the entry's own full fences are the two a step's cache
  // flags ask for (each behind a branch on them) and the arrival's release.
  EXPECT_EQ(count(entry, "BRX "), 1u) << entry;
  EXPECT_EQ(count(entry, "MEMBAR.ALL.GPU"), 3u) << entry;
}

// The iteration barrier between two runs in the linked SASS: per block and run one atomic (the
// done count: MEMBAR.GPU before it, CCTL.IVALL after, its acquire-release), the stop flag's one
// 32-bit load on the last arriver's path, two releases of the run word (again, stop) of which a
// run takes one, and the other blocks' wait through __sk_wait. The entry calls it once, in its
// loop over the runs.
TEST(CudaEntrySass, TheIterationBarrierIsOneAtomicPerBlockAndOneFlagLoad) {
  if (nvdisasm_path().empty()) GTEST_SKIP() << kNoNvdisasm;
  auto chain = load("chain.cubin");
  Scope s;
  s.add(kernel(chain, "chain_step"), 8);
  s.add(kernel(chain, "chain_step"), 8);
  std::string sass;
  ASSERT_NO_FATAL_FAILURE(linked_sass(s, 8, &sass));
  const std::string next = sass_function(sass, "__sk_next");
  ASSERT_FALSE(next.empty()) << "__sk_next is a function of its own\n" << sass;
  auto matches = [](const std::string &text, const char *pattern) {
    const std::regex re(pattern);
    return (size_t)std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
  };
  EXPECT_EQ(matches(next, "\\b(ATOMG|ATOM|RED)\\."), 1u) << next;
  EXPECT_EQ(matches(next, "\\bLDG\\.E\\.STRONG\\.GPU\\b"), 1u) << next;                     // 32 bits: the flag
  EXPECT_EQ(matches(next, "\\bSTG\\.E\\.64\\.STRONG\\.GPU[^\\n]*\\+0x10\\]"), 2u) << next;  // the run word
  EXPECT_EQ(matches(next, "\\bMEMBAR\\.[A-Z.]*GPU\\b"), 3u) << next;
  EXPECT_EQ(matches(next, "\\bCCTL\\.IVALL\\b"), 1u) << next;
  EXPECT_EQ(matches(next, "CALL[^\\n]*__sk_wait\\)"), 1u) << next;
  EXPECT_EQ(matches(next, "\\bBAR\\.SYNC[^\\n]*0xf\\b"), 2u) << next;
  static_assert(kSyncRun == 0x10);
  const std::string entry = sass_function(sass, "sk_superkernel_entry");
  ASSERT_FALSE(entry.empty()) << sass;
  EXPECT_EQ(matches(entry, "CALL[^\\n]*__sk_next\\)"), 1u) << entry;
  EXPECT_EQ(matches(entry, "\\bEXIT\\b"), 1u) << entry;
}

// The dependent chain of bench_cuda (bench_chain_step on every SM's block, each step waiting
// for the one before) in the linked SASS of its entry: per step two block barriers (before the
// arrival, after the wait), thread 0's release (MEMBAR.GPU, then one reduction) and acquire
// (relaxed polls, then an L1 invalidation alone: no MEMBAR), the step table read by thread 0
// alone, as the record's two 16-byte vectors and its copy of the first dependency pair (a
// further pair per further dependency), and no local memory: nothing spilled around the
// sub-kernel's call, no call of libsk's own on the way. Explain's cuda_entry.step_loop says the
// same, counted in the PTX.
TEST(CudaEntrySass, ADependentStepIsTwoBarriersOneReleaseOneAcquire) {
  if (nvdisasm_path().empty()) GTEST_SKIP() << kNoNvdisasm;
  auto chain = load("bench_chain.cubin");
  Scope s;
  for (int i = 0; i < 3; ++i) s.add(kernel(chain, "bench_chain_step"), 132);
  ASSERT_EQ(s.make_plan(132), SK_OK) << sk::last_error();
  BuiltImage img;
  ASSERT_EQ(build_superkernel(s.request(), &img), SK_OK) << sk::last_error();
  int rc = 0;
  const std::string sass = disassemble(img, &rc);
  ASSERT_EQ(rc, 0) << sass;
  const std::string entry = sass_function(sass, "sk_superkernel_entry");
  ASSERT_FALSE(entry.empty()) << sass;
  auto matches = [](const std::string &text, const char *pattern) {
    const std::regex re(pattern);
    return (size_t)std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
  };
  const StepLoopCode code = step_loop_code(img.ptx);
  EXPECT_EQ(code.block_barriers, 2u);
  EXPECT_EQ(code.releases, 1u);
  EXPECT_EQ(code.acquires, 1u);
  EXPECT_EQ(code.full_fences, 2u);  // the cache options', not taken in this plan
  EXPECT_EQ(code.polls, 1u);
  EXPECT_EQ(code.table_loads, 4u);
  // No local memory in the entry: nothing live across a call is spilled.
  EXPECT_EQ(matches(entry, "\\b(STL|LDL)\\b"), 0u) << entry;
  const sk::elf::CubinFunction *fn = img.info.find("sk_superkernel_entry");
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn->frame_size, 0u);
  // A non-aligned barrier is BAR.SYNC (BAR.RED) on 0xf for a converged warp, and a second one on
  // a register in the diverged warp's path: count the first form. The step's end is the
  // reducing barrier, which ptxas may copy to each path that reaches it (thread 0's, before
  // the barrier or not); the barrier after thread 0's acquire, one BAR.SYNC.
  EXPECT_EQ(matches(entry, "\\bBAR\\.SYNC[.A-Z_]*\\s+0xf\\b"), 1u) << entry;
  EXPECT_GE(matches(entry, "\\bBAR\\.RED\\.OR[.A-Z_]*\\s+0xf\\b"), 1u) << entry;
  EXPECT_EQ(code.block_barriers, 2u);
  // Every release fence (MEMBAR.ALL.GPU) is the arrival's or a cache option's; every L1
  // invalidation the acquire's or a cache option's: the acquire has no MEMBAR.
  EXPECT_EQ(matches(entry, "\\bREDG\\.E\\.ADD\\.64\\.STRONG\\.GPU\\b"), code.releases) << entry;
  EXPECT_EQ(matches(entry, "\\bMEMBAR\\.ALL\\.GPU\\b"), code.releases + code.full_fences) << entry;
  EXPECT_EQ(matches(entry, "\\bCCTL\\.IVALL\\b"), code.acquires + code.full_fences) << entry;
  EXPECT_EQ(matches(entry, "\\bLDG\\.E\\.[0-9]*\\.?CONSTANT\\b"), code.table_loads) << entry;
  EXPECT_EQ(matches(entry, "\\bLDG\\.E\\.128\\.CONSTANT\\b"), 2u) << entry;  // thread 0's record
  // Thread 0's three record loads are issued one after another, before any of their results is
  // used: one round trip to memory before the poll, where ptxas, sinking each load past the
  // placement test to its first use, would make them three round trips in a row.
  const std::regex instruction("/\\*[0-9a-f]{4}\\*/"), table_load("\\bLDG\\.E\\.(64|128)\\.CONSTANT\\b");
  size_t run = 0, longest = 0;
  std::istringstream lines(entry);
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_search(line, instruction)) continue;
    run = std::regex_search(line, table_load) ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  EXPECT_EQ(longest, 3u) << entry;
  // The polls: one relaxed 64-bit load in the loop (not unrolled), beside the start's epoch.
  EXPECT_EQ(matches(entry, "\\bLDG\\.E\\.64\\.STRONG\\.GPU\\b"), code.polls + 1) << entry;
  // Calls: the sub-kernel, and the slow paths (the sleeping wait, the wait at a step's end
  // for a kernel that never waited, the barrier between runs).
  const std::regex call("\\bCALL\\.[A-Z.]*\\s+`?\\(?([A-Za-z0-9_$.]+)\\)?");
  std::map<std::string, size_t> calls;
  for (auto it = std::sregex_iterator(entry.begin(), entry.end(), call); it != std::sregex_iterator(); ++it)
    ++calls[(*it)[1].str()];
  EXPECT_EQ(calls, (std::map<std::string, size_t>{
                       {"bench_chain_step", 1}, {"__sk_wait", 1}, {"__sk_wait_previous", 1}, {"__sk_next", 1}}))
      << entry;
}
