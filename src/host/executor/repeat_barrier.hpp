// sk_launch_repeat on the host: one task runs the program's steps up to n times. Between two
// iterations every core of the program meets at this barrier, and the last to arrive decides
// for all whether another iteration runs: it alone reads the stop flag, so that no core can
// see a value another core did not and run an iteration the others skip.
#pragma once
#include <atomic>
#include <cstdint>

#include "common/cache_line.hpp"
#include "host/executor/core_context.hpp"

namespace sk::host {

// A repeated task's barrier state, reset when the task is queued (Executor::submit).
struct alignas(kCacheLine) RepeatBarrier {
  const uint32_t *stop_flag = nullptr;  // null: no early stop
  std::atomic<uint32_t> arrived{0};     // arrivals, all iterations: `done` ended at done * cores
  std::atomic<uint32_t> decided{0};     // barriers decided; stop is published before it
  std::atomic<bool> stop{false};        // the last decision ended the task
  void reset(const uint32_t *flag) {
    stop_flag = flag;
    arrived.store(0, std::memory_order_relaxed);
    decided.store(0, std::memory_order_relaxed);
    stop.store(false, std::memory_order_relaxed);
  }
  // Iterations that ran (whole or aborted), out of `n`, once every core has left the task.
  uint32_t iterations_run(uint32_t n) const {
    if (n <= 1) return 1;
    const uint32_t d = decided.load(std::memory_order_acquire);
    return stop.load(std::memory_order_acquire) ? d : (d + 1 < n ? d + 1 : n);
  }
};

// Called by each of the program's `cores` cores after iteration `done` (1-based) of `n` when
// done < n: returns whether iteration done + 1 runs. The deciding core (the last to arrive) reads
// *stop_flag, resets what counts within one iteration (the hard-sync flag counters) and lets the
// others go; every iteration's writes are visible to the next, as between two launches. A wait
// that ends without a decision (the launch was aborted, or its deadline passed) returns false.
bool pass_repeat_barrier(CoreContext &ctx, RepeatBarrier &b, uint32_t cores, uint32_t done, uint32_t n);

}  // namespace sk::host
