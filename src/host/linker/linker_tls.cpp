// The linker's thread-local storage: the object's .tdata and .tbss sections laid out as one TLS
// block that glibc gives every thread (host/linker/tls_block.hpp), and the entries the code reaches it
// through. Code sequences stay as the compiler wrote them, in every model:
//   general dynamic: __tls_get_addr(&{module id, offset}), glibc's own function;
//   local dynamic: __tls_get_addr(&{module id, 0}) plus the variable's offset in the block;
//   initial exec: a GOT entry holding the variable's offset from the thread pointer;
//   local exec: that offset in the instruction;
//   TLS descriptors: a GOT pair {function, argument} whose call returns that offset: where
//     libsk has a dynamic function for them (host/linker/tlsdesc_dynamic.hpp), the argument points to
//     {module id, offset} and any block does; elsewhere, or when the module is in static TLS
//     anyway, the function returns its argument, the offset itself.
// Initial and local exec (and descriptors without the dynamic function) need the block at one
// offset from every thread's pointer: glibc's static TLS.
#include <elf.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "common/error.hpp"
#include "elf/demangle.hpp"
#include "host/linker/linker_impl.hpp"
#include "host/linker/tlsdesc_dynamic.hpp"

namespace sk::host {
namespace {

constexpr uint64_t kEntrySize = 8;

uint64_t align_to(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

bool is_entry(TlsUse u) {
  return u == TlsUse::GdEntry || u == TlsUse::LdEntry || u == TlsUse::IeEntry || u == TlsUse::DescEntry;
}

// Descriptors resolved at run time, through __tls_get_addr: they need no static TLS.
bool dynamic_descriptors(const RelocArch &arch) { return arch.machine == kHostMachine && tlsdesc_dynamic() != 0; }

// A descriptor's entry: its pair, then the {module id, offset} its dynamic argument points to.
constexpr uint64_t kDescEntrySize = 4 * kEntrySize;

bool assembler_label(const std::string &name) { return name.empty() || name[0] == '$' || name[0] == '.'; }

// The block's start, which a linker defines for local-dynamic code through TLS descriptors.
bool is_module_base(const elf::Symbol &s) { return s.shndx == SHN_UNDEF && s.name == "_TLS_MODULE_BASE_"; }

}  // namespace

void Linker::plan_tls() {
  // Initialised sections first: the block's image is its prefix, the rest is zeros.
  tls_offset_.assign(o_.sections.size(), kNotLoaded);
  for (int nobits = 0; nobits < 2; ++nobits)
    for (size_t i = 1; i < o_.sections.size(); ++i) {
      const elf::Section &s = o_.sections[i];
      if (!(s.flags & SHF_ALLOC) || !(s.flags & SHF_TLS) || (s.type == SHT_NOBITS) != (nobits == 1)) continue;
      tls_size_ = align_to(tls_size_, s.align);
      tls_offset_[i] = static_cast<int64_t>(tls_size_);
      tls_size_ += s.size;
      tls_align_ = std::max(tls_align_, s.align);
      if (!nobits) tls_image_size_ = tls_size_;
    }
}

bool Linker::is_tls_symbol(uint32_t sym) const {
  const uint32_t shndx = o_.symbols[sym].shndx;
  if (sym != 0 && is_module_base(o_.symbols[sym])) return true;
  return sym != 0 && shndx < tls_offset_.size() && tls_offset_[shndx] != kNotLoaded;
}

uint64_t Linker::tls_symbol_offset(uint32_t sym) const {
  if (!is_tls_symbol(sym) || is_module_base(o_.symbols[sym])) return 0;
  return static_cast<uint64_t>(tls_offset_[o_.symbols[sym].shndx]) + o_.symbols[sym].value;
}

std::string Linker::tls_variable(uint32_t sym, int64_t addend) const {
  const elf::Symbol &s = o_.symbols[sym];
  if (!assembler_label(s.name) && s.type != STT_SECTION) return s.name;
  // A section symbol or an assembler's label plus an offset: the variable that holds it.
  const uint64_t at = s.value + static_cast<uint64_t>(std::max<int64_t>(addend, 0));
  for (const elf::Symbol &v : o_.symbols)
    if (v.type == STT_TLS && v.shndx == s.shndx && !assembler_label(v.name) && v.value <= at &&
        at < v.value + std::max<uint64_t>(v.size, 1))
      return v.name;
  return symbol_name(sym);
}

sk_status Linker::scan_tls_relocation(uint32_t section, const elf::Relocation &r, const RelocNeeds &kind) {
  const std::string type_name = arch_->reloc_name(r.type);
  if (!kind.known)
    return fail(SK_ERR_UNSUPPORTED, "%s: relocation %s at %s is a dynamic linker's, not an object's",
                o_.section_label(section).c_str(), type_name.c_str(), where(section, r.offset).c_str());
  if (kind.tls_use == TlsUse::Marker) return SK_OK;
  const bool module_wide = kind.tls_use == TlsUse::LdEntry;  // the block's base: no variable
  if (!module_wide && !is_tls_symbol(r.symbol))
    return fail(SK_ERR_UNSUPPORTED,
                "%s: thread-local variable %s (%s, %s at %s) is not defined by the module's objects: "
                "the thread-locals of the process or of other libraries cannot be reached from a module",
                o_.section_label(section).c_str(), elf::quoted_symbol(symbol_name(r.symbol)).c_str(),
                tls_model_name(kind.tls_use), type_name.c_str(), where(section, r.offset).c_str());
  const bool dynamic = kind.tls_use == TlsUse::DescEntry && dynamic_descriptors(*arch_);
  if (needs_static_tls(kind.tls_use) && !dynamic && !static_tls_reloc_) {
    static_tls_reloc_ = &r;
    static_tls_section_ = section;
  }
  if (!is_entry(kind.tls_use)) return SK_OK;
  const TlsKey key{kind.tls_use, module_wide ? 0 : r.symbol,
                   kind.tls_addend_in_entry && !module_wide ? r.addend : 0};
  if (tls_entry_.count(key)) return SK_OK;
  tls_entry_.emplace(key, tls_entries_size_);
  tls_entries_size_ += kind.tls_use == TlsUse::IeEntry     ? kEntrySize
                       : kind.tls_use == TlsUse::DescEntry ? kDescEntrySize
                                                           : 2 * kEntrySize;
  return SK_OK;
}

uint64_t Linker::tls_entry_address(const RelocNeeds &kind, const elf::Relocation &r) const {
  if (!is_entry(kind.tls_use)) return 0;
  const bool module_wide = kind.tls_use == TlsUse::LdEntry;
  const TlsKey key{kind.tls_use, module_wide ? 0 : r.symbol,
                   kind.tls_addend_in_entry && !module_wide ? r.addend : 0};
  return reinterpret_cast<uint64_t>(mapping_.address()) + tls_entries_offset_ + tls_entry_.at(key);
}

sk_status Linker::create_tls() {
  if (tls_size_ == 0 && tls_entry_.empty() && !static_tls_reloc_) return SK_OK;
  // The image: the initialised sections, relocated (their addresses are the mapping's, known).
  std::vector<uint8_t> image(tls_image_size_, 0);
  for (size_t i = 1; i < o_.sections.size(); ++i)
    if (tls_offset_[i] != kNotLoaded && o_.sections[i].type != SHT_NOBITS && o_.sections[i].data &&
        o_.sections[i].size)  // an empty one has nothing to copy, and may sit at the end of an empty image
      std::memcpy(image.data() + tls_offset_[i], o_.sections[i].data, o_.sections[i].size);
  for (const elf::RelocationSection &rs : o_.relocation_sections) {
    if (tls_offset_[rs.target] == kNotLoaded || o_.sections[rs.target].type == SHT_NOBITS) continue;
    for (const elf::Relocation &r : rs.relocations) {
      const RelocNeeds kind = arch_->needs(r.type, nullptr, r.offset);
      if (!kind.known || kind.tls || kind.got_entry || kind.branch || kind.reach || kind.width == 0 ||
          r.offset + kind.width > o_.sections[rs.target].size)
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: relocation %s at %s: a thread-local variable's initial value can only hold "
                    "an address",
                    o_.section_label(rs.target).c_str(), arch_->reloc_name(r.type).c_str(),
                    where(rs.target, r.offset).c_str());
      RelocValues v;
      v.S = symbol_address(r.symbol);
      v.A = r.addend;
      RelocSite site{o_.section_label(rs.target).c_str(), o_.sections[rs.target].name.c_str(), r.offset,
                     symbol_name(r.symbol).c_str()};
      if (sk_status st = arch_->apply(r.type, image.data() + tls_offset_[rs.target] + r.offset, v, site)) return st;
    }
  }
  std::string why;
  // At least a byte: glibc gives no module id to an empty TLS segment (code may still ask for
  // the block's base, _TLS_MODULE_BASE_).
  const uint64_t size = std::max<uint64_t>(tls_size_, 1);
  if (TlsBlock::create(image, size, tls_align_, static_tls_reloc_ != nullptr, &tls_, &why) != SK_OK) {
    if (!static_tls_reloc_)
      return fail(SK_ERR_UNSUPPORTED, "%s: its thread-local storage (%" PRIu64 " bytes) could not be set up: %s",
                  label(), tls_size_, why.c_str());
    const elf::Relocation &r = *static_tls_reloc_;
    const RelocNeeds kind = arch_->needs(r.type, o_.sections[static_tls_section_].data, r.offset);
    return fail(SK_ERR_UNSUPPORTED,
                "%s: thread-local variable %s is reached with the %s model (%s at %s), which needs "
                "the module's %" PRIu64
                " bytes of thread-locals in glibc's static TLS space: %s; "
                "raise it with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=BYTES, or compile the "
                "object with -fPIC or -ftls-model=global-dynamic",
                o_.section_label(static_tls_section_).c_str(),
                elf::quoted_symbol(tls_variable(r.symbol, r.addend)).c_str(), tls_model_name(kind.tls_use),
                arch_->reloc_name(r.type).c_str(), where(static_tls_section_, r.offset).c_str(), tls_size_,
                why.c_str());
  }
  uint8_t *base = mapping_.address();
  const uint64_t descriptor_function = reinterpret_cast<uint64_t>(base + tlsdesc_offset_);
  if (!tls_entry_.empty() && arch_->tlsdesc_return_size)
    std::memcpy(base + tlsdesc_offset_, arch_->tlsdesc_return, arch_->tlsdesc_return_size);
  for (const auto &[key, offset] : tls_entry_) {
    const uint64_t tp_offset =
        static_cast<uint64_t>(tls_->tp_offset()) + tls_symbol_offset(key.symbol) + static_cast<uint64_t>(key.addend);
    uint8_t *entry = base + tls_entries_offset_ + offset;
    uint64_t words[4] = {};
    size_t size = 2 * kEntrySize;
    switch (key.use) {
      case TlsUse::GdEntry:
        words[0] = tls_->module_id(), words[1] = tls_symbol_offset(key.symbol) + key.addend;
        break;
      case TlsUse::LdEntry: words[0] = tls_->module_id(); break;
      case TlsUse::IeEntry: words[0] = tp_offset, size = kEntrySize; break;
      case TlsUse::DescEntry:
        size = kDescEntrySize;
        if (static_tls_reloc_ || !dynamic_descriptors(*arch_)) {
          words[0] = descriptor_function, words[1] = tp_offset;
        } else {
          words[0] = tlsdesc_dynamic(), words[1] = reinterpret_cast<uint64_t>(entry + 2 * kEntrySize);
          words[2] = tls_->module_id(), words[3] = tls_symbol_offset(key.symbol) + key.addend;
        }
        break;
      default: break;
    }
    std::memcpy(entry, words, size);
  }
  return SK_OK;
}

}  // namespace sk::host
