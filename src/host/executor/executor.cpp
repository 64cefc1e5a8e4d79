#include "host/executor/executor.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>

#include "common/cache_line.hpp"
#include "common/error.hpp"
#include "host/executor/core_context.hpp"
#include "host/executor/core_thread.hpp"
#include "host/executor/cpu_budget.hpp"
#include "host/executor/cpu_claims.hpp"
#include "host/executor/cpu_order.hpp"
#include "host/executor/idle_spin.hpp"
#include "host/executor/profiler.hpp"
#include "host/executor/program_pool.hpp"
#include "host/executor/repeat_barrier.hpp"
#include "host/executor/task.hpp"

namespace sk::host {

namespace {

// `requested` with its defaults filled in: cores (0: one per usable CPU) and the stack size.
ExecutorConfig resolved(ExecutorConfig requested, uint32_t cpus) {
  if (requested.cores == 0) requested.cores = cpus;
  if (requested.stack_kib == 0) requested.stack_kib = default_core_stack_kib();
  return requested;
}

}  // namespace

Executor::Executor(const ExecutorConfig &requested, uint32_t cpus)
    : config_(resolved(requested, cpus)), created_in_pid_(getpid()), watch_(config_.cores, config_.timeout_ms) {
  const ExecutorConfig &config = config_;
  uint32_t group = config.barrier_group;
  if (group == 0 && config.cores > kCentralBarrierCores)
    while (group * group < config.cores) ++group;  // ceil(sqrt(cores))
  release_group_ = group > 1 && group < config.cores ? group : 0;
  idle_policy_.spin = std::chrono::microseconds(config.spin_us);
  // Inside a launch the core waited for is running and arrives within microseconds, unless it
  // was asleep: if the spin were shorter than a wake-up, two cores taking turns would each
  // fall asleep before the other woke, and every step would pay a wake-up.
  // So waits inside a launch (and for its end) spin kInLaunchSpin times longer than idle ones.
  task_policy_.spin = std::chrono::microseconds(uint64_t{config.spin_us} * kInLaunchSpin);
  task_policy_.timeout = std::chrono::milliseconds(config.timeout_ms);
  // A core that has waited a spin period inside a task may be waiting for core 0, which no
  // thread may be running; one going idle may have run its part of a launch whose core-0 part
  // nobody runs (a one-step launch the host does not wait for would stay unfinished until the
  // host synchronizes). Both call the dedicated thread, which call_core0 rings only for queued
  // work.
  auto call_core0 = [](void *e) { static_cast<Executor *>(e)->call_core0(); };
  task_policy_.before_sleep = completion_policy_.before_sleep = call_core0;
  task_policy_.before_sleep_arg = completion_policy_.before_sleep_arg = this;
  // ... and already after an idle spin's worth: a launch the host left running while it does
  // other work (or sleeps) waits for core 0 from its first step on, and a whole in-launch spin
  // (1 ms by default) would be time its cores sit idle. In synchronous use a host thread holds
  // core 0, and the call returns at its first check.
  task_policy_.early_call = completion_policy_.early_call = idle_policy_.spin;
  completion_policy_.spin = task_policy_.spin;
  // A lost executor's waits return (lost()); its waiters look for a hang a few times per deadline.
  completion_policy_.abort = watch_.lost_flag();
  core_idle_policy_ = idle_policy_;
  core_idle_policy_.before_sleep = call_core0;
  core_idle_policy_.before_sleep_arg = this;
  // An idle core's spin may grow past spin_us (core_main): it still calls core 0 at spin_us.
  core_idle_policy_.early_call = idle_policy_.spin;
  // Whether any of this executor's threads may have to wait for a thread queued on its own CPU:
  // more cores than CPUs, one core on one CPU (the host thread and the dedicated core-0 thread
  // share it), or cores the scheduler places (pin=0). Only then do waits yield their CPU. With
  // every core on a CPU of its own, a yield gives a busy process sharing a core's CPU a whole
  // time slice at each wait (docs/benchmarks.md, "Sharing the machine with a busy process").
  const bool crowded = !config.pin || config.cores > cpus || (config.cores == 1 && cpus < 2);
  for (WaitPolicy *p : {&idle_policy_, &core_idle_policy_, &task_policy_, &completion_policy_}) p->yield = crowded;
  // core0_thread with a core on every CPU: the host thread that waits for a launch sleeps, and
  // its wake-up at the completion finds every CPU held by a core spinning idle, which the
  // scheduler lets run out its time slice first. Idle cores yield, so that it gets one at once
  // (docs/benchmarks.md, "Core 0 on a thread of its own").
  if (config.core0_thread && config.cores >= cpus) core_idle_policy_.yield = true;
  // With more cores than CPUs an idle core's spin stays fixed: spinning holds a CPU another needs.
  if (config.spin_us && config.cores <= cpus) idle_spin_max_ = std::chrono::microseconds(config.spin_max_us);
  // One core: the dedicated thread polls while host threads drive the device, until it sits
  // idle spin_max_us, where an idle core's spin would grow (not where it stays fixed, nor
  // where the thread shares the host's only CPU: each look would preempt the host).
  uint32_t idle_polls = 0;  // never poll: ring at every launch
  if (!crowded && config.spin_us && config.spin_max_us > config.spin_us && !config.core0_thread)
    idle_polls = std::max<uint32_t>(1, config.spin_max_us / static_cast<uint32_t>(Core0Token::kPollPeriod.count()));
  core0_token_.configure(idle_polls, crowded);
  // core0_thread: a host thread only waits, and does not spin: its spin would hold a CPU that a
  // core, core 0's unpinned thread included, may need for the rest of its time slice; asleep,
  // it leaves the CPU to the cores and gets one back when woken (the idle cores yield, above;
  // docs/benchmarks.md, "Core 0 on a thread of its own").
  host_wait_policy_ = completion_policy_;
  host_wait_policy_.spin = std::chrono::nanoseconds(0);
  host_wait_policy_.before_sleep = nullptr;    // core 0's thread needs no call
  host_wait_policy_.timeout = watch_.slice();  // then it looks for a stuck core (drive_until)
  // A host thread leaving core 0 to the dedicated thread calls it before it sleeps, as one
  // waiting for the other cores does, and looks for a stuck core as often.
  relay_wait_policy_ = completion_policy_;
  relay_wait_policy_.timeout = watch_.slice();
}

sk_status Executor::create(const ExecutorConfig &config, std::unique_ptr<Executor> *out) {
  const std::vector<int> allowed = allowed_cpus();
  // Counted with the cgroup's CPU quota: cores past it crowd the CPUs it pays for.
  std::unique_ptr<Executor> ex(new Executor(config, usable_cpu_count(allowed)));
  const uint32_t cores = ex->cores();  // config.cores, or the usable CPUs for 0
  ex->ring_ = std::make_unique<Task[]>(kRing);
  std::vector<int> order, claimed;  // each core's CPU (core 0's is not pinned: CorePinning::pin)
  if (config.pin && !allowed.empty()) {
    order = cpu_pinning_order(allowed);
    claimed = CpuClaims::process().claim(ex.get(), order, cores);
  }
  ex->pinning_ = CorePinning(cores, std::move(order));
  ex->core0_ = std::make_unique<Core>();
  ex->core0_->ctx.progress = &ex->watch_.progress(0);
  // core0_thread: core 0's thread holds the token for good (host threads never take it).
  if (config.core0_thread) ex->core0_token_.hold_for_good();
  const uint64_t stack_kib = ex->config_.stack_kib;
  for (uint32_t c = 0; c < cores; ++c) {
    pthread_t thread;
    Executor *e = ex.get();
    const int err = start_core_thread(
        stack_kib, c == 0 ? std::function<void()>([e] { e->core0_main(); }) : [e, c] { e->core_main(c); }, &thread);
    if (err != 0)  // the destructor stops the threads already started
      return fail(SK_ERR_DEVICE, "host device: cannot start core thread %u of %u (stack_kb=%llu): %s", c, cores,
                  static_cast<unsigned long long>(stack_kib), std::strerror(err));
    ex->threads_.push_back(thread);
  }
  for (size_t c = 0; c < ex->threads_.size(); ++c) {
    char name[16];  // the kernel keeps 15 characters of a thread name
    std::snprintf(name, sizeof name, "sk-core-%u", static_cast<unsigned>(c % 10000));
    pthread_setname_np(ex->threads_[c], name);
    // Pinned here, not by the thread itself: the first launch may come before a new thread
    // has run at all, and core 0's thread must then see where every core will be.
    if (c > 0 && !claimed.empty()) ex->pinning_.pin(static_cast<uint32_t>(c), ex->threads_[c], claimed[c]);
  }
  if (!config.core0_thread) ex->pinning_.keep_dedicated_core0_off_cores(ex->threads_[0]);
  *out = std::move(ex);
  return SK_OK;
}

Executor::~Executor() {
  if (forked_away()) {
    // The threads are the parent's: joining them would wait forever (and the claims went
    // with the fork).
    return;
  }
  if (lost()) {  // its owner must keep it (HostDevice's destructor): stuck threads use it
    abandon();
    return;
  }
  CpuClaims::process().release(this);
  wait_idle();
  stop_threads();
  for (pthread_t t : threads_) pthread_join(t, nullptr);
}

void Executor::stop_threads() {
  stopping_.store(true, std::memory_order_seq_cst);
  // A seq_cst write to each word a thread may sleep on, then a wake of all its sleepers: one
  // about to sleep finds the word moved or sees stopping_, one asleep wakes and sees it.
  published_word_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&published_word_);
  core0_token_.wake_to_stop();
}

void Executor::abandon() {
  CpuClaims::process().release(this);
  stop_threads();
  // The cores that can stop do so on their own; those in a kernel may come back at any time.
  for (pthread_t t : threads_) pthread_detach(t);
  threads_.clear();
}

sk_status Executor::refuse_lost(const std::string &what) const {
  return fail(SK_ERR_DEVICE, "%s: the host device is lost (%s); close it and open a new one", what.c_str(),
              watch_.report().c_str());
}

sk_status Executor::refuse_in_forked_child(const std::string &what) const {
  return fail(SK_ERR_STATE,
              "%s: this host device was opened in process %d, which has forked since; this is process %d, "
              "where the device's core threads do not exist. Open a new device in this process (the old "
              "device and its objects can still be closed and destroyed here)",
              what.c_str(), created_in_pid_, static_cast<int>(getpid()));
}

sk_status Executor::submit(Program *program, std::unique_ptr<Program> unpooled, StreamState *stream, uint32_t repeat,
                           const uint32_t *stop_flag) {
  if (forked_away()) {
    const std::string what = "launch of '" + program->name + "'";
    if (program->pool || unpooled) ProgramPool::recycle(program, std::move(unpooled));
    return refuse_in_forked_child(what);
  }
  if (lost()) {
    const std::string what = "launch of '" + program->name + "'";
    if (program->pool || unpooled) ProgramPool::recycle(program, std::move(unpooled));
    return refuse_lost(what);
  }
  // A ticket, not a mutex: one locked instruction instead of two (docs/benchmarks.md, "The
  // launch path").
  const uint32_t ticket = next_ticket_.fetch_add(1, std::memory_order_relaxed);
  if (turn_.load(std::memory_order_acquire) != ticket)
    wait_for(turn_, turn_channel_, idle_policy_, [ticket](uint32_t turn) { return turn == ticket; });
  const uint64_t seq = submitted_.load(std::memory_order_relaxed) + 1;
  // Ring full: wait until task seq - kRing has completed and its slot is free, and go on until
  // every task queued has (this thread runs core 0 meanwhile). Stopping at the first free slot
  // would make a host that launches faster than the cores run take core 0 and give it back at
  // every launch, calling the dedicated thread for the rest each time (docs/benchmarks.md,
  // "The launch path").
  if (seq > kRing && completed_.load(std::memory_order_acquire) < seq - kRing) drive_until_completed(seq - 1);
  if (lost()) {  // while waiting for the ring: its slot stays taken
    turn_.store(ticket + 1, std::memory_order_release);
    notify(&turn_, turn_channel_);
    const std::string what = "launch of '" + program->name + "'";
    if (program->pool || unpooled) ProgramPool::recycle(program, std::move(unpooled));
    return refuse_lost(what);
  }
  Task &t = ring_[seq % kRing];
  t.program = program;
  t.unpooled = std::move(unpooled);
  t.stream = stream;
  t.epoch = program->next_epoch.load(std::memory_order_relaxed) + 1;
  t.repeat = repeat;
  if (repeat > 1) t.between_iterations.reset(stop_flag);
  t.args = *program->args.load(std::memory_order_acquire);  // in turn: Executor::rebind_arg
  t.failure.reset();
  stream->last_seq.store(seq, std::memory_order_relaxed);
  // What wait_program reads may now name this launch (all its iterations); before the task is
  // published, after which it may complete at once and its program be recycled for another
  // launch, or freed (an unfused launch's that its pool declined).
  program->next_epoch.store(t.last_epoch(), std::memory_order_release);
  t.seq.store(seq, std::memory_order_release);
  published_.store(seq, std::memory_order_release);
  published_word_.store(static_cast<uint32_t>(seq), std::memory_order_release);
  // Queued: wait_idle may now name this launch.
  submitted_.store(seq, std::memory_order_release);
  turn_.store(ticket + 1, std::memory_order_release);
  notify(&published_word_, idle_channel_);
  // The fence notify just paid orders the turn's store before the look at its sleepers, as
  // an RMW would: notify_after_rmw's check is all that is left to do.
  notify_after_rmw(&turn_, turn_channel_);
  // With one core nobody else would call core 0 for a launch the host does not wait for,
  // unless host threads have been running this device's launches (core0_main polls then).
  // After notify's fence: the publication comes before this look (core0_token.hpp, rule 4).
  if (config_.cores == 1 && !config_.core0_thread && !core0_token_.polling(std::memory_order_seq_cst)) call_core0();
  return SK_OK;
}

sk_status Executor::synchronize(StreamState *stream, const char *call) {
  if (forked_away()) return refuse_in_forked_child(call);
  const uint64_t want = stream->last_seq.load(std::memory_order_acquire);
  drive_until_completed(want);
  std::string message;
  const sk_status st = stream->take_error(&message);
  if (st == SK_OK) return lost() ? refuse_lost(call) : SK_OK;
  return fail(st, "%s", message.c_str());
}

sk_status Executor::query(StreamState *stream, bool *done) {
  if (forked_away()) return refuse_in_forked_child("sk_stream_query");
  const uint64_t want = stream->last_seq.load(std::memory_order_acquire);
  if (completed_.load(std::memory_order_acquire) < want && !lost()) {
    call_core0();  // nobody may be running core 0: this thread does not
    watch_for_stuck_cores();
    if (!lost()) {
      *done = false;
      return SK_OK;
    }
  }
  if (sk_status st = synchronize(stream, "sk_stream_query"); st != SK_OK) return st;  // waits for nothing now
  *done = true;
  return SK_OK;
}

void Executor::wait_program(Program *program) {
  if (forked_away()) return;  // nothing of it runs in this process
  const uint32_t want = program->next_epoch.load(std::memory_order_acquire);
  drive_until_ended(program, want);
}

void Executor::wait_idle() {
  if (forked_away()) return;
  drive_until_completed(submitted_.load(std::memory_order_acquire));
}

void Executor::core_main(uint32_t index) {
  Core core;
  core.index = index;
  core.ctx.progress = &watch_.progress(index);
  core_loop(core);
}

void Executor::core_loop(Core &core) {
  t_core = &core.ctx;
  IdleSpin spin(idle_policy_.spin, idle_spin_max_);
  WaitPolicy policy = core_idle_policy_;
  uint64_t next = 1;
  for (;;) {
    const Task &slot = ring_[next % kRing];
    auto queued = [this, &slot, next](uint32_t) {
      return slot.seq.load(std::memory_order_acquire) >= next || stopping_.load(std::memory_order_acquire);
    };
    // Only a core that has to wait a while reads the clock: one whose launch comes within a
    // few polls (launches back to back) would pay two clock reads, one of them between seeing
    // the launch and starting it (docs/benchmarks.md, "Fused against the floor").
    bool soon = queued(0);
    for (int i = 0; i < kIdlePollsBeforeClock && !soon; ++i) {
      cpu_relax();
      soon = queued(0);
    }
    if (!soon) {
      policy.spin = spin.window();
      const auto start = std::chrono::steady_clock::now();
      wait_for(published_word_, idle_channel_, policy, queued);
      if (spin.observe(std::chrono::steady_clock::now() - start) && core.index != 0)
        idle_spins_run_out_.fetch_add(1, std::memory_order_relaxed);
    }
    if (slot.seq.load(std::memory_order_acquire) < next) return;  // stopping, nothing queued
    // Core 0's own thread (core0_thread) is placed as a host thread running core 0 would be:
    // where the scheduler puts it, with the core pinned there moved away.
    if (core.index == 0) pinning_.keep_off_core0_cpu();
    process(core, next++);
  }
}

void Executor::process(Core &core, uint64_t seq) {
  // Launches on the device run in order: this one starts when the previous one has ended on
  // every core (its data may feed this one).
  Task &task = ring_[seq % kRing];
  // The slot first: wait_for would load completed_word_, whose line the completer then has
  // to take back from this core at every launch.
  if (seq > 1 && task.previous_completed.load(std::memory_order_acquire) < seq - 1)
    wait_for(completed_word_, host_channel_, completion_policy_,
             [&task, seq](uint32_t) { return task.previous_completed.load(std::memory_order_acquire) >= seq - 1; });
  if (lost()) return;  // nothing runs or completes any more
  run_task(core, task);
  // Core 0 completes every task, once the other cores are done with it. Its thread is the
  // one that waits for the task in the common synchronous use, so the completion (and the
  // next slot's previous_completed) is written where it is read next: no line comes back
  // from another core before the host returns or launches again.
  if (core.index != 0) {
    add_and_notify(cores_done_, 1, done_channel_);
    return;
  }
  // A launch of a program that ends at its last release, on every core of the executor:
  // complete it at that count, one line transfer sooner than the reports (which still come,
  // and count for the next launch that waits for them). Not a repeated one: its cores read
  // the task's barrier after their last release, so the slot is theirs until they report.
  const Program &p = *task.program;
  if (p.ends_at_last_release && p.cores == config_.cores && task.repeat == 1) {
    WaitPolicy policy = completion_policy_;
    policy.abort = &task.failure.aborted;
    policy.timeout = watch_.slice();  // then the wait below, which watches
    const uint32_t target = task.epoch * p.releases_per_launch;
    if (wait_for(p.released.value, step_channel_, policy, [target](uint32_t v) { return reached(v, target); }) ==
        WaitResult::Ok)
      return complete_task(task, seq);
  }
  // Otherwise (and after an abort) every core reports that it has left the launch.
  const auto want = static_cast<uint32_t>(seq * (config_.cores - 1));
  WaitPolicy policy = completion_policy_;
  policy.timeout = watch_.slice();
  while (wait_for(cores_done_, done_channel_, policy, [want](uint32_t v) { return reached(v, want); }) ==
         WaitResult::TimedOut)
    watch_for_stuck_cores();
  if (lost()) return;
  complete_task(task, seq);
}

void Executor::run_task(Core &core, Task &task) {
  Program &p = *task.program;
  if (core.index >= p.cores) return;
  CoreContext &ctx = core.ctx;
  ctx.program = &p;
  ctx.arg_slots = task.args.slots;
  ctx.arg_pointers = task.args.pointers;
  ctx.core = core.index;
  ctx.epoch = task.epoch;
  ctx.failure = &task.failure;
  ctx.fork_generation = created_in_generation_;
  ctx.channel = &step_channel_;
  WaitPolicy policy = task_policy_;
  policy.abort = &task.failure.aborted;
  ctx.policy = &policy;
  ctx.progress->task.store(task.seq.load(std::memory_order_relaxed), std::memory_order_relaxed);
  // Read before the steps: after this core's last release core 0 may complete a task of one
  // iteration and a launch may take the slot (Program::ends_at_last_release).
  const uint32_t repeat = task.repeat;
  run_core_steps(p, ctx, core.index, task.failure);
  // sk_launch_repeat: the next iteration is the next launch epoch, whose counters start where
  // this one's ended; the barrier is what orders it after every core's end of this one.
  for (uint32_t done = 1; done < repeat; ++done) {
    if (task.failure.aborted.load(std::memory_order_acquire) ||
        !pass_repeat_barrier(ctx, task.between_iterations, p.cores, done, repeat))
      break;
    ctx.epoch = task.epoch + done;
    run_core_steps(p, ctx, core.index, task.failure);
  }
  ctx.program = nullptr;
  ctx.step = nullptr;
  ctx.slot_segment = 0xffffffffu;  // the next task may be another program
  ctx.progress->task.store(0, std::memory_order_relaxed);
}

void Executor::watch_for_stuck_cores() {
  const bool declared = watch_.look([this] {
    HangWatch::Head head;
    const uint64_t seq = completed_.load(std::memory_order_acquire) + 1;
    if (seq > published_.load(std::memory_order_acquire)) return head;  // nothing queued
    head.task = &ring_[seq % kRing];
    head.seq = seq;
    head.cores_done = cores_done_.load(std::memory_order_acquire);
    return head;
  });
  if (!declared) return;
  CpuClaims::process().release(this);  // it runs nothing more: a new device may have its CPUs
  // Wake every waiter: each sees lost() and returns.
  futex_wake_all(&completed_word_);
  futex_wake_all(&cores_done_);
  core0_token_.wake_host_waiters();
  futex_wake_all(&turn_);
}

void Executor::complete_task(Task &task, uint64_t seq) {
  Program *p = task.program;
  const uint32_t ran = task.iterations_run();
  const uint32_t last = task.last_epoch();
  const bool aborted = task.failure.aborted.load(std::memory_order_acquire);
  if (aborted || ran < task.repeat) {
    // Every core has left the task: bring the sync state to where a clean launch of all its
    // iterations would have left it, so that the super kernel stays usable.
    p->released.value.store(last * p->releases_per_launch, std::memory_order_relaxed);
    p->released.ended.store(last * p->ends_per_launch, std::memory_order_relaxed);
    for (uint32_t i = 0; i < p->steps.size(); ++i) {
      if (p->ended) p->ended[i].value.store(last * p->steps[i].cores, std::memory_order_relaxed);
      if (p->per_step_release) p->step_released[i].value.store(last * p->steps[i].cores, std::memory_order_relaxed);
      p->barriers[i].count.store(0, std::memory_order_relaxed);
    }
    for (uint32_t g = 0; g < p->release_groups; ++g)
      p->group_arrived[g].value.store(last * p->group_per_launch[g], std::memory_order_relaxed);
  }
  if (aborted)
    task.stream->keep_first_error(task.failure.status(), [&] {
      return task.failure.report(p->name, task.epoch + ran - 1, static_cast<long long>(config_.timeout_ms));
    });
  // Flag counters count within a launch (host/device_api/cross_core_flags.hpp).
  for (const auto &f : p->flags) f->reset();
  // A repeated task's records are those of its last iteration.
  if (p->profiler) p->profiler->complete(task.epoch + ran - 1, aborted);
  // Read before completed_epoch says the launch is over: from then on a super kernel's program
  // may be freed (sk_superkernel_destroy waits for that store, then deletes it). A pooled
  // program is not freed there: its launch's hold on its kernel keeps the pool until recycle
  // is done.
  const bool recycle = p->pool || task.unpooled;
  p->completed_epoch.store(last, std::memory_order_release);
  // The next task may start on the other cores now, before the recycle: the next task's
  // program is never this one (a recycled program was taken by this task's own launch).
  ring_[(seq + 1) % kRing].previous_completed.store(seq, std::memory_order_release);
  if (recycle) ProgramPool::recycle(p, std::move(task.unpooled));
  completed_.store(seq, std::memory_order_release);
  completed_word_.store(static_cast<uint32_t>(seq), std::memory_order_release);
  notify(&completed_word_, host_channel_);
}

}  // namespace sk::host
