// The fastest central spin barrier we know for a few cores: one counter that only counts up
// (barrier e is passed when it reaches e * n), on its own cache line, so that a barrier costs
// one atomic increment and one line transfer per thread, and nothing is reset between
// barriers. It is the floor a super kernel's inter-kernel sync is measured against, and the
// barrier the thread-pool baseline gives sk_sync_all.
#pragma once
#include <atomic>
#include <cstdint>

namespace bench {

class SpinBarrier {
 public:
  explicit SpinBarrier(uint32_t n) : n_(n) {}
  // `epoch` is the caller's count of barriers passed (one variable per thread).
  void wait(uint64_t &epoch) {
    const uint64_t target = ++epoch * n_;
    count_.fetch_add(1, std::memory_order_acq_rel);
    while (count_.load(std::memory_order_acquire) < target) __builtin_ia32_pause();
  }

 private:
  const uint32_t n_;
  alignas(64) std::atomic<uint64_t> count_{0};
};

}  // namespace bench
