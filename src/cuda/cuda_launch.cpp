// The CUDA backend's super kernels (finalize with its re-plan after the occupancy query, launch,
// set_arg, explain, destroy) and unfused launches (sk_launch_kernel, one linked entry per block_dim).
#include <algorithm>
#include <memory>

#include "common/device_api_usage.hpp"
#include "common/error.hpp"
#include "common/json_writer.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/entry_limits.hpp"
#include "cuda/kernel_facts_json.hpp"
#include "cuda/ptx_prune.hpp"
#include "cuda/superkernel_build.hpp"

namespace sk::cuda {
namespace {

// An argument read by reference is read by the GPU at each call: its address must be memory
// the driver maps for it (the device's context current). A parameter the kernel takes the
// address of is then read where it is, so that address is aligned as its type asks (a tensor
// map: 64 bytes for TMA).
sk_status check_ref(const CudaDevice &dev, const CudaKernel &k, const char *call, const std::string &sk, size_t step,
                    const std::string &kernel, size_t param, uint64_t address) {
  if (!dev.driver_memory(reinterpret_cast<const void *>(address)))
    return fail(
        SK_ERR_INVALID_ARGUMENT,
        "%s: super kernel '%s': step %zu '%s' reads argument %zu by reference from 0x%llx, which is not memory "
        "%s can read (sk_mem_alloc, or device, managed or page-locked memory of the CUDA driver)",
        call, sk.c_str(), step, kernel.c_str(), param, static_cast<unsigned long long>(address), dev.name().c_str());
  const bool in_place =
      k.ptx && std::find(k.ptx->by_address.begin(), k.ptx->by_address.end(), param) != k.ptx->by_address.end();
  if (in_place && address % k.signature[param].align)
    return fail(SK_ERR_INVALID_ARGUMENT,
                "%s: super kernel '%s': step %zu '%s' takes the address of parameter %zu (a grid constant), read by "
                "reference at 0x%llx, which is not aligned to %u bytes as its type asks",
                call, sk.c_str(), step, kernel.c_str(), param, static_cast<unsigned long long>(address),
                k.signature[param].align);
  return SK_OK;
}

// Blocks per SM no architecture exceeds (32 on every sm_70+): the first plan's core bound,
// before the linked entry's occupancy is known.
constexpr uint32_t kMaxBlocksPerSm = 32;

// CUDA has one core type: cube-only kernels run as plain blocks; mixed kernels are refused.
sk_status cuda_inputs(const std::string &scope, std::vector<PlanInput> *inputs) {
  for (size_t i = 0; i < inputs->size(); ++i) {
    PlanInput &in = (*inputs)[i];
    if (is_mixed(in.kind))
      return fail(SK_ERR_UNSUPPORTED,
                  "sk_finalize: scope '%s': kernel %zu '%s' is a mixed (%s) kernel; CUDA devices have one core type",
                  scope.c_str(), i, in.name.c_str(), kernel_kind_name(in.kind));
    in.kind = KernelKind::Vector;
    in.core_type = "vector";
  }
  return SK_OK;
}

// What building `plan` for `dev` takes.
BuildRequest build_request(const CudaDevice &dev, const Plan &plan,
                           const std::vector<std::shared_ptr<CudaKernel>> &kernels, uint64_t id) {
  BuildRequest req;
  req.name = plan.name;
  req.arch = dev.arch();
  req.timeout_ns = dev.timeout_ns();
  req.id = id;
  req.plan = &plan;
  req.kernels = kernels;
  req.param_bytes = param_space_bytes(dev.driver_version());
  return req;
}

// Builds, links and loads a request's plan; `image` keeps what was linked. What the entry needs
// of the GPU is checked first, where the sub-kernels can be named.
sk_status build_and_load(const std::shared_ptr<CudaDevice> &dev, const BuildRequest &req, BuiltImage *image,
                         std::unique_ptr<LinkedProgram> *out) {
  if (sk_status st = build_superkernel(req, image); st != SK_OK) return st;
  if (sk_status st = entry_stack_bytes(req, *image, dev->stack_bytes(), &image->stack_bytes); st != SK_OK) return st;
  if (sk_status st = check_entry_shared(req, *image, dev->shared_optin(), dev->shared_reserved(), dev->name());
      st != SK_OK)
    return st;
  return LinkedProgram::load(dev, *image, req.name, req.plan->steps.size(), req.id, out);
}

// The kernels of dispatch `d`'s steps.
std::vector<std::shared_ptr<CudaKernel>> dispatch_kernels(const Dispatch &d,
                                                          const std::vector<std::shared_ptr<CudaKernel>> &all) {
  return {all.begin() + d.first, all.begin() + d.end};
}

// Refuses what a plain launch cannot do: a kernel the driver launches reads its arguments
// when it is queued, and is not fused with anything.
sk_status check_plain_steps(const Plan &plan) {
  bool fused = false;
  for (uint32_t i = 0; i < plan.steps.size(); ++i) {
    const PlanInput &k = plan.steps[i].kernel;
    fused = fused || !k.plain_launch;
    if (k.plain_launch && k.arg_refs)
      return fail(SK_ERR_INCOMPATIBLE,
                  "%s reads arguments by reference (sk_kernel_options.arg_refs), but it is launched as compiled "
                  "(a __global__ kernel of linked SASS), whose arguments the driver copies when it is queued: pass "
                  "them by value and rebind them with sk_superkernel_set_arg",
                  step_subject(plan, i, k).c_str());
  }
  if (!fused)
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: each of its %zu kernels is launched as compiled (a __global__ kernel of linked SASS), so "
                "nothing of it can be fused; launch them with sk_launch_kernel, or give their PTX",
                plan.subject.c_str(), plan.steps.size());
  return SK_OK;
}

}  // namespace

sk_status CudaBackendDevice::finalize(const std::string &name, const ScopeOptions &options,
                                      std::vector<PlanInput> inputs,
                                      std::vector<std::shared_ptr<backend::Kernel>> kernels,
                                      std::vector<std::vector<uint64_t>> args,
                                      std::unique_ptr<backend::SuperKernel> *out) {
  const std::shared_ptr<CudaDevice> &dev = gpu_;
  if (sk_status st = cuda_inputs(name, &inputs); st != SK_OK) return st;
  std::vector<std::shared_ptr<CudaKernel>> ck;
  for (size_t i = 0; i < kernels.size(); ++i)
    ck.push_back(static_cast<const CudaBackendKernel &>(*kernels[i]).kernel);  // the api checked the device
  const std::vector<uint32_t> bases = step_arg_bases(ck);
  std::vector<uint64_t> slots(bases.back(), 0);
  for (size_t i = 0; i < kernels.size(); ++i) std::copy(args[i].begin(), args[i].end(), slots.begin() + bases[i]);
  ContextScope ctx(*dev, "sk_finalize");
  if (ctx.status() != SK_OK) return ctx.status();
  for (size_t i = 0; i < kernels.size(); ++i)
    for (size_t a = 0; a + 1 < kernels[i]->arg_slots.size(); ++a)
      if (a < 64 && (inputs[i].arg_refs >> a & 1) && !inputs[i].plain_launch)
        if (sk_status st = check_ref(*dev, *ck[i], "sk_finalize", name, i, inputs[i].name, a,
                                     args[i][kernels[i]->arg_slots[a]]);
            st != SK_OK)
          return st;
  auto sk = std::make_unique<CudaBackendSuperKernel>(shared_from_this(), dev);
  sk->slot_base.assign(bases.begin(), bases.end() - 1);
  // First plan: bounded by what any architecture could hold; the linked entries' occupancy
  // then gives the real co-residency bound, and a plan that exceeds it is made again. An entry
  // does not depend on the placement, so the new plan changes the step tables only.
  const uint32_t bound = dev->multiprocessors() * kMaxBlocksPerSm;
  if (sk_status st = build_plan(name, options, inputs, bound, &sk->plan); st != SK_OK) return st;
  if (sk_status st = check_plain_steps(sk->plan); st != SK_OK) return st;
  // One dispatch per segment: a linked program of its steps, or a plain launch.
  std::vector<BuiltImage> images(sk->plan.segments.size());
  sk->dispatch_of.resize(kernels.size());
  uint32_t fit = UINT32_MAX;
  const LinkedProgram *tightest = nullptr;
  for (uint32_t g = 0; g < sk->plan.segments.size(); ++g) {
    const PlanSegment &seg = sk->plan.segments[g];
    Dispatch &d = sk->dispatches.emplace_back();
    d.first = seg.first;
    d.end = seg.end;
    std::fill(sk->dispatch_of.begin() + seg.first, sk->dispatch_of.begin() + seg.end, g);
    if (seg.plain_launch) {
      d.plain = static_cast<CudaBackendKernel &>(*kernels[seg.first]).plain_function();
      const PlanInput &in = sk->plan.steps[seg.first].kernel;
      if (sk_status st = check_cluster_grid(*ck[seg.first], in.block_dim, in.grid,
                                            step_subject(sk->plan, seg.first, in), "sk_finalize");
          st != SK_OK)
        return st;
      if (sk_status st = d.plain->load("sk_finalize"); st != SK_OK) return st;
      continue;
    }
    d.plan = segment_plan(sk->plan, g);
    std::vector<std::string> names;
    for (const PlanStep &s : d.plan.steps) names.push_back(s.kernel.name);
    d.id = dev->register_name(name, names, d.first);
    BuildRequest req = build_request(*dev, d.plan, dispatch_kernels(d, ck), d.id);
    if (sk_status st = build_and_load(dev, req, &images[g], &d.program); st != SK_OK) return st;
    if (d.program->max_coresident() < fit) fit = d.program->max_coresident(), tightest = d.program.get();
  }
  if (sk->plan.cores > fit) {
    Plan clipped;
    if (sk_status st = build_plan(name, options, inputs, fit, &clipped); st != SK_OK) {
      prefix_error("sk_finalize: on " + dev->name() + " at most " + std::to_string(fit) +
                   " blocks are co-resident (" + std::to_string(tightest->occupancy_per_sm()) + " per SM x " +
                   std::to_string(dev->multiprocessors()) + " SMs, " + std::to_string(tightest->registers()) +
                   " registers per thread)");
      return st;
    }
    sk->plan = std::move(clipped);
    for (uint32_t g = 0; g < sk->dispatches.size(); ++g) {
      Dispatch &d = sk->dispatches[g];
      if (!d.program) continue;
      d.plan = segment_plan(sk->plan, g);
      std::vector<uint32_t> table;
      if (sk_status st =
              replanned_table(build_request(*dev, d.plan, dispatch_kernels(d, ck), d.id), images[g], &table);
          st != SK_OK)
        return st;
      if (sk_status st = d.program->set_table(std::move(table)); st != SK_OK) return st;
    }
  }
  for (Dispatch &d : sk->dispatches) {
    if (!d.program) continue;
    std::vector<uint64_t> own(slots.begin() + bases[d.first], slots.begin() + bases[d.end]);
    if (sk_status st = d.program->configure(std::move(own), d.plan.cores, true); st != SK_OK) return st;
  }
  sk->plain_slots = std::move(slots);
  sk->kernels = std::move(kernels);
  *out = std::move(sk);
  return SK_OK;
}

CudaBackendSuperKernel::~CudaBackendSuperKernel() {
  for (Dispatch &d : dispatches)
    if (d.program) d.program->wait("sk_superkernel_destroy");
  for (Dispatch &d : dispatches) {
    d.program.reset();
    if (d.id) gpu->unregister_name(d.id);
  }
}

sk_status CudaBackendSuperKernel::launch_dispatches(CUstream stream, const char *call) {
  for (size_t g = 0; g < dispatches.size(); ++g) {
    const Dispatch &d = dispatches[g];
    sk_status st;
    if (d.program) {
      st = d.program->launch(stream, call);
    } else {
      const PlanInput &k = plan.steps[d.first].kernel;
      std::lock_guard<std::mutex> lock(plain_mutex);
      st = d.plain->launch(k.block_dim, k.grid, plain_slots.data() + slot_base[d.first], stream, call);
    }
    // The dispatches before it are on the stream and run: the caller must know the launch
    // was half done.
    if (st != SK_OK && g > 0) {
      const std::string steps =
          d.end - d.first == 1 ? "kernel " + std::to_string(d.first) + " '" + plan.steps[d.first].kernel.name + "'"
                               : "kernels " + std::to_string(d.first) + " to " + std::to_string(d.end - 1);
      prefix_error("super kernel '" + plan.name + "': dispatch " + std::to_string(g + 1) + " of " +
                   std::to_string(dispatches.size()) + " (" + steps + ") failed after the " + std::to_string(g) +
                   " before it were queued, which run");
    }
    if (st != SK_OK) return st;
  }
  return SK_OK;
}

sk_status CudaBackendSuperKernel::launch(backend::Stream *stream) {
  return launch_dispatches(driver_stream(*gpu, stream), "sk_launch");
}

sk_status CudaBackendSuperKernel::launch_repeat(uint32_t n, const uint32_t *stop_flag, backend::Stream *stream) {
  // One launch: the entry runs its steps n times, and its blocks read the flag on the device.
  if (stop_flag) {
    ContextScope ctx(*gpu, "sk_launch_repeat");
    if (ctx.status() != SK_OK) return ctx.status();
    if (!gpu->driver_memory(stop_flag))
      return fail(SK_ERR_INVALID_ARGUMENT,
                  "sk_launch_repeat: super kernel '%s': stop_flag %p is not memory %s can read (sk_mem_alloc, or "
                  "device, managed or page-locked memory of the CUDA driver)",
                  plan.name.c_str(), static_cast<const void *>(stop_flag), gpu->name().c_str());
  }
  const CUstream s = driver_stream(*gpu, stream);
  if (dispatches.size() == 1)
    return dispatches[0].program->launch(s, "sk_launch_repeat", n, reinterpret_cast<CUdeviceptr>(stop_flag));
  // Several dispatches run from the host, one run after another: the host cannot see a flag
  // the device sets without waiting for each run.
  if (stop_flag)
    for (const Dispatch &d : dispatches)
      if (d.plain)
        return fail(SK_ERR_INCOMPATIBLE,
                    "sk_launch_repeat: super kernel '%s': step %u '%s' is launched as compiled, so its runs are "
                    "queued from the host, which cannot read stop_flag on the device; give no stop_flag",
                    plan.name.c_str(), d.first, plan.steps[d.first].kernel.name.c_str());
  for (uint32_t r = 0; r < n; ++r)
    if (sk_status st = launch_dispatches(s, "sk_launch_repeat"); st != SK_OK) return st;
  return SK_OK;
}

sk_status CudaBackendSuperKernel::set_arg(uint32_t step, uint32_t index, const uint64_t *slots) {
  const std::vector<uint32_t> &at = kernels[step]->arg_slots;
  const PlanInput &in = plan.steps[step].kernel;
  const Dispatch &d = dispatches[dispatch_of[step]];
  if (d.plain) {
    std::lock_guard<std::mutex> lock(plain_mutex);
    std::copy(slots, slots + (at[index + 1] - at[index]), plain_slots.begin() + slot_base[step] + at[index]);
    return SK_OK;
  }
  if (index < 64 && (in.arg_refs >> index & 1)) {
    ContextScope ctx(*gpu, "sk_superkernel_set_arg");
    if (ctx.status() != SK_OK) return ctx.status();
    const CudaKernel &k = *static_cast<const CudaBackendKernel &>(*kernels[step]).kernel;
    if (sk_status st = check_ref(*gpu, k, "sk_superkernel_set_arg", plan.name, step, in.name, index, slots[0]);
        st != SK_OK)
      return st;
  }
  return d.program->set_slots(slot_base[step] - slot_base[d.first] + at[index], slots, at[index + 1] - at[index]);
}

void CudaBackendSuperKernel::current_args(uint32_t step, uint64_t *out) const {
  const Dispatch &d = dispatches[dispatch_of[step]];
  if (d.plain) {
    std::lock_guard<std::mutex> lock(plain_mutex);
    std::copy_n(plain_slots.begin() + slot_base[step], kernels[step]->slots(), out);
    return;
  }
  d.program->read_slots(slot_base[step] - slot_base[d.first], kernels[step]->slots(), out);
}

std::string CudaBackendSuperKernel::explain() const {
  // The first linked program is the entry explain describes (check_plain_steps: there is one);
  // each distinct fused sub-kernel once, in step order, with its program's block.
  const Dispatch *first = nullptr;
  std::vector<std::pair<const CudaKernel *, const LinkedProgram *>> distinct;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Dispatch &d = dispatches[dispatch_of[i]];
    if (!d.program) continue;
    if (!first) first = &d;
    const CudaKernel *ck = static_cast<const CudaBackendKernel &>(*kernels[i]).kernel.get();
    if (std::none_of(distinct.begin(), distinct.end(), [ck](const auto &e) { return e.first == ck; }))
      distinct.emplace_back(ck, d.program.get());
  }
  return explain_json(
      plan, "cuda",
      [this, first, &distinct](JsonWriter &j) {
    const LinkedProgram &p = *first->program;
    const EntryResources &r = p.resources();
    j.key("entry").value(r.entry);
    j.key("arch").value("sm_" + std::to_string(r.sm));
    j.key("threads").value(uint64_t{p.threads()});
    j.key("registers").value(uint64_t{r.registers});
    j.key("compiled").value(r.whole_program ? "whole program" : "linked");
    if (r.whole_program) j.key("linked_registers").value(uint64_t{r.linked_registers});
    if (!r.why_linked.empty()) j.key("why_linked").value(r.why_linked);
    if (r.register_cap) j.key("register_cap").value(uint64_t{r.register_cap});
    j.key("local_bytes").value(uint64_t{r.local_bytes});
    j.key("stack_bytes").value(uint64_t{r.stack_bytes});
    j.key("static_shared_bytes").value(uint64_t{r.static_shared});
    j.key("dynamic_shared_bytes").value(uint64_t{r.dynamic_shared});
    j.key("blocks_per_sm").value(uint64_t{p.occupancy_per_sm()});
    j.key("arguments").value(r.args == ArgSource::Params ? "parameters" : "buffer");
    j.key("argument_bytes").value(uint64_t{8 * p.slot_count()});
    const StepLoopCode &c = r.step_loop;
    j.key("step_loop").begin_object();
    j.key("block_barriers").value(uint64_t{c.block_barriers});
    j.key("releases").value(uint64_t{c.releases});
    j.key("acquires").value(uint64_t{c.acquires});
    j.key("full_fences").value(uint64_t{c.full_fences});
    j.key("polls").value(uint64_t{c.polls});
    j.key("table_loads").value(uint64_t{c.table_loads});
    j.key("one_barrier_steps").value(uint64_t{one_barrier_steps(p.table())});
    j.end_object();
    j.key("sub_kernels").begin_array();
    for (const auto &[k, program] : distinct) {
      j.begin_object();
      write_kernel_facts(j, *k);
      j.key("function")
          .value(k->module->ptx ? narrow_call_name(*k->module->ptx, k->symbol, k->threads, program->threads())
                                : k->symbol);
      j.end_object();
    }
    j.end_array();
    if (dispatches.size() > 1) write_dispatches(j);
      },
      "cuda_entry");
}

void CudaBackendSuperKernel::write_dispatches(JsonWriter &j) const {
  j.key("dispatches").begin_array();
  for (const Dispatch &d : dispatches) {
    j.begin_object();
    j.key("first_step").value(uint64_t{d.first});
    j.key("last_step").value(uint64_t{d.end - 1});
    if (d.program) {
      const EntryResources &r = d.program->resources();
      j.key("launch").value("super kernel");
      j.key("threads").value(uint64_t{d.program->threads()});
      j.key("registers").value(uint64_t{r.registers});
      j.key("blocks").value(uint64_t{d.plan.cores});
      j.key("blocks_per_sm").value(uint64_t{d.program->occupancy_per_sm()});
    } else {
      const PlanInput &in = plan.steps[d.first].kernel;
      const CudaKernel &k = *static_cast<const CudaBackendKernel &>(*kernels[d.first]).kernel;
      j.key("launch").value("plain");
      j.key("function").value(k.symbol);
      j.key("grid").begin_array();
      for (uint32_t e : launch_grid(in.block_dim, in.grid)) j.value(uint64_t{e});
      j.end_array();
      write_dims(j, "block", k.block);  // a plain kernel's block is always set
      write_dims(j, "cluster", k.cluster);
      j.key("registers").value(uint64_t{k.registers});
      j.key("static_shared_bytes").value(uint64_t{k.static_shared});
      j.key("dynamic_shared_bytes").value(uint64_t{k.dynamic_shared});
    }
    j.end_object();
  }
  j.end_array();
}

std::shared_ptr<PlainFunction> CudaBackendKernel::plain_function() {
  std::lock_guard<std::mutex> lock(unfused_mutex);
  if (!plain)
    plain = std::make_shared<PlainFunction>(gpu, kernel, (usage & (kUsesGridSync | kUsesOwnGridBarrier)) != 0);
  return plain;
}

sk_status CudaBackendKernel::unfused_program(uint32_t block_dim, const GridShape &grid, size_t slots,
                                             std::shared_ptr<UnfusedProgram> *out) {
  {
    std::lock_guard<std::mutex> lock(unfused_mutex);
    if (auto it = unfused.find({block_dim, grid}); it != unfused.end()) {
      *out = it->second;
      return SK_OK;
    }
  }
  const std::shared_ptr<CudaDevice> &dev = gpu;
  // A one-step plan over block_dim blocks: one block per block, no multiplexing, launched
  // cooperatively only when the kernel waits on other blocks.
  PlanInput in = plan_input(block_dim, grid);
  in.kind = KernelKind::Vector;  // one core type (cuda_inputs)
  in.core_type = "vector";
  Plan plan;
  if (sk_status st = build_unfused_plan(in, block_dim, &plan); st != SK_OK) return st;
  ContextScope ctx(*dev, "sk_launch_kernel");
  if (ctx.status() != SK_OK) return ctx.status();
  auto made = std::make_shared<UnfusedProgram>();
  const uint64_t id = dev->register_name(symbol + " (single)", {symbol});
  BuiltImage image;
  if (sk_status st = build_and_load(dev, build_request(*dev, plan, {kernel}, id), &image, &made->linked);
      st != SK_OK)
    return st;
  const bool waits = (usage & kUsesWaitForAll) != 0;
  if (waits && block_dim > made->linked->max_coresident())
    return fail(SK_ERR_INCOMPATIBLE,
                "sk_launch_kernel: kernel '%s' synchronises its blocks (%s), but block_dim %u exceeds the %u blocks "
                "that can be co-resident on %s",
                symbol.c_str(), sync_reason(usage, usage_paths).c_str(), block_dim, made->linked->max_coresident(),
                dev->name().c_str());
  // Every launch sets the slots before it runs.
  if (sk_status st = made->linked->configure(std::vector<uint64_t>(slots, 0), block_dim, waits); st != SK_OK)
    return st;
  std::lock_guard<std::mutex> lock(unfused_mutex);
  *out = unfused.emplace(std::make_pair(block_dim, grid), made).first->second;
  return SK_OK;
}

sk_status CudaBackendKernel::check_launch(uint32_t block_dim, const GridShape &grid) {
  if (sk_status st = gpu->usable("sk_launch_kernel"); st != SK_OK) return st;
  if (kernel->plain) {
    ContextScope ctx(*gpu, "sk_launch_kernel");
    if (ctx.status() != SK_OK) return ctx.status();
    return plain_function()->load("sk_launch_kernel");
  }
  std::shared_ptr<UnfusedProgram> program;
  return unfused_program(block_dim, grid, slots(), &program);
}

sk_status CudaBackendKernel::launch(uint32_t block_dim, const GridShape &grid, void *const *args,
                                    backend::Stream *stream) {
  const std::shared_ptr<CudaDevice> &dev = gpu;
  if (sk_status st = dev->usable("sk_launch_kernel"); st != SK_OK) return st;
  std::vector<uint64_t> slots;
  if (sk_status st = copy_args(args, "sk_launch_kernel", &slots); st != SK_OK) return st;
  if (kernel->plain) {
    // A scope's plain steps were checked at sk_finalize.
    if (sk_status st =
            check_cluster_grid(*kernel, block_dim, grid, "kernel '" + kernel->symbol + "'", "sk_launch_kernel");
        st != SK_OK)
      return st;
    return plain_function()->launch(block_dim, grid, slots.data(), driver_stream(*dev, stream), "sk_launch_kernel");
  }
  std::shared_ptr<UnfusedProgram> program;
  if (sk_status st = unfused_program(block_dim, grid, slots.size(), &program); st != SK_OK) return st;
  std::lock_guard<std::mutex> lock(program->mutex);
  if (sk_status st = program->linked->set_slots(0, slots.data(), slots.size()); st != SK_OK) return st;
  return program->linked->launch(driver_stream(*dev, stream), "sk_launch_kernel");
}

}  // namespace sk::cuda
