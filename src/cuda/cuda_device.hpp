// A CUDA device ("cuda", "cuda:N", "cuda:N,threads=..."): the driver's primary context of GPU
// N, its memory, streams, and which super kernels' hang reports each stream's sync reads.
#pragma once
#include <sk.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/device_spec.hpp"
#include "cuda/driver_api.hpp"

namespace sk::cuda {

// The environment variable that changes timeout_ms's default (a device run lowers every
// deadline at once, so that a broken barrier costs seconds).
constexpr char kTimeoutEnv[] = "SK_CUDA_TIMEOUT_MS";

struct CudaSpec {
  int ordinal = 0;
  uint64_t timeout_ms = kDefaultTimeoutMs;  // deadline of every in-kernel wait
  std::string arch;                         // override of the device's sm_XY (e.g. to test PTX JIT paths)
  uint32_t stack_bytes = 0;                 // call stack per thread where ptxas cannot bound it (0: refuse those)
};

// "cuda", "cuda:1", "cuda:0,timeout_ms=500", "cuda:timeout_ms=500,arch=sm_90". Unknown keys
// fail with SK_ERR_INVALID_ARGUMENT naming them; so does a bad $SK_CUDA_TIMEOUT_MS.
sk_status parse_cuda_spec(const char *spec, CudaSpec *out);

class CudaDevice;

// Makes the calling thread's stream capture mode relaxed for the scope's life, then gives it
// back (cuThreadExchangeStreamCaptureMode): what libsk does outside an application's capture
// (zeroing its counters, copying from pageable memory, waiting for its own stream) is then
// allowed while the application's thread captures in global mode, and leaves the capture valid.
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const DriverApi &api);
  ~RelaxedCapture();
  RelaxedCapture(const RelaxedCapture &) = delete;
  RelaxedCapture &operator=(const RelaxedCapture &) = delete;

 private:
  const DriverApi &api_;
  int mode_;
  bool exchanged_ = false;
};

// Makes the device's context current on the calling thread for the scope's life, then gives
// the caller back its own (cuCtxPushCurrent / cuCtxPopCurrent): libsk shares the thread with
// applications that keep their own current context. Every C API call opens one first; it
// fails once the device is lost, except for `teardown`, which frees what libsk holds anyway.
class ContextScope {
 public:
  ContextScope(const CudaDevice &device, const char *call, bool teardown = false);
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;
  sk_status status() const { return status_; }

 private:
  const CudaDevice &device_;
  sk_status status_ = SK_OK;
  bool pushed_ = false;
};

class CudaDevice {
 public:
  static sk_status open(const CudaSpec &spec, std::shared_ptr<CudaDevice> *out);
  friend class ContextScope;
  ~CudaDevice();
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  const DriverApi &api() const { return *api_; }
  // SK_ERR_DEVICE naming `call`, `what` and the driver's error, or SK_OK. A sticky error
  // (the context is lost, as after CUDA_ERROR_ILLEGAL_ADDRESS) marks the device lost.
  sk_status check(CUresult r, const char *call, const char *what) const;
  // SK_ERR_DEVICE naming the first sticky error once the device is lost, else SK_OK.
  sk_status usable(const char *call) const;

  const std::string &arch() const { return arch_; }  // "sm_90"
  const std::string &name() const { return name_; }
  uint32_t multiprocessors() const { return sms_; }
  int driver_version() const { return driver_version_; }  // cuDriverGetVersion: 12010 is 12.1
  uint64_t timeout_ns() const { return timeout_ms_ * 1'000'000ull; }
  uint32_t stack_bytes() const { return stack_bytes_; }  // the device key; 0: not given
  // Shared memory a block may use with the opt-in, and what the GPU reserves of every block
  // (cuDeviceGetAttribute; 0 where the driver does not say).
  uint32_t shared_optin() const { return shared_optin_; }
  uint32_t shared_reserved() const { return shared_reserved_; }
  // Raises the context's call stack per thread (CU_LIMIT_STACK_SIZE) to `bytes` when it is
  // lower; never lowers it. Needs the device's context.
  sk_status reserve_stack(uint32_t bytes, const char *call, const std::string &name);
  CUstream default_stream() const { return default_stream_; }

  sk_status mem_alloc(size_t size, void **out);
  bool mem_free(void *ptr);
  sk_status memcpy(void *dst, const void *src, size_t size);
  // Whether the driver knows the memory at `p` (device, managed or page-locked host memory:
  // what a kernel may read); pageable host memory it does not. Needs the device's context.
  bool driver_memory(const void *p) const;

  // After `stream` was synchronised: a hang some launch recorded (SK_ERR_HANG with a message
  // naming the super kernel, step, block and sync point; SK_ERR_INVALID_ARGUMENT for a flag
  // id out of range), once; else SK_OK.
  sk_status take_hang_report(CUstream stream, const char *call);
  // A super kernel's sync buffer of `steps` steps (sync_layout), its hang report at its end,
  // under its id. Each launch tells the device its stream, and learns whether a sync has read
  // a hang since the last launch (then it zeroes the report and the counters that launch
  // left, first).
  void add_report(uint64_t id, CUdeviceptr sync, size_t steps);
  void remove_report(uint64_t id);
  bool launching(uint64_t id, CUstream stream);
  void forget_stream(CUstream stream);  // the stream is destroyed
  // Super kernels register their names for hang reports: a program's steps, the first of them
  // the super kernel's step `first_step` (its dispatch's first).
  uint64_t register_name(const std::string &name, std::vector<std::string> step_names, uint32_t first_step = 0);
  void unregister_name(uint64_t id);

 private:
  CudaDevice() = default;
  // With $SK_CUDA_DUMP_DIR: super kernel `id`'s sync buffer and `message` into a file there.
  void dump_aborted_launch(uint64_t id, const std::string &message);
  std::shared_ptr<const DriverApi> api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  bool retained_ = false;
  std::string arch_, name_;
  uint32_t sms_ = 0;
  int driver_version_ = 0;
  uint64_t timeout_ms_ = kDefaultTimeoutMs;
  uint32_t stack_bytes_ = 0, shared_optin_ = 0, shared_reserved_ = 0;
  std::mutex stack_mutex_;  // a raise reads the limit, then sets it
  CUstream default_stream_ = nullptr;
  std::mutex mutex_;
  mutable std::mutex lost_mutex_;
  mutable std::string lost_;  // the first sticky error's message; empty while usable
  std::set<uintptr_t> allocations_;
  struct Registered {
    std::string name;
    std::vector<std::string> steps;
    uint32_t first_step = 0;
  };
  std::map<uint64_t, Registered> names_;
  struct Report {
    CUdeviceptr sync = 0, address = 0;  // the sync buffer; the hang report in it
    size_t steps = 0;
    std::set<CUstream> pending;  // streams launched on since a sync of that stream looked
    bool taken = false;          // a sync reported it; the next launch clears it
  };
  std::map<uint64_t, Report> reports_;
  uint64_t next_id_ = 1;
};

}  // namespace sk::cuda
