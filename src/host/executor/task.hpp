// A launch on the host executor: one slot of the ring that every core walks in order
// (Executor::submit fills it, the cores run it, core 0 completes it).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/cache_line.hpp"
#include "host/executor/core_context.hpp"
#include "host/executor/program.hpp"
#include "host/executor/repeat_barrier.hpp"
#include "host/executor/stream_state.hpp"

namespace sk::host {

// Its first cache line holds all a core reads to start the task (once it saw it published)
// and, at every step, to see an abort: whether the task before has completed is written here
// too, so that starting a task costs one line transfer, not one for the slot and one for the
// completion counter.
struct alignas(kCacheLine) Task {
  // The task's sequence number, stored last when it is published here: idle cores poll it,
  // so that one line transfer shows them that a task is queued and what it is.
  std::atomic<uint64_t> seq{0};
  std::atomic<uint64_t> previous_completed{0};  // seq - 1 once the task before it completed
  Program *program = nullptr;
  ArgBlock args;                      // the program's argument block when the task was queued (a copy: this line)
  uint32_t epoch = 0;                 // of its first iteration; iteration k runs as launch epoch + k - 1
  uint32_t repeat = 1;                // iterations (sk_launch_repeat); in the padding before `failure`
  TaskFailure failure;                // its abort flag falls in the first line
  std::unique_ptr<Program> unpooled;  // an unfused launch's program its pool declined
  StreamState *stream = nullptr;
  RepeatBarrier between_iterations;  // read only when repeat > 1
  uint32_t last_epoch() const { return epoch + repeat - 1; }
  uint32_t iterations_run() const { return repeat > 1 ? between_iterations.iterations_run(repeat) : 1; }
};
static_assert(offsetof(Task, failure) + sizeof(std::atomic<bool>) <= kCacheLine &&
                  offsetof(Task, repeat) < kCacheLine,
              "a slot's hot fields share one line");

}  // namespace sk::host
