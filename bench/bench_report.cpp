#include "bench_report.hpp"

#include <cstdio>

namespace bench {

void Report::add(const std::string &scenario, std::vector<std::pair<std::string, double>> fields) {
  records_.emplace_back(scenario, std::move(fields));
}

bool Report::write_json(const std::string &path) const {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::perror(path.c_str());
    return false;
  }
  std::fprintf(f, "[\n");
  for (size_t r = 0; r < records_.size(); ++r) {
    std::fprintf(f, "  {\"scenario\": \"%s\"", records_[r].first.c_str());
    for (const auto &[k, v] : records_[r].second) std::fprintf(f, ", \"%s\": %.6g", k.c_str(), v);
    std::fprintf(f, "}%s\n", r + 1 < records_.size() ? "," : "");
  }
  std::fprintf(f, "]\n");
  std::fclose(f);
  std::printf("\nwrote %s\n", path.c_str());
  return true;
}

}  // namespace bench
