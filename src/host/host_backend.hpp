// The host device behind the C API (common/backend.hpp): the handles of a "host" device hold
// these objects. host_backend.cpp opens the device and loads modules and kernels; host_launch.cpp
// finalizes, launches and explains; host/lower_plan.cpp turns a plan into a Program.
#pragma once
#include <sk.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/backend.hpp"
#include "host/executor/kernel_call.hpp"
#include "host/executor/program.hpp"
#include "host/executor/program_pool.hpp"
#include "host/host_device.hpp"

namespace sk::host {

class HostBackendDevice final : public backend::Device, public backend::ForkWatch {
 public:
  explicit HostBackendDevice(std::shared_ptr<HostDevice> host) : host_(std::move(host)) {}
  const std::shared_ptr<HostDevice> &host() const { return host_; }

  uint32_t cores() const override { return host_->cores(); }
  void close() override;
  const backend::ForkWatch *fork_watch() const override { return this; }
  bool forked_away() const override { return host_->executor().forked_away(); }
  sk_status mem_alloc(size_t size, void **out) override { return host_->mem_alloc(size, out); }
  bool mem_free(void *ptr) override { return host_->mem_free(ptr); }
  sk_status memcpy(void *dst, const void *src, size_t size) override;
  sk_status create_stream(std::unique_ptr<backend::Stream> *out) override;
  sk_status synchronize(backend::Stream *stream, const char *call) override;
  sk_status query(backend::Stream *stream, bool *done) override;
  // The executor runs the launches of all its streams in the order they are queued (one ring),
  // so a launch queued after a wait already starts after those queued before the record.
  sk_status create_event(std::unique_ptr<backend::Event> *out) override {
    *out = std::make_unique<backend::Event>(shared_from_this());
    return SK_OK;
  }
  sk_status record_event(backend::Event *, backend::Stream *) override { return SK_OK; }
  sk_status wait_event(backend::Stream *, backend::Event *) override { return SK_OK; }
  sk_status load_module(const std::vector<backend::ModuleImage> &images, const char *call,
                        std::unique_ptr<backend::Module> *out) override;
  sk_status finalize(const std::string &name, const ScopeOptions &options, std::vector<PlanInput> inputs,
                     std::vector<std::shared_ptr<backend::Kernel>> kernels, std::vector<std::vector<uint64_t>> args,
                     std::unique_ptr<backend::SuperKernel> *out) override;

 private:
  std::shared_ptr<HostDevice> host_;
};

class HostBackendStream final : public backend::Stream {
 public:
  HostBackendStream(std::shared_ptr<backend::Device> device, std::shared_ptr<HostDevice> host)
      : Stream(std::move(device)), host(std::move(host)) {}
  ~HostBackendStream() override {
    host->executor().synchronize(state.get());
    // A stuck core of a lost device may still complete a task of this stream, and write its
    // failure here.
    if (host->executor().lost()) keep_for_stuck_threads(state);
  }
  std::shared_ptr<HostDevice> host;
  std::shared_ptr<StreamState> state = std::make_shared<StreamState>();
};

// The executor's queue for `stream` (a stream of a host device, or nullptr: its default one).
inline StreamState *stream_state(HostDevice &host, backend::Stream *stream) {
  return stream ? static_cast<HostBackendStream *>(stream)->state.get() : &host.default_stream();
}

class HostBackendModule final : public backend::Module {
 public:
  HostBackendModule(std::shared_ptr<backend::Device> device, std::shared_ptr<HostDevice> host,
                    std::shared_ptr<LinkedModule> linked)
      : Module(std::move(device)), host(std::move(host)), linked(std::move(linked)) {}
  sk_status get_kernel(const char *name, const backend::KernelRequest &request, const char *call,
                       std::shared_ptr<backend::Kernel> *out) override;
  const std::vector<KernelMetadata> &declared_kernels() const override { return linked->metadata; }
  std::shared_ptr<HostDevice> host;
  std::shared_ptr<LinkedModule> linked;
};

// A kernel's function in a linked module and how the step loop calls it (host/executor/kernel_call.hpp).
class HostBackendKernel final : public backend::Kernel, public std::enable_shared_from_this<HostBackendKernel> {
 public:
  using Kernel::Kernel;
  std::string_view module_label() const override { return module->label; }
  // The host's kernels number their blocks with sk_block_idx() alone: a grid's shape changes
  // nothing in their launches.
  sk_status launch(uint32_t block_dim, const GridShape &grid, void *const *args, backend::Stream *stream) override;
  sk_status check_launch(uint32_t block_dim, const GridShape &grid) override;

  std::shared_ptr<HostDevice> host;
  std::shared_ptr<LinkedModule> module;
  void *fn = nullptr;
  std::unique_ptr<CallInterface> call;
  ProgramPool unfused_programs;  // sk_launch_kernel's one-step programs
};

class HostBackendSuperKernel final : public backend::SuperKernel, public backend::Profiling {
 public:
  HostBackendSuperKernel(std::shared_ptr<backend::Device> device, std::shared_ptr<HostDevice> host)
      : SuperKernel(std::move(device)), host(std::move(host)) {}
  ~HostBackendSuperKernel() override;
  sk_status launch(backend::Stream *stream) override;
  sk_status launch_repeat(uint32_t n, const uint32_t *stop_flag, backend::Stream *stream) override;
  sk_status set_arg(uint32_t step, uint32_t index, const uint64_t *slots) override;
  void current_args(uint32_t step, uint64_t *out) const override;
  std::string explain() const override;
  const backend::Profiling *profiling() const override { return this; }
  sk_status last_profile(const char *call, std::vector<sk_profile_record> *out, uint32_t *id) const override;

  std::shared_ptr<HostDevice> host;
  std::unique_ptr<Program> program;
};

}  // namespace sk::host
