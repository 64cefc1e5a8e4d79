// From a plan (common/plan.hpp) to what the host executor runs (host/executor/program.hpp).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/plan.hpp"
#include "host/executor/program.hpp"
#include "host/host_backend.hpp"

namespace sk::host {

// Fills `program` with one step per plan step (call targets, argument slots, each core's slot
// per segment, sync counters, flags for steps with hard sync); kernels[i] runs step i with args[i].
void lower_plan(const Plan &plan, const std::vector<const HostBackendKernel *> &kernels,
                const std::vector<std::vector<uint64_t>> &args, uint32_t release_group, Program *program);

}  // namespace sk::host
