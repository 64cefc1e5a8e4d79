// HangWatch (hang_watch.hpp): comparing the cores' positions between looks, and the report of a
// launch that stopped making progress.
#include "host/executor/hang_watch.hpp"

#include <algorithm>
#include <cstdio>

#include "host/executor/task.hpp"

namespace sk::host {

HangWatch::HangWatch(uint32_t cores, uint32_t timeout_ms)
    : cores_(cores),
      timeout_ms_(timeout_ms),
      slice_(std::clamp(std::chrono::milliseconds(timeout_ms / 4), std::chrono::milliseconds(1),
                        std::chrono::milliseconds(100))),
      progress_(std::make_unique<CoreProgress[]>(cores)) {}

bool HangWatch::look(const std::function<Head()> &head) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (lost()) return false;
  const Head h = head();
  if (!h.task) {
    seen_.clear();  // nothing queued
    return false;
  }
  // A repeated task's iterations pass the same positions again: its barrier count tells them apart.
  const uint64_t iterations =
      h.task->repeat > 1 ? h.task->between_iterations.arrived.load(std::memory_order_acquire) : 0;
  std::vector<uint64_t> now{h.seq, h.cores_done, iterations};
  for (uint32_t c = 0; c < cores_; ++c) {
    now.push_back(progress_[c].task.load(std::memory_order_relaxed));
    now.push_back(progress_[c].position.load(std::memory_order_relaxed));
    now.push_back(progress_[c].waits.load(std::memory_order_relaxed));
  }
  const auto t = std::chrono::steady_clock::now();
  if (now != seen_) {
    seen_ = std::move(now);
    since_ = t;
    return false;
  }
  if (t - since_ < std::chrono::milliseconds(timeout_ms_)) return false;
  return declare_lost(*h.task, h.seq);
}

bool HangWatch::declare_lost(Task &task, uint64_t seq) {
  const Program &p = *task.program;
  std::string stuck, waits;
  {
    // Cores in a runtime wait end it at its own deadline, and those that recorded one are
    // leaving it (the launch is aborted): the others in the task are in a kernel's code.
    std::lock_guard<std::mutex> lock(task.failure.mutex);
    std::sort(task.failure.waits.begin(), task.failure.waits.end());
    for (uint32_t c = 0; c < cores_; ++c) {
      if (progress_[c].task.load(std::memory_order_relaxed) != seq) continue;
      bool waiting = progress_[c].in_wait();
      for (const auto &w : task.failure.waits) waiting |= w.first == c;
      if (waiting) continue;
      const uint64_t at = progress_[c].position.load(std::memory_order_relaxed);
      const auto step = static_cast<uint32_t>(at >> 32);
      stuck += (stuck.empty() ? "core " : ", core ") + std::to_string(c) + " in step " + std::to_string(step) +
               " '" + (step < p.steps.size() ? p.steps[step].name : std::string("?")) + "' (block " +
               std::to_string(static_cast<uint32_t>(at)) + ")";
    }
    for (const auto &w : task.failure.waits) waits += "; core " + std::to_string(w.first) + " " + w.second;
  }
  if (stuck.empty()) return false;  // every core is in a wait, which ends at its own deadline
  char head[400];
  std::snprintf(head, sizeof head, "super kernel '%s' (launch %u): no progress for %u ms; ", p.name.c_str(),
                task.epoch + task.iterations_run() - 1, timeout_ms_);
  std::string report = head + stuck + " never came back from the kernel" + waits;
  task.stream->keep_first_error(
      SK_ERR_HANG, [&report] { return report + "; the host device is lost (close it and open a new one)"; });
  report_ = std::move(report);
  task.failure.aborted.store(true, std::memory_order_release);  // cores in its waits leave them
  lost_.store(true, std::memory_order_seq_cst);
  return true;
}

}  // namespace sk::host
