// Test support: this process moved into a cgroup whose CPU quota is one CPU, and back.
#pragma once
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sk::test {

// This process moved into a new cgroup v1 cpu folder with a quota of one CPU, and back at the
// end; `ok()` false where that is not allowed (not root, no v1 cpu hierarchy, ...).
class InCpuQuotaCgroup {
 public:
  InCpuQuotaCgroup() {
    std::ifstream cgroup("/proc/self/cgroup");
    std::string line;
    while (std::getline(cgroup, line)) {
      const size_t a = line.find(':'), b = line.find(':', a + 1);
      if (b == std::string::npos) continue;
      const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
      if (controllers.find(",cpu,") != std::string::npos) mount_ = "/sys/fs/cgroup/" + line.substr(a + 1, b - a - 1);
      if (!mount_.empty()) {
        home_ = mount_ + line.substr(b + 1);
        break;
      }
    }
    if (home_.empty() || !std::filesystem::exists(home_ + "/cgroup.procs")) return;
    folder_ = home_ + "/sk-cpu-quota-test-" + std::to_string(getpid());
    if (mkdir(folder_.c_str(), 0755) != 0) {
      folder_.clear();
      return;
    }
    ok_ = write(folder_ + "/cpu.cfs_period_us", "100000") && write(folder_ + "/cpu.cfs_quota_us", "100000") &&
          write(folder_ + "/cgroup.procs", std::to_string(getpid()));
  }
  ~InCpuQuotaCgroup() {
    if (folder_.empty()) return;
    write(home_ + "/cgroup.procs", std::to_string(getpid()));
    rmdir(folder_.c_str());
  }
  bool ok() const { return ok_; }

 private:
  static bool write(const std::string &file, const std::string &text) {
    std::ofstream out(file);
    out << text << std::flush;
    return static_cast<bool>(out);
  }
  std::string mount_, home_, folder_;
  bool ok_ = false;
};

}  // namespace sk::test
