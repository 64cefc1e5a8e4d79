// Hand-built host programs for tests of what the executor does around steps (profiling hooks,
// cache flushes): each step calls a C++ function `fn(void *state)` with one shared state
// pointer, so a test observes each block from inside, through the device API and t_core.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "host/device_api/device_api.hpp"
#include "host/executor/core_context.hpp"
#include "host/executor/executor.hpp"
#include "host/executor/kernel_call.hpp"

namespace sk::test {

struct HostProgram {
  std::unique_ptr<host::CallInterface> call;
  host::Program program;

  HostProgram(const char *name, uint32_t cores) {
    EXPECT_EQ(host::prepare_call({ArgType::Ptr}, "test", &call), SK_OK);
    program.name = name;
    program.cores = cores;
  }
  host::StepExec &add(const char *name, void (*fn)(void *), uint32_t block_dim) {
    host::StepExec s;
    s.name = name;
    s.fn = reinterpret_cast<void *>(fn);
    s.cif = &call->cif;
    s.block_dim = block_dim;
    s.cores = s.units = std::min(block_dim, program.cores);
    s.pred = static_cast<int32_t>(program.steps.size()) - 1;
    program.steps.push_back(s);
    return program.steps.back();
  }
  // Call once the steps are added and configured, and the profiler (if any) is set.
  void finish(void *state) {
    program.allocate_args(1);  // every step's one argument: slot 0
    for (host::ArgBlock &b : program.arg_blocks) b.slots[0] = reinterpret_cast<uint64_t>(state);
    // One vector-only segment of all the program's cores, as the planner lays out a scope of
    // vector kernels.
    host::SegmentExec seg;
    seg.layout.vector = program.cores;
    for (uint32_t c = 0; c < program.cores; ++c) seg.slots.push_back(core_slot(seg.layout, c));
    program.segments.push_back(std::move(seg));
    program.allocate_sync_state();
  }
};

inline std::unique_ptr<host::Executor> make_host_executor(uint32_t cores, uint32_t timeout_ms = 10000) {
  std::unique_ptr<host::Executor> ex;
  host::ExecutorConfig cfg;
  cfg.cores = cores;
  cfg.timeout_ms = timeout_ms;
  EXPECT_EQ(host::Executor::create(cfg, &ex), SK_OK);
  return ex;
}

template <class Fn>
Fn device_fn(const char *name) {
  return reinterpret_cast<Fn>(host::resolve_device_api(name));
}

}  // namespace sk::test
