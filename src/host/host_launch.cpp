// The host backend's super kernels (finalize, launch, set_arg, explain, profile, destroy) and
// unfused launches (sk_launch_kernel).
#include <algorithm>
#include <memory>

#include "common/error.hpp"
#include "common/json_writer.hpp"
#include "host/executor/profiler.hpp"
#include "host/executor/program_explain.hpp"
#include "host/host_backend.hpp"
#include "host/lower_plan.hpp"

namespace sk::host {
namespace {

std::vector<const HostBackendKernel *> host_kernels(const std::vector<std::shared_ptr<backend::Kernel>> &kernels) {
  std::vector<const HostBackendKernel *> out;
  out.reserve(kernels.size());
  for (const auto &k : kernels)
    out.push_back(static_cast<const HostBackendKernel *>(k.get()));  // the api checked the device
  return out;
}

// Its program. The argument slots are zero; a launch writes them to the block Program::args
// names (no rebind ever changes which).
sk_status build_unfused_program(const HostBackendKernel &k, uint32_t block_dim, std::unique_ptr<Program> *out) {
  Plan plan;
  // A plan like a super kernel's, so that the same checks and the same executor path apply.
  if (sk_status st = build_unfused_plan(k.plan_input(block_dim), k.host->cores(), &plan); st != SK_OK) return st;
  auto program = std::make_unique<Program>();
  lower_plan(plan, {&k}, {std::vector<uint64_t>(k.slots(), 0)}, k.host->executor().release_group(), program.get());
  *out = std::move(program);
  return SK_OK;
}

}  // namespace

sk_status HostBackendDevice::finalize(const std::string &name, const ScopeOptions &options,
                                      std::vector<PlanInput> inputs,
                                      std::vector<std::shared_ptr<backend::Kernel>> kernels,
                                      std::vector<std::vector<uint64_t>> args,
                                      std::unique_ptr<backend::SuperKernel> *out) {
  auto sk = std::make_unique<HostBackendSuperKernel>(shared_from_this(), host_);
  if (sk_status st = build_plan(name, options, std::move(inputs), host_->cores(), &sk->plan); st != SK_OK) return st;
  sk->program = std::make_unique<Program>();
  lower_plan(sk->plan, host_kernels(kernels), args, host_->executor().release_group(), sk->program.get());
  sk->kernels = std::move(kernels);
  *out = std::move(sk);
  return SK_OK;
}

HostBackendSuperKernel::~HostBackendSuperKernel() {
  if (!program) return;  // its finalize failed
  host->executor().wait_program(program.get());
  if (host->executor().lost()) {
    // A stuck core may still be in its program, running its kernels' code.
    keep_for_stuck_threads(std::shared_ptr<Program>(std::move(program)));
    for (auto &k : kernels) keep_for_stuck_threads(std::move(k));
  }
}

sk_status HostBackendSuperKernel::launch(backend::Stream *stream) {
  return host->executor().submit(program.get(), nullptr, stream_state(*host, stream));
}

sk_status HostBackendSuperKernel::launch_repeat(uint32_t n, const uint32_t *stop_flag, backend::Stream *stream) {
  // The flag is host memory, as all of a host device's memory is; the barrier between
  // iterations reads it (repeat_barrier.hpp).
  return host->executor().submit(program.get(), nullptr, stream_state(*host, stream), n, stop_flag);
}

sk_status HostBackendSuperKernel::set_arg(uint32_t step, uint32_t index, const uint64_t *slots) {
  // A stuck launch may still read the spare argument block that a rebind would write.
  if (host->executor().lost()) return host->executor().refuse_lost("sk_superkernel_set_arg");
  host->executor().rebind_arg(program.get(), program->steps[step].first_param + index, slots);
  return SK_OK;
}

void HostBackendSuperKernel::current_args(uint32_t step, uint64_t *out) const {
  const ArgBlock *args = program->args.load(std::memory_order_acquire);
  const uint64_t *first = args->slots + program->steps[step].first_slot;
  std::copy(first, first + kernels[step]->slots(), out);
}

std::string HostBackendSuperKernel::explain() const {
  const ExecutorConfig &device = host->executor().config();
  return explain_json(plan, "host", [this, &device](JsonWriter &j) { write_execution_json(j, *program, device); });
}

sk_status HostBackendSuperKernel::last_profile(const char *call, std::vector<sk_profile_record> *out,
                                               uint32_t *id) const {
  const Profiler *prof = program->profiler.get();
  if (!prof)
    return fail(SK_ERR_STATE, "%s: super kernel '%s' was not built with scope option profiling=1", call,
                plan.name.c_str());
  if (!prof->last(out))
    return fail(SK_ERR_STATE, "%s: super kernel '%s' has no completed launch yet (synchronize its stream first)",
                call, plan.name.c_str());
  *id = prof->id();
  return SK_OK;
}

sk_status HostBackendKernel::check_launch(uint32_t block_dim, const GridShape &) {
  Plan plan;
  return build_unfused_plan(plan_input(block_dim), host->cores(), &plan);
}

sk_status HostBackendKernel::launch(uint32_t block_dim, const GridShape &, void *const *args,
                                    backend::Stream *stream) {
  Program *program = unfused_programs.take(block_dim);
  std::unique_ptr<Program> unpooled;  // a program the pool declined (all in launches)
  if (!program) {
    if (sk_status st = build_unfused_program(*this, block_dim, &unpooled); st != SK_OK) return st;
    program = unfused_programs.adopt(unpooled);
    if (!program) program = unpooled.get();
  }
  if (sk_status st = copy_args(args, "sk_launch_kernel", program->arg_blocks[0].slots); st != SK_OK) {
    if (!unpooled) unfused_programs.put(program);
    return st;
  }
  program->launched_kernel = shared_from_this();
  return host->executor().submit(program, std::move(unpooled), stream_state(*host, stream));
}

}  // namespace sk::host
