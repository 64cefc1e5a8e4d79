#include "host/profiler.hpp"

#include <atomic>

namespace sk::host {
namespace {
std::atomic<uint32_t> g_next_profiler_id{1};
}  // namespace

Profiler::Profiler(uint32_t steps, uint32_t cores)
    : id_(g_next_profiler_id.fetch_add(1, std::memory_order_relaxed)),
      cores_(cores),
      current_(size_t{steps} * cores),
      current_epoch_(size_t{steps} * cores, 0) {
  last_.reserve(current_.size());
}

void Profiler::ready(const CoreContext &ctx, uint32_t blocks) {
  const size_t i = size_t{ctx.step_index} * cores_ + ctx.core;
  sk_profile_record &r = current_[i];
  r.step = ctx.step_index;
  r.core = ctx.core;
  r.core_type = ctx.slot.type;  // SK_CORE_TYPE_VECTOR or SK_CORE_TYPE_CUBE
  r.blocks = blocks;
  r.start_ns = r.end_ns = r.sync_wait_ns = 0;
  r.ready_ns = monotonic_ns();
  current_epoch_[i] = ctx.epoch;
}

void Profiler::complete(uint32_t epoch, bool aborted) {
  if (aborted) return;
  // The launch's cores have all left it (the caller is the last), and the next launch starts
  // only after this one is marked complete: current_ is stable while we copy it.
  std::lock_guard<std::mutex> lock(mutex_);
  last_.clear();  // keeps the capacity reserved in the constructor
  for (size_t i = 0; i < current_.size(); ++i)
    if (current_epoch_[i] == epoch) last_.push_back(current_[i]);
  has_last_ = true;
}

bool Profiler::last(std::vector<sk_profile_record> *out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_last_) return false;
  *out = last_;
  return true;
}

}  // namespace sk::host
