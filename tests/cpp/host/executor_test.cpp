// The host executor on its own: programs built by hand from C++ functions (no linker), so that
// block mapping, multiplexing, split-phase sync, sk_sync_all and hang reports are checked
// directly against what the device API tells each block.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "host/device_api/device_api.hpp"
#include "host/executor/cpu_order.hpp"
#include "host/executor/executor.hpp"
#include "host/executor/kernel_call.hpp"
#include "host_program_support.hpp"
#include "scheduler_tries.hpp"

namespace sk::host {

std::set<int> cpus_in(const cpu_set_t &set) {
  std::set<int> out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) out.insert(cpu);
  return out;
}

// Executor's friend: where the executor bound its cores, and core 0's hand-over. The pinning
// state belongs to core 0's holder: read it only between launches (after a synchronize).
struct CoreAccess {
  static std::vector<int> core_cpus(Executor &ex) { return ex.pinning_.core_cpus(); }
  // A host thread asking for core 0 and leaving without it, as drive_until does.
  static void ask_for_core0(Executor &ex) { ex.core0_token_.ask(); }
  static void stop_asking_for_core0(Executor &ex) { ex.stop_asking_for_core0(true); }
  // The CPUs core `c`'s thread may run on, as the kernel has them.
  static std::set<int> allowed_cpus(Executor &ex, uint32_t c) {
    cpu_set_t set;
    if (pthread_getaffinity_np(ex.threads_[c], sizeof set, &set) != 0) return {};
    return cpus_in(set);
  }
  // The same for the dedicated core-0 thread.
  static std::set<int> dedicated_core0_cpus(Executor &ex) {
    cpu_set_t set;
    if (pthread_getaffinity_np(ex.threads_[0], sizeof set, &set) != 0) return {};
    return cpus_in(set);
  }
};

namespace {

using u32fn = uint32_t (*)();
using voidfn = void (*)();
u32fn block_idx() { return reinterpret_cast<u32fn>(resolve_device_api("sk_block_idx")); }
u32fn block_num() { return reinterpret_cast<u32fn>(resolve_device_api("sk_block_num")); }
voidfn api(const char *name) { return reinterpret_cast<voidfn>(resolve_device_api(name)); }

// A test program: steps calling `fn(void *state)` with the same state pointer
// (host_program_support.hpp), with the task-overlap flags set per step.
struct TestProgram : sk::test::HostProgram {
  void *state = nullptr;
  using HostProgram::HostProgram;
  void add(const char *name, void (*fn)(void *), uint32_t block_dim, bool wait_in = false, bool arrive_in = false) {
    StepExec &s = HostProgram::add(name, fn, block_dim);
    s.wait_in_kernel = wait_in;
    s.arrive_in_kernel = arrive_in;
  }
  void finish() { HostProgram::finish(state); }
};

std::unique_ptr<Executor> make_executor(uint32_t cores, uint32_t timeout_ms = 10000) {
  return sk::test::make_host_executor(cores, timeout_ms);
}

// ---- every block runs exactly once, with its own index and count ---------------------------

struct Seen {
  std::mutex m;
  std::vector<std::pair<uint32_t, uint32_t>> blocks;  // (idx, num)
};
void record_block(void *p) {
  auto *s = static_cast<Seen *>(p);
  std::lock_guard<std::mutex> l(s->m);
  s->blocks.emplace_back(block_idx()(), block_num()());
}

TEST(Executor, EveryBlockRunsOnceWithItsOwnIndexIncludingMultiplexed) {
  for (uint32_t cores : {1u, 2u, 3u, 4u}) {
    for (uint32_t block_dim : {1u, 2u, 3u, 5u, 17u}) {
      auto ex = make_executor(cores);
      Seen seen;
      TestProgram tp("blocks", cores);
      tp.state = &seen;
      tp.add("record", record_block, block_dim);
      tp.finish();
      StreamState stream;
      ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
      ASSERT_EQ(ex->synchronize(&stream), SK_OK);
      std::multiset<uint32_t> idx;
      for (auto [i, n] : seen.blocks) {
        EXPECT_EQ(n, block_dim);
        idx.insert(i);
      }
      ASSERT_EQ(idx.size(), block_dim) << "cores " << cores << " block_dim " << block_dim;
      uint32_t expect = 0;
      for (uint32_t i : idx) EXPECT_EQ(i, expect++);
    }
  }
}

// ---- steps are ordered: step i+1 sees everything step i wrote ------------------------------

struct Chain {
  static constexpr int kSteps = 64;
  std::atomic<int> done[kSteps];
  std::atomic<int> violations{0};
  uint32_t dims[kSteps];
  std::atomic<int> step_counter{0};
};
thread_local int t_step = 0;
Chain *g_chain = nullptr;

template <int I>
void chain_step(void *p) {
  auto *c = static_cast<Chain *>(p);
  if (I > 0 && c->done[I - 1].load() != static_cast<int>(c->dims[I - 1])) c->violations++;
  c->done[I].fetch_add(1);
}

// Adds chain steps First, First + 1, ... (one per index of the sequence).
template <int First = 0, int... Is>
void add_chain(TestProgram &tp, Chain &c, std::integer_sequence<int, Is...>) {
  (tp.add("chain", chain_step<First + Is>, c.dims[First + Is]), ...);
}

TEST(Executor, StepsRunInOrderAcrossManyLaunches) {
  auto ex = make_executor(3);
  Chain c;
  for (int i = 0; i < Chain::kSteps; ++i) c.dims[i] = 1 + (i * 7) % 6;  // 1..6, some > cores
  TestProgram tp("chain", 3);
  tp.state = &c;
  add_chain(tp, c, std::make_integer_sequence<int, Chain::kSteps>());
  tp.finish();
  StreamState stream;
  for (int launch = 0; launch < 200; ++launch) {
    for (auto &d : c.done) d.store(0);
    ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
    ASSERT_EQ(ex->synchronize(&stream), SK_OK);
    for (int i = 0; i < Chain::kSteps; ++i) ASSERT_EQ(c.done[i].load(), (int)c.dims[i]);
  }
  EXPECT_EQ(c.violations.load(), 0);
}

// The combining-tree arrival (Program::release_group): 5 cores in groups of 2 (the last group
// has one core), steps of 1..6 blocks, so that in some steps a group has no core at all.
TEST(Executor, TreeArrivalKeepsStepsInOrder) {
  auto ex = make_executor(5);
  Chain c;
  for (int i = 0; i < Chain::kSteps; ++i) c.dims[i] = 1 + (i * 7) % 6;
  TestProgram tp("chain-tree", 5);
  tp.state = &c;
  add_chain(tp, c, std::make_integer_sequence<int, Chain::kSteps>());
  tp.program.release_group = 2;
  tp.finish();
  ASSERT_EQ(tp.program.release_groups, 3u) << "the tree is off";
  uint32_t per_launch = 0;
  for (uint32_t n : tp.program.group_per_launch) per_launch += n;
  EXPECT_EQ(per_launch, tp.program.releases_per_launch);
  StreamState stream;
  for (int launch = 0; launch < 100; ++launch) {
    for (auto &d : c.done) d.store(0);
    ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
    ASSERT_EQ(ex->synchronize(&stream), SK_OK);
    for (int i = 0; i < Chain::kSteps; ++i) ASSERT_EQ(c.done[i].load(), (int)c.dims[i]) << "launch " << launch;
  }
  EXPECT_EQ(c.violations.load(), 0);
}

// ---- sk_sync_all is a barrier over the step's own cores ------------------------------------

struct SyncState {
  std::atomic<int> phase1{0};
  std::atomic<int> bad{0};
  uint32_t expect = 0;
};
void sync_kernel(void *p) {
  auto *s = static_cast<SyncState *>(p);
  for (int round = 1; round <= 3; ++round) {
    s->phase1.fetch_add(1);
    api("sk_sync_all")();
    if (s->phase1.load() < static_cast<int>(s->expect) * round) s->bad++;
    api("sk_sync_all")();
  }
}

TEST(Executor, SyncAllWaitsForTheStepsOwnCoresOnly) {
  // 4 cores, the kernel runs on 2: the barrier must not wait for the 2 idle cores.
  auto ex = make_executor(4, 2000);
  SyncState s;
  s.expect = 2;
  TestProgram tp("sync", 4);
  tp.state = &s;
  tp.add("wide", record_block, 4);
  tp.add("sync2", sync_kernel, 2);
  Seen seen;
  tp.finish();
  // The first step records into `seen` through its own argument slot.
  tp.program.allocate_args(2);
  for (ArgBlock &b : tp.program.arg_blocks) {
    b.slots[0] = reinterpret_cast<uint64_t>(&s);
    b.slots[1] = reinterpret_cast<uint64_t>(&seen);
  }
  tp.program.steps[0].first_slot = tp.program.steps[0].first_param = 1;
  StreamState stream;
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
    ASSERT_EQ(ex->synchronize(&stream), SK_OK) << sk::last_error();
    s.phase1.store(0);
  }
  EXPECT_EQ(s.bad.load(), 0);
}

// ---- task overlap: after set_next_task_start the next step runs at the same time ----------

struct Overlap {
  std::atomic<int> first_released{0};
  std::atomic<int> second_started{0};
  std::atomic<int> overlapped{0};
};
void overlap_first(void *p) {
  auto *o = static_cast<Overlap *>(p);
  api("sk_set_next_task_start")();
  // Handshake: the next step must start while this one is still running.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (o->second_started.load() == 0 && std::chrono::steady_clock::now() < until) {
  }
  if (o->second_started.load()) o->overlapped++;
}
void overlap_second(void *p) {
  auto *o = static_cast<Overlap *>(p);
  o->second_started.store(1);
  api("sk_wait_pre_task_end")();
}

TEST(Executor, TaskOverlapRunsTheNextStepBeforeThePreviousEnds) {
  auto ex = make_executor(2);
  Overlap o;
  TestProgram tp("overlap", 2);
  tp.state = &o;
  tp.add("first", overlap_first, 1, false, true);
  tp.add("second", overlap_second, 2, true, false);  // block 1 runs on the idle core
  tp.finish();
  StreamState stream;
  ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  EXPECT_EQ(o.overlapped.load(), 1);
}

TEST(Executor, WithoutOverlapTheNextStepWaits) {
  auto ex = make_executor(2);
  Overlap o;
  TestProgram tp("no-overlap", 2);
  tp.state = &o;
  // Same kernels, but the plan says "no overlap" (early-start=0): the handshake must time out.
  tp.add(
      "first",
      +[](void *p) {
        auto *o = static_cast<Overlap *>(p);
        auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
        while (o->second_started.load() == 0 && std::chrono::steady_clock::now() < until) {
        }
        if (o->second_started.load()) o->overlapped++;
      },
      1);
  tp.add("second", overlap_second, 2);
  tp.finish();
  StreamState stream;
  ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  EXPECT_EQ(o.overlapped.load(), 0);
  EXPECT_EQ(o.second_started.load(), 1);
}

// ---- a barrier that can never complete is reported, and the executor stays usable ---------

void half_sync(void *) {
  if (block_idx()() == 0) api("sk_sync_all")();
}

TEST(Executor, HangIsReportedWithStepCoreAndSyncPoint) {
  auto ex = make_executor(2, 100);
  TestProgram tp("hangs", 2);
  tp.add("half_sync", half_sync, 2);
  tp.finish();
  StreamState stream;
  ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
  EXPECT_EQ(ex->synchronize(&stream), SK_ERR_HANG);
  std::string msg = sk::last_error();
  EXPECT_NE(msg.find("'hangs'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'half_sync'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("core 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sk_sync_all"), std::string::npos) << msg;
  // The failure is reported once; the next good launch succeeds on the same executor.
  Seen seen;
  TestProgram good("good", 2);
  good.state = &seen;
  good.add("record", record_block, 2);
  good.finish();
  ASSERT_EQ(ex->submit(&good.program, nullptr, &stream), SK_OK);
  EXPECT_EQ(ex->synchronize(&stream), SK_OK);
  EXPECT_EQ(seen.blocks.size(), 2u);
}

// ---- many launches from several threads on several streams ---------------------------------

void count_block(void *p) { static_cast<std::atomic<int> *>(p)->fetch_add(1); }

TEST(Executor, ConcurrentSubmittersKeepEveryLaunch) {
  auto ex = make_executor(2);
  constexpr int kThreads = 4, kLaunches = 500;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::atomic<int> counter{0};
      TestProgram tp("concurrent", 2);
      tp.state = &counter;
      tp.add("a", count_block, 3);
      tp.add("b", count_block, 1 + t);
      tp.finish();
      StreamState stream;
      for (int i = 0; i < kLaunches; ++i)
        if (ex->submit(&tp.program, nullptr, &stream) != SK_OK) failures++;
      if (ex->synchronize(&stream) != SK_OK) failures++;
      if (counter.load() != kLaunches * (3 + 1 + t)) failures++;
    });
  }
  for (auto &th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace sk::host

namespace sk::host {
namespace {

void slow_block0(void *) {
  if (block_idx()() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
}
void noop(void *) {}

// Block 0 runs 400 ms: past the 250 ms deadline of core 1's wait for it, and back before a
// launch that made no progress for a deadline after that wait ended (about 500 ms) would lose
// the device (docs/semantics.md, "Deadlines and hangs").
TEST(Executor, InterStepWaitPastItsDeadlineNamesTheAwaitedStep) {
  auto ex = make_executor(2, 250);
  TestProgram tp("slowpoke", 2);
  tp.add("slow", slow_block0, 1);
  tp.add("after", noop, 2);
  tp.finish();
  StreamState stream;
  ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
  EXPECT_EQ(ex->synchronize(&stream), SK_ERR_HANG);
  std::string msg = sk::last_error();
  EXPECT_NE(msg.find("core 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("step 1 'after'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("waiting for step 0 'slow' to end"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(0 of 1 cores arrived)"), std::string::npos) << msg;
  // The program itself is usable again: its sync state was repaired when the launch ended.
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  tp.program.steps[0].fn = reinterpret_cast<void *>(&noop);
  ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
  EXPECT_EQ(ex->synchronize(&stream), SK_OK) << sk::last_error();
}

}  // namespace
}  // namespace sk::host

namespace sk::host {
namespace {

// Overlap reaches the neighbouring step only: a step's early part never overlaps the step two
// before it, and a step's tail after sk_set_next_task_start never overlaps the step two after.
struct Reach {
  std::atomic<int> a_done{0};
  std::atomic<int> a_tail_done{0};
  std::atomic<int> violations{0};
};
void slow_then_mark(void *p) {
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  static_cast<Reach *>(p)->a_done.store(1);
}
void early_check_then_wait(void *p) {
  auto *r = static_cast<Reach *>(p);
  if (r->a_done.load() != 1) r->violations++;  // before sk_wait_pre_task_end: step i-2 must be over
  api("sk_wait_pre_task_end")();
}
void release_then_slow_tail(void *p) {
  api("sk_set_next_task_start")();
  if (block_idx()() != 1) return;  // the slow tail is on core 1; b runs on core 0 only
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  static_cast<Reach *>(p)->a_tail_done.store(1);
}
void check_tail_done(void *p) {
  auto *r = static_cast<Reach *>(p);
  if (r->a_tail_done.load() != 1) r->violations++;
}

// Both reach tests run with one central release counter and with the combining tree (groups
// of 2 on 3 cores), whose group leaders count on the line the early steps' ends share.
constexpr uint32_t kReachGroups[] = {0, 2};

TEST(Executor, EarlyPartOfAStepNeverOverlapsTheStepTwoBefore) {
  for (uint32_t group : kReachGroups) {
    auto ex = make_executor(3);
    Reach r;
    TestProgram tp("reach-back", 3);
    tp.state = &r;
    tp.add("a", slow_then_mark, 1);
    tp.add("b", noop, 1);
    tp.add("c", early_check_then_wait, 3, /*wait_in=*/true, false);  // cores 1, 2 are idle until c
    tp.program.release_group = group;
    tp.finish();
    ASSERT_EQ(tp.program.release_groups > 1, group != 0) << "barrier_group " << group;
    StreamState stream;
    for (int i = 0; i < 5; ++i) {
      r.a_done.store(0);
      ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
      ASSERT_EQ(ex->synchronize(&stream), SK_OK) << sk::last_error();
    }
    EXPECT_EQ(r.violations.load(), 0) << "barrier_group " << group;
  }
}

void release_at_once(void *) { api("sk_set_next_task_start")(); }

// Also behind other steps that release early: a plain program counts every such step's ends
// on one counter (Program::released), where step a's come after theirs.
TEST(Executor, TailAfterReleaseNeverOverlapsTheStepTwoAfter) {
  for (uint32_t group : kReachGroups) {
    for (int early_before : {0, 1, 3}) {
      auto ex = make_executor(3);
      Reach r;
      TestProgram tp("reach-forward", 3);
      tp.state = &r;
      for (int i = 0; i < early_before; ++i) tp.add("early", release_at_once, 2 + i % 2, false, /*arrive_in=*/true);
      tp.add("a", release_then_slow_tail, 2, false, /*arrive_in=*/true);
      tp.add("b", noop, 1);
      tp.add("c", check_tail_done, 3);
      tp.program.release_group = group;
      tp.finish();
      ASSERT_TRUE(tp.program.plain);
      ASSERT_EQ(tp.program.release_groups > 1, group != 0) << "barrier_group " << group;
      StreamState stream;
      for (int i = 0; i < 5; ++i) {
        r.a_tail_done.store(0);
        ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
        ASSERT_EQ(ex->synchronize(&stream), SK_OK) << sk::last_error();
      }
      EXPECT_EQ(r.violations.load(), 0) << early_before << " steps releasing early before a, barrier_group "
                                        << group;
    }
  }
}

}  // namespace
}  // namespace sk::host

namespace sk::host {
namespace {

// Launches the host never waits for still run: the other cores call the dedicated core-0
// thread (or, with one core, the launch does).
void set_flag(void *p) {
  if (block_idx()() == 0) static_cast<std::atomic<int> *>(p)->fetch_add(1);
}

// Polls (never synchronizes) until `count` reaches `want`, for 5 s at most; true if it did.
bool polled_to(const std::atomic<int> &count, int want) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (count.load() < want && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  return count.load() == want;
}

TEST(Executor, LaunchesRunWithoutAHostThreadWaiting) {
  for (uint32_t cores : {1u, 2u, 3u}) {
    auto ex = make_executor(cores);
    std::atomic<int> flag{0};
    TestProgram tp("unwatched", cores);
    tp.state = &flag;
    tp.add("first", set_flag, cores);
    tp.add("second", set_flag, cores);
    tp.finish();
    StreamState stream;
    for (int i = 0; i < 3; ++i) ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
    // Poll without synchronizing: core 0 must be run by the executor's own thread.
    EXPECT_TRUE(polled_to(flag, 6)) << "cores " << cores << ": " << flag.load() << " of 6";
    EXPECT_EQ(ex->synchronize(&stream), SK_OK);
  }
}

// How soon a launch nobody waits for runs core 0's part: a core waiting for core 0 calls the
// dedicated thread after spin_us (500 here), not after its whole in-launch spin (20 x 500 us).
// The best try (scheduler_tries.hpp) must come in under 8 ms, which waiting out the whole spin
// cannot. (Not much less: a core that yields its CPU while it spins may get it back only after
// another thread's time slice, about 4 ms, when something else runs there.)
// `warm_gap_ms`: launches that far apart first, so that core 1's idle spin has grown
// (idle_spin.hpp) to twice that: an idle core too must call core 0 at spin_us.
constexpr double kUnwatchedBoundMs = 8.0;
double best_unwatched_ms(uint32_t steps, int warm_gap_ms) {
  ExecutorConfig cfg;
  cfg.cores = 2;
  cfg.spin_us = 500;
  cfg.spin_max_us = 50000;
  std::unique_ptr<Executor> ex;
  EXPECT_EQ(Executor::create(cfg, &ex), SK_OK);
  std::atomic<int> flag{0};
  TestProgram tp("unwatched-soon", 2);
  tp.state = &flag;
  for (uint32_t i = 0; i < steps; ++i) tp.add("step", set_flag, 2);
  tp.finish();
  StreamState stream;
  return sk::test::fewest_until(kUnwatchedBoundMs, [&] {
    for (int i = 0; warm_gap_ms && i < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(warm_gap_ms));
      EXPECT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
      EXPECT_EQ(ex->synchronize(&stream), SK_OK);
    }
    const int want = flag.load() + static_cast<int>(steps);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
    EXPECT_TRUE(polled_to(flag, want));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(ex->synchronize(&stream), SK_OK);
    return ms;
  });
}

TEST(Executor, ACoreWaitingForCore0CallsItAfterAnIdleSpin) {
  // Two steps: core 1 waits inside the launch for core 0's release of the first.
  EXPECT_LE(best_unwatched_ms(2, 0), kUnwatchedBoundMs);
}

TEST(Executor, AnIdleCoreWhoseSpinGrewStillCallsCore0AfterSpinUs) {
  // One step: core 1 runs its block and goes idle, with a spin grown to about 12 ms.
  EXPECT_LE(best_unwatched_ms(1, 6), kUnwatchedBoundMs);
}

// The same at every pace: a ring that finds an earlier one still waking the dedicated thread
// skips the futex wake, so a lost wake-up would leave a burst unrun. Bursts of launches with
// gaps shorter than, about and longer than a wake-up, from two threads at once; each burst is
// polled for, never synchronized.
TEST(Executor, UnwatchedLaunchesRunAtEveryPace) {
  for (uint32_t cores : {1u, 2u}) {
    auto ex = make_executor(cores);
    std::atomic<int> lost{0};
    auto launcher = [&](uint32_t seed) {
      std::atomic<int> flag{0};
      TestProgram tp("paced", cores);
      tp.state = &flag;
      tp.add("only", set_flag, cores);
      tp.finish();
      StreamState stream;
      std::mt19937 rng(seed);
      int expected = 0;
      for (int burst = 0; burst < 150; ++burst) {
        const int launches = 1 + static_cast<int>(rng() % 8);
        const uint32_t gap_us = std::array<uint32_t, 4>{0, 2, 30, 300}[rng() % 4];
        for (int i = 0; i < launches; ++i) {
          if (ex->submit(&tp.program, nullptr, &stream) != SK_OK) lost++;
          if (gap_us) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
        }
        expected += launches;
        if (!polled_to(flag, expected)) {
          lost++;
          break;
        }
      }
      if (ex->synchronize(&stream) != SK_OK) lost++;
    };
    std::thread other(launcher, 7 + cores);
    launcher(3 + cores);
    other.join();
    EXPECT_EQ(lost.load(), 0) << "cores " << cores;
  }
}

// A host thread waiting for a launch that the dedicated thread runs asks for core 0, and the
// dedicated thread hands core 0 over between tasks, with launches left. If the host then
// leaves without taking core 0 (what it waited for happened meanwhile), the launches left
// must still run, though every core may be asleep by then. The test plays the host thread,
// stopped between asking and leaving (as a preempted one is).
TEST(Executor, LaunchesLeftWhenAHostStopsAskingForCore0StillRun) {
  auto ex = make_executor(2);
  std::atomic<int> first_done{0}, second_done{0};
  TestProgram first("first", 2), second("second", 2);
  first.state = &first_done;
  first.add("first", set_flag, 2);
  first.finish();
  second.state = &second_done;
  second.add("second", set_flag, 2);
  second.finish();
  StreamState stream;
  for (int round = 1; round <= 3; ++round) {
    CoreAccess::ask_for_core0(*ex);
    ASSERT_EQ(ex->submit(&first.program, nullptr, &stream), SK_OK);
    ASSERT_EQ(ex->submit(&second.program, nullptr, &stream), SK_OK);
    // Core 1 calls the dedicated thread after its spin; it leaves core 0 to the asking host.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_EQ(first_done.load(), round - 1) << "core 0 ran although a host thread asked for it";
    CoreAccess::stop_asking_for_core0(*ex);
    ASSERT_TRUE(polled_to(second_done, round)) << "round " << round;
    ASSERT_EQ(first_done.load(), round);
  }
  EXPECT_EQ(ex->synchronize(&stream), SK_OK);
}

// ---- one core: the dedicated thread stands back while host threads drive ------------------

std::set<int> allowed_cpus_of_this_thread();  // the CPUs this thread may run on (below)

// A one-core executor (spin_max_us long enough to make its looks count) and a
// one-step program that counts its runs.
struct OneCore {
  std::atomic<int> runs{0};
  TestProgram tp{"one-core", 1};
  StreamState stream;
  std::unique_ptr<Executor> ex;  // last: destroyed first, running what is queued while tp lives
  explicit OneCore(uint32_t spin_max_us = 20000) {
    ExecutorConfig cfg;
    cfg.cores = 1;
    cfg.spin_max_us = spin_max_us;
    EXPECT_EQ(Executor::create(cfg, &ex), SK_OK);
    tp.state = &runs;
    tp.add("only", set_flag, 1);
    tp.finish();
  }
  int launched = 0;
  // `n` launches, each synchronized at once; returns the calls for core 0 they made.
  uint32_t synchronous(int n) {
    const uint32_t before = ex->core0_calls();
    launched += n;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
      EXPECT_EQ(ex->synchronize(&stream), SK_OK);
    }
    return ex->core0_calls() - before;
  }
  // Synchronous launches until the dedicated thread polls: until it wakes to a call and finds
  // the host ran the launch (it may instead find the launch waiting, take core 0, and run it).
  bool polling() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!ex->core0_polls() && std::chrono::steady_clock::now() < until) {
      synchronous(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return ex->core0_polls();
  }
  // One launch left running: true once it ran (polled for, never synchronized).
  bool unwatched() {
    ++launched;
    const int want = runs.load() + 1;
    EXPECT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
    return polled_to(runs, want);
  }
};

// With one core every launch called the dedicated thread, in case nobody would wait for it;
// in a synchronous loop it woke to find the host had run the launch, or took core 0 from it.
// Once it has woken to find that, launches stop calling it (a few calls allowed: a host
// thread held off its CPU between launch and synchronize for a whole look leaves the launch
// to the dedicated thread, and calls resume until it finds the host back).
TEST(Executor, AOneCoreDeviceDrivenByTheHostStopsCallingCore0) {
  if (allowed_cpus_of_this_thread().size() < 2) GTEST_SKIP() << "one CPU: the thread would share the host's";
#if defined(SK_TEST_EMULATED)  // under qemu a host thread often takes longer than a look
  constexpr uint32_t kMostCalls = UINT32_MAX;
#else
  constexpr uint32_t kMostCalls = 3;
#endif
  OneCore one;
  one.synchronous(20);
  const uint32_t calls = sk::test::fewest_until(kMostCalls, [&] {
    EXPECT_TRUE(one.polling());
    return one.synchronous(500);
  });
  EXPECT_EQ(one.runs.load(), one.launched);
  EXPECT_LE(calls, kMostCalls);
}

// ... and a launch then left running still runs: the thread looks for one standing every
// Core0Token::kPollPeriod. After an idle time past spin_max_us it stops looking, and launches call it again.
TEST(Executor, AOneCoreLaunchLeftRunningAfterSynchronousUseStillRuns) {
  if (allowed_cpus_of_this_thread().size() < 2) GTEST_SKIP() << "one CPU: the thread would share the host's";
  OneCore one(20000);
  for (int round = 0; round < 10; ++round) {
    // A thread held off its CPU past spin_max_us meanwhile (qemu, a loaded machine) has
    // stopped looking, and the launch calls it: such a round is tried again.
    const bool uncalled = sk::test::some_try([&] {
      one.synchronous(50);
      EXPECT_TRUE(one.polling());
      const uint32_t before = one.ex->core0_calls();
      EXPECT_TRUE(one.unwatched()) << "round " << round;
      return one.ex->core0_calls() == before;
    });
#if !defined(SK_TEST_EMULATED)
    EXPECT_TRUE(uncalled) << "round " << round << ": every try's launch called core 0";
#else
    (void)uncalled;
#endif
  }
  one.synchronous(50);
  ASSERT_TRUE(one.polling());
  // Idle past spin_max_us (20 ms): the thread stops polling.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (one.ex->core0_polls() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_FALSE(one.ex->core0_polls());
  const uint32_t before = one.ex->core0_calls();
  ASSERT_TRUE(one.unwatched());
  EXPECT_GE(one.ex->core0_calls() - before, 1u) << "a launch after a long idle time did not call core 0";
  EXPECT_EQ(one.ex->synchronize(&one.stream), SK_OK);
}

// A host launching without waiting, a little slower than the dedicated thread runs each
// launch: rung at every launch, the thread would run each one on a wake-up of its own and fall
// asleep again (microseconds per launch, for as long as the loop goes on). Rung twice within a
// look's period, it polls instead, and the launches stop calling it.
TEST(Executor, AOneCoreLaunchLoopTheDedicatedThreadKeepsUpWithStopsCallingIt) {
  if (allowed_cpus_of_this_thread().size() < 2) GTEST_SKIP() << "one CPU: the thread would share the host's";
  constexpr int kLaunches = 300;
#if defined(SK_TEST_EMULATED)  // under qemu a launch can take longer than the thread's look
  constexpr uint32_t kMostCalls = UINT32_MAX;
#else
  // About two calls per look's period (6 ms of launches, 12 calls): the one that wakes the
  // thread and the one that finds it rung again; each period's standing launches are then taken
  // by a look. A thread that other processes keep off its CPU is called more (66 beside three
  // busy loops on two CPUs); without the polls nearly every launch calls it (228 to 298).
  constexpr uint32_t kMostCalls = kLaunches / 2u;
#endif
  // The fewest calls of the tries: while the thread is slow to wake (a loaded machine), every
  // launch meanwhile calls it; without the polls, every launch of every try does.
  const uint32_t fewest = sk::test::fewest_until(kMostCalls, [&] {
    OneCore one;
    const uint32_t before = one.ex->core0_calls();
    for (int i = 0; i < kLaunches; ++i) {
      EXPECT_EQ(one.ex->submit(&one.tp.program, nullptr, &one.stream), SK_OK);
      ++one.launched;
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    const uint32_t calls = one.ex->core0_calls() - before;
    EXPECT_EQ(one.ex->synchronize(&one.stream), SK_OK);
    EXPECT_EQ(one.runs.load(), one.launched);
    return calls;
  });
  EXPECT_LE(fewest, kMostCalls) << "the launches kept calling the dedicated thread";
}

// Where the looks would not pay: a fixed spin (spin_max_us at or below spin_us) keeps the
// call at every launch, as before.
TEST(Executor, AOneCoreDeviceWithAFixedSpinCallsCore0AtEveryLaunch) {
  OneCore one(0);
  one.synchronous(20);
  [[maybe_unused]] const uint32_t calls = one.synchronous(100);
#if !defined(SK_TEST_EMULATED)  // under qemu the thread may hold core 0 through many launches
  EXPECT_GE(calls, 50u);
#endif
  EXPECT_EQ(one.runs.load(), one.launched);
  ASSERT_TRUE(one.unwatched());
}

// Host threads that wait (synchronize, asking for core 0) and threads that only poll, at
// once, with programs of one to three steps: no launch may be left unrun. Each thread checks
// its own count of blocks run, by polling (5 s at most) or after a synchronize.
TEST(Executor, WaitersAndPollersTogetherLeaveNoLaunchUnrun) {
  for (uint32_t cores : {1u, 2u, 3u}) {
    auto ex = make_executor(cores);
    std::atomic<int> lost{0};
    auto host_thread = [&](uint32_t seed) {
      std::mt19937 rng(seed);
      std::atomic<int> blocks{0};
      std::vector<std::unique_ptr<TestProgram>> programs;
      std::vector<int> blocks_per_launch;
      for (int p = 0; p < 3; ++p) {
        programs.push_back(std::make_unique<TestProgram>("mixed", cores));
        programs.back()->state = &blocks;
        int per_launch = 0;
        for (int step = 0; step <= p; ++step) {
          const uint32_t block_dim = 1 + rng() % (cores + 2);
          programs.back()->add("step", count_block, block_dim);
          per_launch += static_cast<int>(block_dim);
        }
        programs.back()->finish();
        blocks_per_launch.push_back(per_launch);
      }
      StreamState stream;
      int expected = 0;
      for (int round = 0; round < 120 && lost.load() == 0; ++round) {
        for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n) {
          const size_t p = rng() % programs.size();
          if (ex->submit(&programs[p]->program, nullptr, &stream) != SK_OK) lost++;
          expected += blocks_per_launch[p];
        }
        switch (rng() % 3) {
          case 0:
            if (ex->synchronize(&stream) != SK_OK || blocks.load() != expected) lost++;
            break;
          case 1:
            if (!polled_to(blocks, expected)) lost++;
            break;
          default: std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
        }
      }
      if (ex->synchronize(&stream) != SK_OK || blocks.load() != expected) lost++;
    };
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < 3; ++t) threads.emplace_back(host_thread, 11 * cores + t);
    for (auto &th : threads) th.join();
    EXPECT_EQ(lost.load(), 0) << "cores " << cores;
  }
}

// The device's choice (device key barrier_group): central up to 8 cores, ceil(sqrt(cores))
// per group above; a group of one or of every core is the central counter.
TEST(Executor, BarrierGroupDefaultsToCentralUpTo8Cores) {
  struct Case {
    uint32_t cores, asked, used;
  } cases[] = {{2, 0, 0},  {8, 0, 0}, {9, 0, 3}, {16, 0, 4}, {17, 0, 5},
               {64, 0, 8}, {4, 2, 2}, {4, 4, 0}, {4, 9, 0},  {16, 2, 2}};
  for (const Case &c : cases) {
    ExecutorConfig cfg;
    cfg.cores = c.cores;
    cfg.barrier_group = c.asked;
    cfg.pin = false;
    std::unique_ptr<Executor> ex;
    ASSERT_EQ(Executor::create(cfg, &ex), SK_OK);
    EXPECT_EQ(ex->release_group(), c.used) << c.cores << " cores, barrier_group=" << c.asked;
  }
}

// An aborted launch leaves the tree's group counters where a clean launch would: the same
// program runs again, in order.
std::atomic<bool> g_hang_once{false};
void hang_once(void *p) {
  if (block_idx()() == 0 && g_hang_once.exchange(false)) api("sk_sync_all")();  // the others never come
  chain_step<0>(p);
}

TEST(Executor, TreeArrivalRecoversFromAnAbortedLaunch) {
  auto ex = make_executor(4, 100);
  Chain c;
  for (int i = 0; i < Chain::kSteps; ++i) c.dims[i] = 1 + (i * 5) % 4;
  c.dims[0] = 4;  // the hanging step: its sk_sync_all waits for 4 blocks
  TestProgram tp("tree-abort", 4);
  tp.state = &c;
  tp.add("hang_once", hang_once, c.dims[0]);
  add_chain<1>(tp, c, std::make_integer_sequence<int, Chain::kSteps - 1>());
  tp.program.release_group = 2;
  tp.finish();
  ASSERT_EQ(tp.program.release_groups, 2u);
  StreamState stream;
  g_hang_once = true;
  ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
  EXPECT_EQ(ex->synchronize(&stream), SK_ERR_HANG);
  for (int launch = 0; launch < 20; ++launch) {
    for (auto &d : c.done) d.store(0);
    c.violations = 0;
    ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
    ASSERT_EQ(ex->synchronize(&stream), SK_OK) << sk::last_error();
    for (int i = 0; i < Chain::kSteps; ++i) ASSERT_EQ(c.done[i].load(), (int)c.dims[i]) << "launch " << launch;
    EXPECT_EQ(c.violations.load(), 0);
  }
}

// ---- core 0 completes a plain launch at its last release ----------------------------------

// Program::ends_at_last_release: core 0 completes the launch when the releases are counted,
// before the other cores report, so no core may touch the program or its slot after its last
// release. Each program here is freed as soon as synchronize returns (no wait_program); the
// step widths fall to 1 so that cores leave the chain at different steps. Under TSan (the
// executor tests run there too) a touch after the release races with the free.
TEST(Executor, AProgramCanBeFreedAsSoonAsItsLaunchCompleted) {
  auto ex = make_executor(4);
  Chain c;
  for (int i = 0; i < Chain::kSteps; ++i) c.dims[i] = 4 - (i * 5) % 4;
  StreamState stream;
  for (int launch = 0; launch < 100; ++launch) {
    auto tp = std::make_unique<TestProgram>("freed", 4);
    tp->state = &c;
    add_chain(*tp, c, std::make_integer_sequence<int, Chain::kSteps>());
    tp->finish();
    ASSERT_TRUE(tp->program.ends_at_last_release);
    for (auto &d : c.done) d.store(0);
    ASSERT_EQ(ex->submit(&tp->program, nullptr, &stream), SK_OK);
    ASSERT_EQ(ex->synchronize(&stream), SK_OK);
    tp.reset();
    for (int i = 0; i < Chain::kSteps; ++i) ASSERT_EQ(c.done[i].load(), (int)c.dims[i]) << "launch " << launch;
  }
  EXPECT_EQ(c.violations.load(), 0);
}

// Where a core could still be at work after the releases are counted (a step that releases
// from inside its kernel, a core with no block), the program does not end at its last release
// and core 0 waits for the cores' reports.
TEST(Executor, WhichProgramsEndAtTheirLastRelease) {
  Chain c;
  for (int i = 0; i < Chain::kSteps; ++i) c.dims[i] = 3;
  TestProgram narrow("narrow", 4);  // core 3 has no block in any step
  add_chain(narrow, c, std::make_integer_sequence<int, Chain::kSteps>());
  narrow.finish();
  EXPECT_FALSE(narrow.program.ends_at_last_release);
  TestProgram early("early", 3);
  early.add("early", chain_step<0>, 3, false, /*arrive_in=*/true);
  early.add("next", chain_step<1>, 3);
  early.finish();
  EXPECT_FALSE(early.program.ends_at_last_release);
  TestProgram wide("wide", 3);
  wide.add("first", chain_step<0>, 3);
  wide.add("last", chain_step<1>, 1);
  wide.finish();
  EXPECT_TRUE(wide.program.ends_at_last_release);
  EXPECT_EQ(wide.program.core_steps_end, (std::vector<uint32_t>{2, 1, 1}));
}

// The chain step loop (Program::chain) runs plain programs on the central counter whose
// kernels do not overlap; the step-ordering tests above run through it.
TEST(Executor, WhichProgramsRunAsChains) {
  Chain c;
  for (int i = 0; i < Chain::kSteps; ++i) c.dims[i] = 1 + i % 5;
  TestProgram plain("plain", 4);
  add_chain(plain, c, std::make_integer_sequence<int, Chain::kSteps>());
  plain.finish();
  EXPECT_TRUE(plain.program.chain);
  TestProgram tree("tree", 5);
  add_chain(tree, c, std::make_integer_sequence<int, Chain::kSteps>());
  tree.program.release_group = 2;
  tree.finish();
  EXPECT_FALSE(tree.program.chain);
  TestProgram overlap("overlap", 3);
  overlap.add("first", chain_step<0>, 3);
  overlap.add("waits-inside", chain_step<1>, 3, /*wait_in=*/true);
  overlap.finish();
  EXPECT_FALSE(overlap.program.chain);
}

// ---- pinning: cores sit on CPUs of their own, away from the thread running core 0 --------

std::set<int> allowed_cpus_of_this_thread() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  return cpus_in(set);
}

TEST(Executor, CoresArePinnedBeforeCreateReturns) {
  // A launch right after create used to find a core not yet pinned (its thread had not run),
  // so core 0's thread could not move it off its CPU: the two then shared a CPU for the rest
  // of the run, at ~8 us per step.
  const std::set<int> allowed_set = allowed_cpus_of_this_thread();
  if (allowed_set.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  const std::vector<int> allowed(allowed_set.begin(), allowed_set.end());
  for (int round = 0; round < 20; ++round) {
    auto ex = make_executor(2);
    const std::vector<int> cpus = CoreAccess::core_cpus(*ex);
    ASSERT_EQ(cpus.size(), 2u);
    ASSERT_GE(cpus[1], 0) << "core 1 not pinned when create returned (round " << round << ")";
    // Core 1 takes the second CPU of the pinning order (one thread per physical core first).
    EXPECT_EQ(cpus[1], cpu_pinning_order(allowed)[1]);
    EXPECT_EQ(CoreAccess::allowed_cpus(*ex, 1), std::set<int>{cpus[1]});
  }
}

TEST(Executor, ACoreOnTheLaunchingThreadsCpuIsMovedAway) {
  if (allowed_cpus_of_this_thread().size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  auto ex = make_executor(2);
  const int core1_cpu = CoreAccess::core_cpus(*ex)[1];
  ASSERT_GE(core1_cpu, 0);
  // Put this (the launching) thread on core 1's CPU, then launch and wait: core 0 runs here.
  cpu_set_t mine, only;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  CPU_ZERO(&only);
  CPU_SET(core1_cpu, &only);
  ASSERT_EQ(sched_setaffinity(0, sizeof only, &only), 0);
  std::atomic<int> flag{0};
  TestProgram tp("moved", 2);
  tp.state = &flag;
  tp.add("first", set_flag, 2);
  tp.add("second", set_flag, 2);
  tp.finish();
  StreamState stream;
  // Launches until this thread has run core 0 (the move happens then): should the dedicated
  // core-0 thread have run one (this thread late by a spin period, as on a loaded machine), this
  // thread runs core 0 for a later one.
  int launches = 0;
  while (launches < 3 || (launches < 50 && CoreAccess::core_cpus(*ex)[1] == core1_cpu)) {
    ASSERT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
    EXPECT_EQ(ex->synchronize(&stream), SK_OK);
    ++launches;
  }
  const int running_on = sched_getcpu();
  ASSERT_EQ(sched_setaffinity(0, sizeof mine, &mine), 0);
  EXPECT_EQ(flag.load(), 2 * launches);
  const int now = CoreAccess::core_cpus(*ex)[1];
  EXPECT_NE(now, core1_cpu) << "core 1 left on the launching thread's CPU";
  EXPECT_NE(now, running_on);
  EXPECT_EQ(CoreAccess::allowed_cpus(*ex, 1), std::set<int>{now});
}

// The dedicated core-0 thread may run only where no core is pinned: a core that calls it and
// goes on spinning must not find it woken onto its own CPU.
TEST(Executor, TheDedicatedCore0ThreadRunsWhereNoCoreIsPinned) {
  const std::set<int> allowed = allowed_cpus_of_this_thread();
  if (allowed.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  for (uint32_t cores : {2u, static_cast<uint32_t>(allowed.size())}) {
    auto ex = make_executor(cores);
    std::set<int> free = allowed;
    for (int cpu : CoreAccess::core_cpus(*ex)) free.erase(cpu);
    ASSERT_FALSE(free.empty());
    EXPECT_EQ(CoreAccess::dedicated_core0_cpus(*ex), free) << cores << " cores";
  }
}

// A busy thread of another program on a core's CPU. A wait that yields the CPU hands it over
// for the busy thread's whole time slice, milliseconds, at every step; so with every core on
// a CPU of its own, waits do not yield (WaitPolicy::yield). Then the busy thread costs the
// launches little: the core sleeps within its spin at worst, and a woken thread gets the CPU
// back at once. Median of 100 launches of 64 steps, each after 100 us of host work and waited
// for, against 2 ms (about 15 us without the busy thread; yielding, milliseconds), on the best
// of the tries (scheduler_tries.hpp).
TEST(Executor, ABusyThreadOnACoresCpuDoesNotStallItsLaunches) {
#if defined(SK_TEST_EMULATED)
  GTEST_SKIP() << "timing under an emulator says nothing";
#endif
  if (allowed_cpus_of_this_thread().size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  auto ex = make_executor(2);
  const int core1_cpu = CoreAccess::core_cpus(*ex)[1];
  ASSERT_GE(core1_cpu, 0);
  std::atomic<bool> stop{false}, there{false};
  std::thread busy([&] {
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET(core1_cpu, &only);
    pthread_setaffinity_np(pthread_self(), sizeof only, &only);
    while (!stop.load(std::memory_order_relaxed))
      if (!there.load(std::memory_order_relaxed) && sched_getcpu() == core1_cpu) there.store(true);
  });
  while (!there.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a few scheduler ticks of it
  std::atomic<int> flag{0};
  TestProgram tp("beside-a-busy-thread", 2);
  tp.state = &flag;
  for (int i = 0; i < 64; ++i) tp.add("step", noop, 2);
  tp.finish();
  StreamState stream;
  constexpr double kMedianBoundMs = 2.0;
  const double median = sk::test::fewest_until(kMedianBoundMs, [&] {
    std::vector<double> ms;
    for (int launch = 0; launch < 100; ++launch) {
      // 100 us of host work first: core 1 waits idle meanwhile, past the few microseconds after
      // which a yielding wait yields.
      const auto work_until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
      while (std::chrono::steady_clock::now() < work_until) {
      }
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
      EXPECT_EQ(ex->synchronize(&stream), SK_OK);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(ms.begin(), ms.begin() + 50, ms.end());
    return ms[50];
  });
  stop.store(true);
  busy.join();
  EXPECT_LE(median, kMedianBoundMs) << "median launch of 64 steps beside a busy thread on core 1's CPU";
}

// Two devices open at once: the second one's cores go to the CPUs the first left free. A
// 1-core device keeps the first CPU of the pinning order for its core 0 (host threads), so a
// 2-core device opened beside it takes the second for its core 0 and pins core 1 to the first,
// where alone it would pin core 1 to the second.
TEST(Executor, ASecondExecutorsCoresGoWhereTheFirstsAreNot) {
  const std::set<int> allowed_set = allowed_cpus_of_this_thread();
  if (allowed_set.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  const std::vector<int> order = cpu_pinning_order(std::vector<int>(allowed_set.begin(), allowed_set.end()));
  {
    auto alone = make_executor(2);
    EXPECT_EQ(CoreAccess::core_cpus(*alone)[1], order[1]);
  }
  auto a = make_executor(1);
  auto b = make_executor(2);
  EXPECT_EQ(CoreAccess::core_cpus(*b)[1], allowed_set.size() == 2 ? order[0] : order[2]);
  // Closed, a device gives its CPUs back.
  a.reset();
  b.reset();
  auto again = make_executor(2);
  EXPECT_EQ(CoreAccess::core_cpus(*again)[1], order[1]);
}

}  // namespace
}  // namespace sk::host
