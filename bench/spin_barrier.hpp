// A sense-reversing spin barrier: the floor a super kernel's inter-kernel sync is measured
// against, and the barrier the thread-pool baseline gives sk_sync_all.
#pragma once
#include <atomic>
#include <cstdint>

namespace bench {

class SpinBarrier {
 public:
  explicit SpinBarrier(uint32_t n) : n_(n), count_(n) {}
  void wait(bool &local_sense) {
    local_sense = !local_sense;
    if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      count_.store(n_, std::memory_order_relaxed);
      sense_.store(local_sense, std::memory_order_release);
    } else {
      while (sense_.load(std::memory_order_acquire) != local_sense) __builtin_ia32_pause();
    }
  }

 private:
  const uint32_t n_;
  alignas(64) std::atomic<uint32_t> count_;
  alignas(64) std::atomic<bool> sense_{false};
};

}  // namespace bench
