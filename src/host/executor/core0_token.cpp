// Core 0's token: which thread runs core 0's share of the launches. Cores 1..N-1 have threads
// of their own (Executor::core_main); core 0 is run by whichever thread holds the token, so that
// a host thread waiting for the device runs it itself (no thread more than the cores, and the
// completion seen without a wake-up), and a dedicated thread (core0_main) stands in for launches
// no host thread waits for.
//
// The token is core0_owner_: Free, Host or Dedicated. Nobody takes it from its holder.
//
//   transition         who (where)                         how (order)         then
//   Free -> Host       a host thread waiting for the       CAS (acquire)       runs the queued tasks until
//                      device (drive_until)                                    its wait is over
//   Host -> Free       that thread (release_core0)         exchange (seq_cst)  calls (rule 1)
//   Free -> Dedicated  the dedicated thread, rung or       CAS (acquire)       runs the queued tasks while
//                      finding a launch left standing                          no host thread asks
//                      (core0_main)
//   Dedicated -> Free  the dedicated thread (free_core0):  exchange (seq_cst)  takes it again if tasks are
//                      queue run, or a host thread asks                        left and none asks; else
//                                                                              sleeps (rules 1, 2)
//
// Only the holder runs core 0 and touches core0_next_, core 0's CoreContext and the pinning
// state (CorePinning::keep_off_core0_cpu): a CAS that takes the token acquires what the last holder wrote
// before its exchange. The other words:
//
//   word                      written by (order)                    read by (order)
//   host_wants_core0_         a host thread finding the token       the dedicated holder between
//                             held: + 1 (ask_for_core0), - 1 when   tasks, and after it gives the
//                             it stops waiting (seq_cst RMWs)       token back (seq_cst)
//   core0_doorbell_           callers (call_core0): + 1 (seq_cst)   the dedicated thread, asleep on it
//   core0_doorbell_answered_  the dedicated thread: the count it    callers, to skip a futex wake
//                             last answered (seq_cst)               (seq_cst)
//   host_drives_core0_        the dedicated thread (seq_cst), one   submit, on one core (seq_cst)
//                             core only: host threads run the
//                             launches, so launches do not ring
//                             and it looks every kCore0PollPeriod
//                             (core0_poll)
//
// A host thread finding the token held asks and sleeps on core0_owner_ until it is Free or what
// it waits for has happened; then it stops asking and, leaving without the token, calls.
//
// A call (call_core0) rings the doorbell when the token is Free and a queued task has not run
// on core 0. Calls come from a core that waited spin_us inside a launch or going idle, a host
// thread giving the token back or leaving without it, sk_stream_query, and, on one core while
// host_drives_core0_ is false, every launch.
//
// No queued task is left with the token Free and no call on the way. Each rule is a pair of
// seq_cst accesses on each side, a write then a read, so that one side sees the other's write:
//  (1) giving back: core0_owner_ := Free, then read published_; a caller: its task published,
//      then read core0_owner_. The caller sees Free and rings, or the giver sees the task.
//  (2) asking: the dedicated thread sets core0_owner_ := Free, then reads host_wants_core0_;
//      a host thread leaving decrements host_wants_core0_, then reads core0_owner_. One whose
//      request the dedicated thread read sees the token Free (and calls) or taken again.
//  (3) ringing: the dedicated thread stores core0_doorbell_answered_, then reads the doorbell
//      before it sleeps; a ring increments the doorbell, then reads answered. A ring whose
//      count before its increment is past answered knows an earlier ring is waking the thread,
//      which will look again before it sleeps: it skips the futex wake.
//  (4) polling: the dedicated thread clears host_drives_core0_, then reads published_; submit
//      publishes, then reads host_drives_core0_. A launch that did not ring is seen.
// Sleeping on a word and waking its sleepers follow wait.hpp.
//
// With core0_thread (device key core0=thread) the token never moves: create() gives it to core
// 0's own thread, which runs core 0 as the other cores run theirs (core_loop); host threads only
// wait (drive_until), and calls ring nothing, as the token is never Free.
#include "host/executor/core_context.hpp"
#include "host/executor/executor.hpp"

namespace sk::host {

template <class Done>
void Executor::drive_until(Done what) {
  auto done = [this, &what] { return what() || lost(); };
  if (config_.core0_thread) {
    // Core 0 has a thread of its own: wait, and watch for a core that does not come back from
    // a kernel, whichever core it is.
    while (!done())
      if (wait_for(completed_word_, host_channel_, host_wait_policy_, [&done](uint32_t) { return done(); }) ==
          WaitResult::TimedOut)
        watch_for_stuck_cores();
    return;
  }
  while (!done()) {
    uint32_t expected = kCore0Free;
    if (core0_owner_.compare_exchange_strong(expected, kCore0Host, std::memory_order_acquire)) {
      CoreContext *saved = t_core;
      t_core = &core0_->ctx;
      uint64_t next = core0_next_.load(std::memory_order_relaxed);
      while (!done() && next <= published_.load(std::memory_order_acquire)) {
        pinning_.keep_off_core0_cpu();
        process(*core0_, next);
        core0_next_.store(++next, std::memory_order_relaxed);
      }
      t_core = saved;
      release_core0();
      // Core 0 did its share: what is left is the other cores finishing.
      wait_for(completed_word_, host_channel_, completion_policy_, [&done](uint32_t) { return done(); });
      return;
    }
    // Another thread runs core 0: ask for it (the dedicated thread hands it over between
    // tasks) and wait until it is free or what we wait for has happened.
    ask_for_core0();
    WaitPolicy policy = idle_policy_;
    policy.timeout = watch_.slice();
    policy.abort = watch_.lost_flag();
    while (wait_for(core0_owner_, core0_channel_, policy,
                    [&done](uint32_t owner) { return owner == kCore0Free || done(); }) == WaitResult::TimedOut)
      watch_for_stuck_cores();  // core 0's holder may be in a kernel that does not return
    const bool leaving = done();
    stop_asking_for_core0(leaving);
    if (leaving) return;
  }
}

void Executor::ask_for_core0() { host_wants_core0_.fetch_add(1, std::memory_order_seq_cst); }

void Executor::stop_asking_for_core0(bool leaving) {
  host_wants_core0_.fetch_sub(1, std::memory_order_seq_cst);
  // The dedicated thread may have handed core 0 over for us and gone to sleep with launches
  // left, and the other cores may already sleep too (each calls core 0 once, before it
  // sleeps): leaving core 0 untaken, call the dedicated thread back (rule 2).
  if (leaving) call_core0();
}

void Executor::free_core0() {
  // An exchange, not a store and a fence: the locked instruction is the fence notify needs
  // (wait.hpp's notify_after_rmw), and rules 1 and 2's write.
  core0_owner_.exchange(kCore0Free, std::memory_order_seq_cst);
  notify_after_rmw(&core0_owner_, core0_channel_);
}

void Executor::release_core0() {
  free_core0();
  // Tasks left that core 0 has not run (launched without a wait): the dedicated thread takes them.
  call_core0();
}

void Executor::call_core0() {
  // Rule 1: the caller sees core 0 free, or the releaser sees the work queued and calls itself.
  if (core0_owner_.load(std::memory_order_seq_cst) != kCore0Free) return;
  if (core0_next_.load(std::memory_order_relaxed) > published_.load(std::memory_order_seq_cst)) return;
  // Rule 3: a ring not yet answered is waking the thread, and this one need not pay a futex
  // wake (one core's launch loop would pay it at every launch, docs/benchmarks.md).
  const uint32_t before = core0_doorbell_.fetch_add(1, std::memory_order_seq_cst);
  if (before != core0_doorbell_answered_.load(std::memory_order_seq_cst)) return;
  notify_after_rmw(&core0_doorbell_, doorbell_channel_);
}

Executor::Core0Look Executor::core0_poll(uint32_t rung, Core0Poll &poll) {
  // Sleep one period, or until rung (registered as a sleeper: call_core0's futex wake finds us).
  doorbell_channel_.sleepers.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t observed = core0_doorbell_.load(std::memory_order_seq_cst);
  if (observed == rung && !stopping_.load(std::memory_order_acquire))
    futex_wait_once(&core0_doorbell_, observed, kCore0PollPeriod);
  doorbell_channel_.sleepers.fetch_sub(1, std::memory_order_relaxed);
  if (core0_doorbell_.load(std::memory_order_seq_cst) != rung || stopping_.load(std::memory_order_acquire))
    return Core0Look::Rung;
  const uint64_t next = core0_next_.load(std::memory_order_relaxed);
  const uint64_t published = published_.load(std::memory_order_acquire);
  if (next <= published) {
    // A launch core 0 has not run. Ours once a whole period passed with core 0 free and no
    // launch run: nobody is driving it, so launches ring again from now on.
    poll.idle = 0;
    const bool stood = next == poll.next && core0_owner_.load(std::memory_order_seq_cst) == kCore0Free;
    poll.next = next;
    if (!stood) return Core0Look::Keep;
    host_drives_core0_.store(false, std::memory_order_seq_cst);
    return Core0Look::Take;
  }
  poll.next = 0;
  if (published != poll.published) {
    poll.published = published;
    poll.idle = 0;
    return Core0Look::Keep;
  }
  if (++poll.idle < core0_idle_polls_) return Core0Look::Keep;
  // Idle for spin_max_us: launches ring again, and this thread sleeps until one does. A launch
  // that did not ring is seen here (rule 4).
  host_drives_core0_.store(false, std::memory_order_seq_cst);
  if (core0_next_.load(std::memory_order_relaxed) <= published_.load(std::memory_order_seq_cst))
    return Core0Look::Take;
  return Core0Look::Sleep;
}

void Executor::core0_main() {
  if (config_.core0_thread) return core_loop(*core0_);  // it holds the token for good (create)
  // Kept to the CPUs no core holds (CorePinning::keep_dedicated_core0_off_cores), not to one: core 0 is
  // mostly run by host threads, which go where they go; this thread only stands in for them.
  t_core = &core0_->ctx;
  uint32_t rung = 0;  // the doorbell's count when this thread last looked
  Core0Poll poll;
  // When the thread was last rung (one core, polls on): rung again within a look's period, it
  // is likely running a host's launch loop one launch per wake-up, and polls after this run.
  auto last_ring = std::chrono::steady_clock::time_point{};
  for (;;) {
    if (stopping_.load(std::memory_order_acquire) &&
        core0_next_.load(std::memory_order_relaxed) > published_.load(std::memory_order_acquire))
      return;
    Core0Look look = Core0Look::Rung;
    if (host_drives_core0_.load(std::memory_order_relaxed)) {
      // One core, whose launches host threads have been running: launches do not ring, and
      // this thread looks for one left standing every period instead.
      look = core0_poll(rung, poll);
      if (look == Core0Look::Keep || look == Core0Look::Sleep) continue;
    } else {
      // Sleep (never spin: the host thread that launched usually takes core 0 itself) until
      // a core or the host calls for core 0, or the executor stops.
      wait_for(core0_doorbell_, doorbell_channel_, core0_sleep_policy_,
               [this, &rung](uint32_t v) { return v != rung || stopping_.load(std::memory_order_acquire); });
    }
    bool poll_after_run = false;
    if (look == Core0Look::Rung) {
      rung = core0_doorbell_.load(std::memory_order_seq_cst);
      core0_doorbell_answered_.store(rung, std::memory_order_seq_cst);
      if (config_.cores == 1 && core0_idle_polls_) {
        const auto now = std::chrono::steady_clock::now();
        poll_after_run = now - last_ring < kCore0PollPeriod;
        last_ring = now;
      }
      // One core, rung for a launch that a host thread has run or is running meanwhile: host
      // threads drive this device. Launches stop ringing, and this thread polls.
      if (config_.cores == 1 && core0_idle_polls_ && !stopping_.load(std::memory_order_acquire) &&
          (core0_owner_.load(std::memory_order_seq_cst) == kCore0Host ||
           core0_next_.load(std::memory_order_relaxed) > published_.load(std::memory_order_seq_cst))) {
        poll = Core0Poll{};
        host_drives_core0_.store(true, std::memory_order_seq_cst);
        continue;
      }
    }
    uint32_t expected = kCore0Free;
    while (core0_owner_.compare_exchange_strong(expected, kCore0Dedicated, std::memory_order_acquire)) {
      // Run what is queued, handing core 0 over as soon as a host thread asks for it.
      uint64_t next = core0_next_.load(std::memory_order_relaxed);
      while (next <= published_.load(std::memory_order_acquire) &&
             host_wants_core0_.load(std::memory_order_seq_cst) == 0) {
        pinning_.keep_off_core0_cpu();
        process(*core0_, next);
        core0_next_.store(++next, std::memory_order_relaxed);
      }
      free_core0();
      // A call for core 0 while we held it was not rung (it saw core 0 taken): look again.
      if (host_wants_core0_.load(std::memory_order_seq_cst) != 0 ||
          core0_next_.load(std::memory_order_relaxed) > published_.load(std::memory_order_seq_cst))
        break;
      expected = kCore0Free;
    }
    // Launches stop ringing; one that read the flag before this store rang, and the poll answers.
    if (poll_after_run && !stopping_.load(std::memory_order_acquire)) {
      poll = Core0Poll{};
      host_drives_core0_.store(true, std::memory_order_seq_cst);
    }
  }
}

void Executor::drive_until_completed(uint64_t seq) {
  drive_until([this, seq] { return completed_.load(std::memory_order_acquire) >= seq; });
}

void Executor::drive_until_ended(const Program *program, uint32_t epoch) {
  drive_until([program, epoch] { return reached(program->completed_epoch.load(std::memory_order_acquire), epoch); });
}

}  // namespace sk::host
