// The host backend's device: open, memory, streams, module loading and kernel lookup.
#include "host/host_backend.hpp"

#include <cstring>

#include "common/device_api_usage.hpp"
#include "common/device_spec.hpp"
#include "common/error.hpp"
#include "common/kernel_metadata.hpp"
#include "elf/demangle.hpp"
#include "host/open.hpp"

namespace sk::host {

sk_status open_host_backend(const char *spec, std::shared_ptr<backend::Device> *out) {
  DeviceSpec parsed;
  if (sk_status st = parse_device_spec(spec, &parsed); st != SK_OK) return st;
  std::unique_ptr<HostDevice> host;
  if (sk_status st = HostDevice::open(parsed, &host); st != SK_OK) return st;
  *out = std::make_shared<HostBackendDevice>(std::move(host));
  return SK_OK;
}

void HostBackendDevice::close() { host_->executor().wait_idle(); }

sk_status HostBackendDevice::memcpy(void *dst, const void *src, size_t size) {
  host_->executor().wait_idle();
  std::memmove(dst, src, size);
  return SK_OK;
}

sk_status HostBackendDevice::create_stream(std::unique_ptr<backend::Stream> *out) {
  *out = std::make_unique<HostBackendStream>(shared_from_this(), host_);
  return SK_OK;
}

sk_status HostBackendDevice::synchronize(backend::Stream *stream, const char *call) {
  return host_->executor().synchronize(stream_state(*host_, stream), call);
}

sk_status HostBackendDevice::query(backend::Stream *stream, bool *done) {
  return host_->executor().query(stream_state(*host_, stream), done);
}

sk_status HostBackendDevice::load_module(const std::vector<backend::ModuleImage> &images, const char *,
                                         std::unique_ptr<backend::Module> *out) {
  std::shared_ptr<LinkedModule> linked;
  if (images.size() == 1) {
    if (sk_status st = host_->load_module(images[0].bytes, images[0].size, images[0].label, &linked); st != SK_OK)
      return st;
  } else {
    std::vector<elf::Input> inputs;
    std::string label;
    for (const backend::ModuleImage &in : images) {
      inputs.push_back({in.label, in.bytes, in.size});
      label += (label.empty() ? "" : " + ") + in.label;
    }
    if (sk_status st = host_->load_module_set(inputs, label, &linked); st != SK_OK) return st;
  }
  *out = std::make_unique<HostBackendModule>(shared_from_this(), host_, std::move(linked));
  return SK_OK;
}

sk_status HostBackendModule::get_kernel(const char *name, const backend::KernelRequest &request, const char *call,
                                        std::shared_ptr<backend::Kernel> *out) {
  const char *signature = request.signature;
  if (request.threads || request.dynamic_shared || request.block[0] || request.block[1] || request.block[2] ||
      request.cluster[0] || request.cluster[1] || request.cluster[2])
    return fail(
        SK_ERR_INVALID_ARGUMENT,
        "%s: kernel '%s': threads, dynamic_shared, block and cluster are launch facts of GPU kernels; on the "
        "host a block is one call on one core",
        call, name);
  const LinkedModule &lm = *linked;
  const LinkedFunction *fn = lm.object->find_function(name);
  if (!fn) {
    if (auto it = lm.archive_definitions.find(name); it != lm.archive_definitions.end())
      return fail(SK_ERR_NOT_FOUND,
                  "%s: no function '%s' is defined in %s: %s defines it, but nothing in the set "
                  "needed that member, so it was not linked; load the set with a linker script "
                  "input holding EXTERN(%s) to pull it in (as ld -u %s does)",
                  call, name, lm.label.c_str(), it->second.c_str(), name, name);
    return fail(SK_ERR_NOT_FOUND, "%s: no function %s is defined in %s", call, elf::quoted_symbol(name).c_str(),
                lm.label.c_str());
  }
  const KernelMetadata *meta = lm.find_metadata(name);
  const std::string what = kernel_of(name, lm.label);
  auto k = std::make_shared<HostBackendKernel>(device_);
  Signature sig;
  if (sk_status st =
          kernel_signature(signature, meta, what, call, ".sk.kernels metadata (built without SK_KERNEL?)", &sig);
      st != SK_OK)
    return st;
  k->set_signature(std::move(sig));
  k->host = host;
  k->module = linked;
  k->symbol = name;
  k->core_type = meta ? meta->core_type : "vector";
  parse_kernel_kind(k->core_type, &k->kind);  // the metadata reader admits only the four
  k->usage = device_api_usage(fn->undefined_references);
  k->usage_paths = device_api_paths(fn->device_api_paths);
  k->fn = fn->address;
  if (sk_status st = prepare_call(k->signature, name, &k->call); st != SK_OK) return st;
  // By-value aggregates are copied onto the stack of the core that calls the kernel: one that
  // would overflow it is refused here, not left to crash the process at its first launch.
  const uint64_t stack_kib = host->executor().config().stack_kib;
  if (k->call->stack_bytes + kCallStackReserve > stack_kib * 1024)
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: %s takes its parameters (%s) by value in %zu bytes of the calling core's stack, which with "
                "the %zu KiB libsk keeps for frames is more than the device's %llu KiB per core (device key "
                "stack_kb): open the device with stack_kb=%zu or more",
                call, what.c_str(), k->signature_text.c_str(), k->call->stack_bytes, kCallStackReserve / 1024,
                static_cast<unsigned long long>(stack_kib),
                (k->call->stack_bytes + kCallStackReserve + 1023) / 1024);
  host->executor().note_call_stack(k->call->stack_bytes);
  *out = std::move(k);
  return SK_OK;
}

}  // namespace sk::host
