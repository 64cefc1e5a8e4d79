// A linked super kernel (or single-kernel entry) loaded on a device, with what its launches
// need: the sync buffer (arrival counters, never reset: each launch has its own epoch), the
// argument slots (host copy, and a device buffer when they exceed the parameter space), the
// grid, and an event that orders its launches across streams (they share the counters).
#pragma once
#include <sk.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_device.hpp"
#include "cuda/superkernel_build.hpp"

namespace sk::cuda {

class LinkedProgram {
 public:
  // Loads `image` on `device`; computes the co-resident block limit (occupancy x SMs).
  static sk_status load(const std::shared_ptr<CudaDevice> &device, const BuiltImage &image, const std::string &name,
                        size_t steps, std::unique_ptr<LinkedProgram> *out);
  ~LinkedProgram();

  // Blocks that can be resident at once: the most a cooperative launch may start.
  uint32_t max_coresident() const { return max_coresident_; }
  uint32_t occupancy_per_sm() const { return occupancy_; }
  uint32_t registers() const { return registers_; }

  // Sets the argument slots and the grid; `cooperative`: launched with
  // CU_LAUNCH_ATTRIBUTE_COOPERATIVE (all blocks co-resident: needed by any in-kernel wait).
  sk_status configure(std::vector<uint64_t> slots, uint32_t grid, bool cooperative);
  // Queues one launch on `stream`.
  sk_status launch(CUstream stream, const char *call);
  // Rebinds one slot for later launches (waits for queued launches in buffer mode).
  sk_status set_slot(size_t slot, uint64_t value);
  // Waits for every launch queued so far.
  sk_status wait(const char *call);

 private:
  LinkedProgram() = default;
  std::shared_ptr<CudaDevice> device_;
  std::string name_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUdeviceptr sync_ = 0, args_buffer_ = 0;
  size_t args_buffer_bytes_ = 0;
  CUevent last_ = nullptr;
  CUstream last_stream_ = nullptr;
  bool launched_ = false;
  ArgSource source_ = ArgSource::Params;
  uint32_t threads_ = 0, grid_ = 1, max_coresident_ = 0, occupancy_ = 0, registers_ = 0;
  bool cooperative_ = true;
  uint64_t epoch_ = 0;
  std::vector<uint64_t> slots_;
  std::mutex mutex_;
};

}  // namespace sk::cuda
