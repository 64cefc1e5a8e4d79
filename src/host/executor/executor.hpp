// The host executor: a persistent pool of worker threads ("cores") per device. One launch —
// a super kernel or one unfused kernel — is one task in a ring that every core walks in order;
// each core runs its share of every step, synchronising split-phase between steps.
//
// Where it is: threads, the ring, completing a launch and the wiring of wait policies
// (executor.cpp); who runs core 0 (executor_core0.cpp: a host thread that waits for the device
// runs core 0 itself, unless core 0 has a thread of its own) over its token (core0_token.hpp);
// argument rebinds (executor_args.cpp), the step loops (executor_steps.cpp) and the waits
// between steps (executor_sync.cpp). Types of their own, each with its state: a ring slot
// (task.hpp), a stream's first failure (stream_state.hpp), the hang watch (hang_watch.hpp),
// pinning (core_pinning.hpp); the threads' stacks (core_thread.hpp), a kernel's fork
// (kernel_fork.hpp).
#pragma once
#include <sk.h>

#include <pthread.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/cache_line.hpp"
#include "common/device_spec.hpp"
#include "common/fork_guard.hpp"
#include "host/executor/core0_token.hpp"
#include "host/executor/core_context.hpp"
#include "host/executor/core_pinning.hpp"
#include "host/executor/hang_watch.hpp"
#include "host/executor/program.hpp"
#include "host/executor/stream_state.hpp"
#include "host/executor/wait.hpp"

namespace sk::host {

struct Task;  // a ring slot (task.hpp)

struct ExecutorConfig {
  // 0: one per CPU this process can use (cpu_budget.hpp), counted once at create.
  uint32_t cores = 1;
  uint32_t spin_us = 50;
  // The longest an idle core's spin grows to (idle_spin.hpp): a core woken soon after its spin
  // ran out spins longer next time, up to this. At or below spin_us, or with spin_us 0: a fixed
  // spin of spin_us. With more cores than CPUs the spin stays fixed too: a core spinning
  // there holds a CPU another core needs.
  uint32_t spin_max_us = 1000;
  uint32_t timeout_ms = kDefaultTimeoutMs;
  // Bind core c's thread to the c-th CPU the process may run on, one hardware thread of each
  // physical core before a second (cpu_order.hpp). Without it the scheduler tends to wake a
  // core onto the CPU of the core that woke it, and two cores spinning for each other on one
  // CPU turn every step into a context switch (docs/benchmarks.md, "Where the cores run").
  bool pin = true;
  // Cores per arrival group of the inter-kernel barrier (Program::release_group): 0 picks
  // (one central counter up to kCentralBarrierCores cores, groups of ceil(sqrt(cores)) above);
  // a group of all the cores or more is the central counter.
  uint32_t barrier_group = 0;
  // Each thread's stack in KiB (core_thread.hpp); 0: default_core_stack_kib().
  uint64_t stack_kib = 0;
  // Core 0 on a thread of its own (device key core0=thread), which host threads never stand in
  // for: a host thread waiting for the device only waits and watches, so that a kernel that
  // never returns on core 0 is reported to it (SK_ERR_HANG) instead of holding it. Off
  // (core0=caller): a host thread that waits runs core 0's share itself (executor_core0.cpp).
  bool core0_thread = false;
};
constexpr uint32_t kCentralBarrierCores = 8;

class Executor {
 public:
  static sk_status create(const ExecutorConfig &config, std::unique_ptr<Executor> *out);
  ~Executor();  // waits for queued tasks, then stops the cores

  uint32_t cores() const { return config_.cores; }
  // The arrival group size programs on this executor use; 0: the central counter.
  uint32_t release_group() const { return release_group_; }
  const ExecutorConfig &config() const { return config_; }

  // Queues one run of `program`. An unfused launch's program (one with a pool, or `unpooled`,
  // which then owns it) goes to ProgramPool::recycle once it ran. Thread-safe; blocks only
  // while the ring is full. `repeat` > 1 (sk_launch_repeat, at most kMaxRepeat): the task runs
  // the program up to that many times, each iteration a launch epoch of its own, stopping after
  // the iteration that left *stop_flag (if not null) nonzero (repeat_barrier.hpp).
  sk_status submit(Program *program, std::unique_ptr<Program> unpooled, StreamState *stream, uint32_t repeat = 1,
                   const uint32_t *stop_flag = nullptr);
  // A task takes its iterations' epochs when it is queued, and waits compare epochs wrap-safely
  // (reached): a full ring of such tasks must stay within 2^31 epochs.
  static constexpr uint32_t kMaxRepeat = SK_LAUNCH_REPEAT_MAX;
  // Waits for every task `stream` queued; returns (and clears) its first failure. `call`
  // names the API call in a refusal (forked_away).
  sk_status synchronize(StreamState *stream, const char *call = "sk_stream_synchronize");
  // Waits until every launch of `program` queued so far has ended.
  void wait_program(Program *program);
  // Sets parameter `param` of `program` (an index into Program::arg_params) to `values` (its
  // slots) for the launches queued after the call; those queued before keep the old value, and
  // the call waits for them (executor_args.cpp). Thread-safe against launches and other
  // rebinds; takes no lock.
  void rebind_arg(Program *program, uint32_t param, const uint64_t *values);
  // Waits until every queued task has ended.
  void wait_idle();
  // The process forked since this executor was created: its cores stayed in the parent
  // (common/fork_guard.hpp). Launches fail, waits return at once.
  bool forked_away() const { return fork_generation() != created_in_generation_; }
  // A core never came back from a kernel: no core of the launch at the queue's head made
  // progress (started a block, left a step, completed) for timeout_ms, and some were inside a
  // kernel's code. Like a CUDA sticky error it stays: launches, allocations and module loads
  // fail, waits return at once. The stuck threads may still run at any time, so nothing they
  // can reach may be freed: abandon() detaches them and the owner keeps the executor forever.
  bool lost() const { return watch_.lost(); }
  // SK_ERR_DEVICE for `what` on a lost executor, with the report of the launch that lost it.
  sk_status refuse_lost(const std::string &what) const;
  // Waits for nothing: whether every task `stream` queued has ended (its first failure is then
  // returned and cleared, as by synchronize). Runs no kernel on the calling thread, so a
  // caller polling it is never held by a block that does not return; it looks for a hang.
  sk_status query(StreamState *stream, bool *done);
  // For the owner of a lost executor, before it keeps it forever: stops the threads that can
  // stop, detaches them all, gives the CPU claims back. Nothing of the executor is freed.
  void abandon();
  // A kernel taken on this device puts `bytes` of parameters on the stack of the thread that
  // calls it (CallInterface::stack_bytes): a host thread runs core 0 only while its stack
  // holds the largest with kCallStackReserve to spare (drive_until); the device's own threads
  // have stack_kb, which sk_module_get_kernel checked.
  void note_call_stack(size_t bytes);
  // Idle waits of cores 1..N-1 whose spin ran out before a launch came (the core slept, or was
  // about to): each cost a launch a wake-up. For tests and diagnosis.
  uint64_t idle_spins_run_out() const { return idle_spins_run_out_.load(std::memory_order_relaxed); }
  // Calls for the dedicated core-0 thread so far (rings of its doorbell), and whether it polls
  // instead (a one-core device driven by host threads: Core0Token::polling). For tests.
  uint32_t core0_calls() const { return core0_token_.calls(); }
  bool core0_polls() const { return core0_token_.polling(); }

 private:
  struct Core {
    uint32_t index = 0;
    CoreContext ctx;  // what the device API reaches while this core runs a task
  };
  // cpus: the CPUs the process can use (cpu_budget.hpp); also the cores when requested.cores is 0.
  Executor(const ExecutorConfig &requested, uint32_t cpus);
  // SK_ERR_STATE for `what` in a forked child (forked_away), naming both processes.
  sk_status refuse_in_forked_child(const std::string &what) const;
  // Waits until every launch that took its ticket before this call has been queued.
  void wait_for_submitters();
  // Tells every thread of the executor to stop and wakes those asleep (~Executor, abandon).
  void stop_threads();
  void core_main(uint32_t core);  // cores 1 .. N-1
  // What a core's own thread does: polls the ring and runs each task in turn (cores 1 .. N-1,
  // and core 0 with core0_thread).
  void core_loop(Core &core);
  // Core 0's share, over its token (executor_core0.cpp; the protocol: core0_token.hpp).
  void core0_main();  // core 0 while no host thread holds it; with core0_thread, always
  // Runs task `seq` as `core`; core 0 completes it once the other cores are done with it.
  void process(Core &core, uint64_t seq);
  void run_task(Core &core, Task &task);
  // Called by every thread that waits for a launch without running its blocks (core 0 waiting
  // for the others, host threads waiting for core 0): one look of the hang watch at the launch
  // at the head of the queue; if it declares the executor lost, wakes every waiter.
  void watch_for_stuck_cores();
  void complete_task(Task &task, uint64_t seq);
  // Whether the calling host thread's stack has room for core 0's kernel calls (note_call_stack).
  bool stack_holds_core0() const;
  // A host thread's wait: until done() holds, working as core 0 whenever core 0 is free and
  // its stack holds core 0's calls.
  template <class Done>
  void drive_until(Done done);
  void drive_until_completed(uint64_t seq);                        // until task seq completed
  void drive_until_ended(const Program *program, uint32_t epoch);  // until its launch epoch ended
  void release_core0();  // gives core 0's token back, then calls the dedicated thread if work is left
  // Wakes the dedicated core-0 thread if core 0 is free and has queued work.
  void call_core0() { core0_token_.call(published_); }
  // A host thread that asked for core 0 (Core0Token::ask) stops asking (`leaving`: without
  // taking core 0, what it waited for has happened).
  void stop_asking_for_core0(bool leaving);

  ExecutorConfig config_;
  uint32_t release_group_ = 0;
  const uint32_t created_in_generation_ = fork_generation();
  const int created_in_pid_;  // for the message of a launch in a forked child
  WaitPolicy idle_policy_, core_idle_policy_, task_policy_, completion_policy_;
  WaitPolicy host_wait_policy_;            // a host thread waiting without core 0 (core0_thread; constructor)
  WaitPolicy relay_wait_policy_;           // one whose stack is too small for core 0 (stack_holds_core0)
  std::atomic<size_t> call_stack_max_{0};  // note_call_stack
  static constexpr uint32_t kRing = 256;
  static_assert(uint64_t{kRing} * kMaxRepeat < (uint64_t{1} << 31), "epochs in flight compare wrap-safely");
  static constexpr uint32_t kInLaunchSpin = 20;     // see the constructor
  static constexpr int kIdlePollsBeforeClock = 64;  // polls before an idle core reads the clock (core_main)
  std::unique_ptr<Task[]> ring_;
  // Launch order without a mutex: a launch takes a ticket and queues its task in its turn. A
  // thread launching alone pays one atomic increment and never waits; concurrent launchers
  // wait for their turn (spin, then sleep on turn_). The submitters' own line: the fields above
  // are read by every core at every task.
  alignas(kCacheLine) std::atomic<uint32_t> next_ticket_{0};
  std::atomic<uint32_t> turn_{0};       // the ticket whose launch may be queued now
  std::atomic<uint64_t> submitted_{0};  // written in turn; read by wait_idle
  SleepChannel turn_channel_;
  // What idle cores poll: the queue's head, and whether to stop. Lines the cores only read
  // are written once per launch, so that the launching thread's other lines stay its own.
  alignas(kCacheLine) std::atomic<uint64_t> published_{0};
  std::atomic<uint32_t> published_word_{0};  // low bits of published_, for futex sleeps
  std::atomic<bool> stopping_{false};
  alignas(kCacheLine) std::atomic<uint32_t> cores_done_{0};  // tasks cores 1..N-1 finished, all tasks
  alignas(kCacheLine) std::atomic<uint64_t> completed_{0};
  std::atomic<uint32_t> completed_word_{0};
  // Core 0 (touched only by its token's holder) and its token.
  std::unique_ptr<Core> core0_;
  Core0Token core0_token_;
  // Separate channels, so that a waker pays a futex syscall only when someone sleeps on that
  // kind of word (core 0's token has its own).
  SleepChannel idle_channel_, step_channel_, host_channel_, done_channel_;
  std::chrono::nanoseconds idle_spin_max_{0};  // IdleSpin's max for cores 1..N-1 (constructor)
  std::atomic<uint64_t> idle_spins_run_out_{0};
  std::vector<pthread_t> threads_;  // [0]: core 0's thread (core0_main); started by create()
  CorePinning pinning_;             // cores 1..N-1, set by create(); then touched only by core 0's token holder
  HangWatch watch_;  // the cores' positions and whether the executor is lost (read by every core at every task)
  friend struct CoreAccess;
};

}  // namespace sk::host
