#include "host/executor/repeat_barrier.hpp"

#include <string>

namespace sk::host {

bool pass_repeat_barrier(CoreContext &ctx, RepeatBarrier &b, uint32_t cores, uint32_t done, uint32_t n) {
  // acq_rel: the last arrival has seen every core's writes of the iteration (the stop flag a
  // kernel set included), and publishes them to the cores it releases with `decided`.
  if (b.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == done * cores) {
    const bool stop = ctx.failure->aborted.load(std::memory_order_acquire) ||
                      (b.stop_flag && __atomic_load_n(b.stop_flag, __ATOMIC_RELAXED) != 0);
    // Flag counters count within one launch (host/device_api/cross_core_flags.hpp): each iteration is one.
    if (!stop)
      for (const auto &f : ctx.program->flags) f->reset();
    b.stop.store(stop, std::memory_order_relaxed);
    b.decided.store(done, std::memory_order_release);
    notify(&b.decided, *ctx.channel);
    return !stop;
  }
  const WaitResult r = wait_in_task(ctx, b.decided, [done](uint32_t v) { return reached(v, done); });
  if (r != WaitResult::Ok) {
    TaskFailure &f = *ctx.failure;
    std::lock_guard<std::mutex> lock(f.mutex);
    bool known = false;
    for (const auto &w : f.waits) known |= w.first == ctx.core;
    if (!known)
      f.waits.emplace_back(ctx.core, "is at the barrier after iteration " + std::to_string(done) + " of " +
                                         std::to_string(n) + " (" +
                                         std::to_string(b.arrived.load() - (done - 1) * cores) + " of " +
                                         std::to_string(cores) + " cores arrived)");
    if (r == WaitResult::TimedOut) f.aborted.store(true, std::memory_order_release);
    return false;
  }
  return !b.stop.load(std::memory_order_relaxed);
}

}  // namespace sk::host
