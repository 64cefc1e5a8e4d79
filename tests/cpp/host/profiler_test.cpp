// Profiling (profiling=1) inside the executor: every core's record of every step, their order,
// sync waits charged to the waiting kernel, the snapshot of the last completed launch, and the
// Chrome trace JSON rendered from records.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/trace_json.hpp"
#include "host/executor/profiler.hpp"
#include "host_program_support.hpp"

namespace sk::test {
namespace {

using host::Profiler;
using host::t_core;

void nothing(void *) {}

void sync_twice(void *) {
  device_fn<void (*)()>("sk_sync_all")();
  device_fn<void (*)()>("sk_sync_all")();
}

std::vector<sk_profile_record> snapshot(const host::Program &p) {
  std::vector<sk_profile_record> out;
  EXPECT_TRUE(p.profiler->last(&out));
  return out;
}

TEST(Profiler, RecordsEveryCoreOfEveryStepInStepThenCoreOrder) {
  auto ex = make_host_executor(3);
  HostProgram hp("profiled", 3);
  hp.add("a", nothing, 3);
  hp.add("b", nothing, 1);
  hp.add("c", nothing, 5);  // multiplexed: cores 0 and 1 run two blocks, core 2 one
  hp.add("d", sync_twice, 2);
  hp.program.profiler = std::make_shared<Profiler>(4, 3);
  hp.finish(nullptr);
  host::StreamState stream;
  ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  const std::vector<sk_profile_record> r = snapshot(hp.program);
  struct Want {
    uint32_t step, core, blocks;
  };
  const Want want[] = {{0, 0, 1}, {0, 1, 1}, {0, 2, 1}, {1, 0, 1}, {2, 0, 2},
                       {2, 1, 2}, {2, 2, 1}, {3, 0, 1}, {3, 1, 1}};
  ASSERT_EQ(r.size(), std::size(want));
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].step, want[i].step) << i;
    EXPECT_EQ(r[i].core, want[i].core) << i;
    EXPECT_EQ(r[i].blocks, want[i].blocks) << i;
    EXPECT_EQ(r[i].core_type, 0u);
    EXPECT_LE(r[i].ready_ns, r[i].start_ns) << i;
    EXPECT_LE(r[i].start_ns, r[i].end_ns) << i;
    EXPECT_LE(r[i].sync_wait_ns, r[i].end_ns - r[i].start_ns) << i;
  }
  // No overlap calls: a step starts on any core only after the previous one ended on all.
  for (const sk_profile_record &later : r)
    for (const sk_profile_record &earlier : r)
      if (later.step == earlier.step + 1) EXPECT_GE(later.start_ns, earlier.end_ns);
}

// Block 1 calls sk_sync_all only after block 0 is on its way into it (and a while later):
// core 0 waits in the barrier, and that time is charged to its record of the step.
struct SyncWait {
  std::atomic<int> entering{0};
};
void late_sync(void *p) {
  auto *s = static_cast<SyncWait *>(p);
  if (device_fn<uint32_t (*)()>("sk_block_idx")() == 0) {
    s->entering.store(1);
  } else {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (s->entering.load() == 0 && std::chrono::steady_clock::now() < until) host::cpu_relax();
    for (int i = 0; i < 100000; ++i) host::cpu_relax();
  }
  device_fn<void (*)()>("sk_sync_all")();
}

TEST(Profiler, TimeInSyncAllIsChargedAsSyncWait) {
  auto ex = make_host_executor(2);
  SyncWait s;
  HostProgram hp("sync-wait", 2);
  hp.add("late_sync", late_sync, 2);
  hp.program.profiler = std::make_shared<Profiler>(1, 2);
  hp.finish(&s);
  host::StreamState stream;
  ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  const auto r = snapshot(hp.program);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_GT(r[0].sync_wait_ns + r[1].sync_wait_ns, 0u);
  for (const auto &x : r) EXPECT_LE(x.sync_wait_ns, x.end_ns - x.start_ns);
}

// Inside a kernel, t_core->profile is the core's record of the running step when profiling is
// on, and null when it is off (the hooks did nothing).
struct SeenRecord {
  std::atomic<int> with_record{0}, without_record{0}, wrong_record{0};
  Profiler *profiler = nullptr;
};
void look_at_record(void *p) {
  auto *s = static_cast<SeenRecord *>(p);
  sk_profile_record *r = t_core->profile;
  if (!r) {
    s->without_record++;
    return;
  }
  s->with_record++;
  if (r != &s->profiler->record(t_core->step_index, t_core->core) || r->start_ns == 0) s->wrong_record++;
}

TEST(Profiler, KernelsSeeTheirRecordOnlyWhenProfiling) {
  auto ex = make_host_executor(2);
  host::StreamState stream;
  for (bool on : {false, true}) {
    SeenRecord s;
    HostProgram hp("look", 2);
    hp.add("look0", look_at_record, 2);
    hp.add("look1", look_at_record, 2);
    if (on) {
      hp.program.profiler = std::make_shared<Profiler>(2, 2);
      s.profiler = hp.program.profiler.get();
    }
    hp.finish(&s);  // after the profiler: the executor picks its step loop by it
    ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
    ASSERT_EQ(ex->synchronize(&stream), SK_OK);
    EXPECT_EQ(s.with_record.load(), on ? 4 : 0);
    EXPECT_EQ(s.without_record.load(), on ? 0 : 4);
    EXPECT_EQ(s.wrong_record.load(), 0);
  }
}

TEST(Profiler, SnapshotIsTheLastCompletedLaunch) {
  auto ex = make_host_executor(2);
  HostProgram hp("twice", 2);
  hp.add("a", nothing, 2);
  hp.program.profiler = std::make_shared<Profiler>(1, 2);
  hp.finish(nullptr);
  std::vector<sk_profile_record> none;
  EXPECT_FALSE(hp.program.profiler->last(&none));  // nothing completed yet
  host::StreamState stream;
  ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  const uint64_t between = host::monotonic_ns();
  ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  const auto r = snapshot(hp.program);
  ASSERT_EQ(r.size(), 2u);
  for (const auto &x : r) EXPECT_GT(x.ready_ns, between);
}

// The snapshot is copied under a sequence count, not a lock: a reader running beside the
// completions gets one whole launch every time. A copy torn between two launches would show
// as a step that started before the step it follows ended (a later launch's records of step
// k with an earlier launch's of step k + 1): within a launch, no core starts step k + 1 before
// every core has ended step k.
TEST(Profiler, SnapshotsReadBesideCompletingLaunchesAreWhole) {
  auto ex = make_host_executor(2);
  constexpr uint32_t kSteps = 32;  // 64 records: a copy long enough for launches to overlap it
  HostProgram hp("read-beside", 2);
  for (uint32_t s = 0; s < kSteps; ++s) hp.add("step", nothing, 2);
  hp.program.profiler = std::make_shared<Profiler>(kSteps, 2);
  hp.finish(nullptr);
  host::StreamState stream;
  ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> reads{0}, torn{0}, wrong_size{0};
  std::thread reader([&] {
    std::vector<sk_profile_record> r;
    while (!done.load(std::memory_order_relaxed)) {
      if (!hp.program.profiler->last(&r)) continue;
      reads.fetch_add(1, std::memory_order_relaxed);
      if (r.size() != kSteps * 2) {
        wrong_size.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      for (uint32_t k = 0; k + 1 < kSteps; ++k)
        for (uint32_t c = 0; c < 2; ++c)
          for (uint32_t d = 0; d < 2; ++d)
            if (r[(k + 1) * 2 + c].start_ns < r[k * 2 + d].end_ns) torn.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 200; ++i) ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
    ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  }
  done.store(true);
  reader.join();
  EXPECT_GT(reads.load(), 0u);
  EXPECT_EQ(wrong_size.load(), 0u);
  EXPECT_EQ(torn.load(), 0u) << "of " << reads.load() << " snapshots";
}

// Block 1 skips the barrier when told to: block 0 waits for it until the deadline.
struct MaybeHang {
  std::atomic<bool> hang{false};
};
void maybe_hang(void *p) {
  auto *s = static_cast<MaybeHang *>(p);
  if (device_fn<uint32_t (*)()>("sk_block_idx")() == 1 && s->hang.load()) return;
  device_fn<void (*)()>("sk_sync_all")();
}

TEST(Profiler, AnAbortedLaunchKeepsThePreviousSnapshot) {
  auto ex = make_host_executor(2, 300);
  MaybeHang s;
  HostProgram hp("hang", 2);
  hp.add("maybe_hang", maybe_hang, 2);
  hp.program.profiler = std::make_shared<Profiler>(1, 2);
  hp.finish(&s);
  host::StreamState stream;
  ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  const uint64_t before_hang = host::monotonic_ns();
  s.hang = true;
  ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_ERR_HANG);
  const auto r = snapshot(hp.program);
  ASSERT_EQ(r.size(), 2u);
  for (const auto &x : r) EXPECT_LT(x.end_ns, before_hang);
}

// ---- Chrome trace JSON ----------------------------------------------------------------------

sk_profile_record rec(uint32_t step, uint32_t core, uint64_t ready, uint64_t start, uint64_t end, uint64_t wait) {
  sk_profile_record r{};
  r.step = step;
  r.core = core;
  r.blocks = 1;
  r.ready_ns = ready;
  r.start_ns = start;
  r.end_ns = end;
  r.sync_wait_ns = wait;
  return r;
}

TEST(TraceJson, CompleteEventsPerCoreWithStepNamesAndWaits) {
  const std::vector<std::string> names = {"first \"quoted\"", "second\\back"};
  const std::vector<sk_profile_record> records = {rec(0, 0, 1000, 1000, 3500, 0), rec(0, 1, 1200, 1300, 3000, 250),
                                                  rec(1, 0, 3600, 4000, 9001, 0)};
  const std::string json = chrome_trace_json("sk \"x\"", 7, names, records);
  // Microseconds from the earliest ready time, with nanosecond precision.
  EXPECT_NE(
      json.find(R"({"name":"first \"quoted\"","cat":"sub-kernel","ph":"X","pid":7,"tid":1,"ts":0.300,"dur":1.700,)"
                R"("args":{"step":0,"blocks":1,"core_type":"vector","ready_wait_us":0.100,"sync_wait_us":0.250}})"),
      std::string::npos)
      << json;
  EXPECT_NE(
      json.find(R"({"name":"second\\back","cat":"sub-kernel","ph":"X","pid":7,"tid":0,"ts":3.000,"dur":5.001,)"),
      std::string::npos)
      << json;
  // The wait for the previous step is its own slice; a core that did not wait has none.
  EXPECT_NE(json.find(R"({"name":"wait","cat":"sync","ph":"X","pid":7,"tid":0,"ts":2.600,"dur":0.400,)"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find(R"("tid":0,"ts":0.000,"dur":0.000)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"j({"name":"thread_name","ph":"M","pid":7,"tid":1,"args":{"name":"core 1 (vector)"}})j"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"({"name":"process_name","ph":"M","pid":7,"tid":0,"args":{"name":"super kernel sk \"x\""}})"),
            std::string::npos)
      << json;
}

TEST(TraceJson, ParsesAsJson) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 is not available";
  const std::vector<std::string> names = {"a\x01\n\"b\"", "c"};
  std::vector<sk_profile_record> records;
  for (uint32_t s = 0; s < 2; ++s)
    for (uint32_t c = 0; c < 3; ++c) records.push_back(rec(s, c, 100 * s + c, 100 * s + 10, 100 * s + 90, c));
  const std::string json = chrome_trace_json("name\twith\\odd \"chars\"", 1, names, records);
  const std::string path = ::testing::TempDir() + "sk_trace_" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << json;
  const std::string check =
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
      "x=[e for e in d[\"traceEvents\"] if e[\"ph\"]==\"X\" and e[\"cat\"]==\"sub-kernel\"]; "
      "sys.exit(0 if len(x)==6 and x[0][\"name\"]==\"a\\x01\\n\\\"b\\\"\" else 1)' " +
      path;
  EXPECT_EQ(std::system(check.c_str()), 0) << json;
  std::remove(path.c_str());
}

TEST(TraceJson, EmptyProfileIsStillATrace) {
  const std::string json = chrome_trace_json("empty", 1, {}, {});
  EXPECT_EQ(json.rfind(R"({"traceEvents":[)", 0), 0u) << json;
  EXPECT_NE(json.find(R"("displayTimeUnit":"ns")"), std::string::npos) << json;
}

TEST(TraceJson, SaysWhichLibskAndLayoutWroteIt) {
  const std::string json = chrome_trace_json("versioned", 1, {}, {});
  const std::string writer =
      std::string(R"("otherData":{"libsk_version":")") + sk_version_string() + R"(","trace_format_version":1,)";
  EXPECT_NE(json.find(writer), std::string::npos) << json;
}

}  // namespace
}  // namespace sk::test
