// What the host executor runs: a plan lowered to call-ready steps, with the synchronisation
// state of every step. A super kernel owns one Program for its whole life; an unfused launch
// gets a one-step Program of its own.
#pragma once
#include <ffi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cache_line.hpp"
#include "common/core_layout.hpp"
#include "host/device_api/cross_core_flags.hpp"
#include "host/executor/kernel_call.hpp"
#include "host/executor/wait.hpp"

namespace sk::host {

class Profiler;
class ProgramPool;

// One cache line each: cores hammer these, and false sharing between steps would serialise them.
struct alignas(kCacheLine) StepCounter {
  std::atomic<uint32_t> value{0};
};
// The release counter, and beside it on its line the end counter of plain programs: a core
// that waits for both (a step that released early must also have ended before the step after
// next runs) fetches one line, and a core counts its release and then its end on a line it
// already holds.
struct alignas(kCacheLine) ReleaseCounter {
  std::atomic<uint32_t> value{0};
  std::atomic<uint32_t> ended{0};
};
struct alignas(kCacheLine) StepBarrier {
  std::atomic<uint32_t> count{0};
  std::atomic<uint32_t> generation{0};
};

// Fields in the order the step loop and the sync code read them: the first cache line holds
// what a plain step needs.
struct StepExec {
  void *fn = nullptr;
  ffi_cif *cif = nullptr;    // prepared once per kernel
  uint32_t first_slot = 0;   // its first argument slot in an ArgBlock
  uint32_t first_param = 0;  // its first parameter's pointer in an ArgBlock (libffi's avalues)
  uint32_t block_dim = 1;
  uint32_t units = 1;             // cores of its type (groups, mixed) running blocks; the stride
  uint32_t cores = 1;             // cores taking part (units * (1 + R) for mixed kernels)
  int32_t pred = -1;              // the step it follows (common/plan.hpp)
  bool direct = false;            // call fn with kDirectArgs slots (see kernel_call.hpp)
  bool call_stack = false;        // call_map: the kernel has stack parameters
  bool copy_avalues = false;      // libffi with aggregates: call_libffi_copying
  bool wait_in_kernel = false;    // previous step awaited at sk_wait_pre_task_end
  bool arrive_in_kernel = false;  // next step released at sk_set_next_task_start
  // Block-local edge (PlanStep::block_local): the core ran pred's blocks of its own, the only
  // ones it reads, so it does not wait; a step that does not arrive counts no release.
  bool block_local = false;
  bool arrives = true;
  // Cache maintenance (common/cache_plan.hpp): whole-cache flushes around the step on each of
  // its cores, and whether sk_gm_load/sk_gm_store flush per access.
  bool flush_before = false;
  bool flush_after = false;
  bool gm_flush = true;
  const uint8_t *call_map = nullptr;  // a mapped call (CallInterface::map); null: libffi
  // A direct or mapped kernel with arguments read by reference: called by call_with_refs
  // (direct and call_map are off). Null otherwise; libffi kernels read those through pointers.
  const StepRefs *refs = nullptr;
  StepFlags *flags = nullptr;       // steps with hard cross-core sync
  const uint32_t *after = nullptr;  // steps that must have ended first (Program::after_lists)
  uint32_t after_count = 0;
  uint32_t unit_class = 0;  // CoreSlot::index it reads: 0 vector, 1 cube, 2 mixed
  uint32_t first_unit = 0;  // its blocks run on units first_unit .. first_unit + units - 1
  uint32_t segment = 0;
  uint32_t sub_block_num = 1;  // vector cores per group it runs on (mixed kernels)
  std::string name;            // reports only
  // The first of its blocks a core at `slot` runs (then every units-th): the core's vector or
  // cube index, or its group, counted from first_unit. Not below units: the core passes the
  // step (below first_unit the difference wraps past them).
  uint32_t first_block(const CoreSlot &slot) const { return slot.index[unit_class] - first_unit; }
};

// One dispatch of the program (common/plan.hpp's PlanSegment): where each core sits in it.
struct SegmentExec {
  CoreLayout layout;
  std::vector<CoreSlot> slots;  // by core; cores past the layout have none
};

// One copy of every argument value of a program: 8-byte slots (one per scalar parameter, an
// aggregate's bytes in as many as it takes) and, for libffi, a pointer to each parameter's
// value: its first slot, or for an argument read by reference the address its slot holds.
// Points into Program::arg_storage.
struct ArgBlock {
  uint64_t *slots = nullptr;
  void **pointers = nullptr;
};

// Where one parameter of a program lies in the argument blocks.
struct ArgParam {
  uint32_t first_slot = 0;
  uint32_t slots = 1;
  bool ref = false;  // read by reference: the slot holds the address (sk_kernel_options.arg_refs)
};

struct Program {
  std::string name;
  uint32_t cores = 1;  // cores that take part; the others pass the task through
  std::vector<StepExec> steps;
  std::vector<SegmentExec> segments;
  std::vector<uint32_t> after_lists;              // StepExec::after points in
  std::vector<std::unique_ptr<StepFlags>> flags;  // of the steps with hard sync
  // Stream fusion: steps wait for their own stream's previous step, so releases do not come
  // step by step and each step counts its own (step_released) instead of the shared counter.
  bool per_step_release = false;
  std::unique_ptr<StepCounter[]> step_released;
  // Only vector steps from core 0 on one segment, no profiling, flushes, flags or events: the executor runs
  // a step loop without their checks (set by allocate_sync_state, after the steps and the
  // profiler).
  bool plain = false;
  // Plain, on the central release counter, and no step waits or releases from inside its
  // kernel (task overlap): a chain of kernels, run by the executor's leanest step loop.
  bool chain = false;
  // Plain programs: one past each core's last step with a block. A core's step loop ends
  // there, so that its last release is the last it does with the launch.
  std::vector<uint32_t> core_steps_end;
  // A launch has ended on every core once all its releases are counted: the program is plain,
  // every core has a block in some step, and no step releases the next from inside its kernel
  // (sk_set_next_task_start). Core 0 then completes the launch at that count
  // (Executor::process) instead of waiting for the other cores to report.
  bool ends_at_last_release = false;
  // The two argument blocks' slots and pointers (allocate_args); never reallocated after.
  std::vector<uint64_t> arg_storage;
  std::vector<void *> arg_pointer_storage;
  std::vector<ArgParam> arg_params;                  // every step's parameters, in step order
  std::vector<std::unique_ptr<StepRefs>> step_refs;  // StepExec::refs point in
  // Sync state. Counters count up and are never reset in the hot path.
  //  released: one counter for the releases of every step (a core releases step i+1 at
  //    sk_set_next_task_start or at its end). A core releases step i only after step i-1 was
  //    released, so releases arrive step by step and "step i released in launch e" is
  //    released >= (e-1) * releases_per_launch + released_before[i] + steps[i].cores: all the
  //    cores share one cache line, as the fastest central barrier does. Steps that do not
  //    arrive (StepExec::arrives) count nothing and are counted in none of these: a core runs
  //    ahead through a block-local step, but no further than the next step that waits, whose
  //    target covers every release before it.
  //  ended[i]: every core of step i ended; used only for steps that release early
  //    (arrive_in_kernel), whose end comes after their release. Plain programs have no
  //    ended[] and count those ends on released.ended instead, one count for all steps as
  //    for the releases: a core releases step i+1 only after every core ended step i (if it
  //    released early), so the ends too arrive step by step, and "step i ended in launch e"
  //    is released.ended >= (e-1) * ends_per_launch + ended_before[i] + steps[i].cores.
  ReleaseCounter released;
  std::vector<uint32_t> released_before;  // releases of the steps before i, in one launch
  uint32_t releases_per_launch = 0;
  std::vector<uint32_t> ended_before;  // plain programs: early-releasing steps' ends before i
  uint32_t ends_per_launch = 0;
  // A two-level combining tree for the releases of plain programs on many cores: a core counts
  // on its group's counter (cores c / release_group), and the last of its group in a step adds
  // the group's cores to `released`. N cores then make about N / G + G serial increments of a
  // contended line per step instead of N. 0: every core counts on `released` (the default up
  // to kCentralBarrierCores cores; set from the executor before allocate_sync_state).
  uint32_t release_group = 0;
  uint32_t release_groups = 0;
  std::unique_ptr<StepCounter[]> group_arrived;  // one counter per group, counting up
  std::vector<uint32_t> group_before;            // [step * release_groups + g]: g's arrivals before step
  std::vector<uint32_t> group_per_launch;        // g's arrivals in one launch
  // Cores of group g taking part in step `step` (a plain step runs on cores 0 .. cores - 1).
  uint32_t group_cores(uint32_t step, uint32_t g) const {
    const uint32_t first = g * release_group, n = steps[step].cores;
    return n <= first ? 0 : (n - first < release_group ? n - first : release_group);
  }
  std::unique_ptr<StepCounter[]> ended;  // null in plain programs (see released above)
  std::unique_ptr<StepBarrier[]> barriers;
  // An unfused launch's program: the kernel, held while the launch is queued (unloading the
  // module right after sk_launch_kernel is safe), and the pool (and its slot there) the program
  // goes back to once the launch has completed (host/executor/program_pool.hpp); no pool: the program
  // is freed then.
  std::shared_ptr<const void> launched_kernel;
  ProgramPool *pool = nullptr;
  uint32_t pool_slot = 0;
  // Per-core, per-step timestamps of profiled launches (profiling=1; host/executor/profiler.hpp), null
  // otherwise: the step loop's profiling hooks cost one branch on it.
  std::shared_ptr<Profiler> profiler;
  // Launch epochs: next_epoch is the epoch of the last launch queued (written in the
  // submitting thread's turn, just before the launch is published); completed_epoch is
  // published when a launch completes. On their own cache line: they change at every launch,
  // and the fields above are read by every core at every step.
  alignas(kCacheLine) std::atomic<uint32_t> next_epoch{0};
  std::atomic<uint32_t> completed_epoch{0};
  // Argument values in two blocks: a launch runs with the block `args` names when it is queued
  // (Executor::submit), and a rebind writes the other one, names it, and waits for the launches
  // of the first before it writes that one again: a launch sees each value old or new, whole,
  // in all its blocks. On this line: the launching thread reads it beside next_epoch.
  std::atomic<const ArgBlock *> args{&arg_blocks[0]};
  ArgBlock arg_blocks[2];
  // Rebinds (Executor::rebind_arg) take turns by ticket, like launches: no lock, so that a
  // decode loop's set_arg and launch take none. Their state is the rebinding thread's alone:
  // the parameter the two blocks differ in (the one the last rebind wrote; kNoParam: none). On
  // a line of their own, away from those the cores and the launching thread use at every launch.
  static constexpr uint32_t kNoParam = 0xffffffffu;
  alignas(kCacheLine) std::atomic<uint32_t> rebind_ticket{0};
  std::atomic<uint32_t> rebind_turn{0};
  uint32_t arg_differs = kNoParam;
  SleepChannel rebind_channel;

  // Sizes the sync state for steps.size() steps and sets plain, chain and ends_at_last_release
  // (program.cpp; call once the steps, the segments and the profiler are final).
  void allocate_sync_state();
  // Sizes both argument blocks for `params` in `slots` slots, all zero (executor_args.cpp);
  // point_args then points each parameter's pointers at its value, once the slots are written.
  void allocate_args(std::vector<ArgParam> params, size_t slots);
  void point_args();
  // `count` scalar parameters, one slot each, pointed at.
  void allocate_args(size_t count);
};

}  // namespace sk::host
