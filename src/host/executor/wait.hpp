// Waiting on a 32-bit word: spin for a while (cores usually meet within microseconds), then
// sleep on a futex. Wakers pay a futex_wake syscall only when someone sleeps on that channel.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/cache_line.hpp"

namespace sk::host {

// Wrap-safe "value has reached target" for counters that only count up.
inline bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Threads that may sleep on the words of one channel; wakers check it before a syscall.
struct SleepChannel {
  alignas(kCacheLine) std::atomic<uint32_t> sleepers{0};
};

void futex_wake_all(std::atomic<uint32_t> *word);
void yield_cpu();  // sched_yield
constexpr std::chrono::microseconds kSpinBeforeYield{5};

// After a seq_cst read-modify-write of `word`, wakes its sleepers if the channel has any. The
// RMW and the sleeper's seq_cst increment of `sleepers` are in one total order, so no fence is
// needed (on x86 the locked instruction already is one): the per-step arrival path.
inline void notify_after_rmw(std::atomic<uint32_t> *word, SleepChannel &channel) {
  if (channel.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(word);
}

// Adds `n` to `word` (seq_cst: notify_after_rmw's condition) and wakes its sleepers: a core
// counting its arrival, release or flag set.
inline void add_and_notify(std::atomic<uint32_t> &word, uint32_t n, SleepChannel &channel) {
  word.fetch_add(n, std::memory_order_seq_cst);
  notify_after_rmw(&word, channel);
}

// After changing `word`, wakes its sleepers if the channel has any.
inline void notify(std::atomic<uint32_t> *word, SleepChannel &channel) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (channel.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(word);
}

enum class WaitResult { Ok, Aborted, TimedOut };

struct WaitPolicy {
  std::chrono::nanoseconds spin{50'000};
  std::chrono::milliseconds timeout{0};      // 0: no deadline
  const std::atomic<bool> *abort = nullptr;  // checked while waiting; may be null
  // Called once when the spin phase ends without success, before the first sleep: a waiting
  // core uses it to call for core 0 when no thread runs core 0 (see Executor).
  void (*before_sleep)(void *) = nullptr;
  void *before_sleep_arg = nullptr;
  // If non-zero and shorter than `spin`: before_sleep is also called once after this much
  // spinning (a core waiting inside a launch calls for core 0 without waiting its whole spin).
  std::chrono::nanoseconds early_call{0};
  // Past kSpinBeforeYield, give the CPU away at each clock check: for waits whose awaited
  // thread may be queued on this very CPU (more threads than CPUs). Elsewhere it is harmful:
  // the scheduler hands a yielded CPU to any other process there for its whole time slice
  // (milliseconds), where the waiter, left spinning, would have kept it or, once asleep, got it
  // back at once when woken (docs/benchmarks.md, "Sharing the machine with a busy process").
  bool yield = true;
};

// Waits until pred(word.load(acquire)) holds. Sleeps on `word`, registered on `channel`.
template <class Pred>
WaitResult wait_for(const std::atomic<uint32_t> &word, SleepChannel &channel, const WaitPolicy &policy, Pred pred);

// Non-template core of wait_for: sleeps once while word == observed (bounded by `slice`).
void futex_wait_once(const std::atomic<uint32_t> *word, uint32_t observed, std::chrono::nanoseconds slice);

template <class Pred>
WaitResult wait_for(const std::atomic<uint32_t> &word, SleepChannel &channel, const WaitPolicy &policy, Pred pred) {
  using clock = std::chrono::steady_clock;
  if (pred(word.load(std::memory_order_acquire))) return WaitResult::Ok;
  const auto start = clock::now();
  // Spin phase: check the clock only every 64 polls (it costs ~20 ns). Past the first few
  // microseconds, yield the CPU at each check if the policy says so: the core we wait for may
  // have been woken onto this very CPU, and would otherwise wait for our whole spin.
  bool called_early = policy.early_call.count() == 0 || policy.early_call >= policy.spin;
  for (uint32_t i = 1;; ++i) {
    if (pred(word.load(std::memory_order_acquire))) return WaitResult::Ok;
    if (policy.abort && policy.abort->load(std::memory_order_relaxed)) return WaitResult::Aborted;
    cpu_relax();
    if ((i & 63) == 0) {
      const auto spun = clock::now() - start;
      if (spun >= policy.spin) break;
      if (!called_early && spun >= policy.early_call) {
        called_early = true;
        if (policy.before_sleep) policy.before_sleep(policy.before_sleep_arg);
      }
      if (policy.yield && spun >= kSpinBeforeYield) yield_cpu();
    }
  }
  // Sleep phase: bounded slices so that deadlines and aborts are seen.
  if (policy.before_sleep) policy.before_sleep(policy.before_sleep_arg);
  const auto deadline = start + policy.timeout;
  for (;;) {
    channel.sleepers.fetch_add(1, std::memory_order_seq_cst);
    uint32_t observed = word.load(std::memory_order_seq_cst);
    if (pred(observed)) {
      channel.sleepers.fetch_sub(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      return WaitResult::Ok;
    }
    std::chrono::nanoseconds slice = std::chrono::milliseconds((policy.timeout.count() || policy.abort) ? 20 : 0);
    futex_wait_once(&word, observed, slice);
    channel.sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (pred(word.load(std::memory_order_acquire))) return WaitResult::Ok;
    if (policy.abort && policy.abort->load(std::memory_order_relaxed)) return WaitResult::Aborted;
    if (policy.timeout.count() && clock::now() >= deadline) return WaitResult::TimedOut;
  }
}

}  // namespace sk::host
