// Synchronisation inside a task: the split-phase inter-step sync and sk_sync_all's barrier.
// Every wait has a deadline; the first core past it aborts the task, and the report names the
// super kernel and, for every core left waiting, the step and the sync point.
#include <algorithm>
#include <cstdio>

#include "host/core_context.hpp"

namespace sk::host {

constinit thread_local CoreContext *t_core __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// Records where this core waited when its wait ended without the condition (deadline passed,
// or another core's did); the first deadline aborts the launch.
void record_stuck_wait(CoreContext &ctx, WaitResult r, const char *where, uint32_t have, uint32_t want) {
  if (r == WaitResult::Ok) return;
  char line[512];
  std::snprintf(line, sizeof line, "is in step %u '%s', %s (%u of %u cores arrived)", ctx.step_index,
                ctx.step->name.c_str(), where, have, want);
  TaskFailure &f = *ctx.failure;
  {
    // A core's first stuck wait is where it was held; later ones are the launch unwinding.
    std::lock_guard<std::mutex> lock(f.mutex);
    bool known = false;
    for (const auto &w : f.waits) known |= w.first == ctx.core;
    if (!known) f.waits.emplace_back(ctx.core, line);
  }
  if (r == WaitResult::TimedOut) f.aborted.store(true, std::memory_order_release);
}

// Waits until `word` reaches base + (cores of step `step`): every core of the step did `event`.
void wait_all_cores_of(CoreContext &ctx, std::atomic<uint32_t> &word, uint32_t base, uint32_t step,
                       const char *event) {
  const uint32_t want = ctx.program->steps[step].cores;
  const uint32_t target = base + want;
  WaitResult r = wait_for(word, *ctx.channel, *ctx.policy,
                          [target](uint32_t v) { return reached(v, target); });
  if (r != WaitResult::Ok) {
    char where[300];
    std::snprintf(where, sizeof where, "waiting for step %u '%s' to %s", step,
                  ctx.program->steps[step].name.c_str(), event);
    const uint32_t have = word.load() - base;
    record_stuck_wait(ctx, r, where, have > want ? want : have, want);
  }
}

// Every core of step `step` released the next step (in this launch).
void wait_released(CoreContext &ctx, uint32_t step, const char *event) {
  Program &p = *ctx.program;
  wait_all_cores_of(ctx, p.released.value, (ctx.epoch - 1) * p.releases_per_launch + p.released_before[step],
                    step, event);
}

// Every core of step `step` ended (in this launch).
void wait_ended(CoreContext &ctx, uint32_t step) {
  Program &p = *ctx.program;
  if (p.steps[step].arrive_in_kernel)
    wait_all_cores_of(ctx, p.ended[step].value, (ctx.epoch - 1) * p.steps[step].cores, step, "end");
  else
    wait_released(ctx, step, "end");  // its release is its end
}

void count_core(CoreContext &ctx, std::atomic<uint32_t> &word) {
  word.fetch_add(1, std::memory_order_seq_cst);
  notify_after_rmw(&word, *ctx.channel);
}

}  // namespace

void begin_step(CoreContext &ctx) {
  if (!ctx.step->wait_in_kernel) {
    wait_previous_step(ctx);  // step i-1 released this step only after step i-2 ended
  } else if (ctx.step_index >= 2) {
    wait_ended(ctx, ctx.step_index - 2);
  }
}

void wait_previous_step(CoreContext &ctx) {
  ctx.waited = true;
  if (ctx.step_index == 0) return;
  const uint32_t prev = ctx.step_index - 1;
  const bool early = ctx.program->steps[prev].arrive_in_kernel;
  wait_released(ctx, prev, early ? "call sk_set_next_task_start" : "end");
}

void release_next_step(CoreContext &ctx) {
  if (!ctx.waited) wait_previous_step(ctx);
  const uint32_t i = ctx.step_index;
  // Releasing step i+1 must also mean step i-1 has ended: i+1 may overlap i, never i-1.
  if (i >= 1 && ctx.program->steps[i - 1].arrive_in_kernel) wait_ended(ctx, i - 1);
  ctx.arrived = true;
  count_core(ctx, ctx.program->released.value);
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
  record_stuck_wait(ctx, r, "at sk_sync_all", b.count.load(), want);
}

std::string TaskFailure::report(const std::string &superkernel, uint32_t epoch, long long timeout_ms) {
  std::lock_guard<std::mutex> lock(mutex);
  std::sort(waits.begin(), waits.end());
  char head[400];
  std::snprintf(head, sizeof head, "super kernel '%s' (launch %u): no progress for %lld ms; launch aborted.",
                superkernel.c_str(), epoch, timeout_ms);
  std::string out = head;
  for (size_t i = 0; i < waits.size(); ++i)
    out += (i ? "; core " : " core ") + std::to_string(waits[i].first) + " " + waits[i].second;
  return out;
}

}  // namespace sk::host
