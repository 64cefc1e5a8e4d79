#include "host/executor.hpp"

#include <pthread.h>

#include <cstdio>

#include "core/error.hpp"
#include "host/core_context.hpp"

namespace sk::host {

struct Executor::Task {
  Program *program = nullptr;
  std::unique_ptr<Program> owned;
  StreamState *stream = nullptr;
  uint32_t epoch = 0;
  TaskFailure failure;
};

struct Executor::Core {
  uint32_t index = 0;
  CoreContext ctx;
};

void Program::allocate_sync_state() {
  released = std::make_unique<StepCounter[]>(steps.size());
  ended = std::make_unique<StepCounter[]>(steps.size());
  barriers = std::make_unique<StepBarrier[]>(steps.size());
}

Executor::Executor(const ExecutorConfig &config) : config_(config) {
  idle_policy_.spin = std::chrono::microseconds(config.spin_us);
  task_policy_.spin = std::chrono::microseconds(config.spin_us);
  task_policy_.timeout = std::chrono::milliseconds(config.timeout_ms);
}

sk_status Executor::create(const ExecutorConfig &config, std::unique_ptr<Executor> *out) {
  std::unique_ptr<Executor> ex(new Executor(config));
  ex->ring_ = std::make_unique<Task[]>(kRing);
  try {
    for (uint32_t c = 0; c < config.cores; ++c)
      ex->threads_.emplace_back([e = ex.get(), c] { e->core_main(c); });
  } catch (const std::system_error &err) {
    // The destructor stops the threads already started.
    return fail(SK_ERR_DEVICE, "host device: cannot start core thread %zu of %u: %s",
                ex->threads_.size(), config.cores, err.what());
  }
  for (size_t c = 0; c < ex->threads_.size(); ++c) {
    char name[16];  // the kernel keeps 15 characters of a thread name
    std::snprintf(name, sizeof name, "sk-core-%u", static_cast<unsigned>(c % 10000));
    pthread_setname_np(ex->threads_[c].native_handle(), name);
  }
  *out = std::move(ex);
  return SK_OK;
}

Executor::~Executor() {
  wait_idle();
  stopping_.store(true, std::memory_order_seq_cst);
  published_word_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&published_word_);
  for (std::thread &t : threads_) t.join();
}

sk_status Executor::submit(Program *program, std::unique_ptr<Program> owned, StreamState *stream) {
  std::lock_guard<std::mutex> lock(submit_mutex_);
  const uint64_t seq = submitted_ + 1;
  // Ring full: wait until task seq - kRing has completed and its slot is free.
  if (seq > kRing) wait_completed(seq - kRing);
  Task &t = ring_[seq % kRing];
  t.program = program;
  t.owned = std::move(owned);
  t.stream = stream;
  t.epoch = ++program->next_epoch;
  t.failure.reset();
  stream->last_seq.store(seq, std::memory_order_relaxed);
  submitted_ = seq;
  published_.store(seq, std::memory_order_release);
  published_word_.store(static_cast<uint32_t>(seq), std::memory_order_release);
  notify(&published_word_, idle_channel_);
  return SK_OK;
}

void Executor::wait_completed(uint64_t seq) {
  wait_for(completed_word_, host_channel_, idle_policy_,
           [this, seq](uint32_t) { return completed_.load(std::memory_order_acquire) >= seq; });
}

sk_status Executor::synchronize(StreamState *stream) {
  wait_completed(stream->last_seq.load(std::memory_order_acquire));
  std::lock_guard<std::mutex> lock(stream->error_mutex);
  if (stream->error == SK_OK) return SK_OK;
  sk_status st = stream->error;
  fail(st, "%s", stream->error_message.c_str());
  stream->error = SK_OK;
  stream->error_message.clear();
  return st;
}

void Executor::wait_program(Program *program) {
  uint32_t want;
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    want = program->next_epoch;
  }
  wait_for(completed_word_, host_channel_, idle_policy_, [program, want](uint32_t) {
    return reached(program->completed_epoch.load(std::memory_order_acquire), want);
  });
}

void Executor::wait_idle() {
  uint64_t want;
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    want = submitted_;
  }
  wait_completed(want);
}

void Executor::core_main(uint32_t index) {
  Core core;
  core.index = index;
  t_core = &core.ctx;
  uint64_t next = 1;
  for (;;) {
    wait_for(published_word_, idle_channel_, idle_policy_, [this, next](uint32_t) {
      return published_.load(std::memory_order_acquire) >= next ||
             stopping_.load(std::memory_order_acquire);
    });
    if (published_.load(std::memory_order_acquire) < next) return;  // stopping, nothing queued
    // Launches on the device run in order: this one starts when the previous one has ended
    // on every core (its data may feed this one).
    if (next > 1) wait_completed(next - 1);
    Task &task = ring_[next % kRing];
    run_task(core, task);
    // The core that completes the task last publishes it.
    const uint64_t done = cores_done_.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (done == next * config_.cores) complete_task(task, next);
    ++next;
  }
}

void Executor::run_task(Core &core, Task &task) {
  Program &p = *task.program;
  if (core.index >= p.cores) return;
  CoreContext &ctx = core.ctx;
  ctx.program = &p;
  ctx.core = core.index;
  ctx.epoch = task.epoch;
  ctx.failure = &task.failure;
  ctx.channel = &step_channel_;
  WaitPolicy policy = task_policy_;
  policy.abort = &task.failure.aborted;
  ctx.policy = &policy;
  for (uint32_t i = 0; i < p.steps.size(); ++i) {
    const StepExec &s = p.steps[i];
    if (core.index >= s.cores) continue;
    if (task.failure.aborted.load(std::memory_order_relaxed)) break;
    ctx.step = &s;
    ctx.step_index = i;
    ctx.waited = false;
    ctx.arrived = false;
    begin_step(ctx);
    for (uint32_t b = core.index; b < s.block_dim; b += s.cores) {
      ctx.block_idx = b;
      ctx.last_block = b + s.cores >= s.block_dim;
      ffi_arg ret;
      ffi_call(s.cif, FFI_FN(s.fn), &ret, s.avalues);
    }
    end_step(ctx);
  }
  ctx.program = nullptr;
  ctx.step = nullptr;
}

void Executor::complete_task(Task &task, uint64_t seq) {
  Program *p = task.program;
  if (task.failure.aborted.load(std::memory_order_acquire)) {
    // Every core has left the task: bring the sync state to where a clean launch would have
    // left it, so that the super kernel stays usable.
    for (uint32_t i = 0; i < p->steps.size(); ++i) {
      p->released[i].value.store(task.epoch * p->steps[i].cores, std::memory_order_relaxed);
      p->ended[i].value.store(task.epoch * p->steps[i].cores, std::memory_order_relaxed);
      p->barriers[i].count.store(0, std::memory_order_relaxed);
    }
    std::lock_guard<std::mutex> lock(task.stream->error_mutex);
    if (task.stream->error == SK_OK) {
      task.stream->error = SK_ERR_HANG;
      task.stream->error_message =
          task.failure.report(p->name, task.epoch, static_cast<long long>(config_.timeout_ms));
    }
  }
  p->completed_epoch.store(task.epoch, std::memory_order_release);
  task.owned.reset();
  completed_.store(seq, std::memory_order_release);
  completed_word_.store(static_cast<uint32_t>(seq), std::memory_order_release);
  notify(&completed_word_, host_channel_);
}

}  // namespace sk::host
