// The order in which the host device's cores take CPUs when pinned (device key pin=1): one
// hardware thread of every physical core before a second thread of any.
//
// Why: SMT siblings share one core's execution units. Two host cores on siblings run their
// kernels at about half speed each (docs/benchmarks.md, "The machine's states"). Linux numbers
// siblings either apart (0-7, then their siblings 8-15) or side by side (0 and 1 on one core);
// taking CPUs in numeric order would put cores=8 on 4 physical cores of a 16-thread machine in
// the second case. The scheduler, which places the
// unpinned threads of OpenMP and of most pools, already spreads over physical cores first.
#pragma once
#include <string>
#include <vector>

namespace sk::host {

// `allowed`: the CPUs the process may run on, in increasing order. `sysfs_cpu_root`: the
// folder holding cpuN/topology (a test points it at a tree of its own). A CPU whose
// topology cannot be read counts as a physical core of its own, so the order degrades to
// `allowed` itself.
std::vector<int> cpu_pinning_order(const std::vector<int> &allowed,
                                   const std::string &sysfs_cpu_root = "/sys/devices/system/cpu");

}  // namespace sk::host
