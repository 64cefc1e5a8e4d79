#include "core/plan.hpp"

#include <algorithm>

#include "core/device_api_usage.hpp"
#include "core/error.hpp"

namespace sk {

sk_status build_plan(const std::string &name, const ScopeOptions &options, std::vector<PlanInput> kernels,
                     uint32_t device_cores, Plan *out) {
  if (kernels.empty())
    return fail(SK_ERR_STATE, "scope '%s': no kernel was added; nothing to finalize", name.c_str());
  Plan plan;
  plan.name = name;
  plan.options = options;
  plan.device_cores = device_cores;
  for (const PlanInput &k : kernels) plan.max_block_dim = std::max(plan.max_block_dim, k.block_dim);
  plan.cores = std::min(plan.max_block_dim, device_cores);
  // Overlap is honoured unless early-start=0 or debug-sync-all=1 (a full barrier after every
  // sub-kernel is exactly "no step starts before the previous one ended").
  const bool overlap = options.early_start && !options.debug_sync_all;
  plan.steps.reserve(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    PlanInput &k = kernels[i];
    if ((k.usage & kUsesSyncAll) && k.block_dim > device_cores)
      return fail(SK_ERR_INCOMPATIBLE,
                  "scope '%s': kernel %zu '%s' calls sk_sync_all with block_dim %u, more than the "
                  "device's %u cores (blocks of a kernel that syncs all cannot be multiplexed)",
                  name.c_str(), i, k.name.c_str(), k.block_dim, device_cores);
    PlanStep step;
    step.cores = std::min(k.block_dim, plan.cores);
    step.blocks_per_core = (k.block_dim + step.cores - 1) / step.cores;
    step.wait_in_kernel = overlap && (k.usage & kUsesWaitPreTaskEnd);
    step.arrive_in_kernel = overlap && (k.usage & kUsesSetNextTaskStart);
    step.kernel = std::move(k);
    plan.steps.push_back(std::move(step));
  }
  *out = std::move(plan);
  return SK_OK;
}

}  // namespace sk
