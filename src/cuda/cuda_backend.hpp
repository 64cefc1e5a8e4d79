// The CUDA device behind the C API (common/backend.hpp): the handles of a "cuda[:N]" device hold
// these objects. cuda_backend.cpp opens the device and loads modules and kernels;
// cuda_launch.cpp finalizes (re-planning after the occupancy query), launches and explains.
#pragma once
#include <sk.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/backend.hpp"
#include "common/json_writer.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/cuda_kernel.hpp"
#include "cuda/linked_program.hpp"
#include "cuda/plain_launch.hpp"

namespace sk::cuda {

class CudaBackendDevice final : public backend::Device, public backend::StreamWrapping, public backend::TensorMaps {
 public:
  explicit CudaBackendDevice(std::shared_ptr<CudaDevice> gpu) : gpu_(std::move(gpu)) {}
  const std::shared_ptr<CudaDevice> &gpu() const { return gpu_; }

  uint32_t cores() const override { return gpu_->multiprocessors(); }
  void close() override;
  sk_status mem_alloc(size_t size, void **out) override { return gpu_->mem_alloc(size, out); }
  bool mem_free(void *ptr) override { return gpu_->mem_free(ptr); }
  sk_status memcpy(void *dst, const void *src, size_t size) override { return gpu_->memcpy(dst, src, size); }
  sk_status create_stream(std::unique_ptr<backend::Stream> *out) override;
  // sk_stream_create_cuda: the application's CUstream, which stays the application's.
  backend::StreamWrapping *stream_wrapping() override { return this; }
  sk_status wrap_stream(void *handle, std::unique_ptr<backend::Stream> *out) override;
  backend::TensorMaps *tensor_maps() override { return this; }
  sk_status encode_tensor_map(const sk_tensor_map_desc &desc, void *out) override;
  sk_status synchronize(backend::Stream *stream, const char *call) override;
  // The GPU reports its own hangs: this waits, as synchronize does.
  sk_status query(backend::Stream *stream, bool *done) override;
  sk_status create_event(std::unique_ptr<backend::Event> *out) override;
  sk_status record_event(backend::Event *event, backend::Stream *stream) override;
  sk_status wait_event(backend::Stream *waiter, backend::Event *event) override;
  sk_status load_module(const std::vector<backend::ModuleImage> &images, const char *call,
                        std::unique_ptr<backend::Module> *out) override;
  sk_status finalize(const std::string &name, const ScopeOptions &options, std::vector<PlanInput> inputs,
                     std::vector<std::shared_ptr<backend::Kernel>> kernels, std::vector<std::vector<uint64_t>> args,
                     std::unique_ptr<backend::SuperKernel> *out) override;

 private:
  std::shared_ptr<CudaDevice> gpu_;
  CudaModuleCache modules_;
};

class CudaBackendEvent final : public backend::Event {
 public:
  CudaBackendEvent(std::shared_ptr<backend::Device> device, std::shared_ptr<CudaDevice> gpu)
      : Event(std::move(device)), gpu(std::move(gpu)) {}
  ~CudaBackendEvent() override;
  std::shared_ptr<CudaDevice> gpu;
  CUevent event = nullptr;
};

class CudaBackendStream final : public backend::Stream {
 public:
  CudaBackendStream(std::shared_ptr<backend::Device> device, std::shared_ptr<CudaDevice> gpu)
      : Stream(std::move(device)), gpu(std::move(gpu)) {}
  ~CudaBackendStream() override;
  std::shared_ptr<CudaDevice> gpu;
  CUstream stream = nullptr;
  bool owned = true;  // false for the application's stream (sk_stream_create_cuda): not destroyed
};

// The driver stream of `stream` (a stream of this device, or nullptr: its default one).
inline CUstream driver_stream(const CudaDevice &gpu, backend::Stream *stream) {
  return stream ? static_cast<CudaBackendStream *>(stream)->stream : gpu.default_stream();
}

class CudaBackendModule final : public backend::Module {
 public:
  CudaBackendModule(std::shared_ptr<backend::Device> device, std::shared_ptr<CudaDevice> gpu,
                    std::shared_ptr<const CudaModule> module)
      : Module(std::move(device)), gpu(std::move(gpu)), module(std::move(module)) {}
  sk_status get_kernel(const char *name, const backend::KernelRequest &request, const char *call,
                       std::shared_ptr<backend::Kernel> *out) override;
  const std::vector<KernelMetadata> &declared_kernels() const override { return module->declared_kernels(); }
  std::shared_ptr<CudaDevice> gpu;
  std::shared_ptr<const CudaModule> module;
};

// A linked one-kernel entry of sk_launch_kernel, for one block_dim.
struct UnfusedProgram {
  std::unique_ptr<LinkedProgram> linked;
  std::mutex mutex;  // one launch at a time: the slots are set, then launched
};

class CudaBackendKernel final : public backend::Kernel {
 public:
  using Kernel::Kernel;
  std::string_view module_label() const override { return kernel->module->label; }
  sk_status launch(uint32_t block_dim, const GridShape &grid, void *const *args, backend::Stream *stream) override;
  sk_status check_launch(uint32_t block_dim, const GridShape &grid) override;
  // The linked program of its unfused launches on block_dim blocks shaped `grid` (`slots`
  // argument slots), built and kept on first use.
  sk_status unfused_program(uint32_t block_dim, const GridShape &grid, size_t slots,
                            std::shared_ptr<UnfusedProgram> *out);

  // A plain kernel's function on this device (CudaKernel::plain), made on first use: its
  // unfused launches and the super kernels that launch it share it.
  std::shared_ptr<PlainFunction> plain_function();

  std::shared_ptr<CudaDevice> gpu;
  std::shared_ptr<CudaKernel> kernel;
  // Built on first use, per block_dim and shape, and kept: a link costs far more than a launch, and the
  // driver copies a launch's arguments, so one program serves every launch (a host program,
  // busy until its launch completes, is pooled instead: host/executor/program_pool.hpp).
  std::mutex unfused_mutex;
  std::map<std::pair<uint32_t, GridShape>, std::shared_ptr<UnfusedProgram>> unfused;
  std::shared_ptr<PlainFunction> plain;  // under unfused_mutex
};

// One dispatch of a super kernel (a segment of its plan): a linked program of its steps, or a
// plain launch of its one step.
struct Dispatch {
  uint32_t first = 0, end = 0;  // its steps
  Plan plan;                    // segment_plan: the program's steps, numbered from 0
  std::unique_ptr<LinkedProgram> program;
  std::shared_ptr<PlainFunction> plain;
  uint64_t id = 0;  // the program's name's registration (CudaDevice::register_name)
};

class CudaBackendSuperKernel final : public backend::SuperKernel {
 public:
  CudaBackendSuperKernel(std::shared_ptr<backend::Device> device, std::shared_ptr<CudaDevice> gpu)
      : SuperKernel(std::move(device)), gpu(std::move(gpu)) {}
  ~CudaBackendSuperKernel() override;
  sk_status launch(backend::Stream *stream) override;
  sk_status launch_repeat(uint32_t n, const uint32_t *stop_flag, backend::Stream *stream) override;
  sk_status set_arg(uint32_t step, uint32_t index, const uint64_t *slots) override;
  void current_args(uint32_t step, uint64_t *out) const override;
  std::string explain() const override;

  std::shared_ptr<CudaDevice> gpu;
  // In plan order; most super kernels have one, a linked program of every step.
  std::vector<Dispatch> dispatches;
  std::vector<uint32_t> dispatch_of;  // by step
  std::vector<size_t> slot_base;      // first argument slot of each step, over all steps
  // The argument slots of the plain launches' steps (the others' are their programs'): the
  // driver copies them at each launch.
  mutable std::mutex plain_mutex;
  std::vector<uint64_t> plain_slots;

 private:
  // Queues the dispatches in order on `stream`, once.
  sk_status launch_dispatches(CUstream stream, const char *call);
  // explain's cuda_entry.dispatches: each dispatch's launch, where there are several.
  void write_dispatches(JsonWriter &j) const;
};

}  // namespace sk::cuda
