// What is in an ELF relocatable object: sections, symbols, relocations, read with libelf.
// Every offset, size and index is checked against the image before use: a malformed object is
// an SK_ERR_BAD_BINARY naming the object and the bad field, never a crash.
#pragma once
#include <sk.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sk::elf {

struct Section {
  std::string name;
  uint32_t type = 0;   // SHT_*
  uint64_t flags = 0;  // SHF_*
  uint64_t align = 1;  // sh_addralign, at least 1
  uint64_t size = 0;
  uint64_t entsize = 0;
  uint32_t link = 0, info = 0;
  uint64_t addr = 0;              // sh_addr: 0 in a relocatable object
  const uint8_t *data = nullptr;  // into Object::image; nullptr for SHT_NOBITS
};

struct Symbol {
  std::string name;
  uint8_t type = 0;        // STT_*
  uint8_t bind = 0;        // STB_*
  uint8_t visibility = 0;  // STV_*
  uint8_t other = 0;       // st_other whole: some machines keep flags beside the visibility (EM_CUDA)
  uint32_t shndx = 0;      // section index (SHN_UNDEF, SHN_ABS, SHN_COMMON, or < sections.size())
  uint64_t value = 0, size = 0;
};

struct Relocation {
  uint64_t offset = 0;  // within the target section, checked: offset < target size
  uint32_t type = 0;    // R_<arch>_*
  uint32_t symbol = 0;  // index into Object::symbols, checked
  int64_t addend = 0;
};

struct RelocationSection {
  uint32_t index = 0;   // of the SHT_RELA section itself
  uint32_t target = 0;  // section the relocations apply to (sh_info), checked
  std::vector<Relocation> relocations;
};

struct Object {
  std::string label;              // file name or "<memory>", for messages
  std::vector<uint8_t> image;     // owned copy of the bytes; Section::data points in here
  uint8_t elf_class = 0;          // ELFCLASS64
  uint16_t machine = 0;           // EM_X86_64, EM_AARCH64, EM_CUDA...
  uint16_t type = 0;              // ET_REL
  std::vector<Section> sections;  // index = ELF section index
  std::vector<Symbol> symbols;    // index = ELF symbol index (0 = null symbol)
  std::vector<RelocationSection> relocation_sections;
  // Set by elf::combine (elf/combine.hpp) for an object made of several: each part's label,
  // the part each section came from, and the buffers Section::data points into besides `image`.
  std::vector<std::string> part_labels;
  std::vector<uint32_t> section_part;
  std::vector<uint32_t> symbol_part;  // an undefined global's: the first part referencing it
  std::vector<std::vector<uint8_t>> part_images;
  // Global symbols defined by archive members the set did not need, with the member's label
  // ("libfoo.a(bar.o)"): what a refusal of such a name can point to.
  std::map<std::string, std::string, std::less<>> archive_definitions;

  // Section index by exact name, or -1.
  int find_section(std::string_view name) const;
  // The label of the object section `index` came from: `label` unless combined.
  const std::string &section_label(uint32_t index) const;
  const std::string &symbol_label(uint32_t index) const;  // the same for symbol `index`
};

// What parse_object accepts besides the host linker's inputs (ET_REL, SHT_RELA relocations);
// the cubin reader (elf/cubin.hpp) asks for all of it.
struct ParseOptions {
  bool executable = false;    // ET_EXEC too; its symbol values are addresses (sh_addr + offset)
  bool rel_sections = false;  // SHT_REL relocations are read (addend 0) instead of refused
  uint32_t nobits_type = 0;   // a processor-specific section type that has no file bytes either
};

// Parses `size` bytes (copied) into *out. Accepts only 64-bit little-endian objects, ET_REL
// unless `options` say more; machine-specific checks are the caller's (the linker knows which
// machines it handles).
sk_status parse_object(const void *bytes, size_t size, std::string_view label, Object *out,
                       const ParseOptions &options = {});

}  // namespace sk::elf
