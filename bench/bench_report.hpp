// sk-bench's output: aligned tables on stdout, every number also in one JSON file.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace bench {

struct Options {
  bool quick = false;
  std::vector<uint32_t> cores{2};
  std::string json_path;
  std::string device_keys;  // --device: more keys for every host device the run opens (pin=0, ...)
  std::string only;  // one scenario (overhead, small-ops, calls, gaps, build, core-sharing); empty: all but core-sharing
  bool runs(const char *scenario) const { return only.empty() || only == scenario; }
  int rounds() const { return quick ? 3 : 9; }
};

class Report {
 public:
  // A JSON record: scenario name and its (key, number) fields.
  void add(const std::string &scenario, std::vector<std::pair<std::string, double>> fields);
  bool write_json(const std::string &path) const;

 private:
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, double>>>> records_;
};

}  // namespace bench
