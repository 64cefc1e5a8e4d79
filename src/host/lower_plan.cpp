#include "host/lower_plan.hpp"

#include "common/device_api_usage.hpp"
#include "host/profiler.hpp"

namespace sk::host {

void lower_plan(const Plan &plan, const std::vector<const HostKernel *> &kernels,
                const std::vector<std::vector<uint64_t>> &args, uint32_t release_group, Program *p) {
  p->name = plan.name;
  p->cores = plan.cores;
  p->per_step_release = plan.streams;
  for (const PlanSegment &seg : plan.segments) {
    SegmentExec se;
    se.layout = seg.layout;
    for (uint32_t c = 0; c < seg.layout.cores(); ++c) se.slots.push_back(core_slot(seg.layout, c));
    p->segments.push_back(std::move(se));
  }
  size_t after_total = 0;
  for (const PlanStep &ps : plan.steps) after_total += ps.after.size();
  p->after_lists.reserve(after_total);  // never reallocated: steps point in
  size_t total = 0;
  for (const auto &a : args) total += a.size();
  p->allocate_args(total);
  size_t slot = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &ps = plan.steps[i];
    StepExec s;
    s.name = ps.kernel.name;
    s.fn = kernels[i]->fn;
    s.cif = &kernels[i]->call->cif;
    s.direct = kernels[i]->call->kind == CallKind::Direct;
    if (kernels[i]->call->kind == CallKind::Mapped) {
      s.call_map = kernels[i]->call->map;
      s.call_stack = kernels[i]->call->stack_words != 0;
    }
    s.first_slot = static_cast<uint32_t>(slot);
    s.block_dim = ps.kernel.block_dim;
    s.units = ps.units;
    s.cores = ps.cores;
    s.unit_class = unit_class(ps.kernel.kind);
    s.first_unit = ps.first_unit;
    s.segment = ps.segment;
    const CoreLayout &layout = plan.segments[ps.segment].layout;
    s.sub_block_num = is_mixed(ps.kernel.kind) ? layout.vectors_per_group : 1;
    s.pred = ps.pred;
    s.after = p->after_lists.data() + p->after_lists.size();
    s.after_count = static_cast<uint32_t>(ps.after.size());
    p->after_lists.insert(p->after_lists.end(), ps.after.begin(), ps.after.end());
    if (ps.kernel.usage & kUsesHardSync) {
      // A whole-core wait counts the segment's cores of the kernel's kind (not the step's).
      const uint32_t all = layout.cores_for(ps.kernel.kind, layout.units_for(ps.kernel.kind));
      p->flags.push_back(std::make_unique<StepFlags>(layout.groups, layout.vectors_per_group, all));
      s.flags = p->flags.back().get();
    }
    s.wait_in_kernel = ps.wait_in_kernel;
    s.arrive_in_kernel = ps.arrive_in_kernel;
    s.flush_before = ps.cache.flush_before;
    s.flush_after = ps.cache.flush_after;
    s.gm_flush = ps.cache.per_access_flush;
    for (uint64_t v : args[i]) {
      p->arg_blocks[0].slots[slot] = p->arg_blocks[1].slots[slot] = v;
      ++slot;
    }
    p->steps.push_back(std::move(s));
  }
  if (plan.options.profiling) p->profiler = std::make_shared<Profiler>(p->steps.size(), p->cores);
  if (!kernels.empty()) p->release_group = release_group;
  p->allocate_sync_state();
}

}  // namespace sk::host
