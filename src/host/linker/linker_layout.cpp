// Layout of the one mapping, its contents, relocation and sealing:
//
//   [ code | call stubs ]  [ constants, .data.rel.ro | GOT ]  [ .data | .bss | common ]
//     R|X                    R                                  R|W
//
// Each part starts on a page so that it can be sealed on its own; everything is written while
// the whole mapping is still only read+write.
#include <elf.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "common/error.hpp"
#include "host/linker/linker_impl.hpp"
#include "host/linker/relocation.hpp"

namespace sk::host {
namespace {

constexpr uint64_t kMaxTotal = 1ull << 31;
constexpr size_t kGotEntrySize = 8;

uint64_t align_to(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

uint64_t Linker::symbol_address(uint32_t sym) const {
  const uint64_t base = reinterpret_cast<uint64_t>(mapping_.address());
  if (auto f = forward_slot_.find(sym); f != forward_slot_.end())
    return base + forwards_offset_ + f->second * arch_->forward_stub_size;
  if (auto i = ifunc_slot_.find(sym); i != ifunc_slot_.end())
    return base + ifunc_jumps_offset_ + i->second * arch_->slot_jump_size;
  return definition_address(sym);
}

uint64_t Linker::definition_address(uint32_t sym) const {
  if (sym == 0) return 0;
  const elf::Symbol &s = o_.symbols[sym];
  const uint64_t base = reinterpret_cast<uint64_t>(mapping_.address());
  if (common_offset_[sym] != kNotLoaded) return base + bss_offset_ + static_cast<uint64_t>(common_offset_[sym]);
  switch (s.shndx) {
    case SHN_UNDEF: return is_got_base(sym) ? base + got_offset_ : resolved_[sym];
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
        section_offset_[i] = add(s.align, s.size + (is_eh_frame(s) ? kEhFrameTerminator : 0));
        if (offset > kMaxTotal) return fail(SK_ERR_UNSUPPORTED, "%s: the loaded sections exceed 2 GiB", label());
      }
    }
    if (part == kText) stubs_offset_ = add(16, arch_->stub_size * stub_slot_.size());
    if (part == kText) far_stubs_offset_ = add(16, far_stub_bytes());
    if (part == kText) forwards_offset_ = add(16, arch_->forward_stub_size * forwards_.size());
    if (part == kText) ifunc_jumps_offset_ = add(16, arch_->slot_jump_size * ifunc_slot_.size());
    if (part == kText) tlsdesc_offset_ = add(16, tls_entry_.empty() ? 0 : arch_->tlsdesc_return_size);
    if (part == kRodata) got_offset_ = add(kGotEntrySize, kGotEntrySize * got_slot_.size());
    if (part == kRodata) ifunc_slots_offset_ = add(kGotEntrySize, kGotEntrySize * ifunc_slot_.size());
    if (part == kRodata) tls_entries_offset_ = add(16, tls_entries_size_);
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
  for (const auto &[sym, slot] : stub_slot_)
    arch_->write_stub(base + stubs_offset_ + slot * arch_->stub_size, symbol_address(sym));
  for (const Copied &c : copied_) std::memcpy(base + bss_offset_ + common_offset_[c.symbol], c.from, c.size);
  const uint64_t dso = reinterpret_cast<uint64_t>(base + bss_offset_ + dso_offset_);
  for (size_t k = 0; k < forwards_.size(); ++k)
    arch_->write_forward_stub(base + forwards_offset_ + k * arch_->forward_stub_size, forwards_[k].second, dso,
                              forwards_[k].first->dso_arg, forwards_[k].first->zero_from);
  for (const auto &[sym, slot] : ifunc_slot_) {
    const size_t at = ifunc_jumps_offset_ + slot * arch_->slot_jump_size;
    arch_->write_slot_jump(base + at, reinterpret_cast<uint64_t>(base + at),
                           reinterpret_cast<uint64_t>(base + ifunc_slots_offset_ + slot * kGotEntrySize));
  }
  return SK_OK;
}

sk_status Linker::resolve_ifuncs() {
  // As ld.so does for IRELATIVE: the resolver runs once, on the relocated code, and picks the
  // implementation for this CPU. AArch64 resolvers get the hardware capabilities, as glibc
  // passes them; x86-64 ones ask the CPU themselves (__builtin_cpu_supports).
#if defined(__aarch64__)
  struct IfuncArg {
    unsigned long size, hwcap, hwcap2;
  } arg = {sizeof(IfuncArg), getauxval(AT_HWCAP), getauxval(AT_HWCAP2)};
  constexpr unsigned long kIfuncArgHwcap = 1ul << 62;  // _IFUNC_ARG_HWCAP: the second argument is there
#endif
  for (const auto &[sym, slot] : ifunc_slot_) {
    const uint64_t resolver = definition_address(sym);
#if defined(__aarch64__)
    const uint64_t chosen =
        reinterpret_cast<uint64_t (*)(unsigned long, const IfuncArg *)>(resolver)(arg.hwcap | kIfuncArgHwcap, &arg);
#else
    const uint64_t chosen = reinterpret_cast<uint64_t (*)()>(resolver)();
#endif
    if (chosen == 0)
      return fail(SK_ERR_UNSUPPORTED, "%s: the resolver of indirect function '%s' returned no function",
                  o_.symbol_label(sym).c_str(), o_.symbols[sym].name.c_str());
    std::memcpy(mapping_.address() + ifunc_slots_offset_ + slot * kGotEntrySize, &chosen, kGotEntrySize);
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
      if (far_rewritten(rs.target, r.offset)) continue;  // write_far_data() does it
      const elf::Symbol &sym = o_.symbols[r.symbol];
      RelocValues v;
      v.S = symbol_address(r.symbol);
      v.A = r.addend;
      v.P = b + section_at + r.offset;
      v.GOT = b + got_offset_;
      v.Z = sym.size;
      auto got = got_slot_.find(r.symbol);
      if (got != got_slot_.end()) v.G = v.GOT + got->second * kGotEntrySize;
      const RelocNeeds kind = arch_->needs(r.type, target.data, r.offset);
      if (kind.tls) {
        v.G = tls_entry_address(kind, r);
        v.TLS = tls_symbol_offset(r.symbol);
        v.TP = tls_ ? tls_->tp_offset() : 0;
      }
      v.L = v.S;
      auto stub = stub_slot_.find(r.symbol);
      if (stub != stub_slot_.end() && arch_->needs(r.type, target.data, r.offset).branch) {
        const int64_t direct = static_cast<int64_t>(v.S + static_cast<uint64_t>(v.A) - v.P);
        const int64_t reach = static_cast<int64_t>(arch_->branch_reach);
        if (direct < -reach || direct >= reach) v.L = b + stubs_offset_ + stub->second * arch_->stub_size;
      }
      const std::string &name = symbol_name(r.symbol);
      RelocSite site{o_.section_label(rs.target).c_str(), target.name.c_str(), r.offset, name.c_str()};
      if (sk_status s = arch_->apply(r.type, base + section_at + r.offset, v, site)) return s;
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
    // Instructions were written as data: make the instruction side see them (AArch64 keeps the
    // caches apart; on x86-64 this is a no-op). The code part is never written again.
    if (part == kText) __builtin___clear_cache(static_cast<char *>(at), static_cast<char *>(at) + (end - begin));
    // Code becomes executable only here, after its last write: never writable and executable.
    if (mprotect(at, end - begin, protection[part]) != 0) {
      const int err = errno;
      return fail(err == ENOMEM ? SK_ERR_OUT_OF_MEMORY : SK_ERR_UNSUPPORTED, "%s: mprotect of %zu bytes failed: %s",
                  label(), end - begin, mapping_failure_reason(err, Mapping::live() - 1).c_str());  // less this one
    }
    lo->regions_.push_back({at, end - begin, protection[part]});
    // The resolvers are code: they run once it is executable, before the slots are sealed.
    if (part == kText)
      if (sk_status st = resolve_ifuncs()) return st;
  }
  return SK_OK;
}

}  // namespace sk::host
