// The condition-variable pool and the spin-barrier floor.
#include <chrono>

#include "baselines.hpp"

namespace bench {
namespace {
thread_local uint64_t t_epoch = 0;  // sync_all barriers this pool worker passed (one pool per thread)
SpinBarrier *g_pool_barrier = nullptr;
void pool_sync_all() { g_pool_barrier->wait(t_epoch); }
}  // namespace

ConditionVariablePool::ConditionVariablePool(uint32_t threads) : n_(threads), sync_all_(threads) {
  for (uint32_t i = 0; i < n_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ConditionVariablePool::~ConditionVariablePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto &t : threads_) t.join();
}

void ConditionVariablePool::run(const Step *steps, size_t count) {
  g_pool_barrier = &sync_all_;
  g_sync_all = pool_sync_all;
  for (size_t k = 0; k < count; ++k) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &steps[k];
    remaining_ = n_;
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [this] { return remaining_ == 0; });
  }
}

void ConditionVariablePool::worker(uint32_t index) {
  uint64_t seen = 0;
  for (;;) {
    const Step *job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    for (uint32_t b = index; b < job->block_dim; b += n_) {
      t_block = {b, job->block_dim};
      job->thunk(job->args);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (--remaining_ == 0) done_.notify_one();
  }
}

SpinBarrierFloor::SpinBarrierFloor(uint32_t threads) : n_(threads), barrier_(threads) {
  for (uint32_t i = 1; i < n_; ++i) threads_.emplace_back([this] { worker(); });
}

SpinBarrierFloor::~SpinBarrierFloor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto &t : threads_) t.join();
}

void SpinBarrierFloor::run(size_t count) {
  count_.store(count);
  {
    std::lock_guard<std::mutex> lock(mutex_);  // a sleeping worker cannot miss the wake-up
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (size_t k = 0; k < count; ++k) barrier_.wait(caller_epoch_);
}

void SpinBarrierFloor::worker() {
  uint64_t seen = 0, epoch = 0;
  for (;;) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (generation_.load() == seen && !stop_.load() && std::chrono::steady_clock::now() < until)
      __builtin_ia32_pause();
    if (generation_.load() == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
    }
    if (stop_.load()) return;
    seen = generation_.load();
    const size_t count = count_.load();
    for (size_t k = 0; k < count; ++k) barrier_.wait(epoch);
  }
}

}  // namespace bench
