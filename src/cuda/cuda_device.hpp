// A CUDA device ("cuda", "cuda:N", "cuda:N,threads=..."): the driver's primary context of GPU
// N, its memory, streams, and the hang report every super kernel of the device writes to.
#pragma once
#include <sk.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"

namespace sk::cuda {

struct CudaSpec {
  int ordinal = 0;
  uint64_t timeout_ms = 10000;  // deadline of every in-kernel wait
  std::string arch;             // override of the device's sm_XY (e.g. to test PTX JIT paths)
};

// "cuda", "cuda:1", "cuda:0,timeout_ms=500", "cuda:timeout_ms=500,arch=sm_90". Unknown keys
// fail with SK_ERR_INVALID_ARGUMENT naming them.
sk_status parse_cuda_spec(const char *spec, CudaSpec *out);

class CudaDevice {
 public:
  static sk_status open(const CudaSpec &spec, std::shared_ptr<CudaDevice> *out);
  ~CudaDevice();
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  const DriverApi &api() const { return *api_; }
  // Binds the device's context to the calling thread (every entry point calls it first).
  sk_status make_current(const char *call) const;
  // SK_ERR_DEVICE naming `call`, `what` and the driver's error, or SK_OK.
  sk_status check(CUresult r, const char *call, const char *what) const;

  const std::string &arch() const { return arch_; }  // "sm_90"
  const std::string &name() const { return name_; }
  uint32_t multiprocessors() const { return sms_; }
  uint64_t timeout_ns() const { return timeout_ms_ * 1'000'000ull; }
  CUstream default_stream() const { return default_stream_; }
  CUdeviceptr report() const { return report_; }

  sk_status mem_alloc(size_t size, void **out);
  bool mem_free(void *ptr);
  sk_status memcpy(void *dst, const void *src, size_t size);

  // After a stream was synchronised: a hang some launch recorded (SK_ERR_HANG with a message
  // naming the super kernel, step, block and sync point), once; else SK_OK.
  sk_status take_hang_report(const char *call);
  // Super kernels register their names for hang reports.
  uint64_t register_name(const std::string &name, std::vector<std::string> step_names);
  void unregister_name(uint64_t id);

 private:
  CudaDevice() = default;
  std::shared_ptr<const DriverApi> api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  bool retained_ = false;
  std::string arch_, name_;
  uint32_t sms_ = 0;
  uint64_t timeout_ms_ = 10000;
  CUstream default_stream_ = nullptr;
  CUdeviceptr report_ = 0;
  std::mutex mutex_;
  std::set<uintptr_t> allocations_;
  std::map<uint64_t, std::pair<std::string, std::vector<std::string>>> names_;
  uint64_t next_id_ = 1;
};

}  // namespace sk::cuda
