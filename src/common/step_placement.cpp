#include "common/step_placement.hpp"

#include <algorithm>
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "common/block_local.hpp"
#include "common/device_api_usage.hpp"
#include "common/error.hpp"

namespace sk {
namespace {

// Concurrent steps of one other stream looked at per step: the most recent ones, which with
// the placement by stream stand for the older ones (keeps a long scope linear).
constexpr uint32_t kScanPerStream = 16;

// A segment may take more cores than its layout for concurrent or pinned steps when its layout
// is vector-only or cube-only, no debug-aic-num / debug-aiv-num forced its counts, and no
// kernel with hard sync counts its cores. By segment index.
std::vector<bool> widenable_segments(const Plan &plan) {
  std::vector<bool> widens;
  for (const PlanSegment &seg : plan.segments) {
    bool w = !seg.layout.mixed() && !plan.options.debug_aic_num && !plan.options.debug_aiv_num;
    for (uint32_t i = seg.first; w && i < seg.end; ++i) w = !(plan.steps[i].kernel.usage & kUsesHardSync);
    widens.push_back(w);
  }
  return widens;
}

// The units a step of `kind` may use in segment `seg`: the device's cores where it widens.
uint32_t unit_limit(const Plan &plan, const std::vector<bool> &widens, uint32_t seg, KernelKind kind) {
  const uint32_t own = plan.segments[seg].layout.units_for(kind);
  return widens[seg] ? std::max(plan.device_cores, own) : own;
}

sk_status pin_step(const Plan &plan, const std::vector<bool> &widens, uint32_t i, PlanStep *s) {
  const PlanInput &k = s->kernel;
  const PlanSegment &seg = plan.segments[s->segment];
  const uint32_t limit = unit_limit(plan, widens, s->segment, k.kind);
  const char *units = kernel_unit_name(k.kind);
  if ((k.usage & kUsesHardSync) && k.first_core != 0)
    return fail(SK_ERR_INCOMPATIBLE,
                "%s uses hard cross-core sync, which counts the super kernel's %s from the first: its first_core "
                "must be 0, not %u",
                step_subject(plan, i, k).c_str(), units, k.first_core);
  if (k.first_core >= limit || k.core_count > limit - k.first_core)
    return fail(SK_ERR_INCOMPATIBLE,
                "%s is pinned to first_core %u, core_count %u, beyond the %u %s it can run on%s",
                step_subject(plan, i, k).c_str(), k.first_core, k.core_count, limit, units,
                limit == plan.device_cores ? " (the device's)" : " (this dispatch's layout, which cannot widen)");
  if ((k.usage & kUsesSync) && k.core_count < k.block_dim)
    return refuse_multiplexed_sync(step_subject(plan, i, k), k,
                                   "but its core_count is " + std::to_string(k.core_count));
  s->first_unit = k.first_core;
  s->units = std::min(k.block_dim, k.core_count);
  s->cores = seg.layout.cores_for(k.kind, s->units);
  s->blocks_per_core = (k.block_dim + s->units - 1) / s->units;
  s->placement = StepPlacement::Pinned;
  return SK_OK;
}

// An unpinned block-local step runs its blocks where its predecessor runs them, on the same
// units (pack_steps moves it with its predecessor).
sk_status follow_step(const Plan &plan, uint32_t i, PlanStep *s) {
  const PlanStep &p = plan.steps[static_cast<uint32_t>(s->pred)];
  const PlanInput &k = s->kernel;
  if ((k.usage & kUsesSync) && p.units < k.block_dim)
    return refuse_multiplexed_sync(
        block_local_subject(plan, i) + ", but it", k,
        "and its predecessor runs on " + std::to_string(p.units) + " " + kernel_unit_name(k.kind));
  s->first_unit = p.first_unit;
  s->units = p.units;
  s->cores = p.cores;
  s->blocks_per_core = p.blocks_per_core;
  s->placement = StepPlacement::Follows;
  return SK_OK;
}

// A pinned block-local step must be pinned where its predecessor runs (once every step is
// placed).
sk_status check_pinned_follower(const Plan &plan, uint32_t i) {
  const PlanStep &s = plan.steps[i];
  const PlanStep &p = plan.steps[static_cast<uint32_t>(s.pred)];
  if (s.first_unit == p.first_unit && s.units == p.units) return SK_OK;
  return fail(SK_ERR_INCOMPATIBLE, "%s, but their placements differ (%s %u..%u vs %u..%u)",
              block_local_subject(plan, i).c_str(), kernel_unit_name(s.kernel.kind), s.first_unit,
              s.first_unit + s.units - 1, p.first_unit, p.first_unit + p.units - 1);
}

struct Interval {
  uint32_t first, end;
  auto operator<=>(const Interval &) const = default;
};

// The first unit for a step of `width` units beside the `busy` ranges of the steps that may run
// with it, within `limit` units: the free range its stream used last (`home`) if there is one,
// else the lowest free range, else the range overlapping the fewest busy ones.
uint32_t choose_first(const std::vector<Interval> &busy, uint32_t width, uint32_t limit, int64_t home) {
  std::vector<uint32_t> candidates;
  if (home >= 0) candidates.push_back(static_cast<uint32_t>(home));
  candidates.push_back(0);
  std::vector<uint32_t> ends;
  for (const Interval &b : busy) ends.push_back(b.end);
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  candidates.insert(candidates.end(), ends.begin(), ends.end());
  uint32_t best = 0;
  size_t best_overlaps = SIZE_MAX;
  for (uint32_t f : candidates) {
    if (f > limit || width > limit - f) continue;
    size_t overlaps = 0;
    for (const Interval &b : busy) overlaps += b.first < f + width && f < b.end;
    if (overlaps < best_overlaps) {
      best = f;
      best_overlaps = overlaps;
      if (overlaps == 0) break;
    }
  }
  return best;
}

// Stream fusion: each step beside the steps of other streams that may run at the same time.
// anc[i * S + t] is the last step of stream t that step i waits for, directly or through
// others (-1: none): a step j of stream t may run beside i exactly when j > anc[i * S + t],
// since a stream's steps follow each other.
void pack_steps(Plan &plan, const std::vector<bool> &widens) {
  const size_t n = plan.steps.size();
  uint32_t S = 0;
  for (const PlanStep &s : plan.steps) S = std::max(S, s.kernel.stream + 1);
  std::vector<int32_t> anc(n * S, -1);
  std::vector<std::vector<uint32_t>> members(S);  // this segment's steps, per stream
  std::vector<int64_t> home(S, -1);               // first unit of the stream's last packed step
  uint32_t segment = UINT32_MAX;
  std::vector<Interval> busy;
  for (uint32_t i = 0; i < n; ++i) {
    PlanStep &s = plan.steps[i];
    int32_t *row = &anc[size_t{i} * S];
    auto join = [&](uint32_t d) {
      const int32_t *dr = &anc[size_t{d} * S];
      for (uint32_t t = 0; t < S; ++t) row[t] = std::max(row[t], dr[t]);
      int32_t &own = row[plan.steps[d].kernel.stream];
      own = std::max(own, static_cast<int32_t>(d));
    };
    if (s.pred >= 0) join(static_cast<uint32_t>(s.pred));
    for (uint32_t d : s.after) join(d);
    if (s.segment != segment) {
      segment = s.segment;
      for (auto &m : members) m.clear();
      std::fill(home.begin(), home.end(), -1);
    }
    const uint32_t stream = s.kernel.stream;
    const PlanSegment &seg = plan.segments[segment];
    if (s.placement == StepPlacement::Follows) {
      s.first_unit = plan.steps[static_cast<uint32_t>(s.pred)].first_unit;  // packed since follow_step
      members[stream].push_back(i);
      continue;
    }
    const bool packable =
        s.placement != StepPlacement::Pinned && !(s.kernel.usage & kUsesHardSync) && !seg.layout.mixed();
    if (packable) {
      busy.clear();
      for (uint32_t t = 0; t < S; ++t) {
        if (t == stream) continue;
        const std::vector<uint32_t> &m = members[t];
        uint32_t seen = 0;
        for (auto it = m.rbegin(); it != m.rend() && static_cast<int32_t>(*it) > row[t] && seen < kScanPerStream;
             ++it, ++seen) {
          const PlanStep &o = plan.steps[*it];
          busy.push_back({o.first_unit, o.first_unit + o.units});
        }
      }
      // Steps of a stream mostly share their units: each range once.
      std::sort(busy.begin(), busy.end());
      busy.erase(std::unique(busy.begin(), busy.end()), busy.end());
      if (!busy.empty()) {
        s.first_unit = choose_first(busy, s.units, unit_limit(plan, widens, segment, s.kernel.kind), home[stream]);
        s.placement = StepPlacement::Packed;
        home[stream] = s.first_unit;
      }
    }
    members[stream].push_back(i);
  }
}

// Widens each segment that widens to the units its steps were placed on.
void widen_segments(Plan &plan, const std::vector<bool> &widens) {
  plan.cores = 0;
  for (uint32_t g = 0; g < plan.segments.size(); ++g) {
    PlanSegment &seg = plan.segments[g];
    if (widens[g]) {
      uint32_t need = 0;
      for (uint32_t i = seg.first; i < seg.end; ++i)
        need = std::max(need, plan.steps[i].first_unit + plan.steps[i].units);
      uint32_t &count = seg.layout.cube ? seg.layout.cube : seg.layout.vector;
      if (need > count) {
        std::string note = "cores widened from " + std::to_string(count) + " to " + std::to_string(need) +
                           " for steps placed beside each other or pinned";
        seg.layout_note = seg.layout_note.empty() ? note : seg.layout_note + "; " + note;
        count = need;
      }
    }
    plan.cores = std::max(plan.cores, seg.layout.cores());
  }
}

}  // namespace

const char *placement_name(StepPlacement placement) {
  switch (placement) {
    case StepPlacement::Packed: return "packed";
    case StepPlacement::Pinned: return "pinned";
    case StepPlacement::Follows: return "follows";
    case StepPlacement::Default: break;
  }
  return "default";
}

sk_status place_steps(Plan *plan) {
  const std::vector<bool> widens = widenable_segments(*plan);
  for (uint32_t i = 0; i < plan->steps.size(); ++i)
    if (plan->steps[i].kernel.core_count != 0)
      if (sk_status st = pin_step(*plan, widens, i, &plan->steps[i]); st != SK_OK) return st;
  for (uint32_t i = 0; i < plan->steps.size(); ++i)
    if (plan->steps[i].block_local && plan->steps[i].placement != StepPlacement::Pinned)
      if (sk_status st = follow_step(*plan, i, &plan->steps[i]); st != SK_OK) return st;
  if (plan->streams) pack_steps(*plan, widens);
  for (uint32_t i = 0; i < plan->steps.size(); ++i)
    if (plan->steps[i].block_local && plan->steps[i].placement == StepPlacement::Pinned)
      if (sk_status st = check_pinned_follower(*plan, i); st != SK_OK) return st;
  widen_segments(*plan, widens);
  return SK_OK;
}

}  // namespace sk
