// Synchronisation inside a task: the split-phase inter-step sync and sk_sync_all's barrier.
// Every wait has a deadline; the first core past it aborts the task, and the report names the
// super kernel and, for every core left waiting, the step and the sync point.
#include <algorithm>
#include <cstdio>

#include "host/executor/core_context.hpp"
#include "host/executor/profile_wait.hpp"

namespace sk::host {

constinit thread_local CoreContext *t_core __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

void record_stuck_wait(CoreContext &ctx, WaitResult r, const char *where, uint32_t have, uint32_t want) {
  if (r == WaitResult::Ok) return;
  char line[512];
  std::snprintf(line, sizeof line, "%s (%u of %u cores arrived)", where, have, want);
  record_stuck(ctx, r, line);
}

// Waits until `word` reaches base + (cores of step `step`): every core of the step did `event`.
void wait_all_cores_of(CoreContext &ctx, std::atomic<uint32_t> &word, uint32_t base, uint32_t step,
                       const char *event) {
  const uint32_t want = ctx.program->steps[step].cores;
  const uint32_t target = base + want;
  ProfileWait timed(ctx);  // charged to the running kernel (profiling=1)
  WaitResult r = wait_in_task(ctx, word, [target](uint32_t v) { return reached(v, target); });
  if (r != WaitResult::Ok) {
    char where[300];
    std::snprintf(where, sizeof where, "waiting for step %u '%s' to %s", step, ctx.program->steps[step].name.c_str(),
                  event);
    const uint32_t have = word.load() - base;
    record_stuck_wait(ctx, r, where, have > want ? want : have, want);
  }
}

// The counter step `step`'s releases go to, and its value before this launch's releases of it.
// kPlain (Program::plain): always the shared counter, without looking.
template <bool kPlain>
std::atomic<uint32_t> &released_word(Program &p, uint32_t step) {
  if (!kPlain && p.per_step_release) return p.step_released[step].value;
  return p.released.value;
}
template <bool kPlain>
uint32_t released_base(const CoreContext &ctx, uint32_t step) {
  const Program &p = *ctx.program;
  if (!kPlain && p.per_step_release) return (ctx.epoch - 1) * p.steps[step].cores;
  return (ctx.epoch - 1) * p.releases_per_launch + p.released_before[step];
}

// Every core of step `step` released the next step (in this launch).
template <bool kPlain>
void wait_released(CoreContext &ctx, uint32_t step, const char *event) {
  wait_all_cores_of(ctx, released_word<kPlain>(*ctx.program, step), released_base<kPlain>(ctx, step), step, event);
}

// The counter step `step`'s ends go to (steps that release early), and its value before this
// launch's ends of it (Program::released's comment).
template <bool kPlain>
std::atomic<uint32_t> &ended_word(Program &p, uint32_t step) {
  if constexpr (kPlain) return p.released.ended;
  return p.ended[step].value;
}
template <bool kPlain>
uint32_t ended_base(const CoreContext &ctx, uint32_t step) {
  const Program &p = *ctx.program;
  if constexpr (kPlain) return (ctx.epoch - 1) * p.ends_per_launch + p.ended_before[step];
  return (ctx.epoch - 1) * p.steps[step].cores;
}

// Every core of step `step` ended (in this launch).
template <bool kPlain>
void wait_ended(CoreContext &ctx, uint32_t step) {
  Program &p = *ctx.program;
  if (p.steps[step].arrive_in_kernel)
    wait_all_cores_of(ctx, ended_word<kPlain>(p, step), ended_base<kPlain>(ctx, step), step, "end");
  else
    wait_released<kPlain>(ctx, step, "end");  // its release is its end
}

// The step this one follows: the one before it in a plain program, else StepExec::pred (the
// one before it in its stream, with stream fusion). -1: none.
template <bool kPlain>
int32_t previous(const CoreContext &ctx) {
  if constexpr (kPlain) return static_cast<int32_t>(ctx.step_index) - 1;
  return ctx.step->pred;
}

void count_core(CoreContext &ctx, std::atomic<uint32_t> &word) { add_and_notify(word, 1, *ctx.channel); }

// This core released its step, by the combining tree (Program::release_group): it counts on
// its group's counter, and the group's last core counts the group on `released`. Each core's
// increment releases what it wrote; the last one acquires them all before it releases the
// group, so a core that sees `released` reach its target sees every core's writes.
void arrive_in_group(CoreContext &ctx) {
  Program &p = *ctx.program;
  const uint32_t g = ctx.core / p.release_group, step = ctx.step_index;
  const uint32_t n = p.group_cores(step, g);
  const uint32_t last = (ctx.epoch - 1) * p.group_per_launch[g] + p.group_before[step * p.release_groups + g] + n;
  if (p.group_arrived[g].value.fetch_add(1, std::memory_order_acq_rel) + 1 != last) return;
  add_and_notify(p.released.value, n, *ctx.channel);
}

}  // namespace

void record_stuck(CoreContext &ctx, WaitResult r, const std::string &where) {
  if (r == WaitResult::Ok) return;
  std::string line;
  // In a mixed layout, say which core of which group it is.
  const SegmentExec &seg = ctx.program->segments[ctx.step->segment];
  if (seg.layout.mixed()) {
    line.append("(").append(ctx.slot.type ? "cube core" : "vector core ");
    if (!ctx.slot.type) line.append(std::to_string(ctx.slot.sub));
    line.append(" of group ").append(std::to_string(ctx.slot.group)).append(") ");
  }
  line += "is in step " + std::to_string(ctx.step_index) + " '" + ctx.step->name + "', " + where;
  TaskFailure &f = *ctx.failure;
  {
    // A core's first stuck wait is where it was held; later ones are the launch unwinding.
    std::lock_guard<std::mutex> lock(f.mutex);
    bool known = false;
    for (const auto &w : f.waits) known |= w.first == ctx.core;
    if (!known) f.waits.emplace_back(ctx.core, std::move(line));
  }
  if (r == WaitResult::TimedOut) f.aborted.store(true, std::memory_order_release);
}

void abort_invalid_call(CoreContext &ctx, const std::string &what) {
  ctx.failure->invalid_call.store(true, std::memory_order_release);
  record_stuck(ctx, WaitResult::TimedOut, what);
}

namespace {

template <bool kPlain>
void wait_previous(CoreContext &ctx) {
  ctx.waited = true;
  const int32_t prev = previous<kPlain>(ctx);
  if (prev < 0 || ctx.step->block_local) return;  // block-local: this core ran what it reads
  const bool early = ctx.program->steps[prev].arrive_in_kernel;
  wait_released<kPlain>(ctx, static_cast<uint32_t>(prev), early ? "call sk_set_next_task_start" : "end");
}

template <bool kPlain>
void release_next(CoreContext &ctx) {
  if (!ctx.waited) wait_previous<kPlain>(ctx);
  // Releasing the next step must also mean the previous one has ended: a step may overlap its
  // neighbours, never a step two away.
  const int32_t prev = previous<kPlain>(ctx);
  if (prev >= 0 && ctx.program->steps[prev].arrive_in_kernel) wait_ended<kPlain>(ctx, static_cast<uint32_t>(prev));
  ctx.arrived = true;
  if (!ctx.step->arrives) return;  // nothing waits for it
  if (kPlain && ctx.program->release_group) return arrive_in_group(ctx);
  count_core(ctx, released_word<kPlain>(*ctx.program, ctx.step_index));
}

}  // namespace

template <bool kPlain>
void begin_step(CoreContext &ctx) {
  const StepExec &s = *ctx.step;
  if constexpr (!kPlain) {
    if (s.flags) {
      std::fill(std::begin(ctx.flag_waits), std::end(ctx.flag_waits), 0u);
      std::fill(std::begin(ctx.flag_all_waits), std::end(ctx.flag_all_waits), 0u);
    }
    // Events (and segment boundaries with stream fusion): those steps must have ended.
    for (uint32_t d = 0; d < s.after_count; ++d) wait_ended<false>(ctx, s.after[d]);
  }
  if (!s.wait_in_kernel) {
    wait_previous<kPlain>(ctx);  // the previous step released this one only after its own previous ended
  } else if (const int32_t prev = previous<kPlain>(ctx); prev >= 0 && ctx.program->steps[prev].pred >= 0) {
    wait_ended<kPlain>(ctx, static_cast<uint32_t>(ctx.program->steps[prev].pred));
  }
}

template <bool kPlain>
void end_step(CoreContext &ctx) {
  // Read before the release: after a core's last release core 0 may complete the launch, and
  // the program may be freed (Program::ends_at_last_release).
  const bool arrived_in_kernel = ctx.step->arrive_in_kernel;
  if (!ctx.arrived) release_next<kPlain>(ctx);
  if (arrived_in_kernel) count_core(ctx, ended_word<kPlain>(*ctx.program, ctx.step_index));
}

template void begin_step<true>(CoreContext &);
template void begin_step<false>(CoreContext &);
template void end_step<true>(CoreContext &);
template void end_step<false>(CoreContext &);

void wait_previous_step(CoreContext &ctx) {
  if (ctx.program->plain)
    wait_previous<true>(ctx);
  else
    wait_previous<false>(ctx);
}

void release_next_step(CoreContext &ctx) {
  if (ctx.program->plain)
    release_next<true>(ctx);
  else
    release_next<false>(ctx);
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
  ProfileWait timed(ctx);
  WaitResult r = wait_in_task(ctx, b.generation, [gen](uint32_t v) { return v != gen; });
  record_stuck_wait(ctx, r, "at sk_sync_all", b.count.load(), want);
}

std::string TaskFailure::report(const std::string &superkernel, uint32_t epoch, long long timeout_ms) {
  std::lock_guard<std::mutex> lock(mutex);
  std::sort(waits.begin(), waits.end());
  char head[400];
  if (kernel_threw.load(std::memory_order_acquire))
    return "super kernel '" + superkernel + "' (launch " + std::to_string(epoch) + "): " + thrown +
           "; launch aborted.";
  if (invalid_call.load(std::memory_order_acquire))
    std::snprintf(head, sizeof head,
                  "super kernel '%s' (launch %u): a kernel made an invalid device-API call; "
                  "launch aborted.",
                  superkernel.c_str(), epoch);
  else
    std::snprintf(head, sizeof head, "super kernel '%s' (launch %u): no progress for %lld ms; launch aborted.",
                  superkernel.c_str(), epoch, timeout_ms);
  std::string out = head;
  for (size_t i = 0; i < waits.size(); ++i)
    out += (i ? "; core " : " core ") + std::to_string(waits[i].first) + " " + waits[i].second;
  return out;
}

}  // namespace sk::host
