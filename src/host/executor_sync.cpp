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

std::atomic<uint32_t> &ended_counter(Program &p, uint32_t step) {
  return p.steps[step].arrive_in_kernel ? p.ended[step].value : p.released[step].value;
}

// Waits until `word` counts every core of step `step` in this launch.
void wait_all_cores_of(CoreContext &ctx, std::atomic<uint32_t> &word, uint32_t step, const char *event) {
  const uint32_t want = ctx.program->steps[step].cores;
  const uint32_t target = ctx.epoch * want;
  WaitResult r = wait_for(word, *ctx.channel, *ctx.policy,
                          [target](uint32_t v) { return reached(v, target); });
  if (r == WaitResult::TimedOut) {
    char where[300];
    std::snprintf(where, sizeof where, "waiting for step %u '%s' to %s", step,
                  ctx.program->steps[step].name.c_str(), event);
    report_hang(ctx, where, word.load() - (ctx.epoch - 1) * want, want);
  }
}

void count_core(CoreContext &ctx, std::atomic<uint32_t> &word) {
  word.fetch_add(1, std::memory_order_release);
  notify(&word, *ctx.channel);
}

}  // namespace

void begin_step(CoreContext &ctx) {
  if (!ctx.step->wait_in_kernel) {
    wait_previous_step(ctx);  // step i-1 released this step only after step i-2 ended
  } else if (ctx.step_index >= 2) {
    wait_all_cores_of(ctx, ended_counter(*ctx.program, ctx.step_index - 2), ctx.step_index - 2, "end");
  }
}

void wait_previous_step(CoreContext &ctx) {
  ctx.waited = true;
  if (ctx.step_index == 0) return;
  const uint32_t prev = ctx.step_index - 1;
  const bool early = ctx.program->steps[prev].arrive_in_kernel;
  wait_all_cores_of(ctx, ctx.program->released[prev].value, prev,
                    early ? "call sk_set_next_task_start" : "end");
}

void release_next_step(CoreContext &ctx) {
  if (!ctx.waited) wait_previous_step(ctx);
  const uint32_t i = ctx.step_index;
  // Releasing step i+1 must also mean step i-1 has ended: i+1 may overlap i, never i-1.
  if (i >= 1 && ctx.program->steps[i - 1].arrive_in_kernel)
    wait_all_cores_of(ctx, ctx.program->ended[i - 1].value, i - 1, "end");
  ctx.arrived = true;
  count_core(ctx, ctx.program->released[i].value);
}

void end_step(CoreContext &ctx) {
  if (!ctx.arrived) release_next_step(ctx);
  if (ctx.step->arrive_in_kernel) count_core(ctx, ctx.program->ended[ctx.step_index].value);
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
