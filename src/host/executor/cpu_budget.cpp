#include "host/executor/cpu_budget.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace sk::host {

namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t begin = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != sep) continue;
    out.push_back(text.substr(begin, i - begin));
    begin = i + 1;
  }
  return out;
}

bool has_item(std::string_view list, std::string_view item) {
  for (std::string_view s : split(list, ','))
    if (s == item) return true;
  return false;
}

// mountinfo writes a space, tab, newline and backslash in a path as \ooo (octal).
std::string unescape_mount_path(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + i + 1, s.begin() + i + 4, [](char c) { return c >= '0' && c <= '7'; })) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A cgroup hierarchy as this process sees it: where it is mounted, which of its cgroups the
// mount's folder shows (`root`), and which cgroup this process is in (`path`).
struct Hierarchy {
  bool v2 = false;
  std::string root, mount_point, path;
};

// The cgroup v2 mount and the v1 mount of the cpu controller, from mountinfo's lines:
// "id parent major:minor root mount-point options [optional fields] - fstype source super-options".
std::vector<Hierarchy> cgroup_mounts(std::string_view mountinfo) {
  std::vector<Hierarchy> out;
  bool have_v1 = false, have_v2 = false;
  for (std::string_view line : split(mountinfo, '\n')) {
    std::vector<std::string_view> f;
    for (std::string_view w : split(line, ' '))
      if (!w.empty()) f.push_back(w);
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string_view fstype = dash[1], super_options = dash[3];
    const bool v2 = fstype == "cgroup2";
    if (!v2 && !(fstype == "cgroup" && has_item(super_options, "cpu"))) continue;
    if ((v2 && have_v2) || (!v2 && have_v1)) continue;  // the first mount will do
    (v2 ? have_v2 : have_v1) = true;
    out.push_back({v2, unescape_mount_path(f[3]), unescape_mount_path(f[4]), ""});
  }
  return out;
}

// Fills each hierarchy's `path` from /proc/self/cgroup's lines "id:controllers:path" (v2:
// "0::path").
void find_own_cgroups(std::string_view proc_self_cgroup, std::vector<Hierarchy> &hierarchies) {
  for (std::string_view line : split(proc_self_cgroup, '\n')) {
    const size_t a = line.find(':'), b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const bool v2 = id == "0" && controllers.empty();
    if (!v2 && !has_item(controllers, "cpu")) continue;
    for (Hierarchy &h : hierarchies)
      if (h.v2 == v2) h.path = std::string(line.substr(b + 1));
  }
}

bool read_file(const std::string &path, std::string *text) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

// A whole positive decimal number (surrounding whitespace allowed).
bool parse_positive(std::string_view s, double *out) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *out = static_cast<double>(std::strtoull(std::string(s).c_str(), nullptr, 10));
  return *out > 0;
}

// The tighter of two quotas, where 0 is none.
double tighter(double a, double b) { return a == 0 || (b > 0 && b < a) ? b : a; }

// The quota one cgroup folder sets, in CPUs; 0: none (or unreadable).
double folder_quota(const Hierarchy &h, const std::string &folder) {
  double quota = 0, period = 0;
  std::string text;
  if (h.v2) {
    // cpu.max: "max 100000" (no limit) or "<quota> <period>", in microseconds.
    if (!read_file(folder + "/cpu.max", &text)) return 0;
    std::istringstream in(text);
    std::string q, p;
    if (!(in >> q >> p) || !parse_positive(q, &quota) || !parse_positive(p, &period)) return 0;
  } else {
    // cpu.cfs_quota_us: -1 (no limit) or microseconds per cpu.cfs_period_us.
    if (!read_file(folder + "/cpu.cfs_quota_us", &text) || !parse_positive(text, &quota)) return 0;
    if (!read_file(folder + "/cpu.cfs_period_us", &text) || !parse_positive(text, &period)) return 0;
  }
  return quota / period;
}

// The smallest quota from this process's cgroup in `h` up to the mount's root; 0: none.
double hierarchy_quota(const Hierarchy &h) {
  if (h.path.empty() || h.path[0] != '/') return 0;
  // The cgroup's folder under the mount point. A mount shows the hierarchy from `root` down;
  // a cgroup outside it (another namespace's view) is not reachable here.
  std::string relative;
  if (h.root == "/") {
    relative = h.path;
  } else if (h.path == h.root || (h.path.compare(0, h.root.size(), h.root) == 0 && h.path[h.root.size()] == '/')) {
    relative = h.path.substr(h.root.size());
  } else {
    return 0;
  }
  while (!relative.empty() && relative.back() == '/') relative.pop_back();
  // A path that climbs ("/../..": a cgroup outside this namespace's view) is not reachable.
  for (std::string_view part : split(relative, '/'))
    if (part == "..") return 0;
  double smallest = 0;
  for (;;) {
    smallest = tighter(smallest, folder_quota(h, h.mount_point + relative));
    if (relative.empty()) break;
    relative.resize(relative.rfind('/'));
  }
  return smallest;
}

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

double cgroup_cpu_quota(std::string_view proc_self_cgroup, std::string_view mountinfo) {
  std::vector<Hierarchy> hierarchies = cgroup_mounts(mountinfo);
  find_own_cgroups(proc_self_cgroup, hierarchies);
  double smallest = 0;
  for (const Hierarchy &h : hierarchies) smallest = tighter(smallest, hierarchy_quota(h));
  return smallest;
}

uint32_t usable_cpu_count(const std::vector<int> &allowed) {
  long count = static_cast<long>(allowed.size());
  if (count == 0) count = sysconf(_SC_NPROCESSORS_ONLN);
  std::string cgroup, mountinfo;
  if (read_file("/proc/self/cgroup", &cgroup) && read_file("/proc/self/mountinfo", &mountinfo)) {
    const double quota = cgroup_cpu_quota(cgroup, mountinfo);
    if (quota > 0) count = std::min(count, static_cast<long>(std::ceil(quota)));
  }
  return count > 0 ? static_cast<uint32_t>(count) : 1;
}

}  // namespace sk::host
