#include "host/executor/wait.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace sk::host {

// std::atomic<uint32_t> is a plain 32-bit word on Linux: the futex can sit on it directly.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

void yield_cpu() { sched_yield(); }

void futex_wake_all(std::atomic<uint32_t> *word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void futex_wait_once(const std::atomic<uint32_t> *word, uint32_t observed, std::chrono::nanoseconds slice) {
  timespec ts{};
  timespec *tsp = nullptr;
  if (slice.count() > 0) {
    ts.tv_sec = static_cast<time_t>(slice.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(slice.count() % 1'000'000'000);
    tsp = &ts;
  }
  // Returns at once (EAGAIN) if the word already changed: no wake-up can be lost.
  syscall(SYS_futex, reinterpret_cast<const uint32_t *>(word), FUTEX_WAIT_PRIVATE, observed, tsp, nullptr, 0);
}

}  // namespace sk::host
