// The lookups the code scanners share (elf/code_scan.hpp).
#include <elf.h>

#include <algorithm>
#include <string_view>

#include "elf/code_scan.hpp"

namespace sk::elf {
namespace {

// "$d", "$d.1"...: data; "$x", "$x.1"...: instructions (AArch64 ELF ABI mapping symbols).
int mapping_kind(const Symbol &s) {
  if (s.type != STT_NOTYPE || s.name.size() < 2 || s.name[0] != '$') return -1;
  if (s.name.size() > 2 && s.name[2] != '.') return -1;
  return s.name[1] == 'd' ? 1 : s.name[1] == 'x' ? 0 : -1;
}

}  // namespace

bool x86_64_pc_relative(uint32_t type) {
  switch (type) {
    case R_X86_64_PC8:
    case R_X86_64_PC16:
    case R_X86_64_PC32:
    case R_X86_64_PC64:
    case R_X86_64_PLT32:
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX: return true;
  }
  return false;
}

ObjectIndex::ObjectIndex(const Object &obj)
    : obj_(obj), relocations_(obj.sections.size()), mapping_(obj.sections.size()) {
  for (const RelocationSection &rs : obj.relocation_sections)
    if (rs.target < relocations_.size())
      for (const Relocation &r : rs.relocations) relocations_[rs.target].push_back(&r);
  for (auto &v : relocations_)
    std::stable_sort(v.begin(), v.end(),
                     [](const Relocation *a, const Relocation *b) { return a->offset < b->offset; });
  if (obj.machine != EM_AARCH64) return;
  for (const Symbol &s : obj.symbols)
    if (int kind = mapping_kind(s); kind >= 0 && s.shndx < mapping_.size())
      mapping_[s.shndx].push_back({s.value, kind == 1});
  // Where a $d and an $x share an offset, the $x wins: decoding data only adds edges.
  for (auto &v : mapping_)
    std::stable_sort(v.begin(), v.end(), [](const auto &a, const auto &b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
}

std::span<const Relocation *const> ObjectIndex::relocations(uint32_t section, uint64_t begin, uint64_t end) const {
  if (section >= relocations_.size() || end <= begin) return {};
  const auto &v = relocations_[section];
  auto lo =
      std::lower_bound(v.begin(), v.end(), begin, [](const Relocation *r, uint64_t o) { return r->offset < o; });
  auto hi = std::lower_bound(lo, v.end(), end, [](const Relocation *r, uint64_t o) { return r->offset < o; });
  return {lo, hi};
}

const std::vector<std::pair<uint64_t, bool>> &ObjectIndex::mapping(uint32_t section) const {
  static const std::vector<std::pair<uint64_t, bool>> none;
  return section < mapping_.size() ? mapping_[section] : none;
}

}  // namespace sk::elf
