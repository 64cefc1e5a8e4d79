// The host executor's hang watch: finds a core that never came back from a kernel. Each core
// records where it is (CoreProgress); the threads that wait for a launch without running it
// (core 0 waiting for the others, a host thread waiting for core 0, sk_stream_query) look at
// those positions, and the executor is lost once the launch at the queue's head made no
// progress for timeout_ms with a core inside a kernel's code. The report names the super
// kernel, the launch, and each core's step and block or runtime wait.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/cache_line.hpp"
#include "host/executor/core_context.hpp"

namespace sk::host {

struct Task;

class HangWatch {
 public:
  HangWatch(uint32_t cores, uint32_t timeout_ms);

  // Where core `core` records its position (CoreContext::progress).
  CoreProgress &progress(uint32_t core) { return progress_[core]; }
  // How often a waiter looks: a few times per deadline.
  std::chrono::milliseconds slice() const { return slice_; }

  // The launch at the queue's head made no progress for timeout_ms with a core in a kernel's
  // code (Executor::lost). Once set it stays.
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  const std::atomic<bool> *lost_flag() const { return &lost_; }  // a wait's abort (WaitPolicy::abort)
  // What lost the executor: the launch and where its cores were. Set once, before lost().
  const std::string &report() const { return report_; }

  // What the watch compares between looks: the task at the queue's head (nullptr: none queued)
  // and its sequence number, and the tasks cores 1..N-1 finished (Executor's counters).
  struct Head {
    Task *task = nullptr;
    uint64_t seq = 0;
    uint32_t cores_done = 0;
  };
  // One look; `head` is read under the watch's lock. True when this look declared the
  // executor lost: the head task is aborted and its stream has the report (SK_ERR_HANG), and
  // the caller wakes every waiter, which then sees lost().
  bool look(const std::function<Head()> &head);

 private:
  bool declare_lost(Task &task, uint64_t seq);  // under mutex_; false: every core is in a wait

  const uint32_t cores_;
  const uint32_t timeout_ms_;
  std::chrono::milliseconds slice_;
  std::unique_ptr<CoreProgress[]> progress_;           // each core's position, written by the core alone
  alignas(kCacheLine) std::atomic<bool> lost_{false};  // read by every core at every task
  alignas(kCacheLine) std::mutex mutex_;               // the state below and, until lost_ is set, report_
  std::vector<uint64_t> seen_;                         // the positions at since_
  std::chrono::steady_clock::time_point since_;
  std::string report_;  // written once, before lost_ is set
};

}  // namespace sk::host
