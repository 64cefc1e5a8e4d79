// What a user would otherwise run a chain of kernels on, each on N threads:
//  - OpenMP: one `parallel` region per kernel (libgomp, default wait policy);
//  - a mutex + condition-variable pool of the kind most runtimes use (the caller posts one
//    kernel, wakes the workers, waits for them);
//  - the floor: N threads (the caller among them) meeting at K bare spin barriers.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernel_shim.hpp"
#include "spin_barrier.hpp"

namespace bench {

void openmp_run(const Step *steps, size_t count, uint32_t threads);

class ConditionVariablePool {
 public:
  explicit ConditionVariablePool(uint32_t threads);
  ~ConditionVariablePool();
  void run(const Step *steps, size_t count);  // one dispatch per step

 private:
  void worker(uint32_t index);
  const uint32_t n_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const Step *job_ = nullptr;
  uint64_t generation_ = 0;
  uint32_t remaining_ = 0;
  bool stop_ = false;
  SpinBarrier sync_all_;
  std::vector<std::thread> threads_;
};

// N threads (the caller is thread 0) doing `count` spin barriers per run. Between runs the
// workers spin briefly (50 us, as libsk's cores do by default), then sleep.
class SpinBarrierFloor {
 public:
  explicit SpinBarrierFloor(uint32_t threads);
  ~SpinBarrierFloor();
  void run(size_t count);

 private:
  void worker();
  const uint32_t n_;
  SpinBarrier barrier_;
  // The barriers run()'s caller passed on this floor. Per floor, not per thread: the caller
  // runs every floor of sk-bench (--cores 2,16), and an epoch carried over from another floor
  // waited for a count this one never reaches.
  uint64_t caller_epoch_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> count_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace bench
