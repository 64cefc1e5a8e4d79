// Generates the PTX of a CUDA super kernel, from the template cuda/superkernel.ptx: the `.entry`
// that calls each sub-kernel (an `extern "C" __device__` function in a relocatable cubin or
// LTO-IR) with its arguments, and the device library that implements sk_kernel.h's device API
// for that super kernel (sk_block_idx, sk_sync_all, the task-overlap calls, cache calls...).
// nvJitLink links this PTX with the sub-kernels' binaries. Defines the device ABI the host side
// shares with that PTX: the entry's parameters, the sync buffer, the hang report.
//
// Synchronisation (all counters are 64-bit, in a device buffer, never reset):
//  * the launch epoch lives in the sync buffer: each block reads the last launch's epoch at its
//    start and runs as the next one; the last block to end writes it back (__sk_next). The
//    host writes nothing between launches, so a launch replayed from a CUDA graph counts
//    epochs like one libsk queued.
//  * a launch runs its steps up to `runs` times (sk_launch_repeat; 1 for sk_launch), run k as
//    epoch e0 + k. Between two runs every block passes the iteration barrier (__sk_next): the
//    done counter, cumulative within the launch (run k is over at grid * (k + 1)); its last
//    arriver alone reads the stop flag and the abort word and publishes the decision in the
//    run word (2 * epoch, + 1 to stop), which the other blocks wait for.
//  * step i's arrival counter counts one arrival per block (core) that ran it per launch:
//    launch e's step i is over at e * cores_i arrivals. A block waits for the steps step i
//    depends on (listed in the step table) at the start of step i (or at
//    sk_wait_pre_task_end), and arrives at the end of step i (or at
//    sk_set_next_task_start in its last block of the step): split-phase, so arrivals of a
//    fast block may run ahead safely.
//  * sk_sync_all: a per-step counter; an arrival that reads `old` waits for the next multiple
//    of the sub-kernel's own core count, so it spans just the sub-kernel's blocks.
//  * every wait spins with __nanosleep and gives up after the deadline: it then records a hang
//    report (super kernel id, step, block, sync point) and sets the abort word to the launch's
//    epoch, which makes every other wait of that launch (and of no other) return; the host
//    reports SK_ERR_HANG at the next synchronisation.
//
// Steps are data, not code: the entry walks a step table (step_table(), in device memory past
// the sync buffer) and reaches each step's sub-kernel through a jump table (`brx.idx`) to one
// direct call site per distinct sub-kernel. The PTX is the same for any placement of the steps
// (cores, first block, flags, dependencies), and its size grows with the distinct sub-kernels,
// not with the steps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/plan.hpp"
#include "common/signature.hpp"

namespace sk::cuda {

struct EntryStep {
  std::string symbol;  // the sub-kernel's device function (one call site per distinct symbol)
  Signature signature;
  uint32_t block_dim = 1;         // the sub-kernel's own blocks
  GridShape grid = {0, 0, 0};     // their shape (PlanInput::grid); zeros: one dimension
  uint32_t cores = 1;             // blocks of the super kernel that run it (<= grid)
  uint32_t first = 0;             // the first of them (PlanStep::first_unit): first .. first + cores - 1
  bool wait_in_kernel = false;    // wait for the previous step at sk_wait_pre_task_end
  bool arrive_in_kernel = false;  // arrive at sk_set_next_task_start
  bool arrives = true;            // false: nothing waits for it, its blocks count no arrival
  bool dcci_before = false;       // a whole-cache fence before / after the call
  bool dcci_after = false;
  bool gm_flush = true;   // sk_gm_load/store flush their access (else plain accesses)
  uint32_t arg_base = 0;  // first 8-byte argument slot of this step
  // The sub-kernel's threads per block; fewer than the super kernel's: the block's first ones
  // call it, the others go on to the step's end barrier (0: all of them).
  uint32_t threads = 0;
  // Bit j: parameter j is read by reference, from the address in its slot, at each call
  // (sk_kernel_options.arg_refs). Steps of one function with other bits call at other sites.
  uint64_t arg_refs = 0;
  bool is_ref(size_t j) const { return j < 64 && (arg_refs >> j & 1); }
  // Parameters passed as the generic address of their bytes, not by value
  // (PtxKernel::by_address): of their slots, or the address a slot holds when read by reference.
  std::vector<uint32_t> by_address;
  // The block shape (x, y, z) its call site stores for __sk_thread, where it or a helper reads
  // its thread registers through it (PtxKernel::reads_block_shape); {0, 0, 0}: none.
  uint32_t block_shape[3] = {0, 0, 0};
  // Earlier steps whose arrival it waits for (the previous step, or with stream fusion its
  // stream predecessor and the steps of the events it waits on). Empty: it waits for nothing.
  std::vector<uint32_t> deps;
};

enum class ArgSource {
  Params,  // the slots are a byte array in the kernel parameter space (copied at each launch)
  Buffer,  // the slots are in a device buffer the first kernel parameter points to
};

struct EntrySpec {
  std::string entry_name = "sk_superkernel_entry";
  std::string arch = "sm_90";  // for the .target directive
  uint32_t threads = 128;      // threads per block (.reqntid)
  ArgSource args = ArgSource::Params;
  uint32_t arg_slots = 0;
  uint64_t timeout_ns = 10'000'000'000ull;
  uint64_t id = 0;  // names the super kernel in hang reports
  // `extern __shared__` bytes of the sub-kernel that needs the most (they run one after
  // another; every extern __shared__ array starts at the dynamic shared base).
  uint32_t dynamic_shared = 0;
  // The shared overlay (kSharedOverlaySymbol): the static __shared__ bytes the largest call
  // tree of a sub-kernel needs, and the largest alignment of its variables.
  uint64_t shared_overlay_bytes = 0;
  uint32_t shared_overlay_align = 1;
  // Static shared bytes the entry adds so that the dynamic shared base, which the linker puts
  // right after the static bytes, falls on kDynamicSharedAlign (superkernel_build.cpp).
  uint32_t shared_pad_bytes = 0;
  std::vector<EntryStep> steps;
};

// The static __shared__ array the entry defines and the sub-kernels' cubins are rewritten to
// address their static variables in (elf/cubin_shared_overlay.hpp): one array for every
// sub-kernel, as they run one after another in a block, with a block barrier between them.
constexpr char kSharedOverlaySymbol[] = "__sk_shared_overlay";

// Dynamic shared memory each launch of the entry passes: the sub-kernels' bytes, then libsk's
// per-block state (kept out of static shared memory, which is at most 48 KiB a block and
// holds the sub-kernels' static variables).
uint32_t entry_dynamic_shared(const EntrySpec &spec);

// The hardware barrier of every libsk block barrier (the step loop's two a step, the device
// API's block-wide calls): not barrier 0, which __syncthreads() uses. Threads of a sub-kernel
// that returned early wait at libsk's next barrier; on barrier 0 they would complete a
// __syncthreads() the other threads are waiting at. Non-aligned, as they may reach it apart
// from the rest of their warp.
constexpr unsigned kBlockBarrier = 15;

// Kernel parameters of the entry, in order: the argument slots (a byte array of 8*arg_slots
// bytes, at least 8) or the argument buffer's address; the sync buffer's address; the hang
// report's address; the run count (u32, 1 for sk_launch); the stop flag's address (u64, 0:
// none). The first three never change from one launch to the next.
constexpr size_t kEntryParams = 5;
// The bytes of the parameters after the argument slots: two u64, a u32 and the u64 after it
// (8-aligned).
constexpr size_t kEntryOwnParamBytes = 32;

// The sync buffer's first three words: the epoch of the last run that ended (0 before the
// first: the first run is epoch 1), how many blocks have passed the iteration barrier in the
// running launch, and the run word (2 * epoch of the last run whose end was decided, + 1 if
// that run was the launch's last).
constexpr size_t kSyncEpoch = 0, kSyncDone = 8, kSyncRun = 16;

// A super kernel's sync buffer (device memory, 64-bit counters, zeroed on the first launch's
// stream and after a reported hang), at these byte offsets: the epoch, done and run words, step i's
// arrivals at arrivals + 8*i, its sk_sync_all counter at sync_all + 8*i, cross-core flag f's at
// flags + 8*f; then its hang report (kReportWords words). The step table follows, in the same
// allocation, written once before the first launch and never zeroed.
struct SyncLayout {
  size_t epoch = kSyncEpoch, done = kSyncDone, run = kSyncRun;
  size_t arrivals = 0, sync_all = 0, flags = 0;
  size_t grid = 0;    // per step: the word cg::this_grid().sync() counts in (__sk_grid_workspace)
  size_t report = 0;  // where the hang report starts
  size_t bytes = 0;   // the zeroed part, report included
  size_t table = 0;   // where the step table starts (16-aligned, at or past bytes)
};
SyncLayout sync_layout(size_t steps);

// The step table, 32-bit words: a header of kTableHeaderWords (the step count first), then a
// record of kStepWords per step, then the dependency list, (step, cores) pairs that a record's
// [dep_begin, dep_end) indexes in words from the table's start.
constexpr uint32_t kTableHeaderWords = 4;
enum StepWord : uint32_t {
  kStepKernel,    // the call site: index of the step's sub-kernel among the distinct ones
  kStepBlockDim,  // the sub-kernel's blocks
  kStepCores,     // the super kernel's blocks that run them
  kStepFirst,     // the first of those
  kStepFlags,     // kStep* flags below, and the flags the step loop keeps in the block state
  kStepArgBase,   // the first 8-byte argument slot
  // The first dependency pair (zeros for none), also the list's first: read with the record,
  // so that thread 0 polls a one-dependency step's counter after one round trip to memory.
  kStepDep0Step,
  kStepDep0Cores,
  kStepDepBegin,  // the dependency pairs, in words from the table's start
  kStepDepEnd,
  // The grid's x and y extents (sk_kernel_options.grid; block_dim and 1 for one dimension):
  // what __sk_grid reads for a sub-kernel that numbers its blocks in more than one dimension.
  // They also keep records 16-byte aligned for the step loop's vector loads.
  kStepGridX,
  kStepGridY,
  kStepWords,
};
// A step's flags word: the GM_FLUSH, NO_DEPS and ARRIVE_IN_KERNEL bits (entry_ptx.cpp; a
// block-local step has NO_DEPS), and these. NO_DEPS, ARRIVE_IN_KERNEL and NO_ARRIVE are the
// block state bits a fresh instance of the step starts with.
constexpr uint32_t kStepWaitNow = 1u << 8;      // the step's first block on a core waits at its start
constexpr uint32_t kStepFenceBefore = 1u << 9;  // dcci_before: a whole-cache fence before the call
constexpr uint32_t kStepFenceAfter = 1u << 10;  // dcci_after: after it
// The step's blocks count no arrival (nothing waits for it: EntryStep::arrives false): they
// start as arrived.
constexpr uint32_t kStepNoArrive = 1u << 11;
// The step table of a spec, as the host writes it.
std::vector<uint32_t> step_table(const EntrySpec &spec);
// How many of a step table's steps end at one block barrier in the step loop: their blocks
// count no arrival, and they wait at their start or depend on nothing, so the end leaves
// thread 0 nothing to do after the block's threads are done (the others, two: explain's
// cuda_entry.step_loop.one_barrier_steps).
uint32_t one_barrier_steps(const std::vector<uint32_t> &table);
// The distinct call sites (a sub-kernel, and which of its arguments are read by reference), in
// first-use order: a step's kStepKernel indexes this list, and the entry has one call site for
// each.
std::vector<const EntryStep *> distinct_kernels(const EntrySpec &spec);

// Words of the hang report, one per super kernel: the epoch of the launch it reports (0:
// none; the first one stays until a sync reads it), super kernel id, step, block, sync point,
// counter value seen, target; then the abort word, the epoch of the last launch that aborted.
// For InvalidFlag (a flag id out of range, not a hang) the seen and target words are the id
// and the call (FlagCall).
enum ReportWord : uint32_t {
  kReportEpoch,
  kReportId,
  kReportStep,
  kReportBlock,
  kReportPoint,
  kReportSeen,
  kReportTarget,
  kReportAbortWord,
  kReportWords,
  kReportFlagId = kReportSeen,
  kReportFlagCall = kReportTarget,
};
enum class SyncPoint : uint32_t {
  TaskStart = 0,
  TaskEnd = 1,
  WaitPreTaskEnd = 2,
  SyncAll = 3,
  WaitFlagAll = 4,
  InvalidFlag = 5,
  Iteration = 6,      // the barrier between two runs of sk_launch_repeat
  DependentWait = 7,  // griddepcontrol.wait of a PTX kernel (__sk_dependent_wait)
};
// The cross-core flag calls, as an InvalidFlag report names them.
enum class FlagCall : uint32_t { Set = 0, Wait = 1, SetAll = 2, WaitAll = 3 };
const char *sync_point_name(uint32_t point);
const char *flag_call_name(uint64_t call);

// The synchronisation instructions of the step loop's code (its text once, the sub-kernels'
// call sites and the slow wait's call left out), counted in the PTX generate_entry_ptx wrote:
// explain's cuda_entry.step_loop. A dependent step runs each once but the polls, which run
// until the count is reached, and the dependency pair's load, once per pair.
struct StepLoopCode {
  uint32_t block_barriers = 0;  // barrier.sync and barrier.red, reached by every thread
  uint32_t releases = 0;        // release operations: thread 0's arrival
  uint32_t acquires = 0;        // acquire-only fences: after thread 0's polls
  uint32_t full_fences = 0;     // acquire-release fences: the cache options', behind their flags
  uint32_t polls = 0;           // relaxed loads of an arrival counter
  uint32_t table_loads = 0;     // thread 0's loads of the step table: the record, further dependency pairs
};
StepLoopCode step_loop_code(const std::string &ptx);

// The PTX of the entry and its device library. Of the steps it reads only their count and their
// distinct sub-kernels (symbols and signatures): a spec that differs in placement gives the same
// PTX, and only its step_table differs.
std::string generate_entry_ptx(const EntrySpec &spec);

}  // namespace sk::cuda
