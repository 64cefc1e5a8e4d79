#include "host/lower_plan.hpp"

#include "common/device_api_usage.hpp"
#include "host/executor/kernel_call.hpp"
#include "host/executor/profiler.hpp"

namespace sk::host {
namespace {

bool is_ref(const PlanInput &in, size_t param) { return param < 64 && (in.arg_refs >> param & 1); }

// How a direct or mapped kernel's step loads its arguments read by reference.
std::unique_ptr<StepRefs> step_refs(const PlanInput &in, const HostBackendKernel &k) {
  auto r = std::make_unique<StepRefs>();
  r->kind = k.call->kind;
  r->map = k.call->map;
  r->stack = k.call->stack_words != 0;
  r->slots = static_cast<uint32_t>(k.slots());
  for (size_t a = 0; a < k.signature.size(); ++a)
    if (is_ref(in, a)) r->refs.push_back({k.arg_slots[a], k.signature[a].type});
  return r;
}

}  // namespace

void lower_plan(const Plan &plan, const std::vector<const HostBackendKernel *> &kernels,
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
  std::vector<ArgParam> params;
  size_t total = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const std::vector<uint32_t> &at = kernels[i]->arg_slots;
    for (size_t a = 0; a + 1 < at.size(); ++a)
      params.push_back({static_cast<uint32_t>(total + at[a]), at[a + 1] - at[a], is_ref(plan.steps[i].kernel, a)});
    total += args[i].size();
  }
  p->allocate_args(std::move(params), total);
  size_t slot = 0, param = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &ps = plan.steps[i];
    const HostBackendKernel &k = *kernels[i];
    StepExec s;
    s.name = ps.kernel.name;
    s.fn = k.fn;
    s.cif = &k.call->cif;
    if (ps.kernel.arg_refs && k.call->kind != CallKind::Libffi) {
      p->step_refs.push_back(step_refs(ps.kernel, k));
      s.refs = p->step_refs.back().get();
    } else {
      s.copy_avalues = !k.call->aggregates.empty();
      s.direct = k.call->kind == CallKind::Direct;
      if (k.call->kind == CallKind::Mapped) {
        s.call_map = k.call->map;
        s.call_stack = k.call->stack_words != 0;
      }
    }
    s.first_slot = static_cast<uint32_t>(slot);
    s.first_param = static_cast<uint32_t>(param);
    param += k.signature.size();
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
    s.block_local = ps.block_local;
    s.arrives = ps.arrives;
    s.flush_before = ps.cache.flush_before;
    s.flush_after = ps.cache.flush_after;
    s.gm_flush = ps.cache.per_access_flush;
    for (uint64_t v : args[i]) {
      p->arg_blocks[0].slots[slot] = p->arg_blocks[1].slots[slot] = v;
      ++slot;
    }
    p->steps.push_back(std::move(s));
  }
  p->point_args();
  if (plan.options.profiling) p->profiler = std::make_shared<Profiler>(p->steps.size(), p->cores);
  if (!kernels.empty()) p->release_group = release_group;
  p->allocate_sync_state();
}

}  // namespace sk::host
