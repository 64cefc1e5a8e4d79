// Reads an ELF relocatable object with libelf. libelf is only trusted with tables whose bounds
// this file has checked first: the ELF header and the section header table are validated on the
// raw bytes before elf_memory sees them, every section's data range before elf_getdata, and
// every string, symbol and relocation index after gelf_* hands them over.
#include "elf/elf_object.hpp"

#include <gelf.h>
#include <libelf.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <span>

#include "common/error.hpp"
#include "elf/lto.hpp"

namespace sk::elf {
namespace {

// Owns the libelf handle so that every early return ends it.
struct ElfHandle {
  Elf *elf = nullptr;
  ~ElfHandle() {
    if (elf) elf_end(elf);
  }
};

bool range_ok(uint64_t offset, uint64_t size, uint64_t limit) { return offset <= limit && size <= limit - offset; }

bool power_of_two_or_zero(uint64_t v) { return (v & (v - 1)) == 0; }

// Checks the raw header and section header table, so that libelf never reads outside the image.
// Runs on the caller's bytes, before they are copied: garbage is refused without a copy.
sk_status check_header(std::span<const uint8_t> image, const std::string &label, const ParseOptions &options) {
  if (is_llvm_bitcode(image.data(), image.size()))
    return fail(SK_ERR_UNSUPPORTED,
                "%s: LLVM bitcode, not machine code: compiled with -flto: compile without -flto "
                "(or add -ffat-lto-objects, clang 18 and later)",
                label.c_str());
  if (image.size() < EI_NIDENT || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
    return fail(SK_ERR_BAD_BINARY, "%s: not an ELF object (bad magic or %zu bytes)", label.c_str(), image.size());
  if (image[EI_CLASS] != ELFCLASS64)
    return fail(SK_ERR_UNSUPPORTED, "%s: ELF class %u is not supported (only ELFCLASS64)", label.c_str(),
                image[EI_CLASS]);
  if (image[EI_DATA] != ELFDATA2LSB)
    return fail(SK_ERR_UNSUPPORTED, "%s: ELF data encoding %u is not supported (only little-endian)", label.c_str(),
                image[EI_DATA]);
  if (image.size() < sizeof(Elf64_Ehdr))
    return fail(SK_ERR_BAD_BINARY, "%s: truncated ELF header (%zu of %zu bytes)", label.c_str(), image.size(),
                sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof eh);
  if (eh.e_type != ET_REL && !(options.executable && eh.e_type == ET_EXEC))
    return fail(SK_ERR_UNSUPPORTED, "%s: e_type %u is not a relocatable object (ET_REL, as `cc -c` writes)",
                label.c_str(), eh.e_type);
  if (eh.e_shoff == 0) return fail(SK_ERR_BAD_BINARY, "%s: no section header table", label.c_str());
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    return fail(SK_ERR_BAD_BINARY, "%s: e_shentsize %u is not %zu", label.c_str(), eh.e_shentsize,
                sizeof(Elf64_Shdr));
  const uint64_t size = image.size();
  if (!range_ok(eh.e_shoff, sizeof(Elf64_Shdr), size))
    return fail(SK_ERR_BAD_BINARY, "%s: e_shoff 0x%llx is outside the %llu-byte image", label.c_str(),
                (unsigned long long)eh.e_shoff, (unsigned long long)size);
  Elf64_Shdr first;
  std::memcpy(&first, image.data() + eh.e_shoff, sizeof first);
  uint64_t count = eh.e_shnum ? eh.e_shnum : first.sh_size;  // extended numbering
  if (count == 0 || count > size / sizeof(Elf64_Shdr) || !range_ok(eh.e_shoff, count * sizeof(Elf64_Shdr), size))
    return fail(SK_ERR_BAD_BINARY, "%s: section header table (0x%llx, %llu entries) is outside the %llu-byte image",
                label.c_str(), (unsigned long long)eh.e_shoff, (unsigned long long)count, (unsigned long long)size);
  uint64_t strndx = eh.e_shstrndx == SHN_XINDEX ? first.sh_link : eh.e_shstrndx;
  if (strndx == SHN_UNDEF || strndx >= count)
    return fail(SK_ERR_BAD_BINARY, "%s: e_shstrndx %llu is not a section (%llu sections)", label.c_str(),
                (unsigned long long)strndx, (unsigned long long)count);
  return SK_OK;
}

// A NUL-terminated string at `offset` of string table section `strtab`.
sk_status read_string(const Object &o, uint32_t strtab, uint64_t offset, const char *what, std::string *out) {
  const Section &s = o.sections[strtab];
  if (s.type != SHT_STRTAB || s.data == nullptr)
    return fail(SK_ERR_BAD_BINARY, "%s: %s: section %u is not a string table", o.label.c_str(), what, strtab);
  if (offset >= s.size)
    return fail(SK_ERR_BAD_BINARY, "%s: %s: name offset 0x%llx is outside string table %u (%llu bytes)",
                o.label.c_str(), what, (unsigned long long)offset, strtab, (unsigned long long)s.size);
  const char *begin = reinterpret_cast<const char *>(s.data) + offset;
  const void *nul = std::memchr(begin, 0, s.size - offset);
  if (!nul)
    return fail(SK_ERR_BAD_BINARY, "%s: %s: name at 0x%llx of string table %u is not terminated", o.label.c_str(),
                what, (unsigned long long)offset, strtab);
  out->assign(begin, static_cast<const char *>(nul));
  return SK_OK;
}

// libelf's view of section `index` data, after checking it is the whole of [offset, +size).
// An empty section has no buffer (nvJitLink's linked cubins for sm_100 and later keep empty
// relocation sections).
sk_status section_data(Elf *elf, const Object &o, uint32_t index, Elf_Data **out) {
  Elf_Scn *scn = elf_getscn(elf, index);
  Elf_Data *d = scn ? elf_getdata(scn, nullptr) : nullptr;
  if (!d || (!d->d_buf && o.sections[index].size) || d->d_size != o.sections[index].size)
    return fail(SK_ERR_BAD_BINARY, "%s: section %u '%s': libelf cannot read its data (%s)", o.label.c_str(), index,
                o.sections[index].name.c_str(), elf_errmsg(-1));
  *out = d;
  return SK_OK;
}

sk_status read_sections(Elf *elf, Object *o, const ParseOptions &options) {
  size_t count = 0, strndx = 0;
  if (elf_getshdrnum(elf, &count) != 0 || elf_getshdrstrndx(elf, &strndx) != 0)
    return fail(SK_ERR_BAD_BINARY, "%s: libelf cannot read the section headers (%s)", o->label.c_str(),
                elf_errmsg(-1));
  o->sections.resize(count);
  std::vector<uint32_t> name_offsets(count);
  std::vector<uint64_t> offsets(count);
  for (size_t i = 0; i < count; ++i) {
    GElf_Shdr sh;
    Elf_Scn *scn = elf_getscn(elf, i);
    if (!scn || !gelf_getshdr(scn, &sh))
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu: libelf cannot read its header (%s)", o->label.c_str(), i,
                  elf_errmsg(-1));
    Section &s = o->sections[i];
    s.type = sh.sh_type;
    s.flags = sh.sh_flags;
    s.align = sh.sh_addralign ? sh.sh_addralign : 1;
    s.size = sh.sh_size;
    s.entsize = sh.sh_entsize;
    s.link = sh.sh_link;
    s.info = sh.sh_info;
    s.addr = sh.sh_addr;
    name_offsets[i] = sh.sh_name;
    if (!power_of_two_or_zero(sh.sh_addralign))
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu: sh_addralign %llu is not a power of two", o->label.c_str(), i,
                  (unsigned long long)sh.sh_addralign);
    offsets[i] = sh.sh_offset;
  }
  // The name table first, so that a bad data range can be reported with the section's name.
  auto place = [&](size_t i) -> sk_status {
    Section &s = o->sections[i];
    const bool no_bytes = s.type == SHT_NOBITS || (options.nobits_type && s.type == options.nobits_type);
    if (i == 0 || no_bytes || s.type == SHT_NULL) return SK_OK;
    if (!range_ok(offsets[i], s.size, o->image.size()))
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu '%s': data [0x%llx, +0x%llx) is outside the %zu-byte image",
                  o->label.c_str(), i, s.name.c_str(), (unsigned long long)offsets[i], (unsigned long long)s.size,
                  o->image.size());
    s.data = o->image.data() + offsets[i];
    return SK_OK;
  };
  if (sk_status st = place(strndx)) return st;
  for (size_t i = 1; i < count; ++i) {
    char what[64];
    std::snprintf(what, sizeof what, "section %zu", i);
    if (sk_status st = read_string(*o, strndx, name_offsets[i], what, &o->sections[i].name)) return st;
  }
  for (size_t i = 1; i < count; ++i)
    if (sk_status st = place(i)) return st;
  // Compressed sections (-gz) are debug info, never code or data the linker places.
  for (size_t i = 1; i < count; ++i) {
    const Section &s = o->sections[i];
    if (!(s.flags & SHF_COMPRESSED)) continue;
    if (s.flags & SHF_ALLOC)
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu '%s' is compressed (SHF_COMPRESSED) and allocated (SHF_ALLOC)",
                  o->label.c_str(), i, s.name.c_str());
    if (!s.data || s.size < sizeof(Elf64_Chdr))
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu '%s' is compressed but has no compression header",
                  o->label.c_str(), i, s.name.c_str());
  }
  return SK_OK;
}

// The bytes of section s its relocations address: a compressed section's uncompressed size.
uint64_t relocatable_size(const Section &s) {
  if (!(s.flags & SHF_COMPRESSED)) return s.size;
  Elf64_Chdr ch;
  std::memcpy(&ch, s.data, sizeof ch);  // read_sections checked it is there
  return ch.ch_size;
}

sk_status read_symbols(Elf *elf, Object *o) {
  int symtab = -1;
  for (size_t i = 1; i < o->sections.size(); ++i) {
    if (o->sections[i].type != SHT_SYMTAB) continue;
    if (symtab >= 0)
      return fail(SK_ERR_BAD_BINARY, "%s: more than one symbol table (sections %d and %zu)", o->label.c_str(),
                  symtab, i);
    symtab = static_cast<int>(i);
  }
  if (symtab < 0) return SK_OK;  // an object without symbols has nothing to link, but is valid
  const Section &st = o->sections[symtab];
  if (st.entsize != sizeof(Elf64_Sym) || st.size % sizeof(Elf64_Sym) != 0)
    return fail(SK_ERR_BAD_BINARY, "%s: section %d '%s': sh_entsize %llu / sh_size %llu do not fit Elf64_Sym",
                o->label.c_str(), symtab, st.name.c_str(), (unsigned long long)st.entsize,
                (unsigned long long)st.size);
  if (st.link == 0 || st.link >= o->sections.size())
    return fail(SK_ERR_BAD_BINARY, "%s: section %d '%s': sh_link %u is not a section", o->label.c_str(), symtab,
                st.name.c_str(), st.link);
  size_t count = st.size / sizeof(Elf64_Sym);
  if (st.info > count)
    return fail(SK_ERR_BAD_BINARY, "%s: section %d '%s': sh_info %u is past the %zu symbols", o->label.c_str(),
                symtab, st.name.c_str(), st.info, count);
  Elf_Data *d = nullptr;
  if (sk_status s = section_data(elf, *o, symtab, &d)) return s;
  o->symbols.resize(count);
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym gs;
    if (!gelf_getsym(d, static_cast<int>(i), &gs))
      return fail(SK_ERR_BAD_BINARY, "%s: symbol %zu: libelf cannot read it (%s)", o->label.c_str(), i,
                  elf_errmsg(-1));
    Symbol &sym = o->symbols[i];
    char what[64];
    std::snprintf(what, sizeof what, "symbol %zu", i);
    if (sk_status s = read_string(*o, st.link, gs.st_name, what, &sym.name)) return s;
    sym.type = GELF_ST_TYPE(gs.st_info);
    sym.bind = GELF_ST_BIND(gs.st_info);
    sym.visibility = GELF_ST_VISIBILITY(gs.st_other);
    sym.other = gs.st_other;
    sym.shndx = gs.st_shndx;
    sym.value = gs.st_value;
    sym.size = gs.st_size;
    // A large common (-mcmodel=medium/large -fcommon) is a common that may lie far away:
    // every common of the mapping can, so it is allocated as any other.
    constexpr uint32_t kShnX86_64Lcommon = 0xff02;  // SHN_X86_64_LCOMMON (x86-64 psABI)
    if (o->machine == EM_X86_64 && sym.shndx == kShnX86_64Lcommon) sym.shndx = SHN_COMMON;
    if (sym.shndx == SHN_XINDEX)
      return fail(SK_ERR_UNSUPPORTED, "%s: symbol %zu '%s': extended section indices (SHN_XINDEX) are not supported",
                  o->label.c_str(), i, sym.name.c_str());
    bool special = sym.shndx == SHN_UNDEF || sym.shndx == SHN_ABS || sym.shndx == SHN_COMMON;
    if (!special && sym.shndx >= o->sections.size())
      return fail(SK_ERR_BAD_BINARY, "%s: symbol %zu '%s': st_shndx %u is not a section (%zu sections)",
                  o->label.c_str(), i, sym.name.c_str(), sym.shndx, o->sections.size());
    // In an executable st_value is an address: the section's, plus the offset in it.
    const uint64_t base = o->type == ET_EXEC && !special ? o->sections[sym.shndx].addr : 0;
    if (!special && sym.type != STT_TLS && (sym.value < base || sym.value - base > o->sections[sym.shndx].size))
      return fail(SK_ERR_BAD_BINARY,
                  "%s: symbol %zu '%s': st_value 0x%llx is past the end of section %u (0x%llx bytes)",
                  o->label.c_str(), i, sym.name.c_str(), (unsigned long long)sym.value, sym.shndx,
                  (unsigned long long)o->sections[sym.shndx].size);
  }
  return SK_OK;
}

sk_status read_relocations(Elf *elf, Object *o, const ParseOptions &options) {
  for (size_t i = 1; i < o->sections.size(); ++i) {
    const Section &rs = o->sections[i];
    const bool no_addends = rs.type == SHT_REL && options.rel_sections;
    if (rs.type == SHT_REL && !no_addends) {
      if (rs.info < o->sections.size() && (o->sections[rs.info].flags & SHF_ALLOC))
        return fail(SK_ERR_UNSUPPORTED,
                    "%s: section %zu '%s': SHT_REL relocations (without addends) are not supported",
                    o->label.c_str(), i, rs.name.c_str());
      continue;
    }
    if (rs.type != SHT_RELA && !no_addends) continue;
    const char *name = rs.name.c_str();
    const size_t entry = no_addends ? sizeof(Elf64_Rel) : sizeof(Elf64_Rela);
    if (rs.entsize != entry || rs.size % entry != 0)
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu '%s': sh_entsize %llu / sh_size %llu do not fit %s",
                  o->label.c_str(), i, name, (unsigned long long)rs.entsize, (unsigned long long)rs.size,
                  no_addends ? "Elf64_Rel" : "Elf64_Rela");
    if (rs.link == 0 || rs.link >= o->sections.size() || o->sections[rs.link].type != SHT_SYMTAB)
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu '%s': sh_link %u is not the symbol table", o->label.c_str(), i,
                  name, rs.link);
    if (rs.info == 0 || rs.info >= o->sections.size() || rs.info == i || o->sections[rs.info].type == SHT_RELA ||
        o->sections[rs.info].type == SHT_NULL)
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu '%s': sh_info %u is not a section to relocate",
                  o->label.c_str(), i, name, rs.info);
    const Section &target = o->sections[rs.info];
    Elf_Data *d = nullptr;
    if (sk_status s = section_data(elf, *o, static_cast<uint32_t>(i), &d)) return s;
    RelocationSection out;
    out.index = static_cast<uint32_t>(i);
    out.target = rs.info;
    size_t count = rs.size / entry;
    out.relocations.resize(count);
    for (size_t k = 0; k < count; ++k) {
      GElf_Rela r{};
      GElf_Rel plain{};
      const bool read = no_addends ? gelf_getrel(d, static_cast<int>(k), &plain) != nullptr
                                   : gelf_getrela(d, static_cast<int>(k), &r) != nullptr;
      if (read && no_addends) r = {plain.r_offset, plain.r_info, 0};
      if (!read)
        return fail(SK_ERR_BAD_BINARY, "%s: section %zu '%s': relocation %zu: libelf cannot read it (%s)",
                    o->label.c_str(), i, name, k, elf_errmsg(-1));
      Relocation &rel = out.relocations[k];
      rel.offset = r.r_offset;
      rel.type = static_cast<uint32_t>(GELF_R_TYPE(r.r_info));
      rel.symbol = static_cast<uint32_t>(GELF_R_SYM(r.r_info));
      rel.addend = r.r_addend;
      if (GELF_R_SYM(r.r_info) >= o->symbols.size())
        return fail(SK_ERR_BAD_BINARY,
                    "%s: section %zu '%s': relocation %zu: symbol index %llu is past the %zu symbols",
                    o->label.c_str(), i, name, k, (unsigned long long)GELF_R_SYM(r.r_info), o->symbols.size());
      if (rel.offset >= relocatable_size(target))
        return fail(SK_ERR_BAD_BINARY,
                    "%s: section %zu '%s': relocation %zu: r_offset 0x%llx is past the end of section %u '%s' "
                    "(0x%llx bytes)",
                    o->label.c_str(), i, name, k, (unsigned long long)rel.offset, rs.info, target.name.c_str(),
                    (unsigned long long)relocatable_size(target));
    }
    o->relocation_sections.push_back(std::move(out));
  }
  return SK_OK;
}

sk_status check_groups(const Object &o) {
  for (size_t i = 1; i < o.sections.size(); ++i) {
    const Section &g = o.sections[i];
    if (g.type != SHT_GROUP) continue;
    if (g.link >= o.sections.size() || o.sections[g.link].type != SHT_SYMTAB || g.info >= o.symbols.size())
      return fail(SK_ERR_BAD_BINARY, "%s: section %zu '%s': group sh_link %u / sh_info %u is not a symbol",
                  o.label.c_str(), i, g.name.c_str(), g.link, g.info);
  }
  return SK_OK;
}

}  // namespace

int Object::find_section(std::string_view name) const {
  for (size_t i = 1; i < sections.size(); ++i)
    if (sections[i].name == name) return static_cast<int>(i);
  return -1;
}

const std::string &Object::section_label(uint32_t index) const {
  if (index < section_part.size() && section_part[index] < part_labels.size())
    return part_labels[section_part[index]];
  return label;
}

const std::string &Object::symbol_label(uint32_t index) const {
  if (index < symbol_part.size() && symbol_part[index] < part_labels.size()) return part_labels[symbol_part[index]];
  return label;
}

sk_status parse_object(const void *bytes, size_t size, std::string_view label, Object *out,
                       const ParseOptions &options) {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
  Object o;
  o.label = label.empty() ? std::string("<memory>") : std::string(label);
  if (!bytes && size) return fail(SK_ERR_INVALID_ARGUMENT, "%s: NULL image", o.label.c_str());
  if (sk_status s = check_header({static_cast<const uint8_t *>(bytes), size}, o.label, options)) return s;
  o.image.assign(static_cast<const uint8_t *>(bytes), static_cast<const uint8_t *>(bytes) + size);
  ElfHandle h;
  h.elf = elf_memory(reinterpret_cast<char *>(o.image.data()), o.image.size());
  GElf_Ehdr eh;
  if (!h.elf || elf_kind(h.elf) != ELF_K_ELF || !gelf_getehdr(h.elf, &eh))
    return fail(SK_ERR_BAD_BINARY, "%s: libelf cannot read the ELF header (%s)", o.label.c_str(), elf_errmsg(-1));
  o.elf_class = eh.e_ident[EI_CLASS];
  o.machine = eh.e_machine;
  o.type = eh.e_type;
  if (sk_status s = read_sections(h.elf, &o, options)) return s;
  if (sk_status s = read_symbols(h.elf, &o)) return s;
  if (sk_status s = check_groups(o)) return s;
  if (sk_status s = read_relocations(h.elf, &o, options)) return s;
  *out = std::move(o);  // moving the vector keeps Section::data valid
  return SK_OK;
}

}  // namespace sk::elf
