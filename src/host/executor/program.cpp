// Sizing a Program's sync state, and picking the step loop its shape allows (program.hpp).
#include "host/executor/program.hpp"

#include <algorithm>

namespace sk::host {

void Program::allocate_sync_state() {
  released_before.resize(steps.size());
  ended_before.resize(steps.size());
  releases_per_launch = ends_per_launch = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    released_before[i] = releases_per_launch;
    if (steps[i].arrives) releases_per_launch += steps[i].cores;
    ended_before[i] = ends_per_launch;
    if (steps[i].arrive_in_kernel) ends_per_launch += steps[i].cores;
  }
  barriers = std::make_unique<StepBarrier[]>(steps.size());
  if (per_step_release) step_released = std::make_unique<StepCounter[]>(steps.size());
  plain = !profiler && !per_step_release && segments.size() == 1 && !segments[0].layout.mixed() &&
          segments[0].layout.cube == 0 && std::all_of(steps.begin(), steps.end(), [](const StepExec &s) {
            return s.unit_class == 0 && s.first_unit == 0 && s.cores == s.units && !s.flush_before &&
                   !s.flush_after && !s.flags && s.after_count == 0;
          });
  // A plain program counts its ends on released.ended: per-step end counters only for the others.
  if (!plain) ended = std::make_unique<StepCounter[]>(steps.size());
  core_steps_end.assign(plain ? cores : 0, 0);
  for (uint32_t i = 0; plain && i < steps.size(); ++i)
    for (uint32_t c = 0; c < steps[i].units && c < cores; ++c) core_steps_end[c] = i + 1;
  const bool releases_in_kernel =
      std::any_of(steps.begin(), steps.end(), [](const StepExec &s) { return s.arrive_in_kernel; });
  const bool waits_in_kernel =
      std::any_of(steps.begin(), steps.end(), [](const StepExec &s) { return s.wait_in_kernel; });
  ends_at_last_release =
      plain && !releases_in_kernel &&
      std::none_of(core_steps_end.begin(), core_steps_end.end(), [](uint32_t e) { return e == 0; });
  if (!plain || release_group >= cores) release_group = 0;
  chain = plain && release_group == 0 && !releases_in_kernel && !waits_in_kernel;
  release_groups = release_group ? (cores + release_group - 1) / release_group : 0;
  if (release_groups == 0) return;  // the central counter: no group state to allocate
  group_arrived = std::make_unique<StepCounter[]>(release_groups);
  group_before.assign(steps.size() * release_groups, 0);
  group_per_launch.assign(release_groups, 0);
  for (uint32_t i = 0; i < steps.size(); ++i)
    for (uint32_t g = 0; g < release_groups; ++g) {
      group_before[i * release_groups + g] = group_per_launch[g];
      if (steps[i].arrives) group_per_launch[g] += group_cores(i, g);
    }
}

}  // namespace sk::host
