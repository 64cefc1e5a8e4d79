// Core types and hard cross-core sync. Flags are counters of sets (host/device_api/cross_core_flags.hpp);
// a wait compares them with the waits this core has done in the step, so the order of a set
// and its wait does not matter. A flag id out of range aborts the launch (SK_ERR_INVALID_ARGUMENT,
// with a report naming the call) rather than corrupting memory; a wait that cannot be satisfied ends at the deadline with a report
// naming the flag, the group and who has not set it.
#include "host/device_api/device_api_cross_core.hpp"

#include <string>
#include <utility>

#include "host/executor/core_context.hpp"
#include "host/executor/profile_wait.hpp"

namespace sk::host {
namespace {

bool in_mixed_step(const CoreContext &c) { return c.step->unit_class == 2; }

// False (and the launch aborted with a report) when `flag` is not a valid id.
bool check_flag(CoreContext &c, const char *call, uint32_t flag) {
  if (flag < SK_CROSS_CORE_FLAGS) return true;
  abort_invalid_call(c, std::string(call) + "(" + std::to_string(flag) + "): flag ids are 0.." +
                            std::to_string(SK_CROSS_CORE_FLAGS - 1));
  return false;
}

// Waits until `counter` has reached `target`. On failure records where it waited and who is
// missing: describe() returns {where, who}, built only then (flag waits sit in kernels' loops).
template <class Describe>
bool wait_flag_count(CoreContext &c, std::atomic<uint32_t> &counter, uint32_t target, Describe describe) {
  ProfileWait timed(c);
  WaitResult r = wait_in_task(c, counter, [target](uint32_t v) { return reached(v, target); });
  if (r == WaitResult::Ok) return true;
  const uint32_t have = counter.load();
  const auto [where, who] = describe();
  record_stuck(
      c, r,
      where + ": " +
          (have == 0 ? "no core set it"
                     : who + " set it " + std::to_string(have) + " of " + std::to_string(target) + " times"));
  return false;
}

using Description = std::pair<std::string, std::string>;

void set_count(CoreContext &c, std::atomic<uint32_t> &counter) { add_and_notify(counter, 1, *c.channel); }

}  // namespace

// Outside a task (a kernel called directly by the host) a core is a lone vector core.
uint32_t api_core_type() { return t_core && t_core->step ? t_core->slot.type : 0; }

uint32_t api_sub_block_idx() {
  const CoreContext *c = t_core;
  return c && c->step && in_mixed_step(*c) && c->slot.type == 0 ? c->slot.sub : 0;
}

uint32_t api_sub_block_num() { return t_core && t_core->step ? t_core->step->sub_block_num : 1; }

void api_cross_core_set_flag(uint32_t flag) {
  CoreContext *c = t_core;
  if (!c || !c->step || !c->step->flags || !check_flag(*c, "sk_cross_core_set_flag", flag)) return;
  StepFlags &f = *c->step->flags;
  const uint32_t g = c->slot.group;
  if (c->slot.type == 1)
    set_count(*c, f.cube_sets[g].sets[flag]);
  else
    set_count(*c, f.vector_sets[g * f.vectors_per_group + c->slot.sub].sets[flag]);
}

void api_cross_core_wait_flag(uint32_t flag) {
  CoreContext *c = t_core;
  if (!c || !c->step || !c->step->flags || !check_flag(*c, "sk_cross_core_wait_flag", flag)) return;
  StepFlags &f = *c->step->flags;
  const uint32_t g = c->slot.group;
  const uint32_t target = ++c->flag_waits[flag];
  auto where = [flag, g, target] {
    return "waits on flag " + std::to_string(flag) + " of group " + std::to_string(g) + " (wait " +
           std::to_string(target) + ")";
  };
  if (c->slot.type == 0) {
    wait_flag_count(*c, f.cube_sets[g].sets[flag], target, [&] {
      return Description{where() + " for the group's cube core", "the cube core"};
    });
    return;
  }
  // The cube core waits for every vector core of its group: both in a 1:2 super kernel, even
  // for a 1:1 kernel (the guide's rule: every vector core calls the hard-sync functions).
  for (uint32_t sub = 0; sub < f.vectors_per_group; ++sub)
    if (!wait_flag_count(*c, f.vector_sets[g * f.vectors_per_group + sub].sets[flag], target, [&] {
          return Description{where() + " for vector core " + std::to_string(sub) + " of the group",
                             "vector core " + std::to_string(sub)};
        }))
      return;
}

void api_cross_core_set_flag_all(uint32_t flag) {
  CoreContext *c = t_core;
  if (!c || !c->step || !c->step->flags || !check_flag(*c, "sk_cross_core_set_flag_all", flag)) return;
  set_count(*c, c->step->flags->all.sets[flag]);
}

void api_cross_core_wait_flag_all(uint32_t flag) {
  CoreContext *c = t_core;
  if (!c || !c->step || !c->step->flags || !check_flag(*c, "sk_cross_core_wait_flag_all", flag)) return;
  StepFlags &f = *c->step->flags;
  // The super kernel's cores of this kind, not the step's: what the hardware counts, and why
  // the planner splits scopes before a kernel with hard sync on another core count.
  const uint32_t target = ++c->flag_all_waits[flag] * f.all_cores;
  wait_flag_count(*c, f.all.sets[flag], target, [&] {
    return Description{"waits on whole-core flag " + std::to_string(flag) + " (" + std::to_string(f.all_cores) +
                           " cores of the super kernel must set it)",
                       "the cores"};
  });
}

}  // namespace sk::host
