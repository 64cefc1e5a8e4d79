// Who runs core 0's share of the launches, over its token (core0_token.hpp, whose top comment
// is the protocol): a host thread that waits for the device takes the token and runs core 0
// itself (drive_until); the dedicated thread (core0_main) runs it for launches no host thread
// waits for, when called, or for good with core0_thread.
#include "host/executor/core_context.hpp"
#include "host/executor/core_thread.hpp"
#include "host/executor/executor.hpp"
#include "host/executor/kernel_call.hpp"

namespace sk::host {

template <class Done>
void Executor::drive_until(Done what) {
  auto done = [this, &what] { return what() || lost(); };
  const bool relay = !config_.core0_thread && !stack_holds_core0();
  if (config_.core0_thread || relay) {
    // Core 0 has a thread of its own, or this thread's stack is too small for the parameters
    // of its kernels and the dedicated thread runs it: wait, and watch for a core that does
    // not come back from a kernel, whichever core it is.
    if (relay) call_core0();  // core 0 may be free, and this thread will not take it
    const WaitPolicy &policy = config_.core0_thread ? host_wait_policy_ : relay_wait_policy_;
    while (!done())
      if (wait_for(completed_word_, host_channel_, policy, [&done](uint32_t) { return done(); }) ==
          WaitResult::TimedOut)
        watch_for_stuck_cores();
    return;
  }
  while (!done()) {
    if (core0_token_.take(Core0Token::kHost)) {
      CoreContext *saved = t_core;
      t_core = &core0_->ctx;
      uint64_t next = core0_token_.next();
      while (!done() && next <= published_.load(std::memory_order_acquire)) {
        pinning_.keep_off_core0_cpu();
        process(*core0_, next);
        core0_token_.set_next(++next);
      }
      t_core = saved;
      release_core0();
      // Core 0 did its share: what is left is the other cores finishing.
      wait_for(completed_word_, host_channel_, completion_policy_, [&done](uint32_t) { return done(); });
      return;
    }
    // Another thread runs core 0: ask for it (the dedicated thread hands it over between
    // tasks) and wait until it is free or what we wait for has happened.
    core0_token_.ask();
    WaitPolicy policy = idle_policy_;
    policy.timeout = watch_.slice();
    policy.abort = watch_.lost_flag();
    while (core0_token_.wait_free(policy, done) == WaitResult::TimedOut)
      watch_for_stuck_cores();  // core 0's holder may be in a kernel that does not return
    const bool leaving = done();
    stop_asking_for_core0(leaving);
    if (leaving) return;
  }
}

void Executor::stop_asking_for_core0(bool leaving) {
  core0_token_.stop_asking();
  // The dedicated thread may have handed core 0 over for us and gone to sleep with launches
  // left, and the other cores may already sleep too (each calls core 0 once, before it
  // sleeps): leaving core 0 untaken, call the dedicated thread back (rule 2).
  if (leaving) call_core0();
}

void Executor::release_core0() {
  core0_token_.give_back();
  // Tasks left that core 0 has not run (launched without a wait): the dedicated thread takes them.
  call_core0();
}

void Executor::core0_main() {
  if (config_.core0_thread) return core_loop(*core0_);  // it holds the token for good (create)
  // Kept to the CPUs no core holds (CorePinning::keep_dedicated_core0_off_cores), not to one: core 0 is
  // mostly run by host threads, which go where they go; this thread only stands in for them.
  t_core = &core0_->ctx;
  uint32_t rung = 0;  // the doorbell's count when this thread last looked
  // When the thread was last rung (one core, polls on): rung again within a look's period, it
  // is likely running a host's launch loop one launch per wake-up, and polls after this run.
  auto last_ring = std::chrono::steady_clock::time_point{};
  for (;;) {
    if (stopping_.load(std::memory_order_acquire) &&
        core0_token_.next() > published_.load(std::memory_order_acquire))
      return;
    Core0Token::Look look = Core0Token::Look::Rung;
    if (core0_token_.polling()) {
      // One core, whose launches host threads have been running: launches do not ring, and
      // this thread looks for one left standing every period instead.
      look = core0_token_.poll(rung, published_, stopping_);
      if (look == Core0Token::Look::Keep || look == Core0Token::Look::Sleep) continue;
    } else {
      // Until a core or the host calls for core 0, or the executor stops.
      core0_token_.sleep_until_rung(rung, stopping_);
    }
    bool poll_after_run = false;
    if (look == Core0Token::Look::Rung) {
      rung = core0_token_.answer();
      const bool may_poll = config_.cores == 1 && core0_token_.idle_polls();
      if (may_poll) {
        const auto now = std::chrono::steady_clock::now();
        poll_after_run = now - last_ring < Core0Token::kPollPeriod;
        last_ring = now;
      }
      // One core, rung for a launch that a host thread has run or is running meanwhile: host
      // threads drive this device. Launches stop ringing, and this thread polls.
      if (may_poll && !stopping_.load(std::memory_order_acquire) &&
          (core0_token_.owner() == Core0Token::kHost ||
           core0_token_.next() > published_.load(std::memory_order_seq_cst))) {
        core0_token_.start_polling();
        continue;
      }
    }
    while (core0_token_.take(Core0Token::kDedicated)) {
      // Run what is queued, handing core 0 over as soon as a host thread asks for it.
      uint64_t next = core0_token_.next();
      while (next <= published_.load(std::memory_order_acquire) && !core0_token_.asked()) {
        pinning_.keep_off_core0_cpu();
        process(*core0_, next);
        core0_token_.set_next(++next);
      }
      core0_token_.give_back();
      // A call for core 0 while we held it was not rung (it saw core 0 taken): look again.
      if (core0_token_.asked() || core0_token_.next() > published_.load(std::memory_order_seq_cst)) break;
    }
    // Launches stop ringing; one that read the flag before this store rang, and the poll answers.
    if (poll_after_run && !stopping_.load(std::memory_order_acquire)) core0_token_.start_polling();
  }
}

void Executor::note_call_stack(size_t bytes) {
  size_t seen = call_stack_max_.load(std::memory_order_relaxed);
  while (seen < bytes && !call_stack_max_.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
}

bool Executor::stack_holds_core0() const {
  const size_t need = call_stack_max_.load(std::memory_order_relaxed);
  return need + kCallStackReserve <= thread_stack_left();
}

void Executor::drive_until_completed(uint64_t seq) {
  drive_until([this, seq] { return completed_.load(std::memory_order_acquire) >= seq; });
}

void Executor::drive_until_ended(const Program *program, uint32_t epoch) {
  drive_until([program, epoch] { return reached(program->completed_epoch.load(std::memory_order_acquire), epoch); });
}

}  // namespace sk::host
