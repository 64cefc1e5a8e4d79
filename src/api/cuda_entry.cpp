// The CUDA branch of the C entry points (see cuda_entry.hpp). The host entry points check the
// handles and arguments they share with the host backend, then call in here.
#include "api/cuda_entry.hpp"

#include <cstring>

#include "api/handles.hpp"
#include "api/open_devices.hpp"

using sk::fail;

namespace sk::api {

bool is_cuda_spec(const char *spec) {
  return spec && std::strncmp(spec, "cuda", 4) == 0 && (spec[4] == '\0' || spec[4] == ':');
}

}  // namespace sk::api

#ifdef SK_HAVE_CUDA

#include "core/device_api_usage.hpp"
#include "core/json_writer.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/cuda_module.hpp"
#include "cuda/linked_program.hpp"
#include "cuda/superkernel_build.hpp"

namespace sk::cuda {

struct CudaStream {
  std::shared_ptr<CudaDevice> device;
  CUstream stream = nullptr;
  ~CudaStream() {
    if (!stream) return;
    ContextScope ctx(*device, "sk_stream_destroy", true);
    device->api().cuStreamSynchronize(stream);
    device->forget_stream(stream);  // a later stream may get its handle
    device->api().cuStreamDestroy(stream);
  }
};

struct CudaSuperKernel {
  std::shared_ptr<CudaDevice> device;
  std::unique_ptr<LinkedProgram> program;
  std::vector<size_t> slot_base;  // first argument slot of each step
  uint64_t id = 0;
  ~CudaSuperKernel() {
    program.reset();  // waits for its launches
    if (id) device->unregister_name(id);
  }
};

// A linked single-kernel entry of sk_launch_kernel (CudaKernel::single holds them).
struct SingleEntry {
  std::unique_ptr<LinkedProgram> program;
  std::mutex mutex;  // one launch at a time: the slots are set, then launched
};

}  // namespace sk::cuda

namespace sk::api {
namespace {

using sk::cuda::CudaDevice;

// Blocks per SM no architecture exceeds (32 on every sm_70+): the first plan's core bound,
// before the linked entry's occupancy is known.
constexpr uint32_t kMaxBlocksPerSm = 32;

cuda::CUstream stream_of(const CudaDevice &dev, sk_stream *s) {
  return s ? s->cuda->stream : dev.default_stream();
}

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

// Builds, links and loads a plan; `capacity` is the co-residency bound the plan was made for.
sk_status build_and_load(const std::shared_ptr<CudaDevice> &dev, const Plan &plan,
                         const std::vector<std::shared_ptr<cuda::CudaKernel>> &kernels, size_t slots, uint64_t id,
                         std::unique_ptr<cuda::LinkedProgram> *out) {
  cuda::BuildRequest req;
  req.name = plan.name;
  req.arch = dev->arch();
  req.timeout_ns = dev->timeout_ns();
  req.id = id;
  req.plan = &plan;
  req.kernels = kernels;
  req.arg_slots = slots;
  req.param_bytes = cuda::param_space_bytes(dev->driver_version());
  cuda::BuiltImage image;
  if (sk_status st = cuda::build_superkernel(req, &image); st != SK_OK) return st;
  return cuda::LinkedProgram::load(dev, image, plan.name, plan.steps.size(), id, out);
}

// sk_stream_synchronize on one of the device's streams: waits, then reports a hang the
// super kernel recorded.
sk_status synchronize_stream(CudaDevice &d, cuda::CUstream stream) {
  cuda::ContextScope ctx(d, "sk_stream_synchronize");
  if (ctx.status() != SK_OK) return ctx.status();
  if (sk_status st = d.check(d.api().cuStreamSynchronize(stream), "sk_stream_synchronize", "cuStreamSynchronize");
      st != SK_OK)
    return st;
  return d.take_hang_report(stream, "sk_stream_synchronize");
}

}  // namespace

sk_status cuda_device_open(const char *spec, sk_device **out) {
  cuda::CudaSpec parsed;
  if (sk_status st = cuda::parse_cuda_spec(spec, &parsed); st != SK_OK) return st;
  std::shared_ptr<CudaDevice> impl;
  if (sk_status st = CudaDevice::open(parsed, &impl); st != SK_OK) return st;
  auto dev = std::make_unique<sk_device>();
  dev->cuda = std::move(impl);
  dev->spec = dev->life->spec = spec;
  register_device(dev.get());
  *out = dev.release();
  return SK_OK;
}

void cuda_device_close(sk_device *dev) {
  unregister_device(dev);
  {
    cuda::ContextScope ctx(*dev->cuda, "sk_device_close", true);
    if (ctx.status() == SK_OK) dev->cuda->api().cuCtxSynchronize();
  }
  delete dev;  // objects made from it keep the device (and its context) alive
}

uint32_t cuda_device_cores(sk_device *dev) { return dev->cuda->multiprocessors(); }

sk_status cuda_mem_alloc(sk_device *dev, size_t size, void **out) { return dev->cuda->mem_alloc(size, out); }

void cuda_mem_free(sk_device *dev, void *ptr) {
  if (!dev->cuda->mem_free(ptr))
    fail(SK_ERR_INVALID_ARGUMENT, "sk_mem_free: %p was not allocated by this device (ignored)", ptr);
}

sk_status cuda_memcpy(sk_device *dev, void *dst, const void *src, size_t size) {
  return dev->cuda->memcpy(dst, src, size);
}

sk_status cuda_synchronize_default(sk_device *dev) {
  return synchronize_stream(*dev->cuda, dev->cuda->default_stream());
}

sk_status cuda_module_load(sk_device *dev, const void *image, size_t size, const std::string &label,
                           sk_module **out) {
  if (sk_status st = dev->cuda->usable("sk_module_load"); st != SK_OK) return st;
  std::shared_ptr<const cuda::CudaModule> m;
  if (sk_status st = cuda::load_cuda_module(image, size, label, &m, dev->cuda->arch()); st != SK_OK) return st;
  auto mod = std::make_unique<sk_module>();
  mod->cuda = dev->cuda;
  mod->cuda_module = std::move(m);
  *out = mod.release();
  return SK_OK;
}

sk_status cuda_kernel_impl(sk_module *mod, const char *name, const char *signature, const char *call,
                           std::shared_ptr<KernelImpl> *out) {
  std::shared_ptr<cuda::CudaKernel> ck;
  if (sk_status st = cuda::make_cuda_kernel(mod->cuda_module, name, signature, call, &ck); st != SK_OK) return st;
  ck->device = mod->cuda;
  auto impl = std::make_shared<KernelImpl>();
  impl->symbol = name;
  impl->core_type = ck->core_type;
  parse_kernel_kind(impl->core_type, &impl->kind);
  impl->signature = ck->signature;
  impl->signature_text = signature_to_string(ck->signature);
  impl->usage = ck->usage;
  impl->cuda = std::move(ck);
  // The scope checks compare KernelImpl::device with the scope's: both are empty on CUDA, and
  // cuda_same_device compares the CUDA devices.
  *out = std::move(impl);
  return SK_OK;
}

std::string_view cuda_module_label(const KernelImpl &k) { return k.cuda->module->label; }

bool cuda_same_device(const KernelImpl &k, const sk_scope &scope) {
  return k.cuda && scope.cuda && k.cuda->device == scope.cuda;
}

sk_status cuda_finalize(sk_scope &scope, std::vector<PlanInput> inputs,
                        std::vector<std::shared_ptr<KernelImpl>> kernels, std::vector<std::vector<uint64_t>> args,
                        sk_superkernel **out) {
  const std::shared_ptr<CudaDevice> &dev = scope.cuda;
  if (sk_status st = cuda_inputs(scope.name, &inputs); st != SK_OK) return st;
  std::vector<std::shared_ptr<cuda::CudaKernel>> ck;
  std::vector<std::string> names;
  std::vector<uint64_t> slots;
  std::vector<size_t> slot_base;
  for (size_t i = 0; i < kernels.size(); ++i) {
    ck.push_back(kernels[i]->cuda);
    names.push_back(inputs[i].name);
    slot_base.push_back(slots.size());
    slots.insert(slots.end(), args[i].begin(), args[i].end());
  }
  cuda::ContextScope ctx(*dev, "sk_finalize");
  if (ctx.status() != SK_OK) return ctx.status();
  auto sk = std::make_unique<sk_superkernel>();
  auto impl = std::make_shared<cuda::CudaSuperKernel>();
  impl->device = dev;
  impl->slot_base = slot_base;
  impl->id = dev->register_name(scope.name, names);
  // First plan: bounded by what any architecture could hold; the linked entry's occupancy
  // then gives the real co-residency bound, and a plan that exceeds it is made again.
  const uint32_t bound = dev->multiprocessors() * kMaxBlocksPerSm;
  if (sk_status st = build_plan(scope.name, scope.options, inputs, bound, &sk->plan); st != SK_OK) return st;
  if (sk_status st = build_and_load(dev, sk->plan, ck, slots.size(), impl->id, &impl->program); st != SK_OK)
    return st;
  const uint32_t fit = impl->program->max_coresident();
  if (sk->plan.cores > fit) {
    Plan clipped;
    if (sk_status st = build_plan(scope.name, scope.options, inputs, fit, &clipped); st != SK_OK) {
      prefix_error("sk_finalize: on " + dev->name() + " at most " + std::to_string(fit) +
                   " blocks are co-resident (" + std::to_string(impl->program->occupancy_per_sm()) + " per SM x " +
                   std::to_string(dev->multiprocessors()) + " SMs, " +
                   std::to_string(impl->program->registers()) + " registers per thread)");
      return st;
    }
    sk->plan = std::move(clipped);
    impl->program.reset();
    if (sk_status st = build_and_load(dev, sk->plan, ck, slots.size(), impl->id, &impl->program); st != SK_OK)
      return st;
  }
  if (sk_status st = impl->program->configure(std::move(slots), sk->plan.cores, true); st != SK_OK) return st;
  sk->kernels = std::move(kernels);
  sk->cuda = std::move(impl);
  *out = sk.release();
  return SK_OK;
}

sk_status cuda_launch(sk_superkernel *sk, sk_stream *stream) {
  if (stream && stream->cuda && stream->cuda->device != sk->cuda->device)
    return fail(SK_ERR_INCOMPATIBLE, "sk_launch: super kernel '%s' and the stream belong to different devices",
                sk->plan.name.c_str());
  if (stream && !stream->cuda)
    return fail(SK_ERR_INCOMPATIBLE, "sk_launch: super kernel '%s' is a CUDA one, the stream is not",
                sk->plan.name.c_str());
  return sk->cuda->program->launch(stream_of(*sk->cuda->device, stream), "sk_launch");
}

sk_status cuda_launch_kernel(sk_kernel *kernel, uint32_t block_dim, void *const *args, sk_stream *stream) {
  KernelImpl &k = *kernel->impl;
  cuda::CudaKernel &ck = *k.cuda;
  const std::shared_ptr<CudaDevice> &dev = ck.device;
  if (sk_status st = dev->usable("sk_launch_kernel"); st != SK_OK) return st;
  if (stream && (!stream->cuda || stream->cuda->device != dev))
    return fail(SK_ERR_INCOMPATIBLE, "sk_launch_kernel: kernel '%s' and the stream belong to different devices",
                k.symbol.c_str());
  if (sk_status st = check_block_dim("sk_launch_kernel", k, block_dim); st != SK_OK) return st;
  std::vector<uint64_t> slots;
  if (sk_status st = copy_args(k, args, "sk_launch_kernel", &slots); st != SK_OK) return st;
  std::shared_ptr<cuda::SingleEntry> entry;
  {
    std::lock_guard<std::mutex> lock(ck.single_mutex);
    if (auto it = ck.single.find(block_dim); it != ck.single.end())
      entry = std::static_pointer_cast<cuda::SingleEntry>(it->second);
  }
  if (!entry) {
    // A one-step plan over block_dim blocks: one block per block, no multiplexing, launched
    // cooperatively only when the kernel waits on other blocks.
    PlanInput in;
    in.name = k.symbol;
    in.symbol = k.symbol;
    in.module = ck.module->label;
    in.signature = k.signature_text;
    in.core_type = "vector";
    in.block_dim = block_dim;
    in.usage = k.usage;
    Plan plan;
    if (sk_status st = build_plan(k.symbol, ScopeOptions{}, {in}, block_dim, &plan); st != SK_OK) return st;
    cuda::ContextScope ctx(*dev, "sk_launch_kernel");
    if (ctx.status() != SK_OK) return ctx.status();
    auto made = std::make_shared<cuda::SingleEntry>();
    const uint64_t id = dev->register_name(k.symbol + " (single)", {k.symbol});
    if (sk_status st = build_and_load(dev, plan, {k.cuda}, slots.size(), id, &made->program); st != SK_OK)
      return st;
    const bool waits = (k.usage & (kUsesSyncAll | kUsesCrossCoreWaitFlagAll)) != 0;
    if (waits && block_dim > made->program->max_coresident())
      return fail(SK_ERR_INCOMPATIBLE,
                  "sk_launch_kernel: kernel '%s' synchronises its blocks, but block_dim %u exceeds the %u blocks "
                  "that can be co-resident on %s",
                  k.symbol.c_str(), block_dim, made->program->max_coresident(), dev->name().c_str());
    if (sk_status st = made->program->configure(slots, block_dim, waits); st != SK_OK) return st;
    std::lock_guard<std::mutex> lock(ck.single_mutex);
    auto [it, inserted] = ck.single.emplace(block_dim, made);
    entry = std::static_pointer_cast<cuda::SingleEntry>(it->second);
  }
  std::lock_guard<std::mutex> lock(entry->mutex);
  for (size_t i = 0; i < slots.size(); ++i)
    if (sk_status st = entry->program->set_slot(i, slots[i]); st != SK_OK) return st;
  return entry->program->launch(stream_of(*dev, stream), "sk_launch_kernel");
}

sk_status cuda_set_arg(sk_superkernel *sk, uint32_t step, uint32_t index, const void *value) {
  const KernelImpl &k = *sk->kernels[step];  // step and index checked by sk_superkernel_set_arg
  return sk->cuda->program->set_slot(sk->cuda->slot_base[step] + index, to_slot(k.signature[index], value));
}

std::string cuda_explain(sk_superkernel *sk) {
  const cuda::LinkedProgram &p = *sk->cuda->program;
  return explain_json(sk->plan, "cuda", [&p](JsonWriter &j) {
    const cuda::EntryResources &r = p.resources();
    j.key("entry").value(r.entry);
    j.key("arch").value("sm_" + std::to_string(r.sm));
    j.key("registers").value(uint64_t{r.registers});
    j.key("local_bytes").value(uint64_t{r.local_bytes});
    j.key("stack_bytes").value(uint64_t{r.stack_bytes});
    j.key("static_shared_bytes").value(uint64_t{r.static_shared});
    j.key("dynamic_shared_bytes").value(uint64_t{r.dynamic_shared});
    j.key("blocks_per_sm").value(uint64_t{p.occupancy_per_sm()});
  }, "cuda_entry");
}

void cuda_superkernel_destroy(sk_superkernel *sk) {
  sk->cuda->program->wait("sk_superkernel_destroy");
  delete sk;
}

sk_status cuda_stream_create(sk_device *dev, sk_stream **out) {
  auto s = std::make_unique<sk_stream>();
  auto cs = std::make_shared<cuda::CudaStream>();
  cs->device = dev->cuda;
  cuda::ContextScope ctx(*dev->cuda, "sk_stream_create");
  if (ctx.status() != SK_OK) return ctx.status();
  if (sk_status st = dev->cuda->check(dev->cuda->api().cuStreamCreate(&cs->stream, cuda::CU_STREAM_NON_BLOCKING),
                                      "sk_stream_create", "cuStreamCreate");
      st != SK_OK)
    return st;
  s->cuda = std::move(cs);
  *out = s.release();
  return SK_OK;
}

sk_status cuda_stream_synchronize(sk_stream *stream) {
  return synchronize_stream(*stream->cuda->device, stream->cuda->stream);
}

void cuda_stream_destroy(sk_stream *stream) { delete stream; }

}  // namespace sk::api

#else  // SK_WITH_CUDA=OFF: no CUDA handle can exist, so only the device open is reachable.

namespace sk::api {

sk_status cuda_device_open(const char *spec, sk_device **) {
  return fail(SK_ERR_DEVICE, "device spec \"%s\": this libsk was built without the CUDA backend (SK_WITH_CUDA=OFF)",
              spec);
}
namespace {
sk_status unreachable(const char *call) {
  return fail(SK_ERR_STATE, "%s: CUDA handle in a libsk built without the CUDA backend", call);
}
}  // namespace
void cuda_device_close(sk_device *) {}
uint32_t cuda_device_cores(sk_device *) { return 0; }
sk_status cuda_mem_alloc(sk_device *, size_t, void **) { return unreachable("sk_mem_alloc"); }
void cuda_mem_free(sk_device *, void *) {}
sk_status cuda_memcpy(sk_device *, void *, const void *, size_t) { return unreachable("sk_memcpy"); }
sk_status cuda_synchronize_default(sk_device *) { return unreachable("sk_stream_synchronize"); }
sk_status cuda_module_load(sk_device *, const void *, size_t, const std::string &, sk_module **) {
  return unreachable("sk_module_load");
}
sk_status cuda_kernel_impl(sk_module *, const char *, const char *, const char *call, std::shared_ptr<KernelImpl> *) {
  return unreachable(call);
}
std::string_view cuda_module_label(const KernelImpl &) { return ""; }
bool cuda_same_device(const KernelImpl &, const sk_scope &) { return false; }
sk_status cuda_finalize(sk_scope &, std::vector<PlanInput>, std::vector<std::shared_ptr<KernelImpl>>,
                        std::vector<std::vector<uint64_t>>, sk_superkernel **) {
  return unreachable("sk_finalize");
}
sk_status cuda_launch(sk_superkernel *, sk_stream *) { return unreachable("sk_launch"); }
sk_status cuda_launch_kernel(sk_kernel *, uint32_t, void *const *, sk_stream *) {
  return unreachable("sk_launch_kernel");
}
sk_status cuda_set_arg(sk_superkernel *, uint32_t, uint32_t, const void *) {
  return unreachable("sk_superkernel_set_arg");
}
std::string cuda_explain(sk_superkernel *) { return {}; }
void cuda_superkernel_destroy(sk_superkernel *sk) { delete sk; }
sk_status cuda_stream_create(sk_device *, sk_stream **) { return unreachable("sk_stream_create"); }
sk_status cuda_stream_synchronize(sk_stream *) { return unreachable("sk_stream_synchronize"); }
void cuda_stream_destroy(sk_stream *stream) { delete stream; }

}  // namespace sk::api
#endif
