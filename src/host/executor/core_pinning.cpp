// CorePinning (core_pinning.hpp): binding the cores' threads, and moving one off core 0's CPU.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <utility>

#include "host/executor/core_pinning.hpp"

namespace sk::host {

namespace {
// Binds `thread` to `cpu` alone; best effort (a failure only costs speed): says whether it took.
bool bind_to_cpu(pthread_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread, sizeof set, &set) == 0;
}
}  // namespace

CorePinning::CorePinning(uint32_t cores, std::vector<int> cpus)
    : cpus_(std::move(cpus)), core_cpu_(cores, -1), core_thread_(cores) {}

void CorePinning::pin(uint32_t core, pthread_t thread, int cpu) {
  // `cpu` is the one claimed for the core: with this the only executor, the c-th of
  // cpu_pinning_order; the first one is left to core 0, whose thread (a host thread, or its own
  // with core0_thread) goes where the scheduler puts it: keep_off_core0_cpu moves a core that
  // finds it on its CPU. Unpinned, core 0 takes whichever CPU is free, as a host thread would.
  core_thread_[core] = thread;
  if (bind_to_cpu(core_thread_[core], cpu)) core_cpu_[core] = cpu;
}

bool CorePinning::core_holds(int cpu) const {
  return std::find(core_cpu_.begin(), core_cpu_.end(), cpu) != core_cpu_.end();
}

void CorePinning::keep_dedicated_core0_off_cores(pthread_t thread) const {
  if (cpus_.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus_)
    if (!core_holds(cpu)) CPU_SET(cpu, &set);
  if (CPU_COUNT(&set) == 0) return;  // a core on every CPU: let the scheduler place it
  // Best effort, like pinning.
  pthread_setaffinity_np(thread, sizeof set, &set);
}

void CorePinning::keep_off_core0_cpu() {
  if (cpus_.size() < 2) return;
  const int cpu = sched_getcpu();
  if (cpu < 0 || cpu == last_core0_cpu_) return;
  last_core0_cpu_ = cpu;
  for (size_t c = 1; c < core_cpu_.size(); ++c) {
    if (core_cpu_[c] != cpu) continue;
    for (int free_cpu : cpus_) {
      if (core_holds(free_cpu)) continue;
      if (bind_to_cpu(core_thread_[c], free_cpu)) core_cpu_[c] = free_cpu;
      return;
    }
    return;  // every CPU has a core: nothing better to do
  }
}

}  // namespace sk::host
