#include "cuda/diagnostic_dump.hpp"

#include <sk_kernel.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cuda/entry_ptx.hpp"

namespace sk::cuda {
namespace {

std::string directory() {
  const char *dir = std::getenv(kDumpDirEnv);
  return dir && *dir ? dir : "";
}

std::string file_name(uint64_t id, const std::string &name, const char *suffix) {
  std::string safe = name.substr(0, 80);
  for (char &c : safe)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == '-'))
      c = '_';
  return directory() + "/" + std::to_string(getpid()) + "-" + std::to_string(id) + "-" + safe + suffix;
}

}  // namespace

bool dumping() { return !directory().empty(); }

void dump_image(uint64_t id, const std::string &name, const char *suffix, const void *bytes, size_t size) {
  if (!dumping()) return;
  std::ofstream f(file_name(id, name, suffix), std::ios::binary);
  f.write(static_cast<const char *>(bytes), (std::streamsize)size);
}

void dump_sync_buffer(uint64_t id, const std::string &name, const std::vector<std::string> &step_names,
                      const std::vector<uint64_t> &words, const std::string &message) {
  if (!dumping()) return;
  const SyncLayout layout = sync_layout(step_names.size());
  if (words.size() * 8 < layout.bytes) return;
  std::ofstream f(file_name(id, name, ".sync.txt"));
  auto word = [&](size_t byte) { return (unsigned long long)words[byte / 8]; };
  f << "# " << message << "\n";
  f << "# super kernel '" << name << "' (id " << id << "), " << step_names.size()
    << " steps: its sync buffer (cuda/entry_ptx.hpp's sync_layout) after the launches the synchronisation waited "
       "for\n";
  f << "epoch " << word(layout.epoch) << "\ndone " << word(layout.done) << "\nrun " << word(layout.run) << "\n";
  for (size_t i = 0; i < step_names.size(); ++i)
    f << "arrivals[" << i << "] " << word(layout.arrivals + 8 * i) << " '" << step_names[i] << "'\n";
  for (size_t i = 0; i < step_names.size(); ++i)
    f << "sync_all[" << i << "] " << word(layout.sync_all + 8 * i) << " '" << step_names[i] << "'\n";
  for (size_t i = 0; i < step_names.size(); ++i)
    f << "grid[" << i << "] " << word(layout.grid + 8 * i) << " '" << step_names[i] << "'\n";
  for (size_t i = 0; i < SK_CROSS_CORE_FLAGS; ++i) f << "flag[" << i << "] " << word(layout.flags + 8 * i) << "\n";
  static const char *const report[kReportWords] = {"epoch", "id",   "step",   "block",
                                                   "point", "seen", "target", "abort"};
  for (size_t w = 0; w < kReportWords; ++w) {
    f << "report." << report[w] << " " << word(layout.report + 8 * w);
    if (w == kReportStep && word(layout.report + 8 * w) < step_names.size())
      f << " '" << step_names[word(layout.report + 8 * w)] << "'";
    if (w == kReportPoint) f << " (" << sync_point_name((uint32_t)word(layout.report + 8 * w)) << ")";
    f << "\n";
  }
}

}  // namespace sk::cuda
