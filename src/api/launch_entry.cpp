// sk_launch, sk_launch_kernel, sk_superkernel_set_arg / explain / destroy.
#include <algorithm>
#include <cstring>

#include "api/cuda_entry.hpp"
#include "api/handles.hpp"
#include "core/device_api_usage.hpp"
#include "host/profiler.hpp"
#include "host/program_explain.hpp"

using sk::fail;

namespace sk::api {

void lower_plan(const sk::Plan &plan, const std::vector<std::shared_ptr<KernelImpl>> &kernels,
                const std::vector<std::vector<uint64_t>> &args, sk::host::Program *p) {
  p->name = plan.name;
  p->cores = plan.cores;
  p->per_step_release = plan.streams;
  for (const sk::PlanSegment &seg : plan.segments) {
    sk::host::SegmentExec se;
    se.layout = seg.layout;
    for (uint32_t c = 0; c < seg.layout.cores(); ++c) se.slots.push_back(sk::core_slot(seg.layout, c));
    p->segments.push_back(std::move(se));
  }
  size_t after_total = 0;
  for (const sk::PlanStep &ps : plan.steps) after_total += ps.after.size();
  p->after_lists.reserve(after_total);  // never reallocated: steps point in
  size_t total = 0;
  for (const auto &a : args) total += a.size();
  p->allocate_args(total);
  size_t slot = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const sk::PlanStep &ps = plan.steps[i];
    sk::host::StepExec s;
    s.name = ps.kernel.name;
    s.fn = kernels[i]->fn;
    s.cif = &kernels[i]->call->cif;
    s.direct = kernels[i]->call->kind == sk::host::CallKind::Direct;
    if (kernels[i]->call->kind == sk::host::CallKind::Mapped) {
      s.call_map = kernels[i]->call->map;
      s.call_stack = kernels[i]->call->stack_words != 0;
    }
    s.first_slot = static_cast<uint32_t>(slot);
    s.block_dim = ps.kernel.block_dim;
    s.units = ps.units;
    s.cores = ps.cores;
    s.unit_class = sk::unit_class(ps.kernel.kind);
    s.segment = ps.segment;
    const sk::CoreLayout &layout = plan.segments[ps.segment].layout;
    s.sub_block_num = sk::is_mixed(ps.kernel.kind) ? layout.vectors_per_group : 1;
    s.pred = ps.pred;
    s.after = p->after_lists.data() + p->after_lists.size();
    s.after_count = static_cast<uint32_t>(ps.after.size());
    p->after_lists.insert(p->after_lists.end(), ps.after.begin(), ps.after.end());
    if (ps.kernel.usage & sk::kUsesHardSync) {
      // A whole-core wait counts the segment's cores of the kernel's kind (not the step's).
      const uint32_t all = layout.cores_for(ps.kernel.kind, layout.units_for(ps.kernel.kind));
      p->flags.push_back(std::make_unique<sk::host::StepFlags>(layout.groups, layout.vectors_per_group, all));
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
  if (plan.options.profiling) p->profiler = std::make_shared<sk::host::Profiler>(p->steps.size(), p->cores);
  if (!kernels.empty()) p->release_group = kernels[0]->device->executor().release_group();
  p->allocate_sync_state();
}

}  // namespace sk::api

namespace {
sk::host::StreamState *stream_state(const std::shared_ptr<sk::host::HostDevice> &dev, sk_stream *s) {
  return s ? &s->state : &dev->default_stream();
}
// The one-step program of an unfused launch over block_dim blocks: a plan like a super kernel's,
// so that the same checks and the same executor path apply. Its argument slots are zero; a
// launch writes them to the block Program::args names (no rebind ever changes which).
sk_status build_unfused_program(const std::shared_ptr<KernelImpl> &kernel, uint32_t block_dim,
                                std::unique_ptr<sk::host::Program> *out) {
  const KernelImpl &k = *kernel;
  sk::PlanInput in;
  in.name = in.symbol = k.symbol;
  in.module = k.module->label;
  in.core_type = sk::kernel_kind_name(k.kind);
  in.kind = k.kind;
  in.block_dim = block_dim;
  in.usage = k.usage;
  sk::Plan plan;
  if (sk_status st = sk::build_plan(k.symbol, sk::ScopeOptions{}, {in}, k.device->cores(), &plan); st != SK_OK)
    return st;
  auto program = std::make_unique<sk::host::Program>();
  sk::api::lower_plan(plan, {kernel}, {std::vector<uint64_t>(k.signature.size(), 0)}, program.get());
  *out = std::move(program);
  return SK_OK;
}

}  // namespace

extern "C" {

SK_API sk_status sk_launch(sk_superkernel *sk, sk_stream *stream) {
  // The handle checks add two relaxed loads to the hot path (handle_tag.hpp): no lock, no allocation.
  if (sk_status st = sk::api::check(sk, "sk_launch")) return st;
  if (stream && !stream->live()) return sk::api::check(stream, "sk_launch");
  if (stream && stream->device != sk->device)
    return stream->owner.closed()
               ? sk::api::check(stream, "sk_launch")
               : fail(SK_ERR_INCOMPATIBLE, "sk_launch: super kernel '%s' and the stream belong to different devices",
                      sk->plan.name.c_str());
  if (sk->cuda) return sk::api::guarded("sk_launch", [&] { return sk::api::cuda_launch(sk, stream); });
  return sk->device->executor().submit(sk->program.get(), nullptr, stream_state(sk->device, stream));
}

SK_API sk_status sk_launch_kernel(sk_kernel *kernel, uint32_t block_dim, void *const *args, sk_stream *stream) {
  if (sk_status st = sk::api::check(kernel, "sk_launch_kernel")) return st;
  if (stream && !stream->live()) return sk::api::check(stream, "sk_launch_kernel");
  const KernelImpl &k = *kernel->impl;
  if (stream && stream->device != k.device)
    return stream->owner.closed()
               ? sk::api::check(stream, "sk_launch_kernel")
               : fail(SK_ERR_INCOMPATIBLE, "sk_launch_kernel: kernel '%s' and the stream belong to different devices",
                      k.symbol.c_str());
  if (k.cuda)
    return sk::api::guarded("sk_launch_kernel",
                            [&] { return sk::api::cuda_launch_kernel(kernel, block_dim, args, stream); });
  return sk::api::guarded("sk_launch_kernel", [&]() -> sk_status {
    if (sk_status st = sk::api::check_block_dim("sk_launch_kernel", k, block_dim); st != SK_OK) return st;
    sk::host::ProgramPool &pool = kernel->impl->unfused_programs;
    sk::host::Program *program = pool.take(block_dim);
    std::unique_ptr<sk::host::Program> unpooled;  // a program the pool declined (all in launches)
    if (!program) {
      if (sk_status st = build_unfused_program(kernel->impl, block_dim, &unpooled); st != SK_OK) return st;
      program = pool.adopt(unpooled);
      if (!program) program = unpooled.get();
    }
    if (sk_status st = sk::api::copy_args(k, args, "sk_launch_kernel", program->arg_blocks[0].slots); st != SK_OK) {
      if (!unpooled) pool.put(program);
      return st;
    }
    program->launched_kernel = kernel->impl;
    return k.device->executor().submit(program, std::move(unpooled), stream_state(k.device, stream));
  });
}

SK_API sk_status sk_superkernel_set_arg(sk_superkernel *sk, uint32_t step, uint32_t index, const void *value) {
  if (sk_status st = sk::api::check(sk, "sk_superkernel_set_arg")) return st;
  if (!value) return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_set_arg: value is NULL");
  if (step >= sk->kernels.size())
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_set_arg: '%s' has %zu steps; step %u does not exist",
                sk->plan.name.c_str(), sk->kernels.size(), step);
  const KernelImpl &k = *sk->kernels[step];
  if (index >= k.signature.size())
    return fail(SK_ERR_INVALID_ARGUMENT,
                "sk_superkernel_set_arg: step %u '%s' takes %zu parameters (%s); index %u does not exist",
                step, sk->plan.steps[step].kernel.name.c_str(), k.signature.size(), k.signature_text.c_str(), index);
  if (sk->cuda)
    return sk::api::guarded("sk_superkernel_set_arg", [&] { return sk::api::cuda_set_arg(sk, step, index, value); });
  sk::host::Program &p = *sk->program;
  // A stuck launch may still read the spare argument block that a rebind would write.
  if (sk->device->executor().lost()) return sk->device->executor().refuse_lost("sk_superkernel_set_arg");
  sk->device->executor().rebind_arg(&p, p.steps[step].first_slot + index, sk::to_slot(k.signature[index], value));
  return SK_OK;
}

SK_API sk_status sk_superkernel_explain(sk_superkernel *sk, char *buf, size_t cap, size_t *needed) {
  if (sk_status st = sk::api::check(sk, "sk_superkernel_explain")) return st;
  if (!buf && cap > 0) return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_explain: buf is NULL but cap is %zu", cap);
  sk_status st = sk::api::guarded("sk_superkernel_explain", [sk] {
    std::call_once(sk->explain_once, [sk] {
      if (sk->cuda) {
        sk->explain = sk::api::cuda_explain(sk);
        return;
      }
      const uint32_t device_cores = sk->device->executor().cores();
      sk->explain = sk::explain_json(sk->plan, "host", [sk, device_cores](sk::JsonWriter &j) {
        sk::host::write_execution_json(j, *sk->program, device_cores);
      });
    });
    return SK_OK;
  });
  if (st != SK_OK) return st;
  const size_t size = sk->explain.size() + 1;
  if (needed) *needed = size;
  if (cap < size) {
    // Only buf NULL, cap 0, needed set is a size query; a buffer of cap 0 is one too small.
    if (buf || !needed)
      return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_explain: '%s' needs %zu bytes, cap is %zu",
                  sk->plan.name.c_str(), size, cap);
    return SK_OK;
  }
  std::memcpy(buf, sk->explain.c_str(), size);
  return SK_OK;
}

SK_API void sk_superkernel_destroy(sk_superkernel *sk) {
  if (!sk) return;
  if (sk::api::check_destroy(sk, "sk_superkernel_destroy") != SK_OK) return;  // destroyed twice: ignored
  if (sk->cuda) return sk::api::cuda_superkernel_destroy(sk);
  sk->device->executor().wait_program(sk->program.get());
  if (sk->device->executor().lost()) {
    // A stuck core may still be in its program, running its kernels' code.
    sk::host::keep_for_stuck_threads(std::shared_ptr<sk::host::Program>(std::move(sk->program)));
    for (auto &k : sk->kernels) sk::host::keep_for_stuck_threads(std::move(k));
  }
  delete sk;
}

}  // extern "C"
