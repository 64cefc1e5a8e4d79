#include "host/executor/cpu_order.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>

namespace sk::host {
namespace {

// The CPUs sharing `cpu`'s physical core, as the kernel prints them ("0,8" or "0-1"): every
// sibling prints the same text, so it identifies the core without parsing. core_cpus_list is
// the name since Linux 5.6; thread_siblings_list the older one (still there).
std::string physical_core_of(int cpu, const std::string &root) {
  const std::string topology = root + "/cpu" + std::to_string(cpu) + "/topology/";
  for (const char *name : {"core_cpus_list", "thread_siblings_list"}) {
    std::ifstream in(topology + name);
    std::string text;
    if (in && std::getline(in, text)) {
      text.erase(text.find_last_not_of(" \t\r\n") + 1);
      if (!text.empty()) return text;
    }
  }
  return "cpu" + std::to_string(cpu);  // unknown: a core of its own
}

}  // namespace

std::vector<int> cpu_pinning_order(const std::vector<int> &allowed, const std::string &sysfs_cpu_root) {
  // Each CPU's place: (its thread's rank among the allowed threads of its physical core, the
  // first allowed CPU of that core). Sorting by it takes the first thread of every core in
  // numeric order, then the second threads in the order of their cores, and so on.
  std::map<std::string, std::pair<int, int>> cores;  // physical core -> (first CPU, threads seen)
  std::vector<std::tuple<int, int, int>> places;     // (rank, core's first CPU, cpu)
  places.reserve(allowed.size());
  for (int cpu : allowed) {
    auto it = cores.try_emplace(physical_core_of(cpu, sysfs_cpu_root), cpu, 0).first;
    places.emplace_back(it->second.second++, it->second.first, cpu);
  }
  std::stable_sort(places.begin(), places.end());
  std::vector<int> order;
  order.reserve(places.size());
  for (const auto &place : places) order.push_back(std::get<2>(place));
  return order;
}

}  // namespace sk::host
