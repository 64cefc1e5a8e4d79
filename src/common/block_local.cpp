#include "common/block_local.hpp"

#include <vector>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"

namespace sk {

bool wants_block_local(const ScopeOptions &options, const PlanInput &k) {
  return (k.flags & SK_KERNEL_FLAG_BLOCK_LOCAL) || options.block_local.matches(k.name);
}

std::string block_local_subject(const Plan &plan, uint32_t i) {
  const PlanStep &s = plan.steps[i];
  const PlanStep &p = plan.steps[static_cast<uint32_t>(s.pred)];
  return step_subject(plan, i, s.kernel) + " is block-local to kernel " + std::to_string(s.pred) + " '" +
         p.kernel.name + "' (" +
         ((s.kernel.flags & SK_KERNEL_FLAG_BLOCK_LOCAL) ? "SK_KERNEL_FLAG_BLOCK_LOCAL"
                                                        : "scope option block-local") +
         ")";
}

namespace {

// Why step i's edge to its predecessor cannot be block-local, or "" when it can.
std::string obstacle(const Plan &plan, uint32_t i) {
  const PlanStep &s = plan.steps[i];
  const PlanStep &p = plan.steps[static_cast<uint32_t>(s.pred)];
  char text[300] = "";
  if (p.segment != s.segment)
    return "the scope is split into dispatches between them (" + plan.segments[s.segment].reason + ")";
  if (!s.kernel.after.empty())
    return "it also waits for an event (sk_scope_wait_event) recorded before it, which takes every block of the "
           "kernels before the event";
  if (s.kernel.block_dim != p.kernel.block_dim)
    std::snprintf(text, sizeof text, "their block counts differ (%u vs %u)", s.kernel.block_dim, p.kernel.block_dim);
  else if (s.kernel.kind != p.kernel.kind)
    std::snprintf(text, sizeof text, "their core types differ (%s vs %s)", kernel_kind_name(s.kernel.kind),
                  kernel_kind_name(p.kernel.kind));
  else if (is_mixed(s.kernel.kind))
    std::snprintf(text, sizeof text,
                  "they are mixed (%s) kernels, whose blocks are groups of several cores: a group's cube and vector "
                  "cores would not wait for each other",
                  kernel_kind_name(s.kernel.kind));
  else if (s.kernel.usage & kUsesHardSync)
    return "it uses hard cross-core sync (" + sync_reason(s.kernel.usage & kUsesHardSync, s.kernel.usage_paths) +
           "), whose flags count the super kernel's cores from the first, not its predecessor's";
  return text;
}

}  // namespace

sk_status link_block_local(Plan *plan) {
  if (plan->options.debug_sync_all) return SK_OK;  // a barrier after every kernel, as the option says
  const size_t n = plan->steps.size();
  // Steps that an event (or, with stream fusion, a dispatch boundary) makes others wait for:
  // they keep their arrivals whatever follows them.
  std::vector<bool> awaited(n, false);
  for (const PlanStep &s : plan->steps)
    for (uint32_t d : s.after) awaited[d] = true;
  for (uint32_t i = 0; i < n; ++i) {
    PlanStep &s = plan->steps[i];
    if (s.pred < 0 || !wants_block_local(plan->options, s.kernel)) continue;
    if (std::string why = obstacle(*plan, i); !why.empty())
      return fail(SK_ERR_INCOMPATIBLE, "%s, but %s", block_local_subject(*plan, i).c_str(), why.c_str());
    PlanStep &p = plan->steps[static_cast<uint32_t>(s.pred)];
    s.block_local = true;
    s.wait_in_kernel = false;  // it waits for nothing
    // Its predecessor lets nothing start early (nothing waits for it but this step, on its cores).
    p.arrive_in_kernel = false;
    p.arrives = awaited[static_cast<uint32_t>(s.pred)];
  }
  // A step after a block-local one waits at its start: an earlier wait would need its
  // predecessor's predecessor to have ended on every core, which no arrival tells.
  for (PlanStep &s : plan->steps)
    if (s.pred >= 0 && plan->steps[static_cast<uint32_t>(s.pred)].block_local) s.wait_in_kernel = false;
  return SK_OK;
}

}  // namespace sk
