#include "elf/cubin_shared_overlay.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "common/error.hpp"
#include "elf/shared_overlay_layout.hpp"

namespace sk::elf {
namespace {

constexpr uint64_t kMaxSectionAlign = 1 << 16;

template <class T>
T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

sk_status rewrite_shared_overlay(const std::vector<uint8_t> &image, const Cubin &cubin, std::string_view label_view,
                                 std::string_view overlay_symbol, const std::vector<uint64_t> &offsets,
                                 std::vector<uint8_t> *out) {
  const std::string label(label_view);
  std::map<uint32_t, uint64_t> moved;  // symbol index -> offset in the overlay
  for (size_t v = 0; v < cubin.shared_vars.size() && v < offsets.size(); ++v)
    if (cubin.shared_vars[v].overlay && offsets[v] != SharedOverlayLayout::kInPlace)
      moved[cubin.shared_vars[v].symbol] = offsets[v];
  out->clear();
  if (moved.empty()) return SK_OK;
  Object o;
  if (sk_status st = parse_object(image.data(), image.size(), label, &o, kCubinParseOptions); st != SK_OK) return st;
  const Elf64_Ehdr eh = load<Elf64_Ehdr>(image.data());
  if (eh.e_type != ET_REL || eh.e_phnum != 0 || eh.e_shnum != o.sections.size())
    return fail(SK_ERR_UNSUPPORTED, "%s: only a relocatable cubin without program headers can be rewritten",
                label.c_str());
  int symtab = -1;
  for (size_t i = 1; i < o.sections.size(); ++i)
    if (o.sections[i].type == SHT_SYMTAB) symtab = (int)i;
  if (symtab < 0) return fail(SK_ERR_BAD_BINARY, "%s: no symbol table", label.c_str());
  const uint32_t strtab = o.sections[symtab].link;  // checked by parse_object

  // The edited sections' new bytes; the others keep theirs.
  std::vector<std::vector<uint8_t>> edited(o.sections.size());
  auto edit = [&](uint32_t i) -> std::vector<uint8_t> & {
    if (edited[i].empty()) edited[i].assign(o.sections[i].data, o.sections[i].data + o.sections[i].size);
    return edited[i];
  };
  std::vector<uint8_t> &names = edit(strtab);
  const uint32_t name = (uint32_t)names.size();
  names.insert(names.end(), overlay_symbol.begin(), overlay_symbol.end());
  names.push_back(0);
  std::vector<uint8_t> &syms = edit((uint32_t)symtab);
  const uint32_t overlay = (uint32_t)(syms.size() / sizeof(Elf64_Sym));
  for (const auto &[index, offset] : moved) {
    // Size 0: the variable keeps its name (for a debugger) but takes no shared memory.
    Elf64_Sym s = load<Elf64_Sym>(syms.data() + index * sizeof(Elf64_Sym));
    s.st_size = 0;
    std::memcpy(syms.data() + index * sizeof(Elf64_Sym), &s, sizeof s);
  }
  // Global symbols follow the local ones (sh_info counts those), so the new one goes last.
  Elf64_Sym added{};
  added.st_name = name;
  added.st_info = ELF64_ST_INFO(STB_GLOBAL, kSttCudaObject);
  added.st_other = kStoCudaShared;
  added.st_shndx = SHN_UNDEF;
  const auto *bytes = reinterpret_cast<const uint8_t *>(&added);
  syms.insert(syms.end(), bytes, bytes + sizeof added);

  for (const RelocationSection &rs : o.relocation_sections) {
    if (o.sections[rs.index].type != SHT_RELA) continue;  // cubin.cpp keeps their variables in place
    for (size_t k = 0; k < rs.relocations.size(); ++k) {
      auto it = moved.find(rs.relocations[k].symbol);
      if (it == moved.end()) continue;
      std::vector<uint8_t> &d = edit(rs.index);
      Elf64_Rela r = load<Elf64_Rela>(d.data() + k * sizeof(Elf64_Rela));
      if (r.r_addend > INT64_MAX - (int64_t)it->second)
        return fail(SK_ERR_BAD_BINARY, "%s: section '%s': relocation %zu: r_addend %lld overflows past the overlay",
                    label.c_str(), o.sections[rs.index].name.c_str(), k, (long long)r.r_addend);
      r.r_info = ELF64_R_INFO(overlay, ELF64_R_TYPE(r.r_info));
      r.r_addend += (int64_t)it->second;
      std::memcpy(d.data() + k * sizeof(Elf64_Rela), &r, sizeof r);
    }
  }

  // Lay the file out again: the sections in their old order, each at its alignment, then the
  // section header table.
  std::vector<Elf64_Shdr> headers(o.sections.size());
  for (size_t i = 0; i < headers.size(); ++i)
    headers[i] = load<Elf64_Shdr>(image.data() + eh.e_shoff + i * sizeof(Elf64_Shdr));
  std::vector<uint32_t> order;
  for (uint32_t i = 1; i < headers.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return headers[a].sh_offset < headers[b].sh_offset; });
  std::vector<uint8_t> file(image.begin(), image.begin() + sizeof(Elf64_Ehdr));
  for (uint32_t i : order) {
    Elf64_Shdr &h = headers[i];
    if (h.sh_type == SHT_NULL) continue;
    if (!o.sections[i].data) {  // NOBITS: no bytes in the file
      h.sh_offset = file.size();
      continue;
    }
    const uint64_t align = h.sh_addralign ? h.sh_addralign : 1;
    if (align > kMaxSectionAlign)  // a cubin's are at most 128 bytes: this one would pad the file by gigabytes
      return fail(SK_ERR_BAD_BINARY, "%s: section '%s': sh_addralign %llu is larger than %llu", label.c_str(),
                  o.sections[i].name.c_str(), (unsigned long long)align, (unsigned long long)kMaxSectionAlign);
    file.resize((file.size() + align - 1) / align * align);
    h.sh_offset = file.size();
    if (!edited[i].empty()) {
      h.sh_size = edited[i].size();
      file.insert(file.end(), edited[i].begin(), edited[i].end());
    } else {
      file.insert(file.end(), o.sections[i].data, o.sections[i].data + o.sections[i].size);
    }
  }
  file.resize((file.size() + 7) / 8 * 8);
  Elf64_Ehdr header = eh;
  header.e_shoff = file.size();
  std::memcpy(file.data(), &header, sizeof header);
  const auto *table = reinterpret_cast<const uint8_t *>(headers.data());
  file.insert(file.end(), table, table + headers.size() * sizeof(Elf64_Shdr));
  *out = std::move(file);
  return SK_OK;
}

}  // namespace sk::elf
