// cpu_pinning_order: the order in which pinned host cores take CPUs, read from sysfs topology
// trees written here (siblings numbered apart, side by side, an affinity mask that leaves out
// some threads, kernels without core_cpus_list, no topology at all) and from this machine's.
#include "host/executor/cpu_order.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace sk::host {
namespace {

namespace fs = std::filesystem;

// A sysfs cpu folder of its own, removed at the end of the test.
class FakeSysfs {
 public:
  FakeSysfs() {
    std::string tmpl = (fs::temp_directory_path() / "sk-cpu-order-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  const std::string &root() const { return root_; }
  // Writes cpuN/topology/<file> with `text` and the newline the kernel ends it with.
  void write(int cpu, const std::string &file, const std::string &text) const {
    const fs::path dir = fs::path(root_) / ("cpu" + std::to_string(cpu)) / "topology";
    fs::create_directories(dir);
    std::ofstream(dir / file) << text << "\n";
  }
  // `siblings[c]`: the sibling list every thread of physical core c prints; threads `cpus[c]`.
  void cores(const std::vector<std::vector<int>> &cpus, const std::vector<std::string> &siblings,
             const std::string &file = "core_cpus_list") const {
    for (size_t c = 0; c < cpus.size(); ++c)
      for (int cpu : cpus[c]) write(cpu, file, siblings[c]);
  }

 private:
  std::string root_;
};

std::vector<int> range(int first, int end) {
  std::vector<int> v(static_cast<size_t>(end - first));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(CpuOrder, SiblingsNumberedApartKeepTheirOrder) {
  // 8 cores, 16 threads: cpu c and c + 8 share core c (the usual x86 numbering).
  FakeSysfs sys;
  for (int c = 0; c < 8; ++c) sys.cores({{c, c + 8}}, {std::to_string(c) + "," + std::to_string(c + 8)});
  EXPECT_EQ(cpu_pinning_order(range(0, 16), sys.root()), range(0, 16));
}

TEST(CpuOrder, SiblingsSideBySideTakeEveryCoreBeforeASecondThread) {
  // 8 cores, 16 threads: cpus 2c and 2c + 1 share core c.
  FakeSysfs sys;
  for (int c = 0; c < 8; ++c)
    sys.cores({{2 * c, 2 * c + 1}}, {std::to_string(2 * c) + "-" + std::to_string(2 * c + 1)});
  const std::vector<int> expected = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};
  EXPECT_EQ(cpu_pinning_order(range(0, 16), sys.root()), expected);
}

TEST(CpuOrder, AnAffinityMaskCountsOnlyTheThreadsItAllows) {
  // Siblings side by side; the process may run on 1, 2, 3 and 5: core 0 only through cpu 1,
  // core 1 through 2 and 3, core 2 only through 5.
  FakeSysfs sys;
  sys.cores({{0, 1}, {2, 3}, {4, 5}}, {"0-1", "2-3", "4-5"});
  EXPECT_EQ(cpu_pinning_order({1, 2, 3, 5}, sys.root()), (std::vector<int>{1, 2, 5, 3}));
}

TEST(CpuOrder, FourThreadsPerCoreComeInRanks) {
  FakeSysfs sys;
  sys.cores({{0, 1, 2, 3}, {4, 5, 6, 7}}, {"0-3", "4-7"});
  EXPECT_EQ(cpu_pinning_order(range(0, 8), sys.root()), (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(CpuOrder, KernelsBeforeCoreCpusListUseThreadSiblingsList) {
  FakeSysfs sys;
  sys.cores({{0, 1}, {2, 3}}, {"0-1", "2-3"}, "thread_siblings_list");
  EXPECT_EQ(cpu_pinning_order(range(0, 4), sys.root()), (std::vector<int>{0, 2, 1, 3}));
}

TEST(CpuOrder, UnreadableTopologyLeavesTheAllowedOrder) {
  FakeSysfs sys;  // no cpuN folders at all
  EXPECT_EQ(cpu_pinning_order({0, 1, 2, 3}, sys.root()), (std::vector<int>{0, 1, 2, 3}));
  // An empty file is no topology either (not one core shared by every CPU).
  sys.write(0, "core_cpus_list", "");
  sys.write(1, "core_cpus_list", "");
  EXPECT_EQ(cpu_pinning_order({0, 1}, sys.root()), (std::vector<int>{0, 1}));
  EXPECT_EQ(cpu_pinning_order({}, sys.root()), std::vector<int>{});
}

TEST(CpuOrder, ThisMachinesOrderIsAPermutationWithEveryCoreFirst) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> allowed;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) allowed.push_back(cpu);
  std::vector<int> order = cpu_pinning_order(allowed);
  ASSERT_EQ(order.size(), allowed.size());
  // No CPU's sibling list repeats before every physical core has appeared once.
  std::vector<std::string> seen;
  bool repeated = false;
  for (int cpu : order) {
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/core_cpus_list");
    std::string core;
    if (!std::getline(in, core)) core = "cpu" + std::to_string(cpu);
    const bool again = std::find(seen.begin(), seen.end(), core) != seen.end();
    if (!again) {
      EXPECT_FALSE(repeated) << "cpu " << cpu << " opens a physical core after a second thread of another";
      seen.push_back(core);
    }
    repeated = repeated || again;
  }
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, allowed);
}

}  // namespace
}  // namespace sk::host
