// sk_superkernel_explain's "execution" object on the host device: which barrier the releases
// between sub-kernels go through (central counter or combining tree, by device core count and
// barrier_group), which step loop runs, when a launch completes, and the device's core 0 and
// stack keys. Each case is a small scope whose expected choice follows from the executor's
// rules (host/executor/program.cpp).
#include <gtest/gtest.h>
#include <sk.h>

#include <string>
#include <vector>

#include "host/executor/core_thread.hpp"
#include "linker_test_support.hpp"
#include "sk_assert.hpp"

namespace {

struct Step {
  const char *kernel;
  uint32_t block_dim;
};

// Finalizes `steps` (kernels of tests/kernels/chain_ops.c taking (x, n), (x, scratch, n), axpy's
// (x, scratch, a, n) or too_wide's (x, 17 doubles)) on a device opened with `spec`, launches it
// once, and returns its explain JSON.
std::string explain_scope(const char *spec, const std::vector<Step> &steps) {
  std::string json;
  sk_device *dev = nullptr;
  sk_module *mod = nullptr;
  EXPECT_EQ(sk_device_open(spec, &dev), SK_OK) << spec << ": " << sk_last_error();
  if (!dev) return json;
  const std::string path = sk::test::kernel_path(sk::test::kernel_variants().at(0), "chain_ops");
  float *x = nullptr, *scratch = nullptr;
  uint32_t n = 64;
  sk_scope *scope = nullptr;
  sk_superkernel *sk = nullptr;
  bool ok = sk_module_load_file(dev, path.c_str(), &mod) == SK_OK &&
            sk_mem_alloc(dev, n * sizeof(float), reinterpret_cast<void **>(&x)) == SK_OK &&
            sk_mem_alloc(dev, n * sizeof(float), reinterpret_cast<void **>(&scratch)) == SK_OK &&
            sk_scope_begin(dev, "explained", nullptr, &scope) == SK_OK;
  float a = 0.5f;
  double d = 1.0;
  for (const Step &s : steps) {
    sk_kernel *k = nullptr;
    const std::string name = s.kernel;
    std::vector<void *> args = {&x, &scratch, &n};
    if (name == "relu_strided") args = {&x, &n};
    if (name == "axpy") args = {&x, &scratch, &a, &n};
    if (name == "too_wide") args.assign(18, &d), args[0] = &x;  // x takes its 17 doubles
    ok = ok && sk_module_get_kernel(mod, s.kernel, &k) == SK_OK &&
         sk_add_kernel(scope, k, s.block_dim, args.data(), nullptr) == SK_OK;
  }
  if (scope) ok = ok ? sk_finalize(scope, &sk) == SK_OK : (sk_scope_abort(scope), false);
  EXPECT_TRUE(ok) << spec << ": " << sk_last_error();
  if (ok) {
    // It runs as explained: a launch of the same program completes.
    EXPECT_EQ(sk_launch(sk, nullptr), SK_OK) << sk_last_error();
    EXPECT_EQ(sk_stream_synchronize(nullptr), SK_OK) << sk_last_error();
    size_t needed = 0;
    EXPECT_EQ(sk_superkernel_explain(sk, nullptr, 0, &needed), SK_OK);
    json.assign(needed, '\0');
    EXPECT_EQ(sk_superkernel_explain(sk, json.data(), json.size(), nullptr), SK_OK);
    json.pop_back();  // the NUL
  }
  sk_superkernel_destroy(sk);
  sk_mem_free(dev, x);
  sk_mem_free(dev, scratch);
  sk_module_unload(mod);
  sk_device_close(dev);
  return json;
}

// What a device opened without core0 or timeout_ms and without stack_kb says of them.
std::string default_device() {
  return "\"core0\":\"caller\",\"core_stack_kib\":" + std::to_string(sk::host::default_core_stack_kib()) + ",";
}

// The "execution" object of `json` is exactly {object}.
::testing::AssertionResult has_execution(const std::string &json, const std::string &object) {
  if (json.find("\"execution\":{" + object + "}") != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no \"execution\":{" << object << "} in " << json;
}

TEST(ExplainExecution, PlainChainOnFewCoresUsesTheCentralCounterAndTheChainLoop) {
  const std::vector<Step> chain = {{"relu_strided", 2}, {"relu_strided", 4}, {"relu_strided", 2}};
  EXPECT_TRUE(has_execution(explain_scope("host:cores=2", chain),
                            "\"barrier\":\"central\",\"step_loop\":\"chain\",\"completes_at\":\"last release\"," +
                                default_device() + "\"calls\":{\"direct\":3,\"register map\":0,\"libffi\":0}"));
}

TEST(ExplainExecution, AProgramOnFewerCoresThanTheDeviceCompletesAtCoreReports) {
  // Block dims 1 on 2 cores: a one-core program. The device's other core walks each launch
  // too, without releasing anything, so its report ends the launch.
  EXPECT_TRUE(has_execution(explain_scope("host:cores=2", {{"relu_strided", 1}, {"relu_strided", 1}}),
                            "\"barrier\":\"central\",\"step_loop\":\"chain\",\"completes_at\":\"core reports\"," +
                                default_device() + "\"calls\":{\"direct\":2,\"register map\":0,\"libffi\":0}"));
}

TEST(ExplainExecution, TaskOverlapRunsTheGeneralLoop) {
  EXPECT_TRUE(has_execution(
      explain_scope("host:cores=2", {{"produce_then_release", 2}, {"prologue_then_wait", 2}, {"relu_strided", 2}}),
      "\"barrier\":\"central\",\"step_loop\":\"general\",\"completes_at\":\"core reports\"," + default_device() +
          "\"calls\":{\"direct\":3,\"register map\":0,\"libffi\":0}"));
}

TEST(ExplainExecution, BarrierGroupMakesATree) {
  EXPECT_TRUE(
      has_execution(explain_scope("host:cores=4,barrier_group=2", {{"relu_strided", 4}, {"relu_strided", 4}}),
                    "\"barrier\":\"tree\",\"barrier_group_cores\":2,\"barrier_groups\":2,"
                    "\"step_loop\":\"general\",\"completes_at\":\"last release\"," +
                        default_device() + "\"calls\":{\"direct\":2,\"register map\":0,\"libffi\":0}"));
}

TEST(ExplainExecution, TheTreeIsTheDefaultAbove8Cores) {
  // 8 cores: central; 10: groups of ceil(sqrt(10)) = 4 cores, 3 groups.
  EXPECT_TRUE(has_execution(explain_scope("host:cores=8", {{"relu_strided", 8}, {"relu_strided", 8}}),
                            "\"barrier\":\"central\",\"step_loop\":\"chain\",\"completes_at\":\"last release\"," +
                                default_device() + "\"calls\":{\"direct\":2,\"register map\":0,\"libffi\":0}"));
  EXPECT_TRUE(has_execution(explain_scope("host:cores=10", {{"relu_strided", 10}, {"relu_strided", 10}}),
                            "\"barrier\":\"tree\",\"barrier_group_cores\":4,\"barrier_groups\":3,"
                            "\"step_loop\":\"general\",\"completes_at\":\"last release\"," +
                                default_device() + "\"calls\":{\"direct\":2,\"register map\":0,\"libffi\":0}"));
}

TEST(ExplainExecution, CallsCountEachWayTheKernelsAreCalled) {
  // relu_strided (ptr,u32): direct; axpy (ptr,ptr,f32,u32): register map; too_wide (ptr and
  // 17 doubles): libffi.
  EXPECT_TRUE(
      has_execution(explain_scope("host:cores=2", {{"relu_strided", 2}, {"axpy", 2}, {"too_wide", 2}, {"axpy", 2}}),
                    "\"barrier\":\"central\",\"step_loop\":\"chain\",\"completes_at\":\"last release\"," +
                        default_device() + "\"calls\":{\"direct\":1,\"register map\":2,\"libffi\":1}"));
}

TEST(ExplainExecution, TheDeviceKeysCore0AndStackKbAreShown) {
  EXPECT_TRUE(has_execution(explain_scope("host:cores=2,core0=thread,stack_kb=1024", {{"relu_strided", 2}}),
                            "\"barrier\":\"central\",\"step_loop\":\"chain\",\"completes_at\":\"last release\","
                            "\"core0\":\"thread\",\"core_stack_kib\":1024,"
                            "\"calls\":{\"direct\":1,\"register map\":0,\"libffi\":0}"));
}

}  // namespace
