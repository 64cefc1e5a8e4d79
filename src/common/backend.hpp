// The backend interface: what a device kind (src/host, src/cuda) implements so that the C API
// (src/api) can check arguments, tag handles and dispatch without knowing which kind it holds.
// Each public handle holds one of these objects. A backend is one folder that implements these
// classes and one line in api/backend_list.cpp (docs/architecture.md, "Adding a backend").
//
// Every call is made on a live handle of an open device with checked arguments; the objects a
// device makes (modules, kernels, streams, super kernels) keep the device alive, and the api
// has checked that the objects passed together belong to the same device.
#pragma once
#include <sk.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/core_layout.hpp"
#include "common/kernel_metadata.hpp"
#include "common/plan.hpp"
#include "common/scope_options.hpp"
#include "common/signature.hpp"

namespace sk::backend {

class Device;
class Kernel;
class Stream;

// Capabilities a backend may lack. A backend that has one derives from its interface and
// returns itself from the accessor (Device::stream_wrapping, Device::fork_watch,
// Device::tensor_maps, SuperKernel::profiling); the default, nullptr, is a backend without it,
// which the C API refuses (or answers) in one place: api/capabilities.cpp.

// sk_stream_create_cuda: streams over the application's own streams.
class StreamWrapping {
 public:
  // A stream over the application's stream `handle`.
  virtual sk_status wrap_stream(void *handle, std::unique_ptr<Stream> *out) = 0;

 protected:
  ~StreamWrapping() = default;
};

// A device whose work does not survive fork() (a host device's cores are threads).
class ForkWatch {
 public:
  // True for a device opened before this process forked: nothing of it runs here.
  virtual bool forked_away() const = 0;

 protected:
  ~ForkWatch() = default;
};

// sk_superkernel_profile, sk_superkernel_write_trace (scope option profiling=1).
class Profiling {
 public:
  // The records of the last completed launch and the profiler's id (the trace's pid), or a
  // failure naming `call` and why there are none.
  virtual sk_status last_profile(const char *call, std::vector<sk_profile_record> *out, uint32_t *id) const = 0;

 protected:
  ~Profiling() = default;
};

// sk_tensor_map_encode: TMA tensor maps, encoded by the device's driver.
class TensorMaps {
 public:
  // Encodes `desc` (not yet checked) into SK_TENSOR_MAP_BYTES bytes at `out`, written only on
  // success.
  virtual sk_status encode_tensor_map(const sk_tensor_map_desc &desc, void *out) = 0;

 protected:
  ~TensorMaps() = default;
};

// Objects of this size or more are refused before they are hashed or copied: a kernel object
// is kilobytes to megabytes; this only stops a mistaken or hostile input early.
constexpr size_t kMaxObjectSize = size_t{1} << 30;
// SK_ERR_UNSUPPORTED naming `label` for an image of kMaxObjectSize bytes or more.
sk_status check_object_size(size_t size, const std::string &label);

// One input of a module load: a file's or a memory image's bytes, borrowed for the call.
struct ModuleImage {
  std::string label;  // a path, "<memory #i>" or "<memory image of N bytes>"
  const void *bytes = nullptr;
  size_t size = 0;
};

// How messages name one image given by its bytes (sk_module_load, sk_module_inspect).
std::string memory_image_label(size_t size);

// What a device made: it keeps the device alive, and the api compares device() to check that
// objects used together belong to one device (a pointer compare: no call on the launch path).
class DeviceChild {
 public:
  explicit DeviceChild(std::shared_ptr<Device> device) : device_(std::move(device)) {}
  Device *device() const { return device_.get(); }

 protected:
  std::shared_ptr<Device> device_;
};

// A kernel taken from a module. Its description is filled by the backend; a scope or super
// kernel that uses the kernel keeps it (and the code it needs) alive past sk_module_unload.
class Kernel : public DeviceChild {
 public:
  using DeviceChild::DeviceChild;
  virtual ~Kernel() = default;

  std::string symbol;
  std::string core_type;                 // as the metadata says ("vector" without)
  KernelKind kind = KernelKind::Vector;  // core_type parsed
  Signature signature;
  std::string signature_text;
  // Each parameter's first 8-byte argument slot (slot_offsets), then the slots in all: an
  // aggregate takes several.
  std::vector<uint32_t> arg_slots{0};
  uint32_t usage = 0;                      // DeviceApiBit set, from the device-API calls its code can reach
  std::vector<DeviceApiPath> usage_paths;  // how it reaches those it does not call itself
  // It numbers its blocks in more than one dimension (a PTX kernel that reads %ctaid.y/z or
  // %nctaid.y/z): each launch of it needs its grid's shape (sk_kernel_options.grid).
  bool multi_dimensional_grid = false;
  // The backend launches it as compiled, on its own, between a super kernel's dispatches (a
  // CUDA __global__ kernel of linked SASS, which cannot be called): PlanInput::plain_launch.
  bool plain_launch = false;

  // Sets signature, signature_text and arg_slots.
  void set_signature(Signature sig);
  size_t slots() const { return arg_slots.back(); }
  // The planner's view of this kernel on `block_dim` blocks shaped `grid`, named by its symbol:
  // an unfused launch's one step, or a scope launch before its options. Borrows from the kernel.
  PlanInput plan_input(uint32_t block_dim, const GridShape &grid = {0, 0, 0}) const;

  virtual std::string_view module_label() const = 0;
  // sk_launch_kernel, unfused: `block_dim` and its shape `grid` checked, `args` not yet
  // (copy_args), `stream` of this device or nullptr (its default stream).
  virtual sk_status launch(uint32_t block_dim, const GridShape &grid, void *const *args, Stream *stream) = 0;
  // What `launch` would refuse about running on `block_dim` blocks (a kernel that synchronises
  // on more blocks than the device can hold), without launching: a captured launch is checked
  // at the call, as an unfused one is. `block_dim` and `grid` checked.
  virtual sk_status check_launch(uint32_t block_dim, const GridShape &grid) = 0;

  // Copies the values args[i] points to into 8-byte slots, by the signature's types: into
  // slots() slots at `out` (some may be written on failure), or into *out (untouched on
  // failure). A parameter whose bit is set in `refs` (sk_kernel_options.arg_refs) is read at
  // each call instead: its first slot keeps the address args[i] (the rest stay zero). Fails
  // naming `call` and the kernel on a NULL array or value.
  sk_status copy_args(void *const *args, const char *call, uint64_t *out, uint64_t refs = 0) const;
  sk_status copy_args(void *const *args, const char *call, std::vector<uint64_t> *out, uint64_t refs = 0) const;
};

// What the caller says of a kernel when taking it (sk_kernel_desc): its signature (NULL: from
// its metadata, else parsed and checked against it) and the launch facts a GPU kernel's binary
// may lack (0: the kernel's own).
struct KernelRequest {
  const char *signature = nullptr;
  uint32_t threads = 0;
  uint32_t dynamic_shared = 0;
  uint32_t block[3] = {0, 0, 0};    // a CUDA block's shape (sk_kernel_desc.block)
  uint32_t flags = 0;               // SK_KERNEL_DESC_* (the API applies them, for every backend)
  uint32_t cluster[3] = {0, 0, 0};  // a CUDA thread block cluster (sk_kernel_desc.cluster)
  // sk_module_inspect on CUDA: a launch fact the binary does not say (threads, block shape,
  // dynamic shared bytes) is given a stand-in, so that what else would refuse the kernel shows.
  bool stand_ins = false;
};

// A loaded module: its kernels, by name.
class Module : public DeviceChild {
 public:
  using DeviceChild::DeviceChild;
  virtual ~Module() = default;
  // SK_ERR_NOT_FOUND names the kernel and the module.
  virtual sk_status get_kernel(const char *name, const KernelRequest &request, const char *call,
                               std::shared_ptr<Kernel> *out) = 0;
  // The kernels its metadata declares, in the order it lists them.
  virtual const std::vector<KernelMetadata> &declared_kernels() const = 0;
};

// A stream: launches on it run in order. Destroying it waits for them.
class Stream : public DeviceChild {
 public:
  using DeviceChild::DeviceChild;
  virtual ~Stream() = default;
};

// A marker in a stream's order (sk_event_record outside a capture).
class Event : public DeviceChild {
 public:
  using DeviceChild::DeviceChild;
  virtual ~Event() = default;
};

// A finalized scope. Destroying it waits for its launches.
class SuperKernel : public DeviceChild {
 public:
  using DeviceChild::DeviceChild;
  virtual ~SuperKernel() = default;

  Plan plan;
  std::vector<std::shared_ptr<Kernel>> kernels;  // per plan step

  // `stream` of this device or nullptr (its default stream).
  virtual sk_status launch(Stream *stream) = 0;
  // sk_launch_repeat: up to `n` runs (n in [1, SK_LAUNCH_REPEAT_MAX]) back to back, stopping
  // after the run that left *stop_flag nonzero (stop_flag 4-byte aligned, or null: no early stop).
  virtual sk_status launch_repeat(uint32_t n, const uint32_t *stop_flag, Stream *stream) = 0;
  // Rebinds argument `index` of `step` (both checked) to `slots` (to_slots of the value, or
  // the address of an argument read by reference; slot_count of its type) for the launches
  // queued after the call.
  virtual sk_status set_arg(uint32_t step, uint32_t index, const uint64_t *slots) = 0;
  // The argument slots `step` (checked) runs with now, kernels[step]->slots() of them, into
  // `out` (a captured sk_launch records them). Not while another thread rebinds them.
  virtual void current_args(uint32_t step, uint64_t *out) const = 0;
  // sk_superkernel_explain's JSON: the plan and what the backend made of it.
  virtual std::string explain() const = 0;
  // Optional (see Profiling).
  virtual const Profiling *profiling() const { return nullptr; }
};

// An open device.
class Device : public std::enable_shared_from_this<Device> {
 public:
  virtual ~Device() = default;

  virtual uint32_t cores() const = 0;
  // sk_device_close, once the device is out of the open list: waits for its queued work.
  // Objects made from the device keep it alive after this.
  virtual void close() = 0;
  // Optional (see ForkWatch, StreamWrapping, TensorMaps).
  virtual const ForkWatch *fork_watch() const { return nullptr; }
  virtual StreamWrapping *stream_wrapping() { return nullptr; }
  virtual TensorMaps *tensor_maps() { return nullptr; }

  virtual sk_status mem_alloc(size_t size, void **out) = 0;
  // false if ptr was not allocated by this device (nothing is freed then).
  virtual bool mem_free(void *ptr) = 0;
  // Synchronous: waits for the work queued on the device first. `size` > 0, both pointers set.
  virtual sk_status memcpy(void *dst, const void *src, size_t size) = 0;

  virtual sk_status create_stream(std::unique_ptr<Stream> *out) = 0;
  // Waits for the work queued on `stream` (nullptr: the default stream) and returns the first
  // failure of those launches, once; `call` names the API call in messages.
  virtual sk_status synchronize(Stream *stream, const char *call) = 0;
  // sk_event_create / sk_event_record / sk_stream_wait_event outside a capture: launches queued
  // on `waiter` after wait_event start after those queued on the recording stream before the
  // record (`stream` nullptr: the default stream).
  virtual sk_status create_event(std::unique_ptr<Event> *out) = 0;
  virtual sk_status record_event(Event *event, Stream *stream) = 0;
  virtual sk_status wait_event(Stream *waiter, Event *event) = 0;
  // sk_stream_query: *done says whether that work has ended; failures as synchronize's.
  virtual sk_status query(Stream *stream, bool *done) = 0;

  // One image, or several (the backend may refuse to link several into one module).
  virtual sk_status load_module(const std::vector<ModuleImage> &images, const char *call,
                                std::unique_ptr<Module> *out) = 0;
  // sk_finalize: plans the scope's kernels (inputs[i] describes kernels[i], launched with
  // args[i]), builds what runs the plan, and fills `out`.
  virtual sk_status finalize(const std::string &name, const ScopeOptions &options, std::vector<PlanInput> inputs,
                             std::vector<std::shared_ptr<Kernel>> kernels, std::vector<std::vector<uint64_t>> args,
                             std::unique_ptr<SuperKernel> *out) = 0;
};

// A backend's line in api/backend_list.cpp: device specs "name" and "name:..." open with `open`.
struct Registration {
  const char *name;
  sk_status (*open)(const char *spec, std::shared_ptr<Device> *out);
  // sk_module_inspect: what a device of `spec` would read from a module image, as JSON,
  // without opening one. NULL where the backend has none (refused in one place).
  sk_status (*inspect)(const char *spec, const void *image, size_t size, std::string *json) = nullptr;
};

}  // namespace sk::backend
