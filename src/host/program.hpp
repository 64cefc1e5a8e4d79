// What the host executor runs: a plan lowered to call-ready steps, with the synchronisation
// state of every step. A super kernel owns one Program for its whole life; an unfused launch
// gets a one-step Program of its own.
#pragma once
#include <ffi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sk::host {

// One cache line each: cores hammer these, and false sharing between steps would serialise them.
struct alignas(64) StepCounter {
  std::atomic<uint32_t> value{0};
};
struct alignas(64) StepBarrier {
  std::atomic<uint32_t> count{0};
  std::atomic<uint32_t> generation{0};
};

struct StepExec {
  std::string name;
  void *fn = nullptr;
  ffi_cif *cif = nullptr;       // prepared once per kernel
  bool direct = false;          // call fn with kDirectArgs slots (see kernel_call.hpp)
  const uint64_t *slots = nullptr;  // its first slot in Program::arg_slots
  void **avalues = nullptr;     // into Program::arg_slots, for libffi
  uint32_t block_dim = 1;
  uint32_t cores = 1;           // cores running its blocks; blocks stride by this
  bool wait_in_kernel = false;  // previous step awaited at sk_wait_pre_task_end
  bool arrive_in_kernel = false;// next step released at sk_set_next_task_start
};

struct Program {
  std::string name;
  uint32_t cores = 1;  // cores that take part; the others pass the task through
  std::vector<StepExec> steps;
  // Argument values, one 8-byte slot per parameter (every signature type fits), and the
  // pointer arrays libffi reads. Sized once; never reallocated after the steps point in.
  std::vector<uint64_t> arg_slots;
  std::vector<void *> arg_pointers;
  // Per-step sync state. Counters count up by `cores` of the step each launch and are never
  // reset in the hot path: launch e's step i has done a thing when its counter reaches
  // e * steps[i].cores.
  //  released[i]: every core of step i let step i+1 run (at sk_set_next_task_start or its end);
  //  ended[i]:    every core of step i ended; a counter of its own only for steps that release
  //               early (arrive_in_kernel), otherwise it is released[i].
  std::unique_ptr<StepCounter[]> released;
  std::unique_ptr<StepCounter[]> ended;
  std::unique_ptr<StepBarrier[]> barriers;
  // Launch epochs: next_epoch is assigned under the executor's submit lock; completed_epoch is
  // published by the last core of each launch.
  uint32_t next_epoch = 0;
  std::atomic<uint32_t> completed_epoch{0};
  // What the steps' code needs alive while the program is queued (an unfused launch holds its
  // kernel, so unloading the module right after sk_launch_kernel is safe).
  std::vector<std::shared_ptr<const void>> keep_alive;

  // Sizes the sync state for steps.size() steps (call once the steps are final).
  void allocate_sync_state();
};

}  // namespace sk::host
