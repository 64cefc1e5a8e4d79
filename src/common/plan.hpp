// The backend-neutral plan of a super kernel: which sub-kernel runs where, and where the
// runtime synchronises. Built once at finalize; the backend carries it out; explain shows it.
#pragma once
#include <sk.h>

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/cache_plan.hpp"
#include "common/core_layout.hpp"
#include "common/device_api_usage.hpp"
#include "common/scope_options.hpp"

namespace sk {

// The shape of a kernel's blocks as a CUDA grid numbers them, x fastest (sk_kernel_options.grid);
// zeros: one dimension.
using GridShape = std::array<uint32_t, 3>;

// The grid a launch of `block_dim` blocks shaped `grid` has: `grid`, or block_dim blocks in x.
GridShape launch_grid(uint32_t block_dim, const GridShape &grid);

struct PlanInput {
  std::string name;  // sk_kernel_options.name, else the symbol
  // Borrowed from the kernel's descriptor, which whoever owns the plan keeps alive (a super
  // kernel holds its kernels): no copy per sub-kernel at finalize.
  std::string_view symbol;
  std::string_view module;     // label of the object it comes from
  std::string_view signature;  // "ptr,ptr,u32"
  std::string_view core_type;
  KernelKind kind = KernelKind::Vector;  // from core_type
  uint32_t block_dim = 1;                // blocks: cores of its type, or groups for mixed kernels
  // sk_kernel_options.grid: the blocks' shape, x fastest (product block_dim); zeros: one dimension.
  GridShape grid = {0, 0, 0};
  uint32_t usage = 0;                          // DeviceApiBit set
  std::span<const DeviceApiPath> usage_paths;  // borrowed too: how it reaches what it does not call itself
  uint32_t flags = 0;                          // sk_kernel_options.flags (SK_KERNEL_FLAG_*)
  uint32_t stream = 0;                         // scope stream (stream-fusion=1)
  std::vector<uint32_t> after;  // earlier steps it waits for (scope events); copied into PlanStep::after
  // sk_kernel_options.first_core / core_count: the units its blocks run on, in units of its
  // kind (common/step_placement.hpp); core_count 0: the planner places it.
  uint32_t first_core = 0, core_count = 0;
  // sk_kernel_options.arg_refs: bit i, parameter i is read by reference, from the address its
  // argument slot holds, each time the kernel is called.
  uint64_t arg_refs = 0;
  // A kernel the backend cannot call, launched as compiled instead: a dispatch of its own
  // (PlanSegment), on its blocks as given, each a block of its launch.
  bool plain_launch = false;
};

// How a step's first unit was chosen (explain's `placement`).
enum class StepPlacement : uint8_t {
  Default,  // from unit 0: nothing runs beside it, or the plan places no step (one stream)
  Packed,   // beside the steps that may run at the same time (stream fusion)
  Pinned,   // sk_kernel_options.first_core / core_count
  Follows,  // on the units of the step it is block-local to (PlanStep::block_local)
};

struct PlanStep {
  PlanInput kernel;
  uint32_t segment = 0;          // the dispatch it belongs to (Plan::segments)
  uint32_t units = 1;            // cores of its type (groups, mixed) running its blocks
  uint32_t cores = 1;            // cores taking part: units, or units * (1 + R) when mixed
  uint32_t blocks_per_core = 1;  // ceil(block_dim / units): >1 means blocks are multiplexed
  // Its blocks run on units [first_unit, first_unit + units) of its kind: block b on unit
  // first_unit + b % units.
  uint32_t first_unit = 0;
  StepPlacement placement = StepPlacement::Default;
  // The step it follows in its stream (the previous step without stream fusion), -1: none.
  int32_t pred = -1;
  // Earlier steps that must have ended before it starts: scope events, and with stream fusion
  // the last steps of the previous segment.
  std::vector<uint32_t> after;
  // Its edge to `pred` is block-local (SK_KERNEL_FLAG_BLOCK_LOCAL, scope option block-local):
  // its block i runs after pred's block i on the same core, and it waits for no other.
  bool block_local = false;
  // Some step waits for its arrivals (all but a step whose only waiter is a block-local
  // successor): a step that does not arrive counts nothing, and nothing waits for it.
  bool arrives = true;
  // Split-phase inter-task sync: where this step waits for the previous one, and where it lets
  // the next one start. "start"/"end" of the kernel, or "in-kernel" at its overlap call.
  bool wait_in_kernel = false;    // at sk_wait_pre_task_end or a PTX kernel's griddepcontrol.wait (early-start=1)
  bool arrive_in_kernel = false;  // at sk_set_next_task_start (same condition)
  CachePlacement cache;           // DCCI: per-access flush, whole-cache flushes around it
};

// One dispatch: steps [first, end) on their own core layout. A scope is split into several
// when a kernel with hard cross-core sync runs on another core count than the kernels around
// it (strict-scope-check=bypass), and around a plain-launch step, which is a dispatch alone;
// one sk_launch runs them in order, each after the last ended.
struct PlanSegment {
  uint32_t first = 0, end = 0;
  CoreLayout layout;
  std::string layout_note;    // what fit_layout clipped or forced
  std::string reason;         // why the scope was split before `first` ("" for the first)
  bool plain_launch = false;  // its one step is launched as compiled (PlanInput::plain_launch)
};

struct Plan {
  std::string name;
  // Who its errors name: "scope 'decode'", or the call of an unfused launch, whose one-step
  // plan has no scope ("sk_launch_kernel").
  std::string subject;
  bool unfused = false;
  ScopeOptions options;
  uint32_t device_cores = 0;   // what the device has
  uint32_t max_block_dim = 0;  // max(block_dim)
  uint32_t cores = 0;          // cores it runs on: the most any segment uses
  bool streams = false;        // stream fusion with more than one stream: steps wait for `pred`
                               // and `after`, not for the step before them
  std::vector<PlanSegment> segments;
  std::vector<PlanStep> steps;
};

// Checks and maps the sub-kernels. Fails naming the kernel with SK_ERR_INCOMPATIBLE when a
// kernel that synchronises (sk_sync_all, cross-core flags) would have its blocks multiplexed,
// when a kernel with hard sync would need a split and strict-scope-check=abort, or when core
// types and counts cannot fit; SK_ERR_STATE for an empty scope. `unfused_call` names the call
// of an unfused launch planned as one step (its errors then name that call, not a scope).
sk_status build_plan(const std::string &name, const ScopeOptions &options, std::vector<PlanInput> kernels,
                     uint32_t device_cores, Plan *out, const char *unfused_call = nullptr);

// The one-step plan of an unfused launch (sk_launch_kernel) of kernel `in` on its blocks, with
// the default options, on a device of `device_cores`: planned and checked as a super kernel's
// step, its errors naming sk_launch_kernel. Each backend caches what it builds from it by block
// count in its own way (host: a pool of programs, each busy until its launch completes; CUDA:
// one linked entry per block count for the kernel's life, which every launch shares).
sk_status build_unfused_plan(const PlanInput &in, uint32_t device_cores, Plan *out);

// Segment `segment` of `plan` as a plan of its own: its steps numbered from 0, their waits on
// steps of earlier dispatches dropped (those ended before it starts), one dispatch. What a
// backend that builds one program per dispatch builds each from.
Plan segment_plan(const Plan &plan, uint32_t segment);

// "scope 'decode': kernel 3 'rmsnorm'", or "sk_launch_kernel: kernel 'rmsnorm'" in an unfused
// launch's plan: how planning errors name step i.
std::string step_subject(const Plan &plan, uint32_t i, const PlanInput &k);

// SK_ERR_INCOMPATIBLE for kernel `k` (kUsesSync) whose blocks would be multiplexed:
// "SUBJECT synchronises its cores (REASON) on block_dim N, WHERE (blocks of a kernel that
// synchronises cannot be multiplexed)".
sk_status refuse_multiplexed_sync(const std::string &subject, const PlanInput &k, const std::string &where);

class JsonWriter;

// The plan as JSON (the body of sk_superkernel_explain). `execution`, when given, writes the
// backend's account of how it runs the plan into the object named `section` ("execution" on
// the host device, "cuda_entry" on CUDA: the linked entry's resources).
std::string explain_json(const Plan &plan, const std::string &backend,
                         const std::function<void(JsonWriter &)> &execution = {}, const char *section = "execution");

}  // namespace sk
