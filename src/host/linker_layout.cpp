// Layout of the one mapping, its contents, relocation and sealing:
//
//   [ code | call stubs ]  [ constants, .data.rel.ro | GOT ]  [ .data | .bss | common ]
//     R|X                    R                                  R|W
//
// Each part starts on a page so that it can be sealed on its own; everything is written while
// the whole mapping is still only read+write.
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "core/error.hpp"
#include "host/linker_impl.hpp"
#include "host/relocate_x86_64.hpp"

namespace sk::host {
namespace {

constexpr uint64_t kMaxTotal = 1ull << 31;
constexpr size_t kStubSize = 16;  // jmp *0(%rip); .quad target; int3 int3
constexpr size_t kGotEntrySize = 8;

uint64_t align_to(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

uint64_t Linker::symbol_address(uint32_t sym) const {
  if (sym == 0) return 0;
  const elf::Symbol &s = o_.symbols[sym];
  const uint64_t base = reinterpret_cast<uint64_t>(mapping_.address());
  switch (s.shndx) {
    case SHN_UNDEF: return resolved_[sym];
    case SHN_ABS: return s.value;
    case SHN_COMMON: return base + bss_offset_ + static_cast<uint64_t>(common_offset_[sym]);
    default:
      if (section_offset_[s.shndx] == kNotLoaded) return 0;
      return base + static_cast<uint64_t>(section_offset_[s.shndx]) + s.value;
  }
}

sk_status Linker::layout() {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t offset = 0;
  auto add = [&](uint64_t align, uint64_t size) -> int64_t {
    offset = align_to(offset, align);
    int64_t at = static_cast<int64_t>(offset);
    offset += size;
    return at;
  };
  for (int part = kText; part < kParts; ++part) {
    part_begin_[part] = offset;
    // Contents first, then zero-filled sections, so that .bss closes the data part.
    for (int nobits = 0; nobits < 2; ++nobits) {
      for (size_t i = 1; i < o_.sections.size(); ++i) {
        const elf::Section &s = o_.sections[i];
        if (section_offset_[i] == kNotLoaded || part_of_[i] != part) continue;
        if ((s.type == SHT_NOBITS) != (nobits == 1)) continue;
        section_offset_[i] = add(s.align, s.size);
        if (offset > kMaxTotal) return fail(SK_ERR_UNSUPPORTED, "%s: the loaded sections exceed 2 GiB", label());
      }
    }
    if (part == kText) stubs_offset_ = add(16, kStubSize * stub_slot_.size());
    if (part == kRodata) got_offset_ = add(kGotEntrySize, kGotEntrySize * got_slot_.size());
    if (part == kData) bss_offset_ = add(common_align_, common_size_);
    if (offset > kMaxTotal) return fail(SK_ERR_UNSUPPORTED, "%s: the loaded sections exceed 2 GiB", label());
    part_end_[part] = offset;
    offset = align_to(offset, page);
  }
  total_ = offset ? offset : page;
  return SK_OK;
}

sk_status Linker::write_contents() {
  uint8_t *base = mapping_.address();
  for (size_t i = 1; i < o_.sections.size(); ++i) {
    const elf::Section &s = o_.sections[i];
    if (section_offset_[i] == kNotLoaded || s.type == SHT_NOBITS || !s.data || s.size == 0) continue;
    std::memcpy(base + section_offset_[i], s.data, s.size);  // the mapping is zero-filled
  }
  for (const auto &[sym, slot] : got_slot_) {
    uint64_t address = symbol_address(sym);
    std::memcpy(base + got_offset_ + slot * kGotEntrySize, &address, kGotEntrySize);
  }
  for (const auto &[sym, slot] : stub_slot_) {
    // jmp *0(%rip) reads the absolute target stored right after it: any distance, no register.
    uint8_t stub[kStubSize] = {0xff, 0x25, 0, 0, 0, 0};
    uint64_t target = symbol_address(sym);
    std::memcpy(stub + 6, &target, 8);
    stub[14] = stub[15] = 0xcc;
    std::memcpy(base + stubs_offset_ + slot * kStubSize, stub, kStubSize);
  }
  return SK_OK;
}

sk_status Linker::relocate() {
  uint8_t *base = mapping_.address();
  const uint64_t b = reinterpret_cast<uint64_t>(base);
  for (const elf::RelocationSection &rs : o_.relocation_sections) {
    if (section_offset_[rs.target] == kNotLoaded) continue;
    const elf::Section &target = o_.sections[rs.target];
    const uint64_t section_at = static_cast<uint64_t>(section_offset_[rs.target]);
    for (const elf::Relocation &r : rs.relocations) {
      const elf::Symbol &sym = o_.symbols[r.symbol];
      x86_64::RelocValues v;
      v.S = symbol_address(r.symbol);
      v.A = r.addend;
      v.P = b + section_at + r.offset;
      v.GOT = b + got_offset_;
      v.Z = sym.size;
      auto got = got_slot_.find(r.symbol);
      if (got != got_slot_.end()) v.G = v.GOT + got->second * kGotEntrySize;
      v.L = v.S;
      auto stub = stub_slot_.find(r.symbol);
      x86_64::RelocKind kind = x86_64::classify(r.type);
      if (stub != stub_slot_.end() &&
          (kind.branch || (r.type == R_X86_64_PC32 && x86_64::is_branch_displacement(target.data, r.offset)))) {
        int64_t direct = static_cast<int64_t>(v.S + static_cast<uint64_t>(v.A) - v.P);
        if (direct < INT32_MIN || direct > INT32_MAX) v.L = b + stubs_offset_ + stub->second * kStubSize;
      }
      const std::string &name = symbol_name(r.symbol);
      x86_64::RelocSite site{label(), target.name.c_str(), r.offset, name.c_str()};
      if (sk_status s = x86_64::apply(r.type, base + section_at + r.offset, v, site)) return s;
    }
  }
  return SK_OK;
}

sk_status Linker::seal(LinkedObject *lo) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const int protection[kParts] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
  for (int part = kText; part < kParts; ++part) {
    size_t begin = part_begin_[part], end = align_to(part_end_[part], page);
    if (end == begin) continue;
    void *at = mapping_.address() + begin;
    // Code becomes executable only here, after its last write: never writable and executable.
    if (mprotect(at, end - begin, protection[part]) != 0)
      return fail(errno == ENOMEM ? SK_ERR_OUT_OF_MEMORY : SK_ERR_UNSUPPORTED,
                  "%s: mprotect of %zu bytes failed: %s", label(), end - begin, std::strerror(errno));
    lo->regions_.push_back({at, end - begin, protection[part]});
  }
  return SK_OK;
}

}  // namespace sk::host
