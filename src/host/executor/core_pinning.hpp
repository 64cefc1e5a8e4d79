// Where the executor's threads run (device key pin): each core's thread bound to the CPU claimed
// for it (cpu_claims.hpp), the dedicated core-0 thread kept to the CPUs no core holds
// (core0=caller), and a core moved off the CPU of whichever thread runs core 0.
#pragma once
#include <pthread.h>

#include <cstdint>
#include <vector>

namespace sk::host {

class CorePinning {
 public:
  CorePinning() = default;
  // `cpus`: the CPUs the process may run on, in cpu_pinning_order; empty: nothing is pinned.
  CorePinning(uint32_t cores, std::vector<int> cpus);

  // Binds core `core`'s thread (cores 1 .. N-1) to `cpu`, the one claimed for it. Before any
  // launch (Executor::create).
  void pin(uint32_t core, pthread_t thread, int cpu);
  // Binds the dedicated core-0 thread to the CPUs no core was pinned to (where host threads run
  // core 0), if there are any. A core that calls it, and goes on spinning, would otherwise often
  // have the scheduler wake it onto that core's own CPU, to wait there for the spin.
  void keep_dedicated_core0_off_cores(pthread_t thread) const;
  // Called by the thread running core 0 (a host thread or the dedicated one) before each task:
  // if a pinned core shares its CPU, moves that core to the CPU no core holds (two cores
  // spinning for each other on one CPU meet only when one yields).
  void keep_off_core0_cpu();
  // The CPU each core is bound to, -1: not bound. For tests, between launches.
  const std::vector<int> &core_cpus() const { return core_cpu_; }

 private:
  bool core_holds(int cpu) const;  // a pinned core is bound to `cpu`

  // Set before any launch and then read and changed only by the holder of core 0's token
  // (keep_off_core0_cpu), whose hand-over orders it: no lock, as the launch path takes none.
  std::vector<int> cpus_;      // the CPUs the process may run on, in cpu_pinning_order
  std::vector<int> core_cpu_;  // CPU each core is bound to, -1: not bound
  std::vector<pthread_t> core_thread_;
  int last_core0_cpu_ = -1;
};

}  // namespace sk::host
