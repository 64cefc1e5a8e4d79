// What sk_superkernel_explain says about how the host device runs a super kernel (the object
// "execution"): the barrier between sub-kernels, the step loop, when a launch is complete, how
// the kernels are called, who runs core 0's share and the core threads' stack.
// Read from the lowered program, so it says what the executor does, not what it might do.
#pragma once
#include <cstdint>

#include "common/json_writer.hpp"
#include "host/executor/executor.hpp"
#include "host/executor/program.hpp"

namespace sk::host {

void write_execution_json(JsonWriter &j, const Program &p, const ExecutorConfig &device);

}  // namespace sk::host
