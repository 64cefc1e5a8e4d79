// Several objects and archives as one object (elf/combine.hpp, elf/archive.hpp): archive
// reading (index, long names, no index, thin and damaged archives), need-only member pull-in to
// a fixpoint, strong/weak/COMDAT resolution, and the host device's module cache keyed by every
// input. Objects: tests/kernels/multi, by gcc and clang at -O0 and -O2.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "elf/archive.hpp"
#include "elf/combine.hpp"
#include "host/host_device.hpp"
#include "linker_test_support.hpp"

namespace sk::test {
namespace {

std::vector<std::string> multi_variants() {
  std::vector<std::string> out;
  std::stringstream ss(SK_TEST_MULTI_VARIANTS);
  for (std::string v; std::getline(ss, v, ',');)
    if (!v.empty()) out.push_back(v);
  return out;
}

std::string multi_path(const std::string &variant, const std::string &file) {
  return std::string(SK_TEST_KERNEL_DIR) + "/multi/" + variant + "/" + file;
}

// Files read for elf::combine; `bytes` keeps them alive.
struct Inputs {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<elf::Input> inputs;
  Inputs(const std::string &variant, std::initializer_list<const char *> files) {
    for (const char *f : files) {
      bytes.push_back(read_bytes(multi_path(variant, f)));
      EXPECT_FALSE(bytes.back().empty()) << "missing " << multi_path(variant, f);
    }
    size_t i = 0;
    for (const char *f : files) inputs.push_back({f, bytes[i].data(), bytes[i].size()}), ++i;
  }
};

// An archive written the way GNU ar writes one: an optional index, names over 15 characters
// in the `//` table.
std::vector<uint8_t> make_archive(const std::vector<std::pair<std::string, std::vector<uint8_t>>> &members,
                                  const std::vector<std::pair<std::string, size_t>> &index) {
  std::string long_names;
  std::vector<std::string> names;
  for (const auto &[name, data] : members) {
    if (name.size() < 16) {
      names.push_back(name + "/");
    } else {
      names.push_back("/" + std::to_string(long_names.size()));
      long_names += name + "/\n";
    }
  }
  auto header = [](const std::string &name, size_t size) {
    char h[61];
    std::snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name.c_str(), "0", "0", "0", "644", size);
    return std::string(h, 60);
  };
  size_t index_size = index.empty() ? 0 : 4 + 4 * index.size();
  for (const auto &e : index) index_size += e.first.size() + 1;
  // Member header offsets: after the magic, the index and the name table (each padded to 2).
  size_t at = 8 + (index.empty() ? 0 : 60 + index_size + (index_size & 1)) +
              (long_names.empty() ? 0 : 60 + long_names.size() + (long_names.size() & 1));
  std::vector<size_t> offsets;
  for (const auto &m : members) offsets.push_back(at), at += 60 + m.second.size() + (m.second.size() & 1);
  std::string out = "!<arch>\n";
  auto pad = [&] {
    if (out.size() & 1) out += '\n';
  };
  if (!index.empty()) {
    out += header("/", index_size);
    auto be32 = [&](uint32_t v) {
      for (int s = 24; s >= 0; s -= 8) out += static_cast<char>(v >> s);
    };
    be32(static_cast<uint32_t>(index.size()));
    for (const auto &e : index) be32(static_cast<uint32_t>(offsets.at(e.second)));
    for (const auto &e : index) out += e.first + '\0';
    pad();
  }
  if (!long_names.empty()) {
    out += header("//", long_names.size()) + long_names;
    pad();
  }
  for (size_t i = 0; i < members.size(); ++i) {
    out += header(names[i], members[i].second.size());
    out.append(members[i].second.begin(), members[i].second.end());
    pad();
  }
  return std::vector<uint8_t>(out.begin(), out.end());
}

class MultiObject : public testing::TestWithParam<std::string> {};

// An archive as `ar rcs` wrote it: the index names the members that define each symbol.
TEST_P(MultiObject, ReadsTheArchiveIndex) {
  std::vector<uint8_t> bytes = read_bytes(multi_path(GetParam(), "libmulti.a"));
  elf::Archive a;
  ASSERT_EQ(elf::parse_archive(bytes.data(), bytes.size(), "libmulti.a", &a), SK_OK) << last_error();
  std::vector<std::string> names;
  for (const elf::ArchiveMember &m : a.members) names.push_back(m.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"multi_base.o", "multi_offset.o", "multi_tls_big.o", "multi_unused.o"}));
  ASSERT_EQ(a.symbols.count("multi_base"), 1u);
  EXPECT_EQ(a.member_label(a.symbols.find("multi_base")->second), "libmulti.a(multi_base.o)");
  EXPECT_EQ(a.symbols.count("multi_no_such_symbol"), 0u);  // an undefined symbol is not indexed
}

// A linker script's EXTERN names pull members in as an object's references would (ld -u); the
// members left out are recorded with what they define.
TEST_P(MultiObject, ExternScriptPullsMembers) {
  Inputs in(GetParam(), {"libmulti.a"});
  const std::string script = "/* as ld -u */\nEXTERN(multi_offset)";
  in.inputs.insert(in.inputs.begin(), {"pull.ld", script.data(), script.size()});
  elf::Object o;
  ASSERT_EQ(elf::combine(in.inputs, "set", &o), SK_OK) << last_error();
  EXPECT_EQ(o.part_labels, (std::vector<std::string>{"libmulti.a(multi_offset.o)", "libmulti.a(multi_base.o)"}));
  ASSERT_EQ(o.archive_definitions.count("multi_unused"), 1u);
  EXPECT_EQ(o.archive_definitions.at("multi_unused"), "libmulti.a(multi_unused.o)");
  EXPECT_EQ(o.archive_definitions.count("multi_offset"), 0u);  // linked
  for (const char *bad : {"EXTERN(multi_offset", "EXTERN multi_offset", "EXTERN(a) GROUP(b)", "EXTERN(a) /* open"}) {
    Inputs again(GetParam(), {"libmulti.a"});
    const std::string text = bad;
    again.inputs.insert(again.inputs.begin(), {"bad.ld", text.data(), text.size()});
    elf::Object none;
    EXPECT_EQ(elf::combine(again.inputs, "set", &none), SK_ERR_BAD_BINARY) << bad;
    EXPECT_NE(std::string(last_error()).find("bad.ld: at byte"), std::string::npos) << last_error();
  }
}

// Members pulled by need, to a fixpoint: multi_offset.o (for multi_main.o), then multi_base.o
// (for multi_offset.o); never multi_unused.o. Objects keep their order, members follow.
TEST_P(MultiObject, PullsMembersByNeedOnly) {
  Inputs in(GetParam(), {"libmulti.a", "multi_main.o", "multi_helper.o"});
  elf::Object o;
  ASSERT_EQ(elf::combine(in.inputs, "set", &o), SK_OK) << last_error();
  EXPECT_EQ(o.part_labels, (std::vector<std::string>{"multi_main.o", "multi_helper.o", "libmulti.a(multi_offset.o)",
                                                     "libmulti.a(multi_base.o)"}));
  Resolver r;
  std::unique_ptr<host::LinkedObject> linked;
  ASSERT_EQ(host::LinkedObject::link(o, r.options(), &linked), SK_OK) << last_error();
  // The test resolver runs block 3 of 4: elements 3 and 7.
  int32_t buf[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  auto kernel = reinterpret_cast<void (*)(int32_t *, uint32_t)>(linked->find_function("multi_kernel")->address);
  kernel(buf, 8);
  EXPECT_EQ(buf[2], 2);
  EXPECT_EQ(buf[3], (3 * 3 + 100) * 2 + 7);  // strong multi_pick (2) and the first weak (7)
  EXPECT_EQ(buf[7], (3 * 7 + 100) * 2 + 7);
  // Both objects' .sk.kernels records are read.
  const auto &records = linked->metadata_records();
  auto has = [&](const char *needle) {
    return std::any_of(records.begin(), records.end(),
                       [&](const std::string &s) { return s.find(needle) != s.npos; });
  };
  EXPECT_TRUE(has("kernel=multi_kernel;")) << records.size();
  EXPECT_TRUE(has("kernel=multi_helper_kernel;")) << records.size();
}

// The definitions that win, and the object each comes from.
TEST_P(MultiObject, StrongBeatsWeakAndTheFirstWeakWins) {
  Inputs in(GetParam(), {"multi_main.o", "multi_helper.o", "libmulti.a"});
  elf::Object o;
  ASSERT_EQ(elf::combine(in.inputs, "set", &o), SK_OK) << last_error();
  auto from = [&](const char *name) -> std::string {
    for (uint32_t i = 1; i < o.symbols.size(); ++i)
      if (o.symbols[i].name == name) {
        EXPECT_NE(o.symbols[i].shndx, SHN_UNDEF) << name;
        EXPECT_LT(o.symbols[i].shndx, o.sections.size()) << name;
        return o.section_label(o.symbols[i].shndx);
      }
    ADD_FAILURE() << "no symbol " << name;
    return "";
  };
  EXPECT_EQ(from("multi_pick"), "multi_helper.o");
  EXPECT_EQ(from("multi_first_weak"), "multi_main.o");
  EXPECT_EQ(from("multi_base"), "libmulti.a(multi_base.o)");
  size_t picks = 0;
  for (const elf::Symbol &s : o.symbols) picks += s.name == "multi_pick";
  EXPECT_EQ(picks, 1u);  // one global per name
}

// The same inline variable and template instance in two C++ objects: one copy kept.
TEST_P(MultiObject, KeepsOneCopyOfAComdatGroup) {
  Inputs in(GetParam(), {"multi_comdat_a.o", "multi_comdat_b.o"});
  elf::Object a, o;
  ASSERT_EQ(elf::parse_object(in.inputs[0].bytes, in.inputs[0].size, "a", &a), SK_OK);
  ASSERT_EQ(elf::combine(in.inputs, "set", &o), SK_OK) << last_error();
  auto count = [](const elf::Object &obj, const std::string &prefix) {
    size_t n = 0;
    for (const elf::Section &s : obj.sections) n += s.name.rfind(prefix, 0) == 0;
    return n;
  };
  // clang -O2 may fold the template away; the inline variable is always a group of its own.
  EXPECT_EQ(count(o, ".text._Z11multi_twice"), count(a, ".text._Z11multi_twice"));
  size_t counter_sections = count(o, ".bss.multi_counter") + count(o, ".data.multi_counter");
  EXPECT_EQ(counter_sections, count(a, ".bss.multi_counter") + count(a, ".data.multi_counter"));
  for (const elf::Section &s : o.sections) EXPECT_NE(s.type, static_cast<uint32_t>(SHT_GROUP));
  std::unique_ptr<host::LinkedObject> linked;
  ASSERT_EQ(host::LinkedObject::link(o, Resolver().options(), &linked), SK_OK) << last_error();
  int out[2] = {};
  reinterpret_cast<void (*)(int *)>(linked->find_function("multi_comdat_a")->address)(&out[0]);
  reinterpret_cast<void (*)(int *)>(linked->find_function("multi_comdat_b")->address)(&out[1]);
  EXPECT_EQ(out[0], 41);
  EXPECT_EQ(out[1], 2011);  // the counter b saw is the one a incremented
}

TEST_P(MultiObject, RefusesTwoStrongDefinitionsNamingBoth) {
  Inputs in(GetParam(), {"multi_main.o", "multi_helper.o", "multi_dup.o"});
  elf::Object o;
  EXPECT_EQ(elf::combine(in.inputs, "set", &o), SK_ERR_BAD_BINARY);
  const std::string m = last_error();
  EXPECT_NE(m.find("'multi_scale' is defined in multi_helper.o and again in multi_dup.o"), m.npos) << m;
}

INSTANTIATE_TEST_SUITE_P(Variants, MultiObject, testing::ValuesIn(multi_variants()), variant_name);

// Long names through `//`, and an archive without an index: built from the members' symbols.
TEST(Archive, LongNamesAndNoIndex) {
  const std::string variant = multi_variants().at(0);
  std::vector<uint8_t> base = read_bytes(multi_path(variant, "multi_base.o"));
  std::vector<uint8_t> offset = read_bytes(multi_path(variant, "multi_offset.o"));
  for (bool with_index : {true, false}) {
    std::vector<std::pair<std::string, size_t>> index;
    if (with_index) index = {{"multi_offset", 0}, {"multi_base", 1}};
    std::vector<uint8_t> ar = make_archive({{"a_member_with_a_long_name.o", offset}, {"b.o", base}}, index);
    elf::Archive a;
    ASSERT_EQ(elf::parse_archive(ar.data(), ar.size(), "libx.a", &a), SK_OK) << last_error();
    ASSERT_EQ(a.members.size(), 2u);
    EXPECT_EQ(a.members[0].name, "a_member_with_a_long_name.o");
    EXPECT_EQ(a.members[1].name, "b.o");
    ASSERT_EQ(a.symbols.count("multi_base"), 1u) << with_index;
    EXPECT_EQ(a.symbols.find("multi_base")->second, 1u);
    EXPECT_EQ(a.symbols.find("multi_offset")->second, 0u);
  }
}

TEST(Archive, RefusesThinAndDamagedArchives) {
  elf::Archive a;
  const std::string thin = "!<thin>\n";
  EXPECT_EQ(elf::parse_archive(thin.data(), thin.size(), "libthin.a", &a), SK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error()).find("libthin.a: a thin archive"), std::string::npos) << last_error();
  std::vector<uint8_t> ar = make_archive({{"b.o", std::vector<uint8_t>(100, 0)}}, {});
  std::vector<uint8_t> cut(ar.begin(), ar.end() - 50);
  EXPECT_EQ(elf::parse_archive(cut.data(), cut.size(), "libcut.a", &a), SK_ERR_BAD_BINARY);
  EXPECT_NE(std::string(last_error()).find("runs past"), std::string::npos) << last_error();
  std::vector<uint8_t> bad_index = make_archive({{"b.o", std::vector<uint8_t>(10, 0)}}, {{"x", 0}});
  bad_index[8 + 60 + 4] ^= 0x7f;  // the index's first offset no longer points at a member
  EXPECT_EQ(elf::parse_archive(bad_index.data(), bad_index.size(), "libidx.a", &a), SK_ERR_BAD_BINARY);
  EXPECT_NE(std::string(last_error()).find("is not a member"), std::string::npos) << last_error();
}

// A member that does not parse is named with its archive and the symbol that pulled it.
TEST(Archive, NamesABadMemberAndWhoNeededIt) {
  const std::string variant = multi_variants().at(0);
  std::vector<uint8_t> main = read_bytes(multi_path(variant, "multi_main.o"));
  std::vector<uint8_t> helper = read_bytes(multi_path(variant, "multi_helper.o"));
  std::vector<uint8_t> ar = make_archive({{"broken.o", {0x7f, 'E', 'L', 'F', 2, 1}}}, {{"multi_offset", 0}});
  std::vector<elf::Input> in = {{"main.o", main.data(), main.size()},
                                {"helper.o", helper.data(), helper.size()},
                                {"libbad.a", ar.data(), ar.size()}};
  elf::Object o;
  EXPECT_EQ(elf::combine(in, "set", &o), SK_ERR_BAD_BINARY);
  const std::string m = last_error();
  EXPECT_NE(m.find("libbad.a(broken.o)"), m.npos) << m;
  EXPECT_NE(m.find("'multi_offset', needed by main.o"), m.npos) << m;
}

// The cache keys a set by every input in order: the same set links once, another order is
// another module, and one input is the plain load of its bytes.
TEST(MultiObjectCache, KeysOnEveryInput) {
  std::unique_ptr<host::HostDevice> dev;
  DeviceSpec spec;
  spec.backend = "host";
  spec.keys.emplace_back("cores", "1");
  ASSERT_EQ(host::HostDevice::open(spec, &dev), SK_OK) << last_error();
  Inputs in(multi_variants().at(0), {"multi_main.o", "multi_helper.o", "libmulti.a"});
  std::shared_ptr<host::LinkedModule> a, b, c, one, plain;
  ASSERT_EQ(dev->load_module_set(in.inputs, "set", &a), SK_OK) << last_error();
  ASSERT_EQ(dev->load_module_set(in.inputs, "set again", &b), SK_OK) << last_error();
  EXPECT_EQ(a, b);
  std::vector<elf::Input> swapped = {in.inputs[1], in.inputs[0], in.inputs[2]};
  ASSERT_EQ(dev->load_module_set(swapped, "swapped", &c), SK_OK) << last_error();
  EXPECT_NE(a, c);
  EXPECT_EQ(dev->module_cache_entries(), 2u);
  ASSERT_EQ(dev->load_module_set({in.inputs[1]}, "helper", &one), SK_OK) << last_error();
  ASSERT_EQ(dev->load_module(in.inputs[1].bytes, in.inputs[1].size, "helper", &plain), SK_OK);
  EXPECT_EQ(one, plain);
  EXPECT_EQ(one->image.size(), in.inputs[1].size);  // keyed by its bytes alone, as sk_module_load
}

}  // namespace
}  // namespace sk::test
