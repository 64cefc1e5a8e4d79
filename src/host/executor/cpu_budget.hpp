// How many CPUs this process can use. It is the host device's default core count, and what the
// executor compares its cores with to decide whether they crowd their CPUs (WaitPolicy::yield,
// the idle spin's growth). Two limits count, and the online CPU count (sysconf) knows neither:
// * the affinity mask (taskset, a container's cpuset): no thread of ours runs outside it;
// * the cgroup's CPU bandwidth quota (docker --cpus, a Kubernetes CPU limit): once the
//   cgroup's threads have used quota of CPU time in a period (100 ms by default), the kernel
//   stops them all until the period ends, on however many CPUs they ran.
// Spinning cores on more CPUs than the quota pays for spend it on waiting (docs/benchmarks.md,
// "Where the cores run").
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace sk::host {

// The CPUs the calling thread may run on (its affinity mask), in increasing order; empty if
// unreadable.
std::vector<int> allowed_cpus();

// The CPU quota, in CPUs (quota / period), of the cgroup that `proc_self_cgroup` (the text of
// /proc/self/cgroup) names, read through the mounts `mountinfo` (the text of
// /proc/self/mountinfo) lists: the smallest over that cgroup and its ancestors up to the
// mount, in the cgroup v2 hierarchy (cpu.max) and the v1 cpu controller's (cpu.cfs_quota_us
// over cpu.cfs_period_us). 0 when no level sets one: a file missing or not understood is no
// limit, as a quota we cannot read is one we cannot honour anyway.
double cgroup_cpu_quota(std::string_view proc_self_cgroup, std::string_view mountinfo);

// The CPUs this process can use: `allowed`'s count (the online CPUs when it is empty), at
// most this process's cgroup quota rounded up (1.5 CPUs: 2 cores), and at least 1.
uint32_t usable_cpu_count(const std::vector<int> &allowed);

}  // namespace sk::host
