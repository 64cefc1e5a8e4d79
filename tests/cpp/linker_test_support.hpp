// Shared by the ELF reader, linker and relocation tests: the kernel build matrix, loading a
// test kernel, a resolver for undefined symbols, and reading /proc/self/maps.
#pragma once
#include <elf.h>
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "elf/elf_object.hpp"
#include "host/linker/linker.hpp"

namespace sk::test {

inline std::vector<std::string> kernel_variants() {
  std::vector<std::string> out;
  std::stringstream ss(SK_TEST_KERNEL_VARIANTS);
  for (std::string v; std::getline(ss, v, ',');)
    if (!v.empty()) out.push_back(v);
  return out;
}

inline std::string kernel_path(const std::string &variant, const std::string &name) {
  return std::string(SK_TEST_KERNEL_DIR) + "/" + variant + "/" + name + ".o";
}

inline std::vector<uint8_t> read_bytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline std::vector<uint8_t> kernel_bytes(const std::string &variant, const std::string &name) {
  std::vector<uint8_t> bytes = read_bytes(kernel_path(variant, name));
  EXPECT_FALSE(bytes.empty()) << "missing kernel " << kernel_path(variant, name);
  return bytes;
}

// Undefined symbols the tests bind by name (the "device API" of the test).
extern "C" inline uint32_t test_block_idx() { return 3; }
extern "C" inline uint32_t test_block_num() { return 4; }

struct Resolver {
  std::map<std::string, void *> names;
  Resolver() {
    names["sk_block_idx"] = reinterpret_cast<void *>(&test_block_idx);
    names["sk_block_num"] = reinterpret_cast<void *>(&test_block_num);
  }
  host::LinkOptions options() const {
    host::LinkOptions o;
    auto copy = names;
    o.resolve_special = [copy](std::string_view name) -> void * {
      auto it = copy.find(std::string(name));
      return it == copy.end() ? nullptr : it->second;
    };
    return o;
  }
};

// Parses and links one kernel of one variant.
struct Loaded {
  elf::Object object;
  std::unique_ptr<host::LinkedObject> linked;
  sk_status parse_status = SK_OK, link_status = SK_OK;
  std::string message;

  template <typename Fn>
  Fn fn(const char *name) const {
    const host::LinkedFunction *f = linked ? linked->find_function(name) : nullptr;
    EXPECT_NE(f, nullptr) << "no function " << name;
    return f ? reinterpret_cast<Fn>(f->address) : nullptr;
  }
  template <typename T>
  T *sym(const char *name) const {
    void *p = linked ? linked->find_symbol(name) : nullptr;
    EXPECT_NE(p, nullptr) << "no symbol " << name;
    return static_cast<T *>(p);
  }
};

inline sk_status load_bytes(const std::vector<uint8_t> &bytes, const std::string &label,
                            const host::LinkOptions &options, Loaded *out) {
  out->parse_status = elf::parse_object(bytes.data(), bytes.size(), label, &out->object);
  if (out->parse_status != SK_OK) {
    out->message = last_error();
    return out->parse_status;
  }
  out->link_status = host::LinkedObject::link(out->object, options, &out->linked);
  if (out->link_status != SK_OK) out->message = last_error();
  return out->link_status;
}

inline sk_status load_kernel(const std::string &variant, const std::string &name, const host::LinkOptions &options,
                             Loaded *out) {
  return load_bytes(kernel_bytes(variant, name), variant + "/" + name + ".o", options, out);
}

// Whether the object has a relocation of `type` applied to a loaded (SHF_ALLOC) section.
inline bool has_relocation(const elf::Object &o, uint32_t type) {
  for (const elf::RelocationSection &rs : o.relocation_sections) {
    if (!(o.sections[rs.target].flags & SHF_ALLOC) || o.sections[rs.target].name == ".eh_frame") continue;
    for (const elf::Relocation &r : rs.relocations)
      if (r.type == type) return true;
  }
  return false;
}

struct MapsEntry {
  uint64_t begin = 0, end = 0;
  std::string perms;
};

inline std::vector<MapsEntry> read_maps() {
  std::vector<MapsEntry> out;
  std::ifstream f("/proc/self/maps");
  for (std::string line; std::getline(f, line);) {
    MapsEntry e;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s", &e.begin, &e.end, perms) == 3) {
      e.perms = perms;
      out.push_back(e);
    }
  }
  return out;
}

inline std::string variant_name(const testing::TestParamInfo<std::string> &info) {
  std::string s = info.param;
  for (char &c : s)
    if (c == '-') c = '_';
  return s;
}

inline bool is_nopic(const std::string &variant) { return variant.find("nopic") != std::string::npos; }
inline bool is_pic(const std::string &variant) {
  return variant.size() >= 4 && variant.compare(variant.size() - 4, 4, "-pic") == 0;
}
inline bool is_clang(const std::string &variant) { return variant.rfind("clang", 0) == 0; }

// The relocations against .text of `o`, or nullptr.
inline const elf::RelocationSection *text_relocations(const elf::Object &o) {
  for (const elf::RelocationSection &rs : o.relocation_sections)
    if (o.sections[rs.target].name == ".text") return &rs;
  return nullptr;
}

// `bytes` with the type of the first entry of the Elf64_Rela table at `rela_at` replaced.
inline std::vector<uint8_t> with_relocation_type(std::vector<uint8_t> bytes, uint64_t rela_at, uint32_t type) {
  auto *rel = reinterpret_cast<Elf64_Rela *>(bytes.data() + rela_at);
  rel->r_info = ELF64_R_INFO(ELF64_R_SYM(rel->r_info), type);
  return bytes;
}

// A good object whose first .text relocation a test gives other types (an unknown one, a
// thread-local one), for what the loader must refuse naming the type and the place.
struct MutableTextRelocation {
  std::vector<uint8_t> good;
  elf::Object object;  // `good` parsed
  const elf::Relocation *first = nullptr;
  uint64_t rela_at = 0;  // its Elf64_Rela table in the image
  std::vector<uint8_t> with_type(uint32_t type) const { return with_relocation_type(good, rela_at, type); }
};

// Loads `kernel` of `variant` into *out (use with ASSERT_NO_FATAL_FAILURE).
inline void first_text_relocation(const char *variant, const char *kernel, MutableTextRelocation *out) {
  out->good = kernel_bytes(variant, kernel);
  ASSERT_EQ(elf::parse_object(out->good.data(), out->good.size(), "m.o", &out->object), SK_OK);
  const elf::RelocationSection *text = text_relocations(out->object);
  ASSERT_NE(text, nullptr);
  ASSERT_FALSE(text->relocations.empty());
  out->rela_at = out->object.sections[text->index].data - out->object.image.data();
  out->first = &text->relocations[0];
}

// A relocation field that cannot hold the value its symbol is bound to.
struct OverflowCase {
  const char *symbol;
  uint64_t value;      // the address the symbol is bound to
  const char *needle;  // what the error must say
};

// Links `kernel` (a gcc and a clang object) with each case's symbol bound to its value, on top
// of `base`: every link must fail with SK_ERR_UNSUPPORTED naming the relocation and the object.
inline void expect_overflows(const char *kernel, const Resolver &base, std::initializer_list<OverflowCase> cases) {
  for (const char *variant : {"gcc-O2-pie", "clang-O0-nopic"})
    for (const OverflowCase &c : cases) {
      Resolver r = base;
      r.names[c.symbol] = reinterpret_cast<void *>(c.value);
      Loaded l;
      EXPECT_EQ(load_kernel(variant, kernel, r.options(), &l), SK_ERR_UNSUPPORTED) << variant << " " << c.symbol;
      EXPECT_NE(l.message.find(c.needle), std::string::npos) << l.message;
      EXPECT_NE(l.message.find(std::string(kernel) + ".o"), std::string::npos) << l.message;
    }
}

}  // namespace sk::test
