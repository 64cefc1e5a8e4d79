// Core 0's token: which thread runs core 0's share of the launches. Cores 1..N-1 have threads
// of their own (Executor::core_main); core 0 is run by whichever thread holds the token, so that
// a host thread waiting for the device runs it itself (no thread more than the cores, and the
// completion seen without a wake-up), and a dedicated thread (Executor::core0_main) stands in for
// launches no host thread waits for. The threads' loops are executor_core0.cpp's; this type is
// the token's words and their transitions.
//
// The token is owner_: Free, Host or Dedicated. Nobody takes it from its holder.
//
//   transition         who (where)                         how (order)         then
//   Free -> Host       a host thread waiting for the       CAS (acquire)       runs the queued tasks until
//                      device (Executor::drive_until)                          its wait is over
//   Host -> Free       that thread (give_back)             exchange (seq_cst)  calls (rule 1)
//   Free -> Dedicated  the dedicated thread, rung or       CAS (acquire)       runs the queued tasks while
//                      finding a launch left standing                          no host thread asks
//                      (Executor::core0_main)
//   Dedicated -> Free  the dedicated thread (give_back):   exchange (seq_cst)  takes it again if tasks are
//                      queue run, or a host thread asks                        left and none asks; else
//                                                                              sleeps (rules 1, 2)
//
// Only the holder runs core 0 and touches next_, core 0's CoreContext and the pinning state
// (CorePinning::keep_off_core0_cpu): a CAS that takes the token acquires what the last holder
// wrote before its exchange. The other words:
//
//   word               written by (order)                    read by (order)
//   host_wants_        a host thread finding the token       the dedicated holder between
//                      held: + 1 (ask), - 1 when it stops    tasks, and after it gives the
//                      waiting (stop_asking; seq_cst RMWs)   token back (asked; seq_cst)
//   doorbell_          callers (call): + 1 (seq_cst)         the dedicated thread, asleep on it
//   doorbell_answered_ the dedicated thread: the count it    callers, to skip a futex wake
//                      last answered (answer; seq_cst)       (seq_cst)
//   polling_           the dedicated thread (seq_cst), one   Executor::submit, on one core
//                      core only: host threads run the       (seq_cst)
//                      launches, so launches do not ring
//                      and it looks every kPollPeriod (poll)
//
// A host thread finding the token held asks and sleeps on owner_ until it is Free or what it
// waits for has happened; then it stops asking and, leaving without the token, calls.
//
// A call (call) rings the doorbell when the token is Free and a queued task has not run on core
// 0. Calls come from a core that waited spin_us inside a launch or going idle, a host thread
// giving the token back or leaving without it, sk_stream_query, and, on one core while polling_
// is false, every launch.
//
// No queued task is left with the token Free and no call on the way. Each rule is a pair of
// seq_cst accesses on each side, a write then a read, so that one side sees the other's write:
//  (1) giving back: owner_ := Free, then read the queue's head (published); a caller: its task
//      published, then read owner_. The caller sees Free and rings, or the giver sees the task.
//  (2) asking: the dedicated thread sets owner_ := Free, then reads host_wants_; a host thread
//      leaving decrements host_wants_, then reads owner_. One whose request the dedicated
//      thread read sees the token Free (and calls) or taken again.
//  (3) ringing: the dedicated thread stores doorbell_answered_, then reads the doorbell before
//      it sleeps; a ring increments the doorbell, then reads answered. A ring whose count
//      before its increment is past answered knows an earlier ring is waking the thread, which
//      will look again before it sleeps: it skips the futex wake.
//  (4) polling: the dedicated thread clears polling_, then reads published; submit publishes,
//      then reads polling_. A launch that did not ring is seen.
// Sleeping on a word and waking its sleepers follow wait.hpp.
//
// With core0_thread (device key core0=thread) the token never moves: create() gives it to core
// 0's own thread for good (hold_for_good), which runs core 0 as the other cores run theirs;
// host threads only wait, and calls ring nothing, as the token is never Free.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/cache_line.hpp"
#include "host/executor/wait.hpp"

namespace sk::host {

class Core0Token {
 public:
  static constexpr uint32_t kFree = 0, kDedicated = 1, kHost = 2;
  // Each look is a wake-up, which preempts the host thread running the kernels whenever another
  // process keeps the other CPU busy: a long period costs only launches left standing
  // (docs/benchmarks.md, "One core beside a busy process").
  static constexpr std::chrono::microseconds kPollPeriod{1000};

  // Once, by the executor's constructor: the looks before the dedicated thread stops polling
  // (0: it never polls, launches ring at every launch), and whether its sleep yields first.
  void configure(uint32_t idle_polls, bool yield) {
    idle_polls_ = idle_polls;
    sleep_policy_.yield = yield;
  }
  uint32_t idle_polls() const { return idle_polls_; }

  // The token. take: Free -> `holder`; give_back: -> Free, waking host threads waiting for it.
  bool take(uint32_t holder) {
    uint32_t expected = kFree;
    return owner_.compare_exchange_strong(expected, holder, std::memory_order_acquire);
  }
  void give_back() {
    // An exchange, not a store and a fence: the locked instruction is the fence notify needs
    // (wait.hpp's notify_after_rmw), and rules 1 and 2's write.
    owner_.exchange(kFree, std::memory_order_seq_cst);
    notify_after_rmw(&owner_, owner_channel_);
  }
  void hold_for_good() { owner_.store(kDedicated, std::memory_order_relaxed); }  // core0_thread
  uint32_t owner() const { return owner_.load(std::memory_order_seq_cst); }
  // A host thread's wait for the token to be Free, or for done().
  template <class Done>
  WaitResult wait_free(const WaitPolicy &policy, Done done) {
    return wait_for(owner_, owner_channel_, policy, [&done](uint32_t owner) { return owner == kFree || done(); });
  }

  // The next task core 0 runs (the holder's).
  uint64_t next() const { return next_.load(std::memory_order_relaxed); }
  void set_next(uint64_t seq) { next_.store(seq, std::memory_order_relaxed); }

  // A host thread asks the dedicated holder to hand the token over between tasks, and stops
  // asking (then the executor calls, if it leaves without it: rule 2).
  void ask() { host_wants_.fetch_add(1, std::memory_order_seq_cst); }
  void stop_asking() { host_wants_.fetch_sub(1, std::memory_order_seq_cst); }
  bool asked() const { return host_wants_.load(std::memory_order_seq_cst) != 0; }

  // Wakes the dedicated thread if the token is Free and a task up to `published` has not run
  // on core 0 (rules 1, 3).
  void call(const std::atomic<uint64_t> &published);
  uint32_t calls() const { return doorbell_.load(std::memory_order_relaxed); }  // for tests

  // The dedicated thread sleeps (never spins: the host thread that launched usually takes
  // core 0 itself) until rung past `rung` or `stopping`; answer takes the doorbell's count as
  // answered (rule 3) and returns it.
  void sleep_until_rung(uint32_t rung, const std::atomic<bool> &stopping) {
    wait_for(doorbell_, doorbell_channel_, sleep_policy_,
             [&rung, &stopping](uint32_t v) { return v != rung || stopping.load(std::memory_order_acquire); });
  }
  uint32_t answer() {
    const uint32_t rung = doorbell_.load(std::memory_order_seq_cst);
    doorbell_answered_.store(rung, std::memory_order_seq_cst);
    return rung;
  }

  // One core only: no other core calls core 0 for a launch nobody waits for, so launches ring
  // the dedicated thread, whose wake-up in a synchronous loop finds the host has run the launch
  // or takes core 0 from under it. Once the thread finds host threads running the launches it
  // was rung for, or is rung twice within a period, it polls: launches stop ringing, and it
  // looks for one left standing every kPollPeriod (one left standing runs within two periods),
  // until the device sits idle spin_max_us (idle_polls periods). Only where an idle core's spin
  // would grow, and not where the thread shares the host's only CPU (its looks would preempt
  // the host).
  bool polling(std::memory_order order = std::memory_order_relaxed) const { return polling_.load(order); }
  void start_polling() {
    poll_ = Poll{};
    polling_.store(true, std::memory_order_seq_cst);
  }
  // The dedicated thread's look, while polling, for a launch host threads left standing: sleeps
  // one kPollPeriod or until rung past `rung`, and says what to do next: Keep polling; answer a
  // Rung doorbell (or stop); Take core 0 for a launch that stood a whole period with core 0
  // free; Sleep until rung, the device having sat idle idle_polls periods. Take and Sleep stop
  // polling (rule 4).
  enum class Look { Keep, Rung, Take, Sleep };
  Look poll(uint32_t rung, const std::atomic<uint64_t> &published, const std::atomic<bool> &stopping);

  // The executor stops: wakes every thread asleep on the token's words (the doorbell moves, so
  // that the dedicated thread does not sleep again). Lost: wakes the host threads waiting for
  // the token, which see it lost.
  void wake_to_stop() {
    owner_.fetch_add(0, std::memory_order_seq_cst);
    futex_wake_all(&owner_);
    doorbell_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&doorbell_);
  }
  void wake_host_waiters() { futex_wake_all(&owner_); }

 private:
  struct Poll {
    uint64_t next = 0;       // next_ at the last look, while a launch waited
    uint64_t published = 0;  // published at the last look, while none did
    uint32_t idle = 0;       // looks since published last moved
  };

  alignas(kCacheLine) std::atomic<uint64_t> next_{1};
  std::atomic<uint32_t> owner_{kFree};
  std::atomic<uint32_t> host_wants_{0};
  std::atomic<uint32_t> doorbell_{0};           // the dedicated core-0 thread sleeps on it
  std::atomic<uint32_t> doorbell_answered_{0};  // the doorbell's count the dedicated thread last answered
  WaitPolicy sleep_policy_{.spin = std::chrono::nanoseconds(0)};  // the dedicated thread never spins
  std::atomic<bool> polling_{false};
  uint32_t idle_polls_ = 0;
  // Separate channels, so that a waker pays a futex syscall only when someone sleeps on that
  // kind of word (the dedicated thread sleeps on the doorbell most of the time).
  SleepChannel owner_channel_, doorbell_channel_;
  Poll poll_;  // the dedicated thread's, off the line submit reads polling_ on
};

}  // namespace sk::host
