// Cache maintenance (DCCI): the placement rules of common/cache_plan.cpp, and that the executor
// and the device API carry them out. Every flush a core executes is counted in its
// CoreContext::cache_flushes, which kernels here read from inside the step.
#include <gtest/gtest.h>
#include <sk.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "api/handles.hpp"
#include "common/cache_plan.hpp"
#include "common/scope_options.hpp"
#include "host/host_backend.hpp"
#include "host_program_support.hpp"
#include "sk_assert.hpp"

namespace sk::test {
namespace {

CachePlacement placed(const char *options, const char *name, uint32_t flags = 0) {
  ScopeOptions o;
  EXPECT_EQ(parse_scope_options(options, &o), SK_OK) << options;
  return place_cache(o, name, flags);
}

void expect_placement(const CachePlacement &c, bool per_access, bool before, bool after) {
  EXPECT_EQ(c.per_access_flush, per_access);
  EXPECT_EQ(c.flush_before, before);
  EXPECT_EQ(c.flush_after, after);
}

TEST(CachePlan, DefaultIsPerAccessFlushOnlyWithNoRule) {
  const CachePlacement c = placed("", "k");
  expect_placement(c, true, false, false);
  EXPECT_TRUE(c.rules.empty());
}

TEST(CachePlan, BeforeAndAfterListsFlushAroundAndTurnPerAccessOff) {
  expect_placement(placed("dcci-before-kernel-start=k", "k"), false, true, false);
  expect_placement(placed("dcci-after-kernel-end=k", "k"), false, false, true);
  expect_placement(placed("dcci-after-kernel-start=k", "k"), false, false, true);  // the guide's spelling
  expect_placement(placed("dcci-before-kernel-start=k:dcci-after-kernel-end=k", "k"), false, true, true);
  // Lists match whole names, exactly or as patterns; other kernels keep the default.
  expect_placement(placed("dcci-before-kernel-start=mat.*,norm", "matmul"), false, true, false);
  expect_placement(placed("dcci-before-kernel-start=mat.*,norm", "norm"), false, true, false);
  expect_placement(placed("dcci-before-kernel-start=mat.*,norm", "layernorm"), true, false, false);
  expect_placement(placed("dcci-after-kernel-end=.*", "anything"), false, false, true);
  const CachePlacement c = placed("dcci-before-kernel-start=k:dcci-after-kernel-end=k", "k");
  ASSERT_EQ(c.rules.size(), 2u);
  EXPECT_STREQ(c.rules[0], "dcci-before-kernel-start");
  EXPECT_STREQ(c.rules[1], "dcci-after-kernel-end");
}

TEST(CachePlan, DisableMeansNoMaintenanceAndWinsOverTheLists) {
  expect_placement(placed("dcci-disable-on-kernel=k", "k"), false, false, false);
  expect_placement(placed("dcci-disable-on-kernel=k:dcci-before-kernel-start=.*:dcci-after-kernel-end=.*", "k"),
                   false, false, false);
  expect_placement(placed("dcci-disable-on-kernel=k:dcci-before-kernel-start=.*", "other"), false, true, false);
}

TEST(CachePlan, TilingSinkAlwaysFlushesAroundWithoutPerAccess) {
  expect_placement(placed("", "k", SK_KERNEL_FLAG_TILING_SINK), false, true, true);
  expect_placement(placed("dcci-disable-on-kernel=k", "k", SK_KERNEL_FLAG_TILING_SINK), false, true, true);
  EXPECT_STREQ(placed("", "k", SK_KERNEL_FLAG_TILING_SINK).rules.at(0), "tiling-sink");
}

TEST(CachePlan, DebugDcciAllFlushesAroundEveryKernel) {
  expect_placement(placed("debug-dcci-all=1", "k"), true, true, true);
  expect_placement(placed("debug-dcci-all=1:dcci-disable-on-kernel=k", "k"), false, true, true);
  expect_placement(placed("debug-dcci-all=0", "k"), true, false, false);
}

// ---- the executor and the device API carry the placement out ---------------------------------

using u32fn = uint32_t (*)();
using voidfn = void (*)();

// What each kernel saw, per (step, core): the core's flush count at entry, after one
// sk_gm_load, after one sk_gm_store, after sk_dcci_line + sk_dcci_all, and at exit.
struct Seen {
  std::mutex m;
  struct Row {
    uint32_t step, core;
    uint64_t entry, after_load, after_store, after_dcci;
  };
  std::vector<Row> rows;
  std::atomic<uint32_t> word{41};
  uint32_t copy[2] = {};  // by block: blocks of one step store at the same time
};

void observe(void *p) {
  auto *s = static_cast<Seen *>(p);
  host::CoreContext &c = *host::t_core;
  Seen::Row row{c.step_index, c.core, c.cache_flushes, 0, 0, 0};
  uint32_t v = 0;
  device_fn<void (*)(void *, const volatile void *, uint32_t)>("sk_gm_load")(&v, &s->word, 4);
  row.after_load = c.cache_flushes;
  const uint32_t next = v + 1;
  device_fn<void (*)(volatile void *, const void *, uint32_t)>("sk_gm_store")(&s->copy[c.block_idx], &next, 4);
  row.after_store = c.cache_flushes;
  device_fn<void (*)(const volatile void *)>("sk_dcci_line")(&s->word);
  device_fn<voidfn>("sk_dcci_all")();
  row.after_dcci = c.cache_flushes;
  std::lock_guard<std::mutex> l(s->m);
  s->rows.push_back(row);
}

TEST(CacheExecution, FlushesHappenWhereTheStepsSayOnEveryCoreOfTheStep) {
  auto ex = make_host_executor(2);
  Seen seen;
  HostProgram hp("dcci", 2);
  hp.add("plain", observe, 2);  // per-access flush, nothing around
  hp.add("before", observe, 2).flush_before = true;
  hp.program.steps.back().gm_flush = false;
  hp.add("after", observe, 1).flush_after = true;  // one core: core 1 does not flush for it
  hp.program.steps.back().gm_flush = false;
  hp.add("around", observe, 2).flush_before = true;
  hp.program.steps.back().flush_after = true;
  hp.program.steps.back().gm_flush = false;
  hp.add("last", observe, 2);
  hp.finish(&seen);
  host::StreamState stream;
  ASSERT_EQ(ex->submit(&hp.program, nullptr, &stream), SK_OK);
  ASSERT_EQ(ex->synchronize(&stream), SK_OK);
  ASSERT_EQ(seen.rows.size(), 9u);
  EXPECT_EQ(seen.copy[0], 42u);  // the accessors copy, whatever the flushes
  EXPECT_EQ(seen.copy[1], 42u);
  // Per core, in step order: flushes between the previous step's exit and this entry are the
  // previous step's "after" plus this step's "before".
  for (uint32_t core = 0; core < 2; ++core) {
    std::vector<Seen::Row> rows;
    for (const auto &r : seen.rows)
      if (r.core == core) rows.push_back(r);
    std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.step < b.step; });
    const std::vector<uint32_t> steps =
        core == 0 ? std::vector<uint32_t>{0, 1, 2, 3, 4} : std::vector<uint32_t>{0, 1, 3, 4};
    ASSERT_EQ(rows.size(), steps.size());
    // Expected flushes before entry, relative to the previous row's exit (sk_dcci_* end a row).
    const uint64_t gap[5] = {0, 1, 0, core == 0 ? 2u : 1u, 1};  // plain, before, after, around, last
    const bool per_access[5] = {true, false, false, false, true};
    uint64_t exit = rows[0].entry;  // counts from earlier tests on this thread do not matter
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto &r = rows[i];
      SCOPED_TRACE("core " + std::to_string(core) + " step " + std::to_string(r.step));
      ASSERT_EQ(r.step, steps[i]);
      if (i > 0) EXPECT_EQ(r.entry - exit, gap[r.step]);
      EXPECT_EQ(r.after_load - r.entry, per_access[r.step] ? 1u : 0u);
      EXPECT_EQ(r.after_store - r.after_load, per_access[r.step] ? 1u : 0u);
      EXPECT_EQ(r.after_dcci - r.after_store, 2u);  // explicit flushes always flush
      exit = r.after_dcci;
    }
  }
}

TEST(CacheExecution, AccessorsCopyEverySizeAndFlushOutsideATask) {
  // Called by the host directly (no task): one block of one, per-access flush on.
  uint64_t src8 = 0x1122334455667788ull, dst8 = 0;
  uint16_t src2 = 0xbeef, dst2 = 0;
  uint8_t src1 = 0x5a, dst1 = 0;
  unsigned char odd_src[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, odd_dst[9] = {};
  auto load = device_fn<void (*)(void *, const volatile void *, uint32_t)>("sk_gm_load");
  auto store = device_fn<void (*)(volatile void *, const void *, uint32_t)>("sk_gm_store");
  load(&dst8, &src8, 8);
  store(&dst2, &src2, 2);
  load(&dst1, &src1, 1);
  load(odd_dst, odd_src + 1, 8);  // unaligned: copied bytewise
  EXPECT_EQ(dst8, src8);
  EXPECT_EQ(dst2, src2);
  EXPECT_EQ(dst1, src1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(odd_dst[i], i + 1);
}

// ---- sk_add_kernel flags and scope options reach the executor's steps -----------------------

TEST(CacheExecution, OptionsAndFlagsAreLoweredIntoTheSteps) {
  sk_device *dev = nullptr;
  sk_module *mod = nullptr;
  sk_kernel *k = nullptr;
  ASSERT_SK(sk_device_open("host:cores=2", &dev));
  ASSERT_SK(sk_module_load_file(dev, (std::string(SK_TEST_KERNEL_DIR) + "/gcc-O2-pie/capi_cache.o").c_str(), &mod));
  ASSERT_SK(sk_module_get_kernel(mod, "capi_gm_write", &k));
  uint32_t buf[4] = {}, n = 4, seed = 1;
  uint64_t wide[4] = {};
  uint32_t *pbuf = buf;
  uint64_t *pwide = wide;
  void *args[] = {&pbuf, &pwide, &n, &seed};
  sk_scope *scope = nullptr;
  ASSERT_SK(sk_scope_begin(dev, "lowered",
                           "dcci-before-kernel-start=b:dcci-after-kernel-end=a:dcci-disable-on-kernel=d", &scope));
  const char *names[] = {"plain", "b", "a", "d", "sink"};
  for (const char *name : names) {
    sk_kernel_options o = SK_KERNEL_OPTIONS_INIT;
    o.name = name;
    o.flags = std::string(name) == "sink" ? SK_KERNEL_FLAG_TILING_SINK : 0;
    ASSERT_SK(sk_add_kernel(scope, k, 2, args, &o));
  }
  sk_superkernel *sk = nullptr;
  ASSERT_SK(sk_finalize(scope, &sk));
  const auto &steps = static_cast<const host::HostBackendSuperKernel &>(*sk->backend).program->steps;
  ASSERT_EQ(steps.size(), 5u);
  struct Want {
    bool before, after, per_access;
  } want[] = {
      {false, false, true}, {true, false, false}, {false, true, false}, {false, false, false}, {true, true, false}};
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(steps[i].flush_before, want[i].before);
    EXPECT_EQ(steps[i].flush_after, want[i].after);
    EXPECT_EQ(steps[i].gm_flush, want[i].per_access);
  }
  ASSERT_SK(sk_launch(sk, nullptr));
  ASSERT_SK(sk_stream_synchronize(nullptr));
  EXPECT_EQ(wide[3], (uint64_t{3u * 2654435761u ^ 1u} << 32) | 3u);
  sk_superkernel_destroy(sk);
  sk_module_unload(mod);
  sk_device_close(dev);
}

}  // namespace
}  // namespace sk::test
