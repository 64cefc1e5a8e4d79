// The state of one core while it runs a task, reached by the device-API functions that kernel
// code calls (sk_block_idx, sk_sync_all, ...) through a thread-local pointer.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sk.h>

#include <sk_kernel.h>

#include "common/cache_line.hpp"
#include "host/executor/program.hpp"
#include "host/executor/wait.hpp"

namespace sk::host {

// A launch that stopped making progress. The first wait past its deadline aborts the launch;
// every core then leaving a wait records where it was, so that the report shows the whole
// picture (the barrier that cannot complete, and the cores queued behind it), whichever core's
// deadline happened to expire first.
struct TaskFailure {
  std::atomic<bool> aborted{false};
  // A kernel made a device-API call that cannot be honoured (a flag id out of range): the
  // launch fails with SK_ERR_INVALID_ARGUMENT instead of SK_ERR_HANG.
  std::atomic<bool> invalid_call{false};
  // An exception escaped a kernel (host/executor/kernel_exception.hpp): the launch fails with
  // SK_ERR_KERNEL and `thrown` (under mutex) says which kernel threw what.
  std::atomic<bool> kernel_threw{false};
  std::mutex mutex;
  std::vector<std::pair<uint32_t, std::string>> waits;  // (core, where it waited)
  std::string thrown;
  void reset() {
    aborted.store(false, std::memory_order_relaxed);
    invalid_call.store(false, std::memory_order_relaxed);
    kernel_threw.store(false, std::memory_order_relaxed);
    waits.clear();
    thrown.clear();
  }
  sk_status status() const {
    if (kernel_threw.load(std::memory_order_acquire)) return SK_ERR_KERNEL;
    return invalid_call.load(std::memory_order_acquire) ? SK_ERR_INVALID_ARGUMENT : SK_ERR_HANG;
  }
  // "super kernel 'X' (launch E): no progress for T ms; launch aborted. core 0 ...; core 1 ..."
  // (or "a kernel made an invalid device-API call; launch aborted." for invalid_call).
  std::string report(const std::string &superkernel, uint32_t epoch, long long timeout_ms);
};

// Where a core is, for the hang watch (hang_watch.hpp): the task it runs (0: none) and, per
// block it starts, (step << 32) | block. Written by the core alone, relaxed: one store to a
// line of its own per block.
struct alignas(kCacheLine) CoreProgress {
  std::atomic<uint64_t> task{0};
  std::atomic<uint64_t> position{0};
  // Runtime waits of the task (wait_in_task) entered and left: odd while in one, which ends at
  // its own deadline. A count, not a flag: a watch that looked before a wait began and looks
  // again just after it timed out must not see the same value, as if the core had stood still.
  std::atomic<uint32_t> waits{0};
  bool in_wait() const { return waits.load(std::memory_order_relaxed) & 1u; }
};

struct CoreContext {
  Program *program = nullptr;
  const StepExec *step = nullptr;
  // The running launch's argument block (the one Program::args named when it was queued).
  const uint64_t *arg_slots = nullptr;
  void **arg_pointers = nullptr;
  uint32_t step_index = 0;
  uint32_t core = 0;
  uint32_t epoch = 0;
  uint32_t block_idx = 0;
  bool last_block = false;  // the core's last block of this step: it arrives for the core
  bool waited = false;      // has waited for the previous step in this step
  bool arrived = false;     // has released the next step
  CoreSlot slot;            // where this core sits in the running segment
  uint32_t slot_segment = 0xffffffffu;
  // Hard sync: waits this core has done in the running step, per flag.
  uint32_t flag_waits[SK_CROSS_CORE_FLAGS] = {};
  uint32_t flag_all_waits[SK_CROSS_CORE_FLAGS] = {};
  TaskFailure *failure = nullptr;
  // fork_generation() when the launch began: it moves only in a fork's child (kernel_fork.hpp).
  uint32_t fork_generation = 0;
  CoreProgress *progress = nullptr;
  SleepChannel *channel = nullptr;
  const WaitPolicy *policy = nullptr;
  // Profiling (profiling=1): this core's record of the running step between the kernel's
  // start and end, null otherwise (host/executor/profiler.hpp; ProfileWait charges waits to it).
  sk_profile_record *profile = nullptr;
  // Cache flushes (fences) this core has executed, all kinds: what tests check placement by.
  uint64_t cache_flushes = 0;
};

// initial-exec: kernels call the device API in their inner loops, and the default model for a
// shared library would make every access a __tls_get_addr call. 8 bytes fit glibc's static
// TLS surplus even when libsk is dlopen'ed (as the Python binding does).
extern constinit thread_local CoreContext *t_core __attribute__((tls_model("initial-exec")));

// wait_for with the core's task policy, for the runtime waits inside a task (between steps,
// sk_sync_all, flags). A wait that does not end at the first look is marked in the core's
// CoreProgress, so that the hang watch does not take a waiting core for one stuck in a kernel.
template <class Pred>
WaitResult wait_in_task(CoreContext &ctx, const std::atomic<uint32_t> &word, Pred pred) {
  if (pred(word.load(std::memory_order_acquire))) return WaitResult::Ok;
  std::atomic<uint32_t> &waits = ctx.progress->waits;  // this core alone writes it
  waits.store(waits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  const WaitResult r = wait_for(word, *ctx.channel, *ctx.policy, pred);
  waits.store(waits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return r;
}

// Runs core `core`'s share of one launch of `p`, its context set for the launch: the step loop
// of a chain, of a plain program or the general one (executor_steps.cpp). Stops at an abort.
void run_core_steps(Program &p, CoreContext &ctx, uint32_t core, const TaskFailure &failure);

// Split-phase inter-step sync and the sub-kernel barrier (executor_sync.cpp). A core in step i,
// whose previous step p is i-1 (or, with stream fusion, the step before it in its stream):
//  begin_step:          waits for the steps its events name and for p's previous step to end;
//                       and, unless the kernel waits itself (sk_wait_pre_task_end), for p to
//                       release it;
//  wait_previous_step:  waits for p to release step i;
//  release_next_step:   lets the next step run, once p released this one and ended;
//  end_step:            releases the next step if the kernel did not, and records step i's end.
// So a step overlaps only its neighbours, as the task-overlap calls promise, never a step two
// away.
// kPlain: the program is Program::plain (a chain of vector steps on the shared release
// counter): the previous step is step i-1 and there is nothing else to wait for. The executor
// picks the version once per task; the device-API entries (sk_wait_pre_task_end,
// sk_set_next_task_start) look at the program.
template <bool kPlain>
void begin_step(CoreContext &ctx);
template <bool kPlain>
void end_step(CoreContext &ctx);
void wait_previous_step(CoreContext &ctx);
void release_next_step(CoreContext &ctx);
void sync_step_cores(CoreContext &ctx);
// Records where this core waited when its wait ended without its condition (deadline passed, or
// another core's did): `where` says the sync point and what it waited for. The first deadline
// aborts the launch; the report lists every core's first such record.
void record_stuck(CoreContext &ctx, WaitResult r, const std::string &where);
// Aborts the launch because the kernel on this core made a call that cannot be honoured;
// `what` names the call and why.
void abort_invalid_call(CoreContext &ctx, const std::string &what);

}  // namespace sk::host
