// The backend-neutral plan of a super kernel: which sub-kernel runs where, and where the
// runtime synchronises. Built once at finalize; the backend carries it out; explain shows it.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/scope_options.hpp"

namespace sk {

struct PlanInput {
  std::string name;             // sk_kernel_options.name, else the symbol
  // Borrowed from the kernel's descriptor, which whoever owns the plan keeps alive (a super
  // kernel holds its kernels): no copy per sub-kernel at finalize.
  std::string_view symbol;
  std::string_view module;      // label of the object it comes from
  std::string_view signature;   // "ptr,ptr,u32"
  std::string_view core_type;
  uint32_t block_dim = 1;
  uint32_t usage = 0;           // DeviceApiBit set
};

struct PlanStep {
  PlanInput kernel;
  uint32_t cores = 1;             // cores that run its blocks: min(block_dim, super kernel cores)
  uint32_t blocks_per_core = 1;   // ceil(block_dim / cores): >1 means blocks are multiplexed
  // Split-phase inter-task sync: where this step waits for the previous one, and where it lets
  // the next one start. "start"/"end" of the kernel, or "in-kernel" at its overlap call.
  bool wait_in_kernel = false;    // at sk_wait_pre_task_end (early-start=1 and the kernel calls it)
  bool arrive_in_kernel = false;  // at sk_set_next_task_start (same condition)
};

struct Plan {
  std::string name;
  ScopeOptions options;
  uint32_t device_cores = 0;  // what the device has
  uint32_t max_block_dim = 0; // the super kernel's nominal core count, max(block_dim)
  uint32_t cores = 0;         // cores it runs on: min(max_block_dim, device_cores)
  std::vector<PlanStep> steps;
};

// Checks and maps the sub-kernels. Fails with SK_ERR_INCOMPATIBLE naming the kernel when a
// kernel that calls sk_sync_all has more blocks than the device has cores, SK_ERR_STATE for an
// empty scope.
sk_status build_plan(const std::string &name, const ScopeOptions &options, std::vector<PlanInput> kernels,
                     uint32_t device_cores, Plan *out);

// The plan as JSON (the body of sk_superkernel_explain).
std::string explain_json(const Plan &plan, const std::string &backend);

}  // namespace sk
