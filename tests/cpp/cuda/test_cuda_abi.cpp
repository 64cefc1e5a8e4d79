// The two ABIs libsk's CUDA backend keeps. With the driver: libsk declares the few driver API
// types it needs itself (src/cuda/driver_api.hpp) so that it builds without a CUDA toolkit; where
// the toolkit's cuda.h is at hand, they must match it. With its own device code: the generated
// PTX (src/cuda/superkernel.ptx) writes the hang report, the sync buffer and the block state
// where entry_ptx.hpp says the host reads them.
#include <gtest/gtest.h>
#include <sk_kernel.h>

#include <cstddef>
#include <regex>
#include <string>

#include "cuda/driver_api.hpp"
#include "cuda/entry_ptx.hpp"
#include "cuda/ptx_template.hpp"
#include "cuda_test_support.hpp"

#if __has_include(<cuda.h>)
#include <cuda.h>

TEST(CudaAbi, MirroredTypesMatchCudaH) {
  using namespace sk::cuda;
  static_assert(sizeof(LaunchAttribute) == sizeof(CUlaunchAttribute));
  static_assert(offsetof(LaunchAttribute, value) == offsetof(CUlaunchAttribute, value));
  static_assert(sizeof(LaunchConfig) == sizeof(CUlaunchConfig));
  static_assert(offsetof(LaunchConfig, stream) == offsetof(CUlaunchConfig, hStream));
  static_assert(offsetof(LaunchConfig, attrs) == offsetof(CUlaunchConfig, attrs));
  static_assert(offsetof(LaunchConfig, num_attrs) == offsetof(CUlaunchConfig, numAttrs));
  static_assert(sizeof(sk::cuda::CUdeviceptr) == sizeof(::CUdeviceptr));
  EXPECT_EQ(sk::cuda::CU_LAUNCH_ATTRIBUTE_COOPERATIVE, (int)::CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  EXPECT_EQ(sk::cuda::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, (int)::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  static_assert(sizeof(LaunchAttribute{}.value.cluster_dim) == sizeof(CUlaunchAttributeValue{}.clusterDim));
  static_assert(offsetof(CUlaunchAttributeValue, clusterDim) == 0);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, (int)::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            (int)::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            (int)::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, (int)::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, (int)::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  EXPECT_EQ(sk::cuda::CU_FUNC_ATTRIBUTE_NUM_REGS, (int)::CU_FUNC_ATTRIBUTE_NUM_REGS);
  EXPECT_EQ(sk::cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            (int)::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  EXPECT_EQ(sk::cuda::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, (int)::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  EXPECT_EQ(sk::cuda::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, (int)::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  EXPECT_EQ(sk::cuda::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, (int)::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  EXPECT_EQ(sk::cuda::CU_JIT_ERROR_LOG_BUFFER, (int)::CU_JIT_ERROR_LOG_BUFFER);
  EXPECT_EQ(sk::cuda::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, (int)::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
  static_assert(sizeof(::CUjit_option) == sizeof(int));  // cuModuleLoadDataEx's option array
  EXPECT_EQ(sk::cuda::CUDA_ERROR_INVALID_PTX, (int)::CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(sk::cuda::CU_EVENT_DISABLE_TIMING, (unsigned)::CU_EVENT_DISABLE_TIMING);
  EXPECT_EQ(sk::cuda::CU_STREAM_NON_BLOCKING, (unsigned)::CU_STREAM_NON_BLOCKING);
  EXPECT_EQ(sk::cuda::CUDA_ERROR_NOT_READY, (int)::CUDA_ERROR_NOT_READY);
  EXPECT_EQ(sk::cuda::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (int)::CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
  EXPECT_EQ(sk::cuda::CU_MEMORYTYPE_HOST, (unsigned)::CU_MEMORYTYPE_HOST);
  EXPECT_EQ(sk::cuda::CU_STREAM_CAPTURE_STATUS_NONE, (int)::CU_STREAM_CAPTURE_STATUS_NONE);
  static_assert(sizeof(::CUstreamCaptureStatus) == sizeof(int));  // cuStreamIsCapturing's out
  EXPECT_EQ(sk::cuda::CU_STREAM_CAPTURE_MODE_GLOBAL, (int)::CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_EQ(sk::cuda::CU_STREAM_CAPTURE_MODE_RELAXED, (int)::CU_STREAM_CAPTURE_MODE_RELAXED);
  static_assert(sizeof(::CUstreamCaptureMode) == sizeof(int));  // cuThreadExchangeStreamCaptureMode's in/out
  EXPECT_EQ(sk::cuda::CU_LIMIT_STACK_SIZE, (int)::CU_LIMIT_STACK_SIZE);
  static_assert(sizeof(::CUlimit) == sizeof(int));
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            (int)::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  EXPECT_EQ(sk::cuda::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
            (int)::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  // sk_tensor_map_desc's numbers are cuda.h's enumerations, which cuTensorMapEncodeTiled takes
  // as ints; its bytes are a CUtensorMap.
  static_assert(SK_TENSOR_MAP_BYTES == sizeof(::CUtensorMap));
  static_assert(sizeof(::CUtensorMapDataType) == sizeof(int) && sizeof(::CUtensorMapSwizzle) == sizeof(int));
  static_assert(sizeof(::CUtensorMapInterleave) == sizeof(int) && sizeof(::CUtensorMapL2promotion) == sizeof(int));
  static_assert(sizeof(::CUtensorMapFloatOOBfill) == sizeof(int));
  EXPECT_EQ(0, (int)::CU_TENSOR_MAP_DATA_TYPE_UINT8);
  EXPECT_EQ(6, (int)::CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(7, (int)::CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(9, (int)::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(12, (int)::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ);
  EXPECT_EQ(3, (int)::CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(2, (int)::CU_TENSOR_MAP_INTERLEAVE_32B);
  EXPECT_EQ(3, (int)::CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  EXPECT_EQ(1, (int)::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
}
#else
TEST(CudaAbi, MirroredTypesMatchCudaH) { GTEST_SKIP() << "cuda.h is not on the include path"; }
#endif

namespace {

using namespace sk::cuda;
using sk::cuda_test::contains;
using sk::cuda_test::count;

// The body of PTX function `name` (from its declaration to the closing brace), or "".
std::string ptx_function(const std::string &ptx, const std::string &name) {
  const size_t at = ptx.find(" " + name + "(");
  if (at == std::string::npos) return "";
  return ptx.substr(at, ptx.find("\n}\n", at) - at);
}

EntrySpec two_step_spec(ArgSource args) {
  EntrySpec spec;
  spec.args = args;
  spec.id = 42;
  spec.dynamic_shared = 100;
  for (uint32_t i = 0; i < 2; ++i) {
    EntryStep s;
    s.symbol = "k" + std::to_string(i);
    s.signature = {sk::ArgType::Ptr, sk::ArgType::U32};
    s.block_dim = 8;
    s.cores = 4;
    s.dcci_before = i == 1;
    s.arg_base = 2 * i;
    if (i) s.deps = {0};
    spec.steps.push_back(s);
  }
  spec.arg_slots = 4;
  return spec;
}

std::string report_store(const char *base, uint32_t word, const char *reg) {
  return "st.relaxed.gpu.global.u64 [" + std::string(base) + "+" + std::to_string(8 * word) + "], " + reg + ";";
}

}  // namespace

TEST(CudaAbi, TheHangReportIsWrittenWhereTheHostReadsIt) {
  const std::string ptx = generate_entry_ptx(two_step_spec(ArgSource::Params));
  const std::string wait = ptx_function(ptx, "__sk_wait");
  ASSERT_FALSE(wait.empty()) << ptx;
  EXPECT_TRUE(contains(wait, "atom.relaxed.gpu.global.cas.b64 %rd10, [%rd4], %rd8, %rd12;"))
      << wait;  // epoch, word 0
  EXPECT_EQ(kReportEpoch, 0u);
  EXPECT_TRUE(contains(wait, "mov.u64 %rd11, 42;")) << wait;
  for (uint32_t w : {kReportId, kReportStep, kReportBlock, kReportPoint})
    EXPECT_TRUE(contains(wait, report_store("%rd4", w, "%rd11"))) << w << wait;
  EXPECT_TRUE(contains(wait, report_store("%rd4", kReportSeen, "%rd3"))) << wait;
  EXPECT_TRUE(contains(wait, report_store("%rd4", kReportTarget, "%rd2"))) << wait;
  EXPECT_TRUE(contains(wait, report_store("%rd4", kReportAbortWord, "%rd12"))) << wait;
  EXPECT_TRUE(contains(wait, "[%rd4+" + std::to_string(8 * kReportAbortWord) + "]")) << wait;
  EXPECT_EQ(8 * kReportWords, 64u);  // the stand-in driver's tests write whole reports of 8 words

  const std::string bad = ptx_function(ptx, "__sk_bad_flag");
  ASSERT_FALSE(bad.empty()) << ptx;
  EXPECT_TRUE(contains(bad, "mov.u64 %rd5, " + std::to_string((unsigned)SyncPoint::InvalidFlag) + ";")) << bad;
  for (uint32_t w : {kReportId, kReportStep, kReportBlock, kReportPoint, kReportFlagId, kReportFlagCall})
    EXPECT_TRUE(contains(bad, report_store("%rd1", w, "%rd5"))) << w << bad;
  EXPECT_TRUE(contains(bad, report_store("%rd1", kReportAbortWord, "%rd3"))) << bad;
  // Each flag call reports its own number, which flag_call_name names.
  const std::pair<const char *, FlagCall> calls[] = {{"sk_cross_core_set_flag", FlagCall::Set},
                                                     {"sk_cross_core_wait_flag", FlagCall::Wait},
                                                     {"sk_cross_core_set_flag_all", FlagCall::SetAll},
                                                     {"sk_cross_core_wait_flag_all", FlagCall::WaitAll}};
  for (const auto &[name, call] : calls) {
    const std::string body = ptx_function(ptx, name);
    EXPECT_TRUE(contains(body, "st.param.b32 [b1], " + std::to_string((unsigned)call) + ";")) << body;
    EXPECT_EQ(flag_call_name((uint64_t)call), std::string(name));
    EXPECT_EQ(count(body, "setp.lt.u32 %p2, %r2, " + std::to_string(SK_CROSS_CORE_FLAGS) + ";"), 1u) << body;
  }
}

TEST(CudaAbi, TheSyncBufferIsAddressedAsItsLayoutSays) {
  for (size_t steps : {1u, 2u, 7u}) {
    const SyncLayout l = sync_layout(steps);
    EXPECT_EQ(l.epoch, 0u);
    EXPECT_EQ(l.done, 8u);
    EXPECT_EQ(l.run, 16u);
    EXPECT_EQ(l.arrivals, 24u);
    EXPECT_EQ(l.sync_all, l.arrivals + 8 * steps);
    EXPECT_EQ(l.grid, l.sync_all + 8 * steps);
    EXPECT_EQ(l.flags, l.grid + 8 * steps);
    EXPECT_EQ(l.report, l.flags + 8 * SK_CROSS_CORE_FLAGS);
    EXPECT_EQ(l.bytes, l.report + 8 * kReportWords);
    EXPECT_GE(l.table, l.bytes);  // past what a hang's reset zeroes
    EXPECT_EQ(l.table % 16, 0u);
  }
  const SyncLayout l = sync_layout(2);
  const std::string ptx = generate_entry_ptx(two_step_spec(ArgSource::Params));
  EXPECT_TRUE(contains(ptx_function(ptx, "sk_sync_all"), "add.u64 %rd1, %rd1, " + std::to_string(l.sync_all) + ";"));
  for (const char *f : {"sk_cross_core_set_flag_all", "sk_cross_core_wait_flag_all"})
    EXPECT_TRUE(contains(ptx_function(ptx, f), "add.u64 %rd2, %rd2, " + std::to_string(l.flags) + ";")) << f;
  EXPECT_TRUE(contains(ptx_function(ptx, "__sk_arrive"), "[%rd1+" + std::to_string(l.arrivals) + "], 1;"));
  EXPECT_TRUE(
      contains(ptx_function(ptx, "__sk_wait_previous"), "add.u64 %rd7, %rd7, " + std::to_string(l.arrivals) + ";"));
  EXPECT_TRUE(contains(ptx, "add.u64 %t1, %t1, " + std::to_string(l.table) + ";")) << "the step table";
}

// The step table as the entry reads it: a record per step at the offsets of StepWord, the
// dependency pairs the records index, the flags the step loop turns into block state. A
// block-local step (no dependencies) does not wait for the grid; its predecessor, which
// nothing else waits for, counts no arrival: the step loop starts its blocks as arrived, so
// the step's end and sk_set_next_task_start pass their arrival. The step's end then leaves
// thread 0 nothing to do: it fills the next slot before the one block barrier, which says so.
TEST(CudaAbi, ABlockLocalEdgeHasNoWaitAndNoArrival) {
  EntrySpec spec = two_step_spec(ArgSource::Params);
  spec.steps[1].deps.clear();
  spec.steps[0].arrives = false;
  const std::vector<uint32_t> t = step_table(spec);
  const uint32_t *r0 = &t[kTableHeaderWords], *r1 = r0 + kStepWords;
  EXPECT_EQ(r1[kStepDepBegin], r1[kStepDepEnd]);
  EXPECT_EQ(r1[kStepFlags] & kStepWaitNow, 0u);
  EXPECT_EQ(r0[kStepFlags] & kStepNoArrive, kStepNoArrive);
  EXPECT_EQ(r1[kStepFlags] & kStepNoArrive, 0u);
  const std::string ptx = generate_entry_ptx(spec);
  const std::string entry = ptx.substr(ptx.find(".visible .entry"));
  // Thread 0 marks the block arrived where the bit is set (the flag is the state bit, under the
  // mask of a fresh instance's)...
  std::smatch fresh;
  ASSERT_TRUE(std::regex_search(entry, fresh, std::regex("and\\.b32 %s12, %s7, ([0-9]+);"))) << entry;
  EXPECT_EQ(std::stoul(fresh[1]) & kStepNoArrive, kStepNoArrive) << entry;
  // ... the step's end goes on to the next slot, before the barrier, where the bit is set and
  // the step waited at its start or depends on nothing...
  const size_t called = entry.find("$called:"), end = entry.find("$step_end:");
  ASSERT_NE(called, std::string::npos) << entry;
  ASSERT_NE(end, std::string::npos) << entry;
  EXPECT_TRUE(std::regex_search(
      entry.substr(called, end - called),
      std::regex("and\\.b32 %s11, %s7, " + std::to_string(kStepNoArrive) +
                 ";\\s+setp\\.ne\\.u32 %q3, %s11, 0;\\s+and\\.b32 %s11, %s7, [0-9]+;\\s+setp\\.ne\\.and\\.u32 %q3, "
                 "%s11, 0, %q3;\\s+not\\.pred %q2, %q3;\\s+add\\.u32 %s2, %s2, 1;\\s+bra\\.uni "
                 "\\$step_fill;")))
      << entry;
  // ... (where it is not, the fill goes to the barrier at once, the slot's wait left to after it)...
  const size_t fill = entry.find("$step_fill:"), ready = entry.find("$step_ready:");
  ASSERT_LT(fill, ready) << entry;
  EXPECT_TRUE(std::regex_search(entry.substr(fill, ready - fill),
                                std::regex("@%q2 st\\.shared\\.u32 \\[%sk_slot\\+[0-9]+\\], %s12;\\s+@%q2 bra "
                                           "\\$step_end;\\s+$")))
      << entry;
  // ... and otherwise releases only for a block not marked, after the reducing barrier.
  const size_t arrive = entry.find("$step_arrive:"), release = entry.find("red.release.gpu.global.add.u64");
  ASSERT_NE(arrive, std::string::npos) << entry;
  EXPECT_TRUE(std::regex_search(entry.substr(arrive, release - arrive),
                                std::regex("and\\.b32 %s11, %s12, " + std::to_string(kStepNoArrive) +
                                           ";\\s+setp\\.ne\\.u32 %q1, %s11, 0;\\s+@%q1 bra \\$step_arrived;")))
      << entry;
  const std::string reducing = "barrier.red.or.pred %q1, " + std::to_string(kBlockBarrier) + ", %q2;";
  EXPECT_EQ(count(entry, reducing), 1u) << entry;
  EXPECT_LT(entry.find(reducing), arrive) << entry;
  EXPECT_GT(entry.find(reducing), called) << entry;
  // The same PTX for any edges: the step table alone says which are block-local.
  EXPECT_EQ(ptx, generate_entry_ptx(two_step_spec(ArgSource::Params)));
}

TEST(CudaAbi, TheStepTableIsReadAtItsLayoutsOffsets) {
  EntrySpec spec = two_step_spec(ArgSource::Params);
  spec.steps[0].first = 3;
  spec.steps[1].cores = 2;
  const std::vector<uint32_t> t = step_table(spec);
  ASSERT_EQ(t.size(), kTableHeaderWords + 2 * kStepWords + 2);  // one dependency pair
  EXPECT_EQ(t[0], 2u);
  const uint32_t *r0 = &t[kTableHeaderWords], *r1 = r0 + kStepWords;
  EXPECT_EQ(r0[kStepKernel], 0u);
  EXPECT_EQ(r1[kStepKernel], 1u);  // k0 and k1: two call sites
  EXPECT_EQ(r0[kStepBlockDim], 8u);
  EXPECT_EQ(r0[kStepCores], 4u);
  EXPECT_EQ(r1[kStepCores], 2u);
  EXPECT_EQ(r0[kStepFirst], 3u);
  EXPECT_EQ(r0[kStepArgBase], 0u);
  EXPECT_EQ(r1[kStepArgBase], 2u);
  EXPECT_EQ(r0[kStepDepBegin], r0[kStepDepEnd]);
  EXPECT_EQ(r1[kStepDepEnd] - r1[kStepDepBegin], 2u);
  EXPECT_EQ(t[r1[kStepDepBegin]], 0u);      // step 0...
  EXPECT_EQ(t[r1[kStepDepBegin] + 1], 4u);  // ... on its 4 cores
  // The record's copy of its first pair, which thread 0 reads with the record; none for step 0.
  EXPECT_EQ(r1[kStepDep0Step], 0u);
  EXPECT_EQ(r1[kStepDep0Cores], 4u);
  EXPECT_EQ(r0[kStepDep0Step], 0u);
  EXPECT_EQ(r0[kStepDep0Cores], 0u);
  EXPECT_EQ(r0[kStepFlags] & (kStepWaitNow | kStepFenceBefore | kStepFenceAfter), 0u);
  EXPECT_EQ(r1[kStepFlags] & (kStepWaitNow | kStepFenceBefore | kStepFenceAfter), kStepWaitNow | kStepFenceBefore);
  const std::string ptx = generate_entry_ptx(spec);
  const std::string entry = ptx.substr(ptx.find(".visible .entry"));
  EXPECT_TRUE(contains(entry, "setp.ge.u32 %q1, %s2, 2;")) << entry;  // the count
  EXPECT_TRUE(contains(entry, "mad.wide.u32 %t2, %s2, " + std::to_string(4 * kStepWords) + ", %t1;")) << entry;
  EXPECT_TRUE(contains(entry, "add.u64 %t2, %t2, " + std::to_string(4 * kTableHeaderWords) + ";")) << entry;
  // Every word of the record is read from the step's record (%t2), at its offset, by thread 0
  // alone, as three vectors: the other threads read the slot it fills.
  EXPECT_TRUE(
      contains(entry, "ld.global.nc.v4.u32 {%s3, %s4, %s5, %s6}, [%t2+" + std::to_string(4 * kStepKernel) + "];"))
      << entry;
  EXPECT_TRUE(
      contains(entry, "ld.global.nc.v4.u32 {%s7, %s8, %s13, %s14}, [%t2+" + std::to_string(4 * kStepFlags) + "];"))
      << entry;
  EXPECT_TRUE(contains(entry, "ld.global.nc.v2.u32 {%s9, %s10}, [%t2+" + std::to_string(4 * kStepDepBegin) + "];"))
      << entry;
  EXPECT_EQ(count(entry, "[%t2+"), 3u) << entry;
  const std::regex at_record("\\[%t2\\+([0-9]+)\\]");
  for (auto it = std::sregex_iterator(entry.begin(), entry.end(), at_record); it != std::sregex_iterator(); ++it)
    EXPECT_LT(std::stoul((*it)[1].str()), 4 * kStepWords) << "past the record: " << (*it)[0].str();
  EXPECT_EQ(count(entry, "$sk_calls: .branchtargets $call_0, $call_1;"), 1u) << entry;
}

// The launch epoch is device state (a CUDA graph freezes the parameters): each block's thread 0
// reads the last run's epoch from the sync buffer before any wait, and runs as the next one;
// the last block to pass the launch's last iteration barrier (the done counter reaching the
// grid times the runs) writes its epoch back and clears the counter. The entry takes no epoch
// parameter.
TEST(CudaAbi, TheLaunchEpochIsReadAndAdvancedOnTheDevice) {
  const SyncLayout l = sync_layout(2);
  const std::string ptx = generate_entry_ptx(two_step_spec(ArgSource::Params));
  const std::string entry = ptx.substr(ptx.find(".visible .entry"));
  EXPECT_FALSE(contains(entry, "sk_epoch")) << entry;
  EXPECT_EQ(count(entry.substr(0, entry.find('{')), ".param "), kEntryParams) << entry;
  const size_t read = entry.find("ld.relaxed.gpu.global.u64 %rd3, [%rd1+" + std::to_string(l.epoch) + "];");
  ASSERT_NE(read, std::string::npos) << entry;
  EXPECT_LT(read, entry.find("$init_done:")) << "thread 0 reads it";
  EXPECT_LT(entry.find("add.u64 %rd3, %rd3, 1;"), entry.find("$init_done:")) << entry;
  EXPECT_LT(entry.find("$init_done:"), entry.find("$steps:")) << entry;
  // Once per block and run, after its last step.
  EXPECT_EQ(count(entry, "call (g), __sk_next"), 1u) << entry;
  EXPECT_GT(entry.find("call (g), __sk_next"), entry.rfind("red.release.gpu.global.add.u64")) << entry;
  EXPECT_GT(entry.find("call (g), __sk_next"), entry.rfind("$step_none:")) << "blocks that run no step pass it too";
  // The slot after a run's last instance holds the end marker and the run's last step, which a
  // hang at the barrier between runs reports (thread 0 is in that slot then).
  const size_t none = entry.rfind("$step_none:");
  ASSERT_NE(none, std::string::npos) << entry;
  const std::string end_slot = entry.substr(none, entry.find("$step_filled:", none) - none);
  EXPECT_TRUE(contains(end_slot, "mov.u32 %s3, 4294967295;")) << end_slot;
  EXPECT_TRUE(std::regex_search(
      end_slot, std::regex("sub\\.u32 %s2, %s2, 1;\\s+st\\.shared\\.u32 \\[%sk_slot\\+[0-9]+\\], %s2;")))
      << end_slot;
  EXPECT_GT(entry.find("call (g), __sk_next"), entry.rfind("$steps_done:")) << entry;
  const std::string next = ptx_function(ptx, "__sk_next");
  ASSERT_FALSE(next.empty()) << ptx;
  EXPECT_TRUE(contains(next, "atom.acq_rel.gpu.global.add.u64 %rd7, [%rd1+" + std::to_string(l.done) + "], 1;"))
      << next;
  EXPECT_TRUE(contains(next, "mov.u32 %r2, %nctaid.x;")) << next;
  const size_t end = next.find("$X_end:");
  ASSERT_NE(end, std::string::npos) << next;
  EXPECT_GT(next.find("st.relaxed.gpu.global.u64 [%rd1+" + std::to_string(l.done) + "], 0;"), end) << next;
  EXPECT_GT(next.find("st.relaxed.gpu.global.u64 [%rd1+" + std::to_string(l.epoch) + "], %rd2;"), end) << next;
  EXPECT_EQ(count(next, "st.relaxed.gpu.global"), 2u) << "only the last arriver writes, once";
}

// The entry loops over its runs: the run count and the stop flag's address are parameters,
// thread 0 keeps the launch's first and last epoch, and after each run __sk_next decides for
// every block. One reader: only the last arriver reads the flag (once per run, not in the run
// count's last) and the abort word, and publishes the decision in the run word, which the
// others wait for with the deadline of every wait. A wait ends on this launch's abort,
// whichever of its runs raised it.
TEST(CudaAbi, TheEntryLoopsOverItsRunsAndOneBlockReadsTheStopFlag) {
  const SyncLayout l = sync_layout(2);
  const std::string ptx = generate_entry_ptx(two_step_spec(ArgSource::Params));
  const std::string entry = ptx.substr(ptx.find(".visible .entry"));
  const std::string params = entry.substr(0, entry.find('{'));
  EXPECT_TRUE(contains(params, ".param .u32 sk_runs,")) << params;
  EXPECT_TRUE(contains(params, ".param .u64 sk_stop)")) << params;
  EXPECT_LT(params.find("sk_report"), params.find("sk_runs")) << params;
  EXPECT_LT(entry.find("ld.param.u32 %r2, [sk_runs];"), entry.find("$init_done:")) << entry;
  EXPECT_LT(entry.find("ld.param.u64 %rd1, [sk_stop];"), entry.find("$init_done:")) << entry;
  const size_t loop = entry.find("$sk_run:");
  ASSERT_NE(loop, std::string::npos) << entry;
  EXPECT_GT(loop, entry.find("$init_done:")) << "the parameters are read once";
  EXPECT_LT(loop, entry.find("$step:")) << entry;
  EXPECT_EQ(count(entry, "bra $sk_run;"), 1u) << entry;
  EXPECT_GT(entry.find("bra $sk_run;"), entry.find("call (g), __sk_next, ();")) << entry;

  const std::string next = ptx_function(ptx, "__sk_next");
  ASSERT_FALSE(next.empty()) << ptx;
  const size_t last = next.find("$X_last:");
  ASSERT_NE(last, std::string::npos) << next;
  EXPECT_LT(next.find("@%p1 bra $X_last;"), next.find("call __sk_wait")) << "the last arriver does not wait";
  EXPECT_EQ(count(next, "ld.relaxed.gpu.global.u32"), 1u) << next;  // the flag
  EXPECT_GT(next.find("ld.relaxed.gpu.global.u32"), last) << "read by the last arriver only";
  EXPECT_GT(next.find("ld.relaxed.gpu.global.u32"), next.find("@%p2 bra $X_end;")) << "not in the last run";
  EXPECT_GT(next.find("[%rd9+" + std::to_string(8 * kReportAbortWord) + "]"), last) << next;
  // One atomic (the done count, which acquires every block's writes of the run before the
  // flag is read), two releases of the run word (again, and stop), no fence of its own.
  EXPECT_EQ(count(next, "atom."), 1u) << next;
  EXPECT_EQ(count(next, "st.release.gpu.global.u64 [%rd1+" + std::to_string(l.run) + "]"), 2u) << next;
  EXPECT_EQ(count(next, "fence."), 0u) << next;
  EXPECT_EQ(count(next, "call __sk_wait"), 1u) << next;
  EXPECT_TRUE(contains(next, "add.u64 %rd8, %rd1, " + std::to_string(l.run) + ";")) << next;
  EXPECT_TRUE(contains(next, "st.param.b32 [a2], " + std::to_string((unsigned)SyncPoint::Iteration) + ";")) << next;
  EXPECT_EQ(std::string(sync_point_name((uint32_t)SyncPoint::Iteration)),
            "the barrier between two runs of sk_launch_repeat");
  EXPECT_EQ(count(next, "barrier.sync " + std::to_string(kBlockBarrier) + ";"), 2u) << next;

  const std::string wait = ptx_function(ptx, "__sk_wait");
  EXPECT_TRUE(contains(wait, "setp.ge.u64 %p2, %rd6, %rd13;")) << wait;
  const std::regex first("ld\\.shared\\.u64 %rd13, \\[__sk_dynamic_shared\\+([0-9]+)\\];");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(wait, m, first)) << wait;
  EXPECT_TRUE(contains(entry, "st.shared.u64 [__sk_dynamic_shared+" + m[1].str() + "], %rd3;")) << entry;
}

// libsk's per-block state lies past the sub-kernels' dynamic shared bytes, 16-aligned, and
// within what each launch passes (entry_dynamic_shared): the block's fields, two slots of the
// running instance's, a selector byte per thread.
TEST(CudaAbi, TheBlockStateFitsTheDynamicSharedMemoryALaunchPasses) {
  for (uint32_t sub_kernels : {0u, 100u, 4096u}) {
    EntrySpec spec = two_step_spec(ArgSource::Buffer);
    spec.dynamic_shared = sub_kernels;
    const std::string ptx = generate_entry_ptx(spec);
    const uint32_t base = (sub_kernels + 15) / 16 * 16, end = entry_dynamic_shared(spec);
    // The block's: 7 u64 (the block shape one), a u64 per flag, 2 u32, 16-aligned. A slot's: 3
    // u64 and 9 u32, 16-aligned.
    const uint32_t block = (56 + 8 * SK_CROSS_CORE_FLAGS + 8 + 15) / 16 * 16, slot = 64;
    EXPECT_EQ(end - base, block + 2 * slot + spec.threads);
    auto range = [&ptx](const char *pattern) {
      const std::regex place(pattern);
      uint32_t lowest = UINT32_MAX, highest = 0;
      for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), place); it != std::sregex_iterator(); ++it) {
        const uint32_t offset = (uint32_t)std::stoul((*it)[1].str());
        lowest = std::min(lowest, offset);
        highest = std::max(highest, offset);
      }
      return std::make_pair(lowest, highest);
    };
    const auto fields = range("__sk_dynamic_shared\\+([0-9]+)");
    EXPECT_EQ(fields.first, base);
    EXPECT_EQ(fields.second, base + 60 + 8 * SK_CROSS_CORE_FLAGS);  // the early returns' count, the last
    // Slot fields are addressed past the thread's slot: slot 0's offsets, the last field a u32
    // after 3 u64 and 8 u32. A selector byte holds its slot's offset: a move to the other slot
    // adds it or not.
    const auto slots = range("%sk_slot\\+([0-9]+)");
    EXPECT_EQ(slots.first, base + block);
    EXPECT_EQ(slots.second, base + block + 24 + 8 * 4);
    EXPECT_TRUE(contains(ptx, "selp.u32 %sk_u, " + std::to_string(slot) + ", 0, %sk_p;")) << ptx;
    const auto selectors = range("\\[%sk_[tv]\\+([0-9]+)\\]");
    EXPECT_EQ(selectors.first, base + block + 2 * slot);
    EXPECT_EQ(selectors.second, selectors.first);
    EXPECT_EQ(selectors.first + spec.threads, end);
  }
}

// Every placeholder of the template has a value, and no template note reaches the PTX.
TEST(CudaPtxTemplate, TheGeneratedPtxHasNoPlaceholderLeft) {
  for (ArgSource args : {ArgSource::Params, ArgSource::Buffer}) {
    const std::string ptx = generate_entry_ptx(two_step_spec(args));
    std::smatch m;
    EXPECT_FALSE(std::regex_search(ptx, m, std::regex("@[A-Za-z_]"))) << m.str() << " in\n" << ptx;
    EXPECT_FALSE(contains(ptx, "//!")) << ptx;
    EXPECT_EQ(count(ptx, "// call site "), 2u);  // one per distinct sub-kernel
    // Each thread-0-only function, and the entry's start, and a step's start, next block and end.
    EXPECT_EQ(count(ptx, "mov.u32 %r1, %tid.x;"), 12u);
  }
}

TEST(CudaPtxTemplate, ValuesPartsAndWholeLinePlaceholders) {
  const PtxTemplate t(
      "//! notes before the first part are dropped\n"
      "//! @part guard(SKIP)\n"
      "  @%p1 bra $@SKIP@;\n"
      "//! @part pair(A, B)\n"
      "//! a note inside a part is dropped\n"
      "@A@+@B@\n"
      "//! @part main\n"
      "  mov.u32 %r1, @X@;\n"
      "@guard(@LABEL@_done)@\n"
      "@EMPTY@\n"
      "@MULTI@\n"
      "  x @pair(X, literal)@ @UNKNOWN@ @!%p2 @nopart()@\n"
      "end\n");
  const PtxValues v = {{"X", "7"}, {"LABEL", "Q"}, {"EMPTY", ""}, {"MULTI", "a\nb"}};
  EXPECT_EQ(t.expand("main", v),
            "  mov.u32 %r1, 7;\n"
            "  @%p1 bra $Q_done;\n"
            "a\nb\n"
            "  x 7+literal @UNKNOWN@ @!%p2 @nopart()@\n"
            "end\n");
  EXPECT_EQ(t.part_names(), (std::vector<std::string>{"guard", "main", "pair"}));
  EXPECT_EQ(t.expand("missing", v), "");
}
