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

}  // namespace

sk_status CudaBackendDevice::finalize(const std::string &name, const ScopeOptions &options,
                                      std::vector<PlanInput> inputs,
                                      std::vector<std::shared_ptr<backend::Kernel>> kernels,
                                      std::vector<std::vector<uint64_t>> args,
                                      std::unique_ptr<backend::SuperKernel> *out) {
  const std::shared_ptr<CudaDevice> &dev = gpu_;
  if (sk_status st = cuda_inputs(name, &inputs); st != SK_OK) return st;
  std::vector<std::shared_ptr<CudaKernel>> ck;
  std::vector<std::string> names;
  for (size_t i = 0; i < kernels.size(); ++i) {
    ck.push_back(static_cast<const CudaBackendKernel &>(*kernels[i]).kernel);  // the api checked the device
    names.push_back(inputs[i].name);
  }
  const std::vector<uint32_t> bases = step_arg_bases(ck);
  std::vector<uint64_t> slots(bases.back(), 0);
  for (size_t i = 0; i < kernels.size(); ++i) std::copy(args[i].begin(), args[i].end(), slots.begin() + bases[i]);
  const std::vector<size_t> slot_base(bases.begin(), bases.end() - 1);
  ContextScope ctx(*dev, "sk_finalize");
  if (ctx.status() != SK_OK) return ctx.status();
  for (size_t i = 0; i < kernels.size(); ++i)
    for (size_t a = 0; a + 1 < kernels[i]->arg_slots.size(); ++a)
      if (a < 64 && (inputs[i].arg_refs >> a & 1))
        if (sk_status st = check_ref(*dev, *ck[i], "sk_finalize", name, i, inputs[i].name, a,
                                     args[i][kernels[i]->arg_slots[a]]);
            st != SK_OK)
          return st;
  auto sk = std::make_unique<CudaBackendSuperKernel>(shared_from_this(), dev);
  sk->slot_base = slot_base;
  sk->id = dev->register_name(name, names);
  // First plan: bounded by what any architecture could hold; the linked entry's occupancy
  // then gives the real co-residency bound, and a plan that exceeds it is made again. The
  // entry does not depend on the placement, so the new plan changes the step table only.
  const uint32_t bound = dev->multiprocessors() * kMaxBlocksPerSm;
  if (sk_status st = build_plan(name, options, inputs, bound, &sk->plan); st != SK_OK) return st;
  BuildRequest req = build_request(*dev, sk->plan, ck, sk->id);
  BuiltImage image;
  if (sk_status st = build_and_load(dev, req, &image, &sk->program); st != SK_OK) return st;
  const uint32_t fit = sk->program->max_coresident();
  if (sk->plan.cores > fit) {
    Plan clipped;
    if (sk_status st = build_plan(name, options, inputs, fit, &clipped); st != SK_OK) {
      prefix_error("sk_finalize: on " + dev->name() + " at most " + std::to_string(fit) +
                   " blocks are co-resident (" + std::to_string(sk->program->occupancy_per_sm()) + " per SM x " +
                   std::to_string(dev->multiprocessors()) + " SMs, " + std::to_string(sk->program->registers()) +
                   " registers per thread)");
      return st;
    }
    sk->plan = std::move(clipped);
    req.plan = &sk->plan;
    std::vector<uint32_t> table;
    if (sk_status st = replanned_table(req, image, &table); st != SK_OK) return st;
    if (sk_status st = sk->program->set_table(std::move(table)); st != SK_OK) return st;
  }
  if (sk_status st = sk->program->configure(std::move(slots), sk->plan.cores, true); st != SK_OK) return st;
  sk->kernels = std::move(kernels);
  *out = std::move(sk);
  return SK_OK;
}

CudaBackendSuperKernel::~CudaBackendSuperKernel() {
  if (program) program->wait("sk_superkernel_destroy");
  program.reset();
  if (id) gpu->unregister_name(id);
}

sk_status CudaBackendSuperKernel::launch(backend::Stream *stream) {
  return program->launch(driver_stream(*gpu, stream), "sk_launch");
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
  return program->launch(driver_stream(*gpu, stream), "sk_launch_repeat", n,
                         reinterpret_cast<CUdeviceptr>(stop_flag));
}

sk_status CudaBackendSuperKernel::set_arg(uint32_t step, uint32_t index, const uint64_t *slots) {
  const std::vector<uint32_t> &at = kernels[step]->arg_slots;
  const PlanInput &in = plan.steps[step].kernel;
  if (index < 64 && (in.arg_refs >> index & 1)) {
    ContextScope ctx(*gpu, "sk_superkernel_set_arg");
    if (ctx.status() != SK_OK) return ctx.status();
    const CudaKernel &k = *static_cast<const CudaBackendKernel &>(*kernels[step]).kernel;
    if (sk_status st = check_ref(*gpu, k, "sk_superkernel_set_arg", plan.name, step, in.name, index, slots[0]);
        st != SK_OK)
      return st;
  }
  return program->set_slots(slot_base[step] + at[index], slots, at[index + 1] - at[index]);
}

void CudaBackendSuperKernel::current_args(uint32_t step, uint64_t *out) const {
  program->read_slots(slot_base[step], kernels[step]->slots(), out);
}

std::string CudaBackendSuperKernel::explain() const {
  const LinkedProgram &p = *program;
  // Each distinct sub-kernel once, in step order.
  std::vector<const CudaKernel *> distinct;
  for (const auto &k : kernels) {
    const CudaKernel *ck = static_cast<const CudaBackendKernel &>(*k).kernel.get();
    if (std::find(distinct.begin(), distinct.end(), ck) == distinct.end()) distinct.push_back(ck);
  }
  return explain_json(
      plan, "cuda",
      [&p, &distinct](JsonWriter &j) {
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
    j.end_object();
    j.key("sub_kernels").begin_array();
    for (const CudaKernel *k : distinct) {
      j.begin_object();
      write_kernel_facts(j, *k);
      j.key("function")
          .value(k->module->ptx ? narrow_call_name(*k->module->ptx, k->symbol, k->threads, p.threads()) : k->symbol);
      j.end_object();
    }
    j.end_array();
      },
      "cuda_entry");
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
  std::shared_ptr<UnfusedProgram> program;
  return unfused_program(block_dim, grid, slots(), &program);
}

sk_status CudaBackendKernel::launch(uint32_t block_dim, const GridShape &grid, void *const *args,
                                    backend::Stream *stream) {
  const std::shared_ptr<CudaDevice> &dev = gpu;
  if (sk_status st = dev->usable("sk_launch_kernel"); st != SK_OK) return st;
  std::vector<uint64_t> slots;
  if (sk_status st = copy_args(args, "sk_launch_kernel", &slots); st != SK_OK) return st;
  std::shared_ptr<UnfusedProgram> program;
  if (sk_status st = unfused_program(block_dim, grid, slots.size(), &program); st != SK_OK) return st;
  std::lock_guard<std::mutex> lock(program->mutex);
  if (sk_status st = program->linked->set_slots(0, slots.data(), slots.size()); st != SK_OK) return st;
  return program->linked->launch(driver_stream(*dev, stream), "sk_launch_kernel");
}

}  // namespace sk::cuda
