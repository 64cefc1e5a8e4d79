// The ELF reader: good objects of every build variant parse; malformed ones (built here by
// mutating good bytes) are rejected with the right status and a message naming the object.
#include "host/linker/relocation.hpp"
#include "linker_test_support.hpp"

namespace sk::test {
namespace {

class ElfObjectVariant : public testing::TestWithParam<std::string> {};

TEST_P(ElfObjectVariant, ParsesSectionsSymbolsRelocations) {
  std::vector<uint8_t> bytes = kernel_bytes(GetParam(), "reloc_basic");
  elf::Object o;
  ASSERT_EQ(elf::parse_object(bytes.data(), bytes.size(), "basic.o", &o), SK_OK) << last_error();
  EXPECT_EQ(o.label, "basic.o");
  EXPECT_EQ(o.elf_class, ELFCLASS64);
  EXPECT_EQ(o.machine, host::kHostMachine);
  EXPECT_EQ(o.type, ET_REL);
  int text = o.find_section(".text");
  ASSERT_GT(text, 0);
  EXPECT_TRUE(o.sections[text].flags & SHF_EXECINSTR);
  EXPECT_EQ(o.find_section(".no-such-section"), -1);
  int meta = o.find_section(".sk.kernels");
  ASSERT_GT(meta, 0);
  EXPECT_NE(o.sections[meta].data, nullptr);
  bool found = false;
  for (const elf::Symbol &s : o.symbols)
    if (s.name == "reloc_switch") {
      found = true;
      EXPECT_EQ(s.type, STT_FUNC);
      EXPECT_EQ(s.bind, STB_GLOBAL);
      EXPECT_LT(s.shndx, o.sections.size());
    }
  EXPECT_TRUE(found);
  ASSERT_FALSE(o.relocation_sections.empty());
  for (const elf::RelocationSection &rs : o.relocation_sections) {
    ASSERT_LT(rs.target, o.sections.size());
    for (const elf::Relocation &r : rs.relocations) {
      EXPECT_LT(r.offset, o.sections[rs.target].size);
      EXPECT_LT(r.symbol, o.symbols.size());
    }
  }
  for (const elf::Section &s : o.sections)
    if (s.data) {
      EXPECT_GE(s.data, o.image.data());
      EXPECT_LE(s.data + s.size, o.image.data() + o.image.size());
    }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, ElfObjectVariant, testing::ValuesIn(kernel_variants()), variant_name);

// Mutations of one good object. Offsets of the fields come from parsing it first.
class ElfMalformed : public testing::Test {
 protected:
  void SetUp() override {
    good_ = kernel_bytes("gcc-O2-pic", "reloc_basic");
    ASSERT_EQ(elf::parse_object(good_.data(), good_.size(), "good.o", &parsed_), SK_OK) << last_error();
  }
  Elf64_Ehdr &ehdr(std::vector<uint8_t> &b) { return *reinterpret_cast<Elf64_Ehdr *>(b.data()); }
  Elf64_Shdr &shdr(std::vector<uint8_t> &b, size_t i) {
    return *reinterpret_cast<Elf64_Shdr *>(b.data() + ehdr(b).e_shoff + i * sizeof(Elf64_Shdr));
  }
  uint64_t file_offset(uint32_t section) const { return parsed_.sections[section].data - parsed_.image.data(); }
  const elf::RelocationSection &text_relocations() const {
    for (const elf::RelocationSection &rs : parsed_.relocation_sections)
      if (parsed_.sections[rs.target].name == ".text") return rs;
    return parsed_.relocation_sections.at(0);
  }
  Elf64_Rela &rela(std::vector<uint8_t> &b, size_t k) {
    return *reinterpret_cast<Elf64_Rela *>(b.data() + file_offset(text_relocations().index) +
                                           k * sizeof(Elf64_Rela));
  }
  uint32_t symtab() const {
    for (size_t i = 0; i < parsed_.sections.size(); ++i)
      if (parsed_.sections[i].type == SHT_SYMTAB) return static_cast<uint32_t>(i);
    return 0;
  }
  Elf64_Sym &sym(std::vector<uint8_t> &b, size_t k) {
    return *reinterpret_cast<Elf64_Sym *>(b.data() + file_offset(symtab()) + k * sizeof(Elf64_Sym));
  }
  // Parses `bad`; expects `status` and a message naming the object and `needle`.
  void expect_parse(const std::vector<uint8_t> &bad, sk_status status, const char *needle) {
    elf::Object o;
    sk_status s = elf::parse_object(bad.data(), bad.size(), "bad.o", &o);
    EXPECT_EQ(s, status) << "status " << s << ": " << last_error();
    EXPECT_NE(std::strstr(last_error(), "bad.o"), nullptr) << last_error();
    EXPECT_NE(std::strstr(last_error(), needle), nullptr) << "'" << needle << "' not in: " << last_error();
  }
  std::vector<uint8_t> good_;
  elf::Object parsed_;
};

TEST_F(ElfMalformed, TruncatedAtManyLengths) {
  for (size_t len = 0; len < good_.size(); len += (len < 128 ? 1 : 61)) {
    elf::Object o;
    sk_status s = elf::parse_object(good_.data(), len, "cut.o", &o);
    EXPECT_EQ(s, SK_ERR_BAD_BINARY) << "length " << len << ": " << last_error();
    EXPECT_NE(std::strstr(last_error(), "cut.o"), nullptr) << last_error();
  }
}

TEST_F(ElfMalformed, BadMagic) {
  std::vector<uint8_t> b = good_;
  b[1] = 'X';
  expect_parse(b, SK_ERR_BAD_BINARY, "not an ELF");
}

TEST_F(ElfMalformed, SectionHeaderOffsetOutOfRange) {
  std::vector<uint8_t> b = good_;
  ehdr(b).e_shoff = b.size() - 10;
  expect_parse(b, SK_ERR_BAD_BINARY, "outside");
  ehdr(b).e_shoff = UINT64_MAX - 8;
  expect_parse(b, SK_ERR_BAD_BINARY, "e_shoff");
  b = good_;
  ehdr(b).e_shnum = 0xfff0;
  expect_parse(b, SK_ERR_BAD_BINARY, "section header table");
  b = good_;
  ehdr(b).e_shstrndx = 0xfe00;
  expect_parse(b, SK_ERR_BAD_BINARY, "e_shstrndx");
}

TEST_F(ElfMalformed, SectionDataOutOfRange) {
  std::vector<uint8_t> b = good_;
  int text = parsed_.find_section(".text");
  shdr(b, text).sh_offset = b.size() - 4;
  expect_parse(b, SK_ERR_BAD_BINARY, "'.text': data [");
  shdr(b, text).sh_offset = 0x40;
  shdr(b, text).sh_size = UINT64_MAX - 0x20;  // offset + size wraps around
  expect_parse(b, SK_ERR_BAD_BINARY, "outside the");
}

TEST_F(ElfMalformed, SectionNameOutOfRange) {
  std::vector<uint8_t> b = good_;
  shdr(b, 1).sh_name = 0x7fffffff;
  expect_parse(b, SK_ERR_BAD_BINARY, "name offset");
}

TEST_F(ElfMalformed, RelocationLinkAndInfo) {
  uint32_t rs = text_relocations().index;
  std::vector<uint8_t> b = good_;
  shdr(b, rs).sh_link = 999;
  expect_parse(b, SK_ERR_BAD_BINARY, "sh_link");
  b = good_;
  shdr(b, rs).sh_link = 1;  // a section that is not the symbol table
  expect_parse(b, SK_ERR_BAD_BINARY, "sh_link");
  b = good_;
  shdr(b, rs).sh_info = 999;
  expect_parse(b, SK_ERR_BAD_BINARY, "sh_info");
  b = good_;
  shdr(b, rs).sh_info = rs;  // relocating itself
  expect_parse(b, SK_ERR_BAD_BINARY, "sh_info");
  b = good_;
  shdr(b, symtab()).sh_link = 0xfff;
  expect_parse(b, SK_ERR_BAD_BINARY, "sh_link");
  b = good_;
  shdr(b, symtab()).sh_info = 0xffffff;
  expect_parse(b, SK_ERR_BAD_BINARY, "sh_info");
  b = good_;
  shdr(b, rs).sh_entsize = 7;
  expect_parse(b, SK_ERR_BAD_BINARY, "sh_entsize");
}

TEST_F(ElfMalformed, RelocationSymbolIndexOutOfRange) {
  std::vector<uint8_t> b = good_;
  rela(b, 0).r_info = ELF64_R_INFO(0xffffff, ELF64_R_TYPE(rela(b, 0).r_info));
  expect_parse(b, SK_ERR_BAD_BINARY, "symbol index");
}

TEST_F(ElfMalformed, RelocationOffsetPastSectionEnd) {
  std::vector<uint8_t> b = good_;
  rela(b, 0).r_offset = parsed_.sections[parsed_.find_section(".text")].size;
  expect_parse(b, SK_ERR_BAD_BINARY, "r_offset");
}

TEST_F(ElfMalformed, SymbolSectionIndexAndName) {
  std::vector<uint8_t> b = good_;
  size_t k = parsed_.symbols.size() - 1;
  sym(b, k).st_shndx = static_cast<uint16_t>(parsed_.sections.size() + 5);
  expect_parse(b, SK_ERR_BAD_BINARY, "st_shndx");
  b = good_;
  sym(b, k).st_name = 0x7ffffff0;
  expect_parse(b, SK_ERR_BAD_BINARY, "name offset");
  b = good_;
  for (size_t i = 1; i < parsed_.symbols.size(); ++i)
    if (parsed_.symbols[i].name == "reloc_switch") sym(b, i).st_value = 0x7fffffff;
  expect_parse(b, SK_ERR_BAD_BINARY, "st_value");
}

TEST_F(ElfMalformed, WrongClassTypeMachine) {
  std::vector<uint8_t> b = good_;
  b[EI_CLASS] = ELFCLASS32;
  expect_parse(b, SK_ERR_UNSUPPORTED, "class");
  b = good_;
  b[EI_DATA] = ELFDATA2MSB;
  expect_parse(b, SK_ERR_UNSUPPORTED, "little-endian");
  for (uint16_t type : {ET_EXEC, ET_DYN, ET_CORE}) {
    b = good_;
    ehdr(b).e_type = type;
    expect_parse(b, SK_ERR_UNSUPPORTED, "e_type");
  }
  // The machine is the linker's to judge: the object parses, the link of another machine's
  // object (one the linker knows, and one it does not) is refused.
  for (uint16_t machine : {host::kHostMachine == EM_X86_64 ? EM_AARCH64 : EM_X86_64, EM_RISCV}) {
    b = good_;
    ehdr(b).e_machine = machine;
    Loaded l;
    EXPECT_EQ(load_bytes(b, "other.o", Resolver().options(), &l), SK_ERR_UNSUPPORTED);
    EXPECT_EQ(l.parse_status, SK_OK);
    EXPECT_NE(l.message.find("other.o"), std::string::npos) << l.message;
    EXPECT_NE(l.message.find("e_machine " + std::to_string(machine) + " is not"), std::string::npos) << l.message;
    EXPECT_NE(l.message.find("the host's machine"), std::string::npos) << l.message;
  }
}

// What the cubin reader (elf/cubin.cpp) asks for beyond the host linker's inputs: linked
// objects, SHT_REL relocations and a processor-specific section type without file bytes.
TEST_F(ElfMalformed, ParseOptionsAcceptMoreOnlyWhenAsked) {
  const elf::ParseOptions cubin_like{.executable = true, .rel_sections = true, .nobits_type = 0x7000000a};
  elf::Object o;
  // An executable: symbol values are addresses, checked against their section's sh_addr.
  std::vector<uint8_t> b = good_;
  ehdr(b).e_type = ET_EXEC;
  expect_parse(b, SK_ERR_UNSUPPORTED, "e_type");
  ASSERT_EQ(elf::parse_object(b.data(), b.size(), "exec.o", &o, cubin_like), SK_OK) << last_error();
  EXPECT_EQ(o.type, ET_EXEC);
  uint32_t text = 0;
  size_t symbol = 0;
  for (size_t k = 1; k < parsed_.symbols.size() && !text; ++k)
    if (parsed_.symbols[k].type == STT_FUNC && parsed_.symbols[k].shndx < parsed_.sections.size()) {
      symbol = k;
      text = parsed_.symbols[k].shndx;
    }
  ASSERT_GT(text, 0u);
  shdr(b, text).sh_addr = 0x10000;
  EXPECT_EQ(elf::parse_object(b.data(), b.size(), "exec.o", &o, cubin_like),
            SK_ERR_BAD_BINARY);  // below its section
  EXPECT_NE(std::strstr(last_error(), "st_value"), nullptr) << last_error();
  for (size_t k = 1; k < parsed_.symbols.size(); ++k)
    if (parsed_.symbols[k].shndx == text) sym(b, k).st_value = 0x10000 + parsed_.symbols[k].value;
  ASSERT_EQ(elf::parse_object(b.data(), b.size(), "exec.o", &o, cubin_like), SK_OK) << last_error();
  EXPECT_EQ(o.sections[text].addr, 0x10000u);
  EXPECT_EQ(o.symbols[symbol].other, sym(b, symbol).st_other);

  // A section of the processor-specific NOBITS type may lie past the image: it has no bytes.
  b = good_;
  const int comment = parsed_.find_section(".comment");
  ASSERT_GT(comment, 0);
  shdr(b, comment).sh_type = 0x7000000a;
  shdr(b, comment).sh_offset = b.size() + 4096;
  expect_parse(b, SK_ERR_BAD_BINARY, "outside");
  ASSERT_EQ(elf::parse_object(b.data(), b.size(), "nobits.o", &o, cubin_like), SK_OK) << last_error();
  EXPECT_EQ(o.sections[comment].data, nullptr);

  // SHT_REL: refused for the host linker, read with addend 0 for the cubin reader.
  b = good_;
  const elf::RelocationSection &rs = text_relocations();
  const Elf64_Rela first = rela(b, 0);
  Elf64_Shdr &h = shdr(b, rs.index);
  h.sh_type = SHT_REL;
  h.sh_entsize = sizeof(Elf64_Rel);
  h.sh_size = sizeof(Elf64_Rel);
  const Elf64_Rel plain{first.r_offset, first.r_info};
  std::memcpy(b.data() + file_offset(rs.index), &plain, sizeof plain);
  expect_parse(b, SK_ERR_UNSUPPORTED, "SHT_REL");
  ASSERT_EQ(elf::parse_object(b.data(), b.size(), "rel.o", &o, cubin_like), SK_OK) << last_error();
  bool found = false;
  for (const elf::RelocationSection &r : o.relocation_sections)
    if (r.index == rs.index) {
      found = true;
      ASSERT_EQ(r.relocations.size(), 1u);
      EXPECT_EQ(r.relocations[0].offset, first.r_offset);
      EXPECT_EQ(r.relocations[0].type, ELF64_R_TYPE(first.r_info));
      EXPECT_EQ(r.relocations[0].symbol, ELF64_R_SYM(first.r_info));
      EXPECT_EQ(r.relocations[0].addend, 0);
    }
  EXPECT_TRUE(found);
}

// -gz: debug sections compressed (SHF_COMPRESSED), whose relocations address the uncompressed
// bytes (the compression header's ch_size); a compressed section without that header, or one
// the linker would have to place (SHF_ALLOC), is refused by name.
TEST(ElfCompressed, RelocationsOfCompressedDebugSectionsAddressTheUncompressedBytes) {
  const std::vector<uint8_t> good = kernel_bytes("gcc-O2-gz", "shape_models");
  elf::Object o;
  ASSERT_EQ(elf::parse_object(good.data(), good.size(), "gz.o", &o), SK_OK) << last_error();
  int compressed = -1;
  bool past_compressed_size = false;
  for (const elf::RelocationSection &rs : o.relocation_sections) {
    const elf::Section &t = o.sections[rs.target];
    if (!(t.flags & SHF_COMPRESSED)) continue;
    compressed = (int)rs.target;
    for (const elf::Relocation &r : rs.relocations) past_compressed_size |= r.offset >= t.size;
  }
  ASSERT_GE(compressed, 0) << "no relocated compressed section in gcc -gz's object";
  EXPECT_TRUE(past_compressed_size);  // what the reader refused when it bounded them by sh_size
  auto header = [](std::vector<uint8_t> &b, int i) -> Elf64_Shdr & {
    const auto &eh = *reinterpret_cast<const Elf64_Ehdr *>(b.data());
    return *reinterpret_cast<Elf64_Shdr *>(b.data() + eh.e_shoff + i * sizeof(Elf64_Shdr));
  };
  std::vector<uint8_t> bad = good;
  header(bad, compressed).sh_flags |= SHF_ALLOC;
  EXPECT_EQ(elf::parse_object(bad.data(), bad.size(), "gz.o", &o), SK_ERR_BAD_BINARY);
  EXPECT_NE(std::strstr(last_error(), "SHF_ALLOC"), nullptr) << last_error();
  EXPECT_NE(std::strstr(last_error(), "'.debug"), nullptr) << last_error();
  bad = good;
  header(bad, compressed).sh_size = 4;
  EXPECT_EQ(elf::parse_object(bad.data(), bad.size(), "gz.o", &o), SK_ERR_BAD_BINARY);
  EXPECT_NE(std::strstr(last_error(), "compression header"), nullptr) << last_error();
}

TEST_F(ElfMalformed, NullImage) {
  elf::Object o;
  EXPECT_EQ(elf::parse_object(nullptr, 10, "null.o", &o), SK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(elf::parse_object(nullptr, 0, "", &o), SK_ERR_BAD_BINARY);
  EXPECT_NE(std::strstr(last_error(), "<memory>"), nullptr) << last_error();
}

}  // namespace
}  // namespace sk::test
