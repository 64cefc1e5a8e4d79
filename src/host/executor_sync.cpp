// Synchronisation inside a task: the split-phase inter-step sync and sk_sync_all's barrier.
// Every wait has a deadline; the first core past it aborts the task with a report naming the
// super kernel, the step, the core and the sync point.
#include <cstdio>

#include "host/core_context.hpp"

namespace sk::host {

constinit thread_local CoreContext *t_core __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

void report_hang(CoreContext &ctx, const char *where, uint32_t have, uint32_t want) {
  TaskFailure &f = *ctx.failure;
  bool expected = false;
  if (f.claimed.compare_exchange_strong(expected, true)) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "super kernel '%s' (launch %u): core %u waited %lld ms in step %u '%s' %s "
                  "(%u of %u cores arrived); launch aborted",
                  ctx.program->name.c_str(), ctx.epoch, ctx.core,
                  static_cast<long long>(ctx.policy->timeout.count()), ctx.step_index,
                  ctx.step->name.c_str(), where, have, want);
    f.report = buf;
    f.aborted.store(true, std::memory_order_release);
  }
}

}  // namespace

void wait_previous_step(CoreContext &ctx) {
  ctx.waited = true;
  if (ctx.step_index == 0) return;
  const uint32_t prev = ctx.step_index - 1;
  const uint32_t want = ctx.program->steps[prev].cores;
  const uint32_t target = ctx.epoch * want;
  std::atomic<uint32_t> &word = ctx.program->arrivals[prev].value;
  WaitResult r = wait_for(word, *ctx.channel, *ctx.policy,
                          [target](uint32_t v) { return reached(v, target); });
  if (r == WaitResult::TimedOut) {
    char where[300];
    std::snprintf(where, sizeof where, "waiting for step %u '%s' to end", prev,
                  ctx.program->steps[prev].name.c_str());
    uint32_t have = word.load() - (ctx.epoch - 1) * want;
    report_hang(ctx, where, have, want);
  }
}

void arrive_step(CoreContext &ctx) {
  // Arriving implies the previous step ended, so that "step i done" covers all before it.
  if (!ctx.waited) wait_previous_step(ctx);
  ctx.arrived = true;
  std::atomic<uint32_t> &word = ctx.program->arrivals[ctx.step_index].value;
  word.fetch_add(1, std::memory_order_release);
  notify(&word, *ctx.channel);
}

void sync_step_cores(CoreContext &ctx) {
  StepBarrier &b = ctx.program->barriers[ctx.step_index];
  const uint32_t want = ctx.step->cores;
  const uint32_t gen = b.generation.load(std::memory_order_acquire);
  if (b.count.fetch_add(1, std::memory_order_acq_rel) + 1 == want) {
    b.count.store(0, std::memory_order_relaxed);
    b.generation.store(gen + 1, std::memory_order_release);
    notify(&b.generation, *ctx.channel);
    return;
  }
  WaitResult r = wait_for(b.generation, *ctx.channel, *ctx.policy,
                          [gen](uint32_t v) { return v != gen; });
  if (r == WaitResult::TimedOut) report_hang(ctx, "at sk_sync_all", b.count.load(), want);
}

}  // namespace sk::host
