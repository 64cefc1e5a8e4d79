// The idle spin that adapts to the host's gaps between launches (host/executor/idle_spin.hpp): the rule
// itself, then the executor's cores following it (device key spin_max_us), and keeping it
// fixed where the cores crowd their CPUs or their cgroup's CPU quota.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "cpu_quota_cgroup.hpp"
#include "host/executor/cpu_budget.hpp"
#include "host/executor/executor.hpp"
#include "host/executor/idle_spin.hpp"
#include "host_program_support.hpp"
#include "scheduler_tries.hpp"

namespace sk::host {
namespace {

using std::chrono::microseconds;

TEST(IdleSpin, StartsAtTheBaseSpin) {
  IdleSpin spin(microseconds(50), microseconds(1000));
  EXPECT_EQ(spin.window(), microseconds(50));
}

TEST(IdleSpin, AWaitCaughtWhileSpinningKeepsTheWindow) {
  IdleSpin spin(microseconds(50), microseconds(1000));
  EXPECT_FALSE(spin.observe(microseconds(49)));
  EXPECT_EQ(spin.window(), microseconds(50));
}

TEST(IdleSpin, ALaunchSoonAfterTheSpinRanOutDoublesThatIdleTime) {
  IdleSpin spin(microseconds(50), microseconds(1000));
  EXPECT_TRUE(spin.observe(microseconds(300)));
  EXPECT_EQ(spin.window(), microseconds(600));
  // The same gap again is caught, and the window stays.
  EXPECT_FALSE(spin.observe(microseconds(310)));
  EXPECT_EQ(spin.window(), microseconds(600));
  // A longer gap within the maximum grows it again, up to the maximum.
  EXPECT_TRUE(spin.observe(microseconds(700)));
  EXPECT_EQ(spin.window(), microseconds(1000));
  EXPECT_FALSE(spin.observe(microseconds(999)));
}

TEST(IdleSpin, AnIdleTimePastTheMaximumSetsTheBaseBack) {
  IdleSpin spin(microseconds(50), microseconds(1000));
  spin.observe(microseconds(400));
  ASSERT_EQ(spin.window(), microseconds(800));
  EXPECT_TRUE(spin.observe(microseconds(5000)));
  EXPECT_EQ(spin.window(), microseconds(50));
}

TEST(IdleSpin, AMaximumAtOrBelowTheBaseIsAFixedSpin) {
  for (auto max : {microseconds(0), microseconds(50)}) {
    IdleSpin spin(microseconds(50), max);
    EXPECT_TRUE(spin.observe(microseconds(60)));
    EXPECT_TRUE(spin.observe(microseconds(60)));
    EXPECT_EQ(spin.window(), microseconds(50));
  }
}

// ---- the executor's cores ----------------------------------------------------------------------

void noop(void *) {}

struct GapLoop {
  std::unique_ptr<Executor> ex;
  sk::test::HostProgram tp{"gaps", 2};
  StreamState stream;

  GapLoop(uint32_t cores, uint32_t spin_max_us) : tp("gaps", cores) {
    ExecutorConfig cfg;
    cfg.cores = cores;
    cfg.spin_us = 20;
    cfg.spin_max_us = spin_max_us;
    EXPECT_EQ(Executor::create(cfg, &ex), SK_OK);
    tp.add("noop", noop, cores);
    tp.finish(nullptr);
  }
  // `launches` launches, each waited for and followed by `gap` of host time; returns how many
  // idle waits' spins ran out meanwhile.
  uint64_t run(int launches, std::chrono::microseconds gap) {
    const uint64_t before = ex->idle_spins_run_out();
    for (int i = 0; i < launches; ++i) {
      std::this_thread::sleep_for(gap);
      EXPECT_EQ(ex->submit(&tp.program, nullptr, &stream), SK_OK);
      EXPECT_EQ(ex->synchronize(&stream), SK_OK);
    }
    return ex->idle_spins_run_out() - before;
  }
};

// A machine busy with other work deschedules cores past their windows and adds run-outs, never
// removes them: a bound on how few there are is checked on the best try (scheduler_tries.hpp).
using sk::test::fewest_until;

// A fixed 20 us spin: every launch 1 ms apart finds core 1 asleep. With spin_max_us=20000 the
// core spins through the gaps after the first one or two (a few more allowed: a core
// descheduled past its window on a loaded machine also runs out). Either way a few fewer may
// be counted: a core held off its CPU from its part of one launch until the next is queued
// never waits for it.
TEST(IdleSpin, CoresSpinThroughSteadyGapsUpToTheMaximum) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "needs 2 CPUs: with more cores than CPUs the spin stays fixed";
  GapLoop fixed(2, 0), adaptive(2, 20000);
  fixed.run(3, microseconds(1000));
  adaptive.run(3, microseconds(1000));
  EXPECT_GE(fixed.run(20, microseconds(1000)), 17u);
  EXPECT_LE(fewest_until(uint64_t{5}, [&] { return adaptive.run(20, microseconds(1000)); }), 5u);
}

// A gap past the maximum (the engine paused) sets the spin back: that gap and the next 1 ms
// one both find the core asleep; then it spins through them again.
TEST(IdleSpin, APausePastTheMaximumSetsTheSpinBack) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "needs 2 CPUs: with more cores than CPUs the spin stays fixed";
  GapLoop loop(2, 5000);
  // Each try: grown again by steady gaps, then paused. Both the pause and the gap after it find
  // the core asleep (at least 2; more only where the machine held the core off its CPU).
  const uint64_t after_pause = fewest_until(uint64_t{2}, [&] {
    loop.run(5, microseconds(1000));
    return loop.run(1, microseconds(8000)) + loop.run(1, microseconds(1000));
  });
  EXPECT_EQ(after_pause, 2u);
  EXPECT_LE(fewest_until(
                uint64_t{3},
                [&] {
    loop.run(2, microseconds(1000));
    return loop.run(10, microseconds(1000));
                }),
            3u);
}

// More cores than CPUs: a spinning core would hold a CPU another needs, so the spin stays fixed
// whatever spin_max_us says.
TEST(IdleSpin, WithMoreCoresThanCpusTheSpinStaysFixed) {
  const uint32_t cores = static_cast<uint32_t>(allowed_cpus().size()) + 1;
  GapLoop loop(cores, 20000);
  loop.run(3, microseconds(1000));
  // Every core's spin runs out at every launch but a few (see above); a growing spin would
  // catch all but the first one or two.
  EXPECT_GE(loop.run(10, microseconds(1000)), 10u * (cores - 1) - 3);
}

// The same where the CPUs are there but the cgroup's quota pays for one: a core spinning
// through gaps would spend the quota the kernels need.
TEST(IdleSpin, WithMoreCoresThanTheCgroupQuotaPaysForTheSpinStaysFixed) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "one CPU: the test above covers it";
  sk::test::InCpuQuotaCgroup quota;
  if (!quota.ok()) GTEST_SKIP() << "cannot make a cgroup v1 cpu folder here (needs root and a v1 cpu hierarchy)";
  GapLoop loop(2, 20000);
  loop.run(3, microseconds(1000));
  EXPECT_GE(loop.run(10, microseconds(1000)), 10u - 3);
}

}  // namespace
}  // namespace sk::host
