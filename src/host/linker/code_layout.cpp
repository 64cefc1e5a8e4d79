#include "host/linker/code_layout.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/error.hpp"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace sk::host {
namespace {

// Addends of PC-relative references to a symbol are small (-4, a field offset): keep this much
// slack (an eighth of short reaches) so that the exact per-relocation checks later do not fail
// at the edge of the window.
constexpr uint64_t kReachMargin = 16ull << 20;
// User space: x86-64 with 4-level paging, AArch64 with at most 48-bit virtual addresses (where
// mmap hands out addresses just below 2^48); the lowest address mmap hands out by default.
#if defined(__aarch64__)
constexpr uint64_t kUserTop = 1ull << 48;
#else
constexpr uint64_t kUserTop = 1ull << 47;
#endif
constexpr uint64_t kUserBottom = 1ull << 16;

struct Range {
  uint64_t begin, end;
};

// The ranges of the address space in use now, sorted.
std::vector<Range> used_ranges() {
  std::vector<Range> used;
  FILE *f = std::fopen("/proc/self/maps", "re");
  if (!f) return used;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    uint64_t b = 0, e = 0;
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64, &b, &e) == 2) used.push_back({b, e});
    // Lines longer than the buffer continue on the next read and fail the sscanf: harmless.
  }
  std::fclose(f);
  std::sort(used.begin(), used.end(), [](Range a, Range b) { return a.begin < b.begin; });
  return used;
}

std::atomic<size_t> live_mappings{0};

// The lines of a /proc file (-1 if unreadable); read_number: the number its text starts with.
// Both read into the stack: near the mapping limit an allocation may fail as well.
long count_lines(const char *path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long lines = 0;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
  ::close(fd);
  return lines;
}

long read_number(const char *path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[32] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  return n > 0 ? std::strtol(buf, nullptr, 10) : -1;
}

uint64_t align_up(uint64_t v, uint64_t a) { return v > UINT64_MAX - (a - 1) ? UINT64_MAX : (v + a - 1) & ~(a - 1); }
uint64_t align_down(uint64_t v, uint64_t a) { return v & ~(a - 1); }

// The start address in [lo, hi] (both aligned starts) of free range `gap` closest to `prefer`.
bool best_start(Range gap, uint64_t size, uint64_t alignment, uint64_t lo, uint64_t hi, uint64_t prefer,
                uint64_t *out) {
  uint64_t first = align_up(std::max(gap.begin, lo), alignment);
  if (gap.end < size) return false;
  uint64_t last = std::min(align_down(gap.end - size, alignment), hi);
  if (first > last) return false;
  *out = std::clamp(align_down(prefer, alignment), first, last);
  return true;
}

}  // namespace

PlacementConstraint reach_constraint(uint64_t target, std::string why, uint64_t reach) {
  const uint64_t kReach = reach - std::min(kReachMargin, reach / 8);
  PlacementConstraint c;
  c.low = target > kReach ? target - kReach : 0;
  c.high = target > UINT64_MAX - kReach ? UINT64_MAX : target + kReach;
  c.why = std::move(why);
  return c;
}

Mapping::~Mapping() { reset(nullptr, 0); }

size_t Mapping::live() { return live_mappings.load(std::memory_order_relaxed); }

void Mapping::reset(void *address, size_t size) {
  if (address_) munmap(address_, size_), live_mappings.fetch_sub(1, std::memory_order_relaxed);
  if (address) live_mappings.fetch_add(1, std::memory_order_relaxed);
  address_ = address;
  size_ = size;
}

void *Mapping::release() {
  if (address_) live_mappings.fetch_sub(1, std::memory_order_relaxed);
  void *a = address_;
  address_ = nullptr;
  return a;
}

std::string mapping_failure_reason(int err, size_t linked_objects) {
  char text[512];
  if (err != ENOMEM) return std::strerror(err);
  const long maps = count_lines("/proc/self/maps");
  const long max_maps = read_number("/proc/sys/vm/max_map_count");
  // mprotect fails once a split would pass the limit, mmap once it is passed; [vsyscall] is
  // listed without counting: a few mappings of slack.
  if (maps >= 0 && max_maps > 0 && maps + 8 >= max_maps) {
    std::snprintf(text, sizeof text,
                  "the process has %ld memory mappings, the limit vm.max_map_count (%ld); %zu linked "
                  "kernel objects are loaded, of up to 3 mappings each (code, constants, data): "
                  "unload modules or raise vm.max_map_count",
                  maps, max_maps, linked_objects);
    return text;
  }
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::snprintf(text, sizeof text,
                  "out of address space: RLIMIT_AS is %llu bytes (%ld of vm.max_map_count's %ld "
                  "memory mappings used, %zu linked kernel objects loaded)",
                  static_cast<unsigned long long>(as.rlim_cur), maps, max_maps, linked_objects);
    return text;
  }
  std::snprintf(text, sizeof text,
                "out of memory (%ld of vm.max_map_count's %ld memory mappings used, %zu linked "
                "kernel objects loaded)",
                maps, max_maps, linked_objects);
  return text;
}

sk_status place_mapping(size_t size, size_t alignment, const std::vector<PlacementConstraint> &constraints,
                        uint64_t prefer, const std::string &label, Mapping *out) {
  // The window every start must fall in, and the constraints that set its two ends.
  uint64_t lo = kUserBottom, hi_end = kUserTop;
  const PlacementConstraint *lo_by = nullptr, *hi_by = nullptr;
  for (const PlacementConstraint &c : constraints) {
    if (c.low > lo) lo = c.low, lo_by = &c;
    if (c.high < hi_end) hi_end = c.high, hi_by = &c;
  }
  if (hi_end < size || lo > hi_end - size) {
    if (lo_by && hi_by)
      return fail(SK_ERR_UNSUPPORTED,
                  "%s: no address can satisfy both constraints of its short relocations: it must "
                  "%s, and it must %s (rebuild the object with -fPIC to lift them)",
                  label.c_str(), hi_by->why.c_str(), lo_by->why.c_str());
    const PlacementConstraint *c = lo_by ? lo_by : hi_by;
    return fail(SK_ERR_UNSUPPORTED, "%s: no user address can satisfy the constraint: it must %s", label.c_str(),
                c ? c->why.c_str() : "fit");
  }
  uint64_t hi = align_down(hi_end - size, alignment);  // last start allowed
  // Fast path: where the kernel maps by itself (beside the latest mappings, which in most
  // processes are the shared libraries) usually satisfies every constraint; reading
  // /proc/self/maps costs more than the rest of a link.
  void *guess = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (guess != MAP_FAILED) {
    const uint64_t at = reinterpret_cast<uint64_t>(guess);
    if (at >= lo && at <= hi && at % alignment == 0) {
      out->reset(guess, size);
      return SK_OK;
    }
    munmap(guess, size);
  }
  if (prefer == 0) prefer = lo + (hi - lo) / 2;
  for (int attempt = 0; attempt < 16; ++attempt) {
    // Free ranges between the mappings that exist now; take the start closest to `prefer`.
    std::vector<Range> used = used_ranges();
    uint64_t best = 0, best_dist = UINT64_MAX;
    uint64_t cursor = 0;
    auto consider = [&](Range gap) {
      uint64_t start;
      if (!best_start(gap, size, alignment, lo, hi, prefer, &start)) return;
      uint64_t dist = start > prefer ? start - prefer : prefer - start;
      if (dist < best_dist) best = start, best_dist = dist;
    };
    for (Range r : used) {
      if (r.begin > cursor) consider({cursor, r.begin});
      cursor = std::max(cursor, r.end);
    }
#if defined(__aarch64__)
    // Not above the highest mapping (the stack): AArch64 kernels may give user space 39 or 42
    // bits rather than 48, and nothing here tells which.
#else
    if (cursor < kUserTop) consider({cursor, kUserTop});
#endif
    if (best_dist == UINT64_MAX)
      return fail(SK_ERR_OUT_OF_MEMORY,
                  "%s: no free address range of %zu bytes between 0x%" PRIx64 " and 0x%" PRIx64, label.c_str(), size,
                  lo, hi_end);
    void *want = reinterpret_cast<void *>(best);
    void *got = mmap(want, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want) {
      out->reset(got, size);
      return SK_OK;
    }
    // Kernels before 4.17 take the flag as a hint and may map elsewhere: never keep that.
    if (got != MAP_FAILED)
      munmap(got, size);
    else if (errno != EEXIST) {
      const int err = errno;
      return fail(SK_ERR_OUT_OF_MEMORY, "%s: could not map %zu bytes between 0x%" PRIx64 " and 0x%" PRIx64 ": %s",
                  label.c_str(), size, lo, hi_end, mapping_failure_reason(err, Mapping::live()).c_str());
    }
    // Another thread took the range between reading the maps and mapping: look again.
  }
  return fail(SK_ERR_OUT_OF_MEMORY,
              "%s: could not map %zu bytes between 0x%" PRIx64 " and 0x%" PRIx64
              " (other threads kept taking the free ranges)",
              label.c_str(), size, lo, hi_end);
}

}  // namespace sk::host
