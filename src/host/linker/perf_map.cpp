#include "host/linker/perf_map.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/error.hpp"

namespace sk::host {
namespace {

std::mutex &map_mutex() {  // devices of one process share the file
  static std::mutex m;
  return m;
}

int open_map() { return ::open(perf_map_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644); }

}  // namespace

std::string perf_map_path() { return "/tmp/perf-" + std::to_string(::getpid()) + ".map"; }

bool perf_map_from_environment() {
  const char *v = std::getenv("SK_PERF_MAP");
  return v && std::strcmp(v, "1") == 0;
}

sk_status check_perf_map() {
  std::lock_guard<std::mutex> lock(map_mutex());
  int fd = open_map();
  if (fd < 0)
    return fail(SK_ERR_UNSUPPORTED, "perf_map=1: cannot open %s for appending: %s", perf_map_path().c_str(),
                std::strerror(errno));
  ::close(fd);
  return SK_OK;
}

void append_perf_map(const LinkedObject &object) {
  std::string lines;
  for (const CodeSymbol &f : object.code_symbols()) {
    if (f.size == 0) continue;  // a label without extent: perf could not place a sample in it
    char buf[64];
    std::snprintf(buf, sizeof buf, "%" PRIx64 " %" PRIx64 " ", reinterpret_cast<uint64_t>(f.address), f.size);
    lines.append(buf).append(f.name).push_back('\n');
  }
  if (lines.empty()) return;
  std::lock_guard<std::mutex> lock(map_mutex());
  int fd = open_map();
  if (fd < 0) return;
  // One write per object (O_APPEND): its lines stay together even beside other writers.
  for (size_t done = 0; done < lines.size();) {
    ssize_t n = ::write(fd, lines.data() + done, lines.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

}  // namespace sk::host
