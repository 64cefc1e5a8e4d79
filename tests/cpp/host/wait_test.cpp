// wait_for's spin phase (host/executor/wait.hpp): when it calls the policy's before_sleep hook, which
// the executor's cores use to call for core 0.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "host/executor/wait.hpp"
#include "scheduler_tries.hpp"

namespace sk::host {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

struct Calls {
  std::atomic<int> count{0};
  clock::time_point first{};
  static void hook(void *p) {
    auto *c = static_cast<Calls *>(p);
    if (c->count.fetch_add(1) == 0) c->first = clock::now();
  }
};

// The word is set once the hook has been called (`on_call`) or after `after`: returns how
// long after the wait began the first call came, and the number of calls.
std::pair<double, int> wait_and_set(WaitPolicy policy, bool on_call, std::chrono::milliseconds after) {
  std::atomic<uint32_t> word{0};
  SleepChannel channel;
  Calls calls;
  policy.before_sleep = Calls::hook;
  policy.before_sleep_arg = &calls;
  const auto start = clock::now();
  std::thread setter([&] {
    while (!(on_call && calls.count.load()) && clock::now() - start < after) std::this_thread::sleep_for(100us);
    word.store(1);
    notify(&word, channel);
  });
  EXPECT_EQ(wait_for(word, channel, policy, [](uint32_t v) { return v == 1; }), WaitResult::Ok);
  setter.join();
  const double ms = calls.count.load() ? std::chrono::duration<double, std::milli>(calls.first - start).count() : -1;
  return {ms, calls.count.load()};
}

TEST(Wait, BeforeSleepIsCalledOnceWhenTheSpinRunsOut) {
  WaitPolicy policy;
  policy.spin = 2ms;
  auto [ms, calls] = wait_and_set(policy, true, 2000ms);
  EXPECT_EQ(calls, 1);
  EXPECT_GE(ms, 2.0);
}

// With early_call, the hook comes after that much spinning, long before the spin runs out (a
// wait whose word is then set does not sleep, and is not called again). The bound leaves room
// for a time slice lost to another thread while the spin yields; the best try counts
// (scheduler_tries.hpp).
TEST(Wait, EarlyCallComesAfterItsShareOfTheSpin) {
  WaitPolicy policy;
  policy.spin = 50ms;
  policy.early_call = 1ms;
  constexpr double kBoundMs = 30.0;
  const double ms = sk::test::fewest_until(kBoundMs, [&] {
    auto [first_ms, calls] = wait_and_set(policy, true, 2000ms);
    EXPECT_EQ(calls, 1);
    EXPECT_GE(first_ms, 1.0);
    return first_ms;
  });
  EXPECT_LE(ms, kBoundMs);
}

// A wait that spins out after its early call calls again before it sleeps.
// A waiter held off its CPU from before its early call to past its spin makes the two calls one
// (as the next test's wait does), so the test looks for two calls in a few tries.
TEST(Wait, AWaitThatSleepsAfterAnEarlyCallIsCalledAgain) {
  WaitPolicy policy;
  policy.spin = 3ms;
  policy.early_call = 1ms;
  std::pair<double, int> result{};
  sk::test::some_try([&] {
    result = wait_and_set(policy, false, 50ms);  // set after the sleep began
    return result.second == 2;
  });
  EXPECT_EQ(result.second, 2);
  EXPECT_GE(result.first, 1.0);
}

TEST(Wait, AnEarlyCallAtOrPastTheSpinIsTheOneBeforeSleeping) {
  WaitPolicy policy;
  policy.spin = 2ms;
  policy.early_call = 2ms;
  auto [ms, calls] = wait_and_set(policy, false, 50ms);
  EXPECT_EQ(calls, 1);
  EXPECT_GE(ms, 2.0);
}

}  // namespace
}  // namespace sk::host
