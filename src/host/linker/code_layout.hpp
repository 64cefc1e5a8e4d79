// Finding address space for a linked object: a free range that satisfies every constraint the
// object's short relocations impose (reach an address within ±2 GiB with x86-64's PC32, ±4 GiB
// with AArch64's ADRP...; or lie below 2/4 GiB for absolute 32-bit fields),
// read from /proc/self/maps and claimed with mmap(MAP_FIXED_NOREPLACE).
#pragma once
#include <sk.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sk::host {

// The whole mapping [start, start + size) must lie within [low, high).
struct PlacementConstraint {
  uint64_t low = 0, high = 0;
  std::string why;  // "reach 'stderr' (0x5555...) with R_X86_64_PC32 at .text+0x1a"
};

// A constraint that every byte of the mapping can reach `target` with a displacement in
// ±reach (a signed 32-bit one by default), minus a margin for addends.
PlacementConstraint reach_constraint(uint64_t target, std::string why, uint64_t reach = 1ull << 31);

// Owns an anonymous mapping; unmaps it unless released. live() counts the mappings owned now,
// in the whole process: linked objects hold theirs in a Mapping.
class Mapping {
 public:
  Mapping() = default;
  ~Mapping();
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;
  Mapping(Mapping &&o) noexcept : address_(o.address_), size_(o.size_) { o.address_ = nullptr; }
  static size_t live();
  uint8_t *address() const { return static_cast<uint8_t *>(address_); }
  size_t size() const { return size_; }
  void reset(void *address, size_t size);
  void *release();

 private:
  void *address_ = nullptr;
  size_t size_ = 0;
};

// Maps `size` bytes read+write, aligned to `alignment` (a power of two, at least a page), within
// every constraint, as close to `prefer` as the free ranges allow. SK_ERR_UNSUPPORTED naming the
// two constraints that cannot hold together; SK_ERR_OUT_OF_MEMORY when no free range fits.
sk_status place_mapping(size_t size, size_t alignment, const std::vector<PlacementConstraint> &constraints,
                        uint64_t prefer, const std::string &label, Mapping *out);

// Why mmap or mprotect failed with `err`, for the message: for ENOMEM, the limit that was hit
// (vm.max_map_count with the process's mapping count and its `linked_objects`, or RLIMIT_AS);
// otherwise strerror.
std::string mapping_failure_reason(int err, size_t linked_objects);

}  // namespace sk::host
