// Core0Token (core0_token.hpp, whose top comment is the protocol): calling the dedicated thread,
// and its look for a launch left standing while it polls.
#include "host/executor/core0_token.hpp"

namespace sk::host {

void Core0Token::call(const std::atomic<uint64_t> &published) {
  // Rule 1: the caller sees core 0 free, or the releaser sees the work queued and calls itself.
  if (owner_.load(std::memory_order_seq_cst) != kFree) return;
  if (next_.load(std::memory_order_relaxed) > published.load(std::memory_order_seq_cst)) return;
  // Rule 3: a ring not yet answered is waking the thread, and this one need not pay a futex
  // wake (one core's launch loop would pay it at every launch, docs/benchmarks.md).
  const uint32_t before = doorbell_.fetch_add(1, std::memory_order_seq_cst);
  if (before != doorbell_answered_.load(std::memory_order_seq_cst)) return;
  notify_after_rmw(&doorbell_, doorbell_channel_);
}

Core0Token::Look Core0Token::poll(uint32_t rung, const std::atomic<uint64_t> &published,
                                  const std::atomic<bool> &stopping) {
  // Sleep one period, or until rung (registered as a sleeper: call's futex wake finds us).
  doorbell_channel_.sleepers.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t observed = doorbell_.load(std::memory_order_seq_cst);
  if (observed == rung && !stopping.load(std::memory_order_acquire))
    futex_wait_once(&doorbell_, observed, kPollPeriod);
  doorbell_channel_.sleepers.fetch_sub(1, std::memory_order_relaxed);
  if (doorbell_.load(std::memory_order_seq_cst) != rung || stopping.load(std::memory_order_acquire))
    return Look::Rung;
  const uint64_t next = next_.load(std::memory_order_relaxed);
  const uint64_t head = published.load(std::memory_order_acquire);
  if (next <= head) {
    // A launch core 0 has not run. Ours once a whole period passed with core 0 free and no
    // launch run: nobody is driving it, so launches ring again from now on.
    poll_.idle = 0;
    const bool stood = next == poll_.next && owner_.load(std::memory_order_seq_cst) == kFree;
    poll_.next = next;
    if (!stood) return Look::Keep;
    polling_.store(false, std::memory_order_seq_cst);
    return Look::Take;
  }
  poll_.next = 0;
  if (head != poll_.published) {
    poll_.published = head;
    poll_.idle = 0;
    return Look::Keep;
  }
  if (++poll_.idle < idle_polls_) return Look::Keep;
  // Idle for spin_max_us: launches ring again, and this thread sleeps until one does. A launch
  // that did not ring is seen here (rule 4).
  polling_.store(false, std::memory_order_seq_cst);
  if (next_.load(std::memory_order_relaxed) <= published.load(std::memory_order_seq_cst)) return Look::Take;
  return Look::Sleep;
}

}  // namespace sk::host
