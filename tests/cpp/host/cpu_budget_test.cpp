// The CPUs the host device counts on: cgroup CPU quotas read from cgroup trees written here
// (v2 and v1, nested limits, a mount showing part of the hierarchy, escaped mount points,
// files that say nothing usable), and on this machine: the default core count under a
// narrowed affinity mask, and inside a real cgroup with a quota where the test may make one.
#include "host/executor/cpu_budget.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cpu_quota_cgroup.hpp"
#include "host/host_device.hpp"

namespace sk::host {
namespace {

namespace fs = std::filesystem;

// A folder of its own standing for cgroup mounts, removed at the end of the test.
class FakeCgroups {
 public:
  FakeCgroups() {
    std::string tmpl = (fs::temp_directory_path() / "sk-cpu-budget-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
  }
  ~FakeCgroups() { fs::remove_all(root_); }
  std::string path(const std::string &relative) const { return root_ + "/" + relative; }
  void write(const std::string &relative, const std::string &text) const {
    const fs::path file = path(relative);
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
  }
  // A mountinfo line mounting a cgroup hierarchy (root `root`) at `point`.
  static std::string v2_mount(const std::string &point, const std::string &root = "/") {
    return "41 31 0:38 " + root + " " + point + " rw,relatime shared:9 - cgroup2 cgroup2 rw\n";
  }
  static std::string v1_mount(const std::string &point, const std::string &controllers,
                              const std::string &root = "/") {
    return "32 31 0:29 " + root + " " + point + " rw,relatime - cgroup cgroup rw," + controllers + "\n";
  }

 private:
  std::string root_;
};

constexpr const char *kOtherMounts =
    "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n";

TEST(CpuBudget, ACgroupV2QuotaIsTheSmallestOfItsOwnAndItsAncestors) {
  FakeCgroups fs;
  const std::string mounts = std::string(kOtherMounts) + FakeCgroups::v2_mount(fs.path("unified"));
  fs.write("unified/cpu.max", "max 100000");  // the root: no limit
  fs.write("unified/app/cpu.max", "250000 100000");
  fs.write("unified/app/worker/cpu.max", "max 100000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/app/worker\n", mounts), 2.5);  // the parent's
  fs.write("unified/app/worker/cpu.max", "150000 100000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/app/worker\n", mounts), 1.5);  // its own, smaller
  fs.write("unified/app/worker/cpu.max", "50000 10000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/app/worker\n", mounts), 2.5);  // 5 CPUs: the parent's wins
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/\n", mounts), 0);              // the root sets none
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/elsewhere\n", mounts), 0);     // no folder, no files
}

TEST(CpuBudget, ACgroupV1QuotaComesFromTheMountHoldingTheCpuController) {
  FakeCgroups fs;
  const std::string mounts = std::string(kOtherMounts) + FakeCgroups::v1_mount(fs.path("memory"), "memory") +
                             FakeCgroups::v1_mount(fs.path("cpu,cpuacct"), "cpu,cpuacct");
  const std::string cgroup = "5:memory:/job\n4:cpu,cpuacct:/job\n0::/\n";
  fs.write("memory/job/cpu.cfs_quota_us", "100000");  // not the cpu controller's mount: ignored
  fs.write("memory/job/cpu.cfs_period_us", "100000");
  fs.write("cpu,cpuacct/job/cpu.cfs_quota_us", "-1");
  fs.write("cpu,cpuacct/job/cpu.cfs_period_us", "100000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(cgroup, mounts), 0);  // -1: no limit
  fs.write("cpu,cpuacct/job/cpu.cfs_quota_us", "300000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(cgroup, mounts), 3);
  fs.write("cpu,cpuacct/job/cpu.cfs_period_us", "50000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(cgroup, mounts), 6);
}

TEST(CpuBudget, AMountShowingPartOfTheHierarchyIsReadFromItsOwnRoot) {
  // A container without a cgroup namespace: /proc/self/cgroup names the full path, and the
  // mount shows the hierarchy from the container's cgroup down.
  FakeCgroups fs;
  std::string mounts = FakeCgroups::v1_mount(fs.path("cpu"), "cpu", "/docker/c1");
  fs.write("cpu/cpu.cfs_quota_us", "200000");
  fs.write("cpu/cpu.cfs_period_us", "100000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("3:cpu:/docker/c1\n", mounts), 2);
  fs.write("cpu/sub/cpu.cfs_quota_us", "100000");
  fs.write("cpu/sub/cpu.cfs_period_us", "100000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("3:cpu:/docker/c1/sub\n", mounts), 1);
  // Outside the mount's root, or climbing out of a namespace's view: not reachable, no limit.
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("3:cpu:/docker/c10\n", mounts), 0);
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("3:cpu:/other\n", mounts), 0);
  mounts = FakeCgroups::v2_mount(fs.path("v2"));
  fs.write("v2/cpu.max", "100000 100000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/../../x\n", mounts), 0);
}

TEST(CpuBudget, AnEscapedMountPointIsFound) {
  FakeCgroups fs;
  fs.write("with space/cpu.max", "400000 100000");
  std::string point = fs.path("with\\040space");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/\n", FakeCgroups::v2_mount(point)), 4);
}

TEST(CpuBudget, BothHierarchiesCountAndTheSmallerQuotaWins) {
  FakeCgroups fs;
  const std::string mounts = FakeCgroups::v1_mount(fs.path("cpu"), "cpu") + FakeCgroups::v2_mount(fs.path("v2"));
  fs.write("cpu/a/cpu.cfs_quota_us", "300000");
  fs.write("cpu/a/cpu.cfs_period_us", "100000");
  fs.write("v2/b/cpu.max", "120000 100000");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("1:cpu:/a\n0::/b\n", mounts), 1.2);
}

TEST(CpuBudget, FilesThatSayNothingUsableSetNoLimit) {
  FakeCgroups fs;
  const std::string mounts = FakeCgroups::v2_mount(fs.path("v2"));
  for (const char *text : {"", "max", "abc 100000", "100000 0", "0 100000", "-5 100000", "100000",
                           "99999999999999999999 100000", "1.5 100000"}) {
    fs.write("v2/cpu.max", text);
    EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/\n", mounts), 0) << "cpu.max: '" << text << "'";
  }
  fs.write("v2/cpu.max", "100000 100000");
  for (const char *mountinfo : {"", "garbage", "41 31 0:38 / x - cgroup2", "- cgroup2 cgroup2 rw"})
    EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/\n", mountinfo), 0) << "mountinfo: '" << mountinfo << "'";
  for (const char *cgroup : {"", "0::", "0::relative", "nonsense", "4:memory:/"})
    EXPECT_DOUBLE_EQ(cgroup_cpu_quota(cgroup, mounts), 0) << "cgroup: '" << cgroup << "'";
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/\n", mounts), 1);  // the same files, read right
}

// The calling thread's affinity mask, narrowed for the test and restored after it.
class NarrowedAffinity {
 public:
  explicit NarrowedAffinity(int cpu) {
    ok_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok_ = ok_ && sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~NarrowedAffinity() { sched_setaffinity(0, sizeof saved_, &saved_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

uint32_t default_host_cores() {
  std::unique_ptr<HostDevice> dev;
  DeviceSpec spec;
  spec.backend = "host";
  EXPECT_EQ(HostDevice::open(spec, &dev), SK_OK);
  return dev ? dev->cores() : 0;
}

TEST(CpuBudget, TheDefaultCoreCountFollowsTheAffinityMask) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const uint32_t usable = usable_cpu_count(allowed);
  EXPECT_GE(usable, 1u);
  EXPECT_LE(usable, allowed.size());
  EXPECT_EQ(default_host_cores(), usable);
  NarrowedAffinity narrowed(allowed.back());
  ASSERT_TRUE(narrowed.ok());
  EXPECT_EQ(allowed_cpus(), std::vector<int>{allowed.back()});
  EXPECT_EQ(usable_cpu_count(allowed_cpus()), 1u);
  EXPECT_EQ(default_host_cores(), 1u);  // sysconf's online count says allowed.size() or more
}

TEST(CpuBudget, InsideACgroupWithAOneCpuQuotaTheDefaultDeviceHasOneCore) {
  const std::vector<int> allowed = allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "one CPU: the quota would change nothing";
  sk::test::InCpuQuotaCgroup quota;
  if (!quota.ok()) GTEST_SKIP() << "cannot make a cgroup v1 cpu folder here (needs root and a v1 cpu hierarchy)";
  EXPECT_EQ(usable_cpu_count(allowed), 1u);
  EXPECT_EQ(default_host_cores(), 1u);
}

}  // namespace
}  // namespace sk::host
