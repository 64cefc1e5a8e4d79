// Profiling (scope option profiling=1): per core and per sub-kernel, when the core reached the
// step (ready), when the kernel's code started and ended, and how long it spent in runtime
// waits meanwhile. Each core writes only its own records, so recording takes no lock; the
// core that completes a launch copies them into the snapshot sk_superkernel_profile reads,
// under a sequence count instead of a lock: the launch path takes no lock even when profiled,
// and a reader that overlapped a copy reads again.
//
// The step loop calls three hooks (profile_ready, profile_start, profile_end); with profiling
// off each is one predictable branch on Program::profiler and nothing else: no clock read, no
// allocation, no lock.
#pragma once
#include <sk.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "host/executor/core_context.hpp"

namespace sk::host {

// CLOCK_MONOTONIC nanoseconds (a vDSO call, ~20 ns), the clock sk_profile_record documents.
inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

class Profiler {
 public:
  // Room for every (step, core) pair, allocated once here: launches never allocate.
  Profiler(uint32_t steps, uint32_t cores);

  // A process-wide number of this profiled super kernel: the "pid" of its trace.
  uint32_t id() const { return id_; }

  // The record of `core` in `step` for the launch running now.
  sk_profile_record &record(uint32_t step, uint32_t core) { return current_[size_t{step} * cores_ + core]; }

  // Called by the core that reached `step` (before it waits for the previous step).
  void ready(const CoreContext &ctx, uint32_t blocks);

  // Called by the core that completes launch `epoch`, after every core has left it: the
  // records of the cores that ran each step become the snapshot. An aborted launch (hang) is
  // not a completed one: the snapshot keeps the previous launch.
  void complete(uint32_t epoch, bool aborted);

  // The snapshot (ordered by step, then core); false if no launch has completed. Any thread,
  // at any time: a copy that a completion overlapped is taken again.
  bool last(std::vector<sk_profile_record> *out) const;

 private:
  static constexpr size_t kWords = sizeof(sk_profile_record) / sizeof(uint64_t);
  uint32_t id_;
  uint32_t cores_;
  std::vector<sk_profile_record> current_;
  std::vector<uint32_t> current_epoch_;  // launch that wrote each record: which cores ran a step
  // The snapshot, as 64-bit words that the completing core stores and readers load atomically
  // (relaxed), sized once here: the snapshot does not allocate. `sequence` is odd while a
  // completion writes it and counts up by 2 per snapshot; 0: no snapshot yet.
  mutable std::vector<uint64_t> last_words_;  // mutable: read through atomic_ref in last()
  std::atomic<uint32_t> last_records_{0};
  std::atomic<uint64_t> sequence_{0};
};

// Blocks a core runs of a step of `block_dim` blocks when its first block is `first` and its
// blocks stride by `units` (the executor's block loop).
inline uint32_t blocks_from(uint32_t block_dim, uint32_t first, uint32_t units) {
  return first < block_dim ? (block_dim - 1 - first) / units + 1 : 0;
}

// ---- step-loop hooks (host/executor/executor_steps.cpp) ----------------------------------------------

// Before the core waits for the previous step.
inline void profile_ready(CoreContext &ctx) {
  if (Profiler *p = ctx.program->profiler.get()) [[unlikely]]
    p->ready(ctx, blocks_from(ctx.step->block_dim, ctx.step->first_block(ctx.slot), ctx.step->units));
}

// Right before the core calls the kernel's first block: from here to profile_end, waits
// wrapped in ProfileWait count as the step's sync_wait_ns.
inline void profile_start(CoreContext &ctx) {
  if (Profiler *p = ctx.program->profiler.get()) [[unlikely]] {
    ctx.profile = &p->record(ctx.step_index, ctx.core);
    ctx.profile->start_ns = monotonic_ns();
  }
}

// Right after the core's last block returned (before the core counts its end and, unless the
// kernel did at sk_set_next_task_start, releases the next step).
inline void profile_end(CoreContext &ctx) {
  if (sk_profile_record *r = ctx.profile) [[unlikely]] {
    r->end_ns = monotonic_ns();
    ctx.profile = nullptr;
  }
}

}  // namespace sk::host
