// The host executor: a persistent pool of worker threads ("cores") per device. One launch —
// a super kernel or one unfused kernel — is one task in a ring that every core walks in order;
// each core runs its share of every step, synchronising split-phase between steps.
#pragma once
#include <sk.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/program.hpp"
#include "host/wait.hpp"

namespace sk::host {

// An in-order queue's bookkeeping: the last task it submitted and its first unreported failure.
struct StreamState {
  std::atomic<uint64_t> last_seq{0};
  std::mutex error_mutex;
  sk_status error = SK_OK;
  std::string error_message;
};

struct ExecutorConfig {
  uint32_t cores = 1;
  uint32_t spin_us = 50;
  uint32_t timeout_ms = 10000;
};

class Executor {
 public:
  static sk_status create(const ExecutorConfig &config, std::unique_ptr<Executor> *out);
  ~Executor();  // waits for queued tasks, then stops the cores

  uint32_t cores() const { return config_.cores; }
  const ExecutorConfig &config() const { return config_; }

  // Queues one run of `program` (owned: freed after it ran, for unfused launches). Thread-safe;
  // blocks only while the ring is full.
  sk_status submit(Program *program, std::unique_ptr<Program> owned, StreamState *stream);
  // Waits for every task `stream` queued; returns (and clears) its first failure.
  sk_status synchronize(StreamState *stream);
  // Waits until every launch of `program` queued so far has ended.
  void wait_program(Program *program);
  // Waits until every queued task has ended.
  void wait_idle();

 private:
  struct Task;
  struct Core;
  explicit Executor(const ExecutorConfig &config);
  void core_main(uint32_t core);
  void run_task(Core &core, Task &task);
  void complete_task(Task &task, uint64_t seq);
  void wait_completed(uint64_t seq);

  ExecutorConfig config_;
  WaitPolicy idle_policy_, task_policy_;
  static constexpr uint32_t kRing = 256;
  std::unique_ptr<Task[]> ring_;
  std::mutex submit_mutex_;
  uint64_t submitted_ = 0;                    // under submit_mutex_
  alignas(64) std::atomic<uint64_t> published_{0};
  std::atomic<uint32_t> published_word_{0};   // low bits of published_, for futex sleeps
  alignas(64) std::atomic<uint64_t> cores_done_{0};  // core-task completions, all tasks
  alignas(64) std::atomic<uint64_t> completed_{0};
  std::atomic<uint32_t> completed_word_{0};
  std::atomic<bool> stopping_{false};
  SleepChannel idle_channel_, step_channel_, host_channel_;
  std::vector<std::thread> threads_;
  friend struct CoreAccess;
};

}  // namespace sk::host
