#include "host/executor/profiler.hpp"

#include <atomic>
#include <cstring>
#include <thread>

namespace sk::host {
namespace {
std::atomic<uint32_t> g_next_profiler_id{1};
}  // namespace

Profiler::Profiler(uint32_t steps, uint32_t cores)
    : id_(g_next_profiler_id.fetch_add(1, std::memory_order_relaxed)),
      cores_(cores),
      current_(size_t{steps} * cores),
      current_epoch_(size_t{steps} * cores, 0),
      last_words_(current_.size() * kWords, 0) {
  static_assert(sizeof(sk_profile_record) % sizeof(uint64_t) == 0, "the snapshot copies whole words");
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
  // only after this one is marked complete: current_ is stable while we copy it. Completions
  // come one at a time (launches complete in order), so this is the only writer.
  const uint64_t seq = sequence_.load(std::memory_order_relaxed);
  sequence_.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // readers see the odd count first
  uint32_t n = 0;
  for (size_t i = 0; i < current_.size(); ++i) {
    if (current_epoch_[i] != epoch) continue;
    uint64_t words[kWords];
    std::memcpy(words, &current_[i], sizeof words);
    for (size_t w = 0; w < kWords; ++w)
      std::atomic_ref<uint64_t>(last_words_[n * kWords + w]).store(words[w], std::memory_order_relaxed);
    ++n;
  }
  last_records_.store(n, std::memory_order_relaxed);
  sequence_.store(seq + 2, std::memory_order_release);
}

bool Profiler::last(std::vector<sk_profile_record> *out) const {
  std::vector<uint64_t> words(last_words_.size());
  for (;;) {
    const uint64_t before = sequence_.load(std::memory_order_acquire);
    if (before == 0) return false;
    if (before & 1) {  // a completion is writing: a few microseconds at most
      std::this_thread::yield();
      continue;
    }
    const uint32_t n = last_records_.load(std::memory_order_relaxed);
    for (size_t w = 0; w < size_t{n} * kWords; ++w)
      words[w] = std::atomic_ref<uint64_t>(last_words_[w]).load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);  // the loads above before the second look
    if (sequence_.load(std::memory_order_relaxed) != before) continue;
    out->resize(n);
    std::memcpy(out->data(), words.data(), size_t{n} * sizeof(sk_profile_record));
    return true;
  }
}

}  // namespace sk::host
