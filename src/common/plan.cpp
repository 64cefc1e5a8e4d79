#include "common/plan.hpp"

#include <algorithm>
#include <utility>

#include "common/block_local.hpp"
#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "common/step_placement.hpp"

namespace sk {
namespace {

// The hard-sync kernels of the segment being built, per kernel kind: a whole-core hard sync
// counts the super kernel's cores, so each of them needs exactly its own count there.
struct HardSyncDemand {
  struct Need {
    uint32_t lo = 0, hi = 0;  // block dims asked for (lo == hi when consistent)
    int32_t first = -1;       // index of the first such kernel
  };
  Need need[4];
  void add(const PlanInput &k, uint32_t index) {
    Need &n = need[static_cast<int>(k.kind)];
    if (n.first < 0) {
      n.lo = n.hi = k.block_dim;
      n.first = static_cast<int32_t>(index);
    } else {
      n.lo = std::min(n.lo, k.block_dim);
      n.hi = std::max(n.hi, k.block_dim);
    }
  }
  // The first kind whose hard-sync kernels do not all get their own count in `layout`, or -1.
  int conflict(const CoreLayout &layout) const {
    for (int k = 0; k < 4; ++k) {
      if (need[k].first < 0) continue;
      const uint32_t units = layout.units_for(static_cast<KernelKind>(k));
      if (need[k].lo != units || need[k].hi != units) return k;
    }
    return -1;
  }
};

std::string describe_split(const std::vector<PlanInput> &kernels, uint32_t i, const HardSyncDemand &before,
                           const CoreLayout &layout, int kind) {
  const PlanInput &k = kernels[i];
  const KernelKind kk = static_cast<KernelKind>(kind);
  const uint32_t units = layout.units_for(kk);
  char text[700];
  if ((k.usage & kUsesHardSync) && k.kind == kk && k.block_dim != units) {
    std::snprintf(text, sizeof text,
                  "kernel %u '%s' uses hard cross-core sync on %u %s, but with the kernels before it the super "
                  "kernel has %u",
                  i, k.name.c_str(), k.block_dim, kernel_unit_name(kk), units);
  } else {
    const HardSyncDemand::Need &n = before.need[kind];
    std::snprintf(text, sizeof text,
                  "kernel %u '%s' needs %u %s, but kernel %d '%s' before it uses hard cross-core sync on %u", i,
                  k.name.c_str(), units, kernel_unit_name(kk), n.first, kernels[n.first].name.c_str(), n.lo);
  }
  return text;
}

// Splits the kernels into segments (dispatches) by the hard-sync rule and gives each its layout.
sk_status plan_segments(const Plan &plan, const std::vector<PlanInput> &kernels, std::vector<PlanSegment> *out) {
  const ScopeOptions &options = plan.options;
  const uint32_t device_cores = plan.device_cores;
  LayoutDemand demand;
  HardSyncDemand hard;
  PlanSegment seg;
  std::string reason;
  // Ends the segment being built before kernel `end`, with the layout of what it holds.
  auto close_segment = [&](uint32_t end) {
    if (sk_status st =
            fit_layout(demand.nominal(), device_cores, options, plan.subject, &seg.layout, &seg.layout_note);
        st != SK_OK)
      return st;
    seg.end = end;
    seg.reason = std::move(reason);
    out->push_back(std::move(seg));
    return SK_OK;
  };
  for (uint32_t i = 0; i < kernels.size(); ++i) {
    const PlanInput &k = kernels[i];
    if (k.plain_launch) {
      // A dispatch of its own, the kernels before and after it each in theirs.
      const std::string subject = "kernel " + std::to_string(i) + " '" + k.name + "'";
      if (i > seg.first)
        if (sk_status st = close_segment(i); st != SK_OK) return st;
      if (i > 0) reason = subject + " is launched as compiled, on its own (the backend cannot call it)";
      seg = PlanSegment{};
      seg.first = i;
      seg.plain_launch = true;
      demand = LayoutDemand{};
      demand.add(k.kind, std::min(k.block_dim, device_cores));
      if (sk_status st = close_segment(i + 1); st != SK_OK) return st;
      seg = PlanSegment{};
      seg.first = i + 1;
      reason = subject + " before it is launched as compiled, on its own";
      demand = LayoutDemand{};
      hard = HardSyncDemand{};
      continue;
    }
    if ((k.usage & kUsesGroupFlags) && !is_mixed(k.kind))
      return fail(SK_ERR_INCOMPATIBLE,
                  "%s is a %s kernel but uses group flags (sk_cross_core_set_flag / sk_cross_core_wait_flag), "
                  "which pair a group's cube core with its vector cores: declare it mixed (mix_1_1 or mix_1_2)",
                  step_subject(plan, i, k).c_str(), kernel_kind_name(k.kind));
    LayoutDemand next = demand;
    next.add(k.kind, k.block_dim);
    // Most kernels change neither the layout nor the hard-sync demand: nothing to check again.
    if (next == demand && !(k.usage & kUsesHardSync)) continue;
    HardSyncDemand next_hard = hard;
    if (k.usage & kUsesHardSync) next_hard.add(k, i);
    CoreLayout layout;
    if (sk_status st = fit_layout(next.nominal(), device_cores, options, plan.subject, &layout, nullptr);
        st != SK_OK)
      return st;
    const int kind = next_hard.conflict(layout);
    if (kind >= 0 && i > seg.first) {
      std::string why = describe_split(kernels, i, hard, layout, kind);
      if (options.strict_scope_abort)
        return fail(SK_ERR_INCOMPATIBLE,
                    "%s: %s (strict-scope-check=abort; with bypass the scope is split before kernel %u)",
                    plan.subject.c_str(), why.c_str(), i);
      if (sk_status st = close_segment(i); st != SK_OK) return st;
      seg = PlanSegment{};
      seg.first = i;
      reason = std::move(why);
      next = LayoutDemand{};
      next.add(k.kind, k.block_dim);
      next_hard = HardSyncDemand{};
      if (k.usage & kUsesHardSync) next_hard.add(k, i);
    }
    demand = next;
    hard = next_hard;
  }
  if (seg.first == kernels.size()) return SK_OK;  // it ended with a plain launch
  return close_segment(static_cast<uint32_t>(kernels.size()));
}

// Maps a step onto its segment's cores.
sk_status map_step(const Plan &plan, uint32_t i, const PlanSegment &seg, PlanStep *step) {
  const PlanInput &k = step->kernel;
  const uint32_t available = seg.layout.units_for(k.kind);
  if (available == 0)
    return fail(SK_ERR_INCOMPATIBLE, "%s (%s) cannot run in a %s super kernel", step_subject(plan, i, k).c_str(),
                kernel_kind_name(k.kind), seg.layout.ratio_name());
  step->units = std::min(k.block_dim, available);
  if ((k.usage & kUsesSync) && step->units < k.block_dim)
    return refuse_multiplexed_sync(step_subject(plan, i, k), k,
                                   "more than the " + std::to_string(available) + " " + kernel_unit_name(k.kind) +
                                       (plan.unfused ? " of this device" : " the super kernel has on this device"));
  step->cores = seg.layout.cores_for(k.kind, step->units);
  step->blocks_per_core = (k.block_dim + step->units - 1) / step->units;
  return SK_OK;
}

// Who waits for whom: the previous step of the same stream (or simply the previous step), and
// split-phase overlap where the kernels ask for it and the options allow it, never across a
// segment boundary.
void link_steps(Plan &plan) {
  const ScopeOptions &o = plan.options;
  const bool overlap = o.early_start && !o.debug_sync_all;
  uint32_t streams = 0;
  for (const PlanStep &s : plan.steps) streams = std::max(streams, s.kernel.stream + 1);
  plan.streams = o.stream_fusion && streams > 1;
  std::vector<int32_t> last(streams, -1);
  std::vector<uint32_t> tails;  // stream mode: last steps of the previous segment
  uint32_t segment = 0;
  std::vector<bool> first_in_segment(streams, true);
  for (uint32_t i = 0; i < plan.steps.size(); ++i) {
    PlanStep &s = plan.steps[i];
    const uint32_t stream = plan.streams ? s.kernel.stream : 0;
    if (s.segment != segment) {
      segment = s.segment;
      tails.clear();
      for (int32_t t : last)
        if (t >= 0) tails.push_back(static_cast<uint32_t>(t));
      std::fill(first_in_segment.begin(), first_in_segment.end(), true);
    }
    s.pred = last[stream];
    s.after =
        s.kernel.after;  // the events' steps (kept in kernel.after for a captured launch); segment tails join below
    if (plan.streams && first_in_segment[stream] && s.segment > 0)
      s.after.insert(s.after.end(), tails.begin(), tails.end());
    first_in_segment[stream] = false;
    const bool same_segment = s.pred >= 0 && plan.steps[s.pred].segment == s.segment;
    s.wait_in_kernel = overlap && same_segment && (s.kernel.usage & kUsesWaitInKernel);
    // A graph node of programmatic dependent launch starts before the node it waits for ends
    // only if that node lets it (launch_dependents); a step of one waits at its start otherwise.
    // PDL holds a head back until every block before has let it start; a fused block runs it as
    // soon as its own part ends, which is the same for a head that writes nothing others read.
    if ((s.kernel.usage & kUsesWaitInKernel) == kUsesGridDependencyWait) {
      auto lets_start = [&](int32_t d) { return (plan.steps[d].kernel.usage & kUsesGridDependencyLaunch) != 0; };
      s.wait_in_kernel = s.wait_in_kernel && !(s.kernel.usage & kUsesWriteBeforeGridDependencyWait) &&
                         lets_start(s.pred) && std::all_of(s.after.begin(), s.after.end(), lets_start);
    }
    s.arrive_in_kernel = overlap && (s.kernel.usage & kUsesSetNextTaskStart);
    if (s.pred >= 0 && !same_segment) plan.steps[s.pred].arrive_in_kernel = false;
    last[stream] = static_cast<int32_t>(i);
  }
  // The last step of a segment must end before the next segment starts.
  for (size_t seg = 0; seg + 1 < plan.segments.size(); ++seg)
    plan.steps[plan.segments[seg].end - 1].arrive_in_kernel = false;
}

}  // namespace

std::string step_subject(const Plan &plan, uint32_t i, const PlanInput &k) {
  if (plan.unfused) return plan.subject + ": kernel '" + k.name + "'";
  return plan.subject + ": kernel " + std::to_string(i) + " '" + k.name + "'";
}

sk_status refuse_multiplexed_sync(const std::string &subject, const PlanInput &k, const std::string &where) {
  return fail(SK_ERR_INCOMPATIBLE,
              "%s synchronises its cores (%s) on block_dim %u, %s (blocks of a kernel that synchronises cannot be "
              "multiplexed)",
              subject.c_str(), sync_reason(k.usage, k.usage_paths).c_str(), k.block_dim, where.c_str());
}

sk_status build_unfused_plan(const PlanInput &in, uint32_t device_cores, Plan *out) {
  return build_plan(std::string(in.symbol), ScopeOptions{}, {in}, device_cores, out, "sk_launch_kernel");
}

GridShape launch_grid(uint32_t block_dim, const GridShape &grid) {
  if (!grid[0]) return {block_dim, 1, 1};
  return {grid[0], std::max(grid[1], 1u), std::max(grid[2], 1u)};
}

Plan segment_plan(const Plan &plan, uint32_t segment) {
  const PlanSegment &seg = plan.segments[segment];
  Plan out;
  out.name = plan.name;
  out.subject = plan.subject;
  out.unfused = plan.unfused;
  out.options = plan.options;
  out.device_cores = plan.device_cores;
  out.cores = seg.layout.cores();
  out.streams = plan.streams;
  out.segments = {seg};
  out.segments[0].first = 0;
  out.segments[0].end = seg.end - seg.first;
  out.segments[0].reason.clear();
  auto local = [&seg](int64_t step) { return step >= seg.first ? step - seg.first : -1; };
  for (uint32_t i = seg.first; i < seg.end; ++i) {
    PlanStep s = plan.steps[i];
    s.segment = 0;
    s.pred = static_cast<int32_t>(local(s.pred));
    std::vector<uint32_t> after;
    for (uint32_t d : s.after)
      if (local(d) >= 0) after.push_back(static_cast<uint32_t>(local(d)));
    s.after = std::move(after);
    out.max_block_dim = std::max(out.max_block_dim, s.kernel.block_dim);
    out.steps.push_back(std::move(s));
  }
  return out;
}

sk_status build_plan(const std::string &name, const ScopeOptions &options, std::vector<PlanInput> kernels,
                     uint32_t device_cores, Plan *out, const char *unfused_call) {
  if (kernels.empty())
    return fail(SK_ERR_STATE, "scope '%s': no kernel was added; nothing to finalize", name.c_str());
  Plan plan;
  plan.name = name;
  plan.unfused = unfused_call != nullptr;
  plan.subject = plan.unfused ? std::string(unfused_call) : "scope '" + name + "'";
  plan.options = options;
  plan.device_cores = device_cores;
  for (const PlanInput &k : kernels) plan.max_block_dim = std::max(plan.max_block_dim, k.block_dim);
  if (sk_status st = plan_segments(plan, kernels, &plan.segments); st != SK_OK) return st;
  plan.steps.reserve(kernels.size());
  for (uint32_t s = 0; s < plan.segments.size(); ++s) {
    const PlanSegment &seg = plan.segments[s];
    plan.cores = std::max(plan.cores, seg.layout.cores());
    for (uint32_t i = seg.first; i < seg.end; ++i) {
      PlanStep step;
      step.kernel = std::move(kernels[i]);
      step.segment = s;
      if (sk_status st = map_step(plan, i, seg, &step); st != SK_OK) return st;
      plan.steps.push_back(std::move(step));
    }
  }
  link_steps(plan);
  if (sk_status st = link_block_local(&plan); st != SK_OK) return st;
  if (sk_status st = place_steps(&plan); st != SK_OK) return st;
  place_cache(&plan);  // common/cache_plan.cpp
  *out = std::move(plan);
  return SK_OK;
}

}  // namespace sk
