// Which CPUs the cores of this process's live executors were given (one executor per open host
// device), so that a second device's cores go to the CPUs the first left free.
//
// Why: pinning core c of every executor to the c-th CPU of the pinning order would put the
// cores of two devices open at once on the same CPUs and leave the others idle. Where there are
// too few CPUs for both, they share them (docs/benchmarks.md, "Where the cores run").
//
// Claims are taken when an executor starts and given back when it stops (a mutex: neither is
// on the launch path). A core that CorePinning::keep_off_core0_cpu later moves keeps its claim on
// the CPU it was first given.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/fork_guard.hpp"

namespace sk::host {

class CpuClaims {
 public:
  // The process's claims (its mutex held across fork(): common/fork_guard.hpp).
  static CpuClaims &process();

  // Claims `count` CPUs for `owner`'s cores 0..count-1 from `order` (cpu_pinning_order of
  // the CPUs the process may use): each the least-claimed, the first in `order` among equals.
  // Core 0's is not pinned (host threads run core 0) but kept free of other cores. Returns
  // them in core order; empty if `order` is.
  std::vector<int> claim(const void *owner, const std::vector<int> &order, size_t count);
  void release(const void *owner);  // an owner never seen, or released already: nothing to do

 private:
  struct Owner {
    const void *id;
    std::vector<int> cpus;
  };

  std::mutex mutex_;
  std::vector<Owner> owners_;
  // fork_generation() when owners_ was last written. In a fork() child the owners are executors
  // whose cores stayed in the parent: the first claim there drops them all.
  uint32_t generation_ = fork_generation();
};

}  // namespace sk::host
