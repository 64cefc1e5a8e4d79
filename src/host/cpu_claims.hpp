// Which CPUs the pinned cores of this process's live executors hold (one executor per open host
// device), so that a second device's cores go to CPUs the first left free, and so that each
// executor knows whether one of its CPUs also holds another executor's core.
//
// Why it matters: a core waiting for another spins without giving its CPU away (WaitPolicy::
// yield), since a yield hands the CPU to whatever else runs there for a whole time slice. That
// is right only while each core has its CPU to itself. Two devices that pinned their cores to
// the same CPUs, used at once, would each spin while the other's core waits for the CPU; so
// an executor whose CPUs are shared yields again, until the sharing ends.
//
// Claims are taken when an executor starts and given back when it stops (a mutex: neither is
// on the launch path). A core that Executor::keep_off_core0_cpu later moves keeps its claim on
// the CPU it was first given.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace sk::host {

class CpuClaims {
 public:
  static CpuClaims &process();

  // Claims `count` CPUs for `owner`'s cores 0..count-1 from `order` (cpu_pinning_order of
  // the CPUs the process may use): each the least-claimed, the first in `order` among equals.
  // Core 0's is not pinned (host threads run core 0) but kept free of other cores. Returns
  // them in core order. `shared` is set now, and kept up to date until release, to whether
  // any of them is also claimed by another owner.
  std::vector<int> claim(const void *owner, const std::vector<int> &order, size_t count, std::atomic<bool> *shared);
  void release(const void *owner);

 private:
  struct Owner {
    const void *id;
    std::vector<int> cpus;
    std::atomic<bool> *shared;
  };
  int claims_on(int cpu) const;  // under mutex_
  void update_shared();          // under mutex_

  std::mutex mutex_;
  std::vector<Owner> owners_;
};

}  // namespace sk::host
