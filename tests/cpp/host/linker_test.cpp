// The host linker on what compilers really emit: every kernel of every build variant (gcc and
// clang, -O0/-O2/-O3, PIE/PIC/non-PIC) is linked and its functions called.
#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>

#include "linker_test_support.hpp"

extern "C" {
int reloc_test_ext_data = 4242;  // reached by reloc_basic through the GOT in PIC builds
}

namespace sk::test {
namespace {

class LinkerVariant : public testing::TestWithParam<std::string> {
 protected:
  Resolver resolver_;
  void SetUp() override { resolver_.names["reloc_ext_data"] = &reloc_test_ext_data; }
};

int expected_switch(int x) {
  static const int table[] = {11, 27, 31, 45, 52, 68, 71, 89, 93};
  return x >= 0 && x < 9 ? table[x] : -1;
}

TEST_P(LinkerVariant, BasicKernelRuns) {
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_basic", resolver_.options(), &l), SK_OK) << l.message;
  auto sw = l.fn<int (*)(int)>("reloc_switch");
  for (int x = -2; x < 12; ++x) EXPECT_EQ(sw(x), expected_switch(x)) << x;
  auto apply = l.fn<int (*)(int, int)>("reloc_apply");
  EXPECT_EQ(apply(0, 9), 81);
  EXPECT_EQ(apply(1, 9), -9);
  EXPECT_EQ(apply(2, 9), 18);
  EXPECT_EQ(apply(3, 9), 16);
  auto str = l.fn<const char *(*)(int)>("reloc_string");
  EXPECT_STREQ(str(0), "alpha");
  EXPECT_STREQ(str(3), "delta");
  EXPECT_EQ(l.fn<size_t (*)(const char *)>("reloc_strlen")("hello, world"), 12u);
  EXPECT_EQ(l.fn<uint32_t (*)()>("reloc_block")(), 304u);
  EXPECT_EQ(l.fn<int (*)(int)>("reloc_weak_check")(5), -7);  // unresolved weak symbol is 0
  auto bss = l.fn<long (*)(int)>("reloc_bss_roundtrip");
  EXPECT_EQ(bss(5), 5 * 1000 + 5);
  EXPECT_EQ(bss(5), 10 * 1000 + 10);
  EXPECT_EQ(*l.sym<long>("reloc_common_var"), 10);
  int *counter = l.fn<int *(*)()>("reloc_counter_address")();
  EXPECT_EQ(counter, l.sym<int>("reloc_counter"));
  EXPECT_EQ(*counter, 7);
  const double *c = l.sym<const double>("reloc_constants");
  for (double x : {0.0, 1.0, 2.0, 7.0})
    EXPECT_DOUBLE_EQ(l.fn<double (*)(double)>("reloc_scale")(x), x * 3.7 + 0.25 + c[(int)x & 3]);
  if (!is_nopic(GetParam())) {
    EXPECT_EQ(l.fn<int *(*)()>("reloc_ext_address")(), &reloc_test_ext_data);
    EXPECT_EQ(l.fn<int (*)()>("reloc_ext_read")(), 4242);
  }
}

TEST_P(LinkerVariant, BasicKernelMetadataAndReferences) {
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_basic", resolver_.options(), &l), SK_OK) << l.message;
  std::vector<std::string> expected = {"sk1;kernel=reloc_block;sig=;type=vector",
                                       "sk1;kernel=reloc_scale;sig=f64;type=cube"};
  std::vector<std::string> records = l.linked->metadata_records();
  std::sort(records.begin(), records.end());  // compilers may reorder the records
  EXPECT_EQ(records, expected);
  const host::LinkedFunction *f = l.linked->find_function("reloc_block");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->size, 0u);
  auto has = [](const host::LinkedFunction *fn, const char *name) {
    for (const std::string &s : fn->undefined_references)
      if (s == name) return true;
    return false;
  };
  EXPECT_TRUE(has(f, "sk_block_idx"));
  EXPECT_TRUE(has(f, "sk_block_num"));
  EXPECT_TRUE(has(l.linked->find_function("reloc_strlen"), "strlen"));
  EXPECT_EQ(l.linked->find_function("sq"), nullptr);             // static: not exported
  EXPECT_EQ(l.linked->find_function("reloc_counter"), nullptr);  // data
  EXPECT_EQ(l.linked->find_symbol("reloc_no_such"), nullptr);
}

// The relocation types the compilers are expected to emit for reloc_basic.c in this variant.
TEST_P(LinkerVariant, BasicKernelHasExpectedRelocationTypes) {
  std::vector<uint8_t> bytes = kernel_bytes(GetParam(), "reloc_basic");
  elf::Object o;
  ASSERT_EQ(elf::parse_object(bytes.data(), bytes.size(), GetParam(), &o), SK_OK);
#if defined(__aarch64__)
  EXPECT_TRUE(has_relocation(o, R_AARCH64_CALL26));            // calls to strlen, sk_block_idx
  EXPECT_TRUE(has_relocation(o, R_AARCH64_ADR_PREL_PG_HI21));  // adrp of data and constants
  EXPECT_TRUE(has_relocation(o, R_AARCH64_ADD_ABS_LO12_NC));   // ... and its low 12 bits
  EXPECT_TRUE(has_relocation(o, R_AARCH64_ABS64));             // the string pointer table
  EXPECT_TRUE(has_relocation(o, R_AARCH64_ADR_GOT_PAGE));      // the weak symbol, external data
  EXPECT_TRUE(has_relocation(o, R_AARCH64_LD64_GOT_LO12_NC));
  EXPECT_FALSE(has_relocation(o, R_AARCH64_ABS32));            // the small code model: no
  EXPECT_FALSE(has_relocation(o, R_AARCH64_MOVW_UABS_G0_NC));  // absolute code addresses
#else
  EXPECT_TRUE(has_relocation(o, R_X86_64_PLT32));  // calls to strlen, sk_block_idx
  EXPECT_TRUE(has_relocation(o, R_X86_64_PC32));   // RIP-relative data and constants
  EXPECT_TRUE(has_relocation(o, R_X86_64_64));     // the string pointer table
  if (is_nopic(GetParam())) {
    EXPECT_TRUE(has_relocation(o, R_X86_64_32S));  // jump table / array indexing
    EXPECT_TRUE(has_relocation(o, R_X86_64_32));   // movl $reloc_counter, %eax
  } else {
    EXPECT_FALSE(has_relocation(o, R_X86_64_32S));
    EXPECT_FALSE(has_relocation(o, R_X86_64_32));
  }
  // External data through the GOT: clang always, gcc only with -fPIC (its PIE code uses PC32).
  if (is_pic(GetParam()) || (is_clang(GetParam()) && !is_nopic(GetParam())))
    EXPECT_TRUE(has_relocation(o, R_X86_64_REX_GOTPCRELX));
#endif
  EXPECT_TRUE(o.find_section(".rodata") > 0 || o.find_section(".rodata.cst8") > 0);
}

TEST_P(LinkerVariant, ComdatGroupsLoad) {
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_comdat", resolver_.options(), &l), SK_OK) << l.message;
  bool group = false;
  for (const elf::Section &s : l.object.sections) group |= s.type == SHT_GROUP;
  EXPECT_TRUE(group);
  auto sum = l.fn<long (*)(int)>("reloc_comdat_sum");
  EXPECT_EQ(sum(5), 10 + 10 + 4);
  EXPECT_EQ(sum(5), 10 + 10 + 5);
}

TEST_P(LinkerVariant, ThreadLocalsArePerThread) {
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_tls", resolver_.options(), &l), SK_OK) << l.message;
  auto get = l.fn<int (*)()>("reloc_tls_get");
  EXPECT_EQ(get(), 1);
  EXPECT_EQ(get(), 2);
  int other[2] = {};
  std::thread([&] { other[0] = get(), other[1] = get(); }).join();  // a thread of its own: from 0
  EXPECT_EQ(other[0], 1);
  EXPECT_EQ(other[1], 2);
  EXPECT_EQ(get(), 3);
}

TEST_P(LinkerVariant, MissingStaticOnlySymbolSaysWhereItComesFrom) {
  Loaded l;
  EXPECT_EQ(load_kernel(GetParam(), "static_only_missing", resolver_.options(), &l), SK_ERR_NOT_FOUND);
  EXPECT_NE(l.message.find("'at_quick_exit'"), std::string::npos) << l.message;
  EXPECT_NE(l.message.find("glibc's libc_nonshared.a"), std::string::npos) << l.message;
}

TEST_P(LinkerVariant, MissingRustSymbolIsShownDemangled) {
  Loaded l;
  EXPECT_EQ(load_kernel(GetParam(), "rust_mangled_missing", resolver_.options(), &l), SK_ERR_NOT_FOUND);
  EXPECT_NE(l.message.find("'_RNvNtCs1234_7mycrate6module12missing_func' (mycrate::module::missing_func)"),
            std::string::npos)
      << l.message;
}

extern "C" int reloc_ctor_hook_value() { return 42; }

TEST_P(LinkerVariant, ConstructorsRunAtLoad) {
  Resolver r = resolver_;
  r.names["reloc_ctor_hook"] = reinterpret_cast<void *>(&reloc_ctor_hook_value);
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_ctor", r.options(), &l), SK_OK) << l.message;
  EXPECT_EQ(l.fn<int (*)()>("reloc_ctor_get")(), 42);
}

TEST_P(LinkerVariant, RejectsUnknownRelocation) {
  Loaded l;
  EXPECT_EQ(load_kernel(GetParam(), "reloc_unknown", resolver_.options(), &l), SK_ERR_UNSUPPORTED);
#if defined(__aarch64__)
  EXPECT_NE(l.message.find("type 287 (R_AARCH64_MOVW_PREL_G0)"), std::string::npos) << l.message;
#else
  EXPECT_NE(l.message.find("type 30 (R_X86_64_GOTPLT64)"), std::string::npos) << l.message;
#endif
  EXPECT_NE(l.message.find(".data.reloc_unknown"), std::string::npos) << l.message;
  EXPECT_NE(l.message.find("offset 0x0"), std::string::npos) << l.message;
}

TEST_P(LinkerVariant, UnresolvedSymbolIsNotFound) {
  Loaded l;
  EXPECT_EQ(load_kernel(GetParam(), "reloc_unresolved", resolver_.options(), &l), SK_ERR_NOT_FOUND);
  EXPECT_NE(l.message.find("'reloc_no_such_function_anywhere'"), std::string::npos) << l.message;
  EXPECT_NE(l.message.find("reloc_unresolved.o"), std::string::npos) << l.message;
  // The same object links once the device API provides the symbol.
  Resolver r = resolver_;
  r.names["reloc_no_such_function_anywhere"] = reinterpret_cast<void *>(+[](int x) { return x * 2; });
  Loaded ok;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_unresolved", r.options(), &ok), SK_OK) << ok.message;
  EXPECT_EQ(ok.fn<int (*)(int)>("reloc_unresolved_call")(20), 41);
}

TEST_P(LinkerVariant, ThirdPartyCalculatorRuns) {
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "thirdparty_calc", resolver_.options(), &l), SK_OK) << l.message;
  auto run = l.fn<int (*)(int, char **)>("thirdparty_calc_main");
  auto output = l.fn<const char *(*)()>("thirdparty_calc_output");
  char prog[] = "prog", arg[] = "xyz";
  char *argv[] = {prog, arg, nullptr};
  int calls = 0;
  for (int argc : {2, 3, 6}) {
    const int classify[] = {11, 27, 31, 45, 52, 68, 71, 89};
    int op = (argc & 1) ? argc * 3 : argc + 3;
    static const char *names[] = {"zero", "one", "two", "three"};
    char expected[256];
    int n = std::snprintf(expected, sizeof expected, "%s %d %.3f %.3f %.3f %s", names[argc & 3], classify[argc] + op,
                          std::sin(2.5 * argc), std::exp(1.0 / argc), (double)std::sqrt((float)argc), "xyz");
    ++calls;
    EXPECT_EQ(run(argc, argv), n + calls * 1000);
    EXPECT_STREQ(output(), expected);
  }
}

TEST_P(LinkerVariant, ThirdPartyStderrLoadsWithStdinFarAway) {
  Loaded l;
  sk_status s = load_kernel(GetParam(), "thirdparty_stderr", resolver_.options(), &l);
  // Code that reads `stderr` and `stdin` directly, assuming copy relocations: gcc's PIE and
  // non-PIC code and clang's non-PIC code with R_X86_64_PC32 (±2 GiB); on AArch64 every non-PIC
  // build with ADRP (±4 GiB). This executable copy-relocates `stderr` and leaves `stdin` in
  // libc, terabytes away: what the placement cannot reach is rewritten.
#if defined(__aarch64__)
  const uint32_t direct_type = R_AARCH64_ADR_PREL_PG_HI21;
  const bool direct_expected = is_nopic(GetParam());
#else
  const uint32_t direct_type = R_X86_64_PC32;
  const bool direct_expected = GetParam().rfind("gcc", 0) == 0 && !is_pic(GetParam());
#endif
  bool direct_stderr = false, direct_stdin = false, absolute = false;
  for (const elf::RelocationSection &rs : l.object.relocation_sections)
    for (const elf::Relocation &r : rs.relocations) {
      const std::string &name = l.object.symbols[r.symbol].name;
      direct_stderr |= r.type == direct_type && name == "stderr";
      direct_stdin |= r.type == direct_type && name == "stdin";
#if defined(__x86_64__)
      absolute |= (r.type == R_X86_64_32S || r.type == R_X86_64_32) && (name == "stderr" || name == "stdin");
#endif
    }
  if (absolute) {
    // clang -O0 -fno-pic: movq stderr, %rax holds the address itself in 32 bits, which no
    // rewrite of a displacement gives: the error names `stderr` and the overflow.
    EXPECT_EQ(s, SK_ERR_UNSUPPORTED);
    EXPECT_NE(l.message.find("'stderr'"), std::string::npos) << l.message;
    EXPECT_NE(l.message.find("overflows"), std::string::npos) << l.message;
    return;
  }
  ASSERT_EQ(s, SK_OK) << l.message;
  if (direct_expected) EXPECT_TRUE(direct_stderr && direct_stdin);
  EXPECT_EQ(l.fn<void *(*)()>("thirdparty_stderr_stream")(), static_cast<void *>(stderr));
  // Not `stdin` by name here: that would copy-relocate it into this executable too.
  void *const *libc_stdin = static_cast<void *const *>(dlsym(RTLD_DEFAULT, "stdin"));
  ASSERT_NE(libc_stdin, nullptr);
  EXPECT_EQ(l.fn<void *(*)()>("thirdparty_stdin_stream")(), *libc_stdin);
  char prog[] = "prog", arg[] = "hello";
  char *argv[] = {prog, arg, nullptr};
  EXPECT_EQ(l.fn<int (*)(int, char **)>("thirdparty_stderr_main")(2, argv),
            (int)std::strlen("thirdparty_stderr: 2 hello"));
}

INSTANTIATE_TEST_SUITE_P(AllVariants, LinkerVariant, testing::ValuesIn(kernel_variants()), variant_name);

// Every loadable kernel of every variant linked at once: no page is writable and executable,
// every region is mapped as recorded, and destroying the objects unmaps them.
TEST(LinkerMemory, NoWritableExecutableMappingsAndUnmapOnDestroy) {
  Resolver r;
  r.names["reloc_ext_data"] = &reloc_test_ext_data;
  r.names["reloc_ext_fn"] = reinterpret_cast<void *>(+[](int x) { return x + 1; });
  r.names["reloc_far_low"] = reinterpret_cast<void *>(0x10000);
  r.names["reloc_far_high"] = reinterpret_cast<void *>(0x7ff000000000);
  r.names["reloc_reach_a"] = r.names["reloc_reach_b"] = &reloc_test_ext_data;
  r.names["reloc_abs16"] = r.names["reloc_abs8"] = r.names["reloc_abs32"] = r.names["reloc_abs32s"] =
      reinterpret_cast<void *>(0x12);
  // reloc_asm_aarch64's own symbols.
  r.names["reloc_far_fn"] = r.names["reloc_ext_fn"];
  r.names["reloc_movw16"] = r.names["reloc_movw32"] = r.names["reloc_movw48"] = r.names["reloc_movw64"] =
      reinterpret_cast<void *>(0x12);
#if defined(__aarch64__)
  const char *const asm_kernel = "reloc_asm_aarch64";
#else
  const char *const asm_kernel = "reloc_asm";
#endif
  std::vector<std::unique_ptr<Loaded>> all;
  for (const std::string &v : kernel_variants())
    for (const char *name : {"reloc_basic", asm_kernel, "reloc_comdat", "thirdparty_calc", "thirdparty_stderr"}) {
      auto l = std::make_unique<Loaded>();
      sk_status s = load_kernel(v, name, r.options(), l.get());
      // clang -O0 -fno-pic reaches `stderr` with an absolute 32-bit address: refused.
      if (s != SK_OK && v == "clang-O0-nopic" && std::string(name) == "thirdparty_stderr") continue;
      ASSERT_EQ(s, SK_OK) << v << "/" << name << ": " << l->message;
      all.push_back(std::move(l));
    }
  std::vector<host::MappedRegion> regions;
  for (const auto &l : all) regions.insert(regions.end(), l->linked->regions().begin(), l->linked->regions().end());
  std::vector<MapsEntry> maps = read_maps();
  for (const MapsEntry &e : maps)
    EXPECT_FALSE(e.perms.find('w') != std::string::npos && e.perms.find('x') != std::string::npos)
        << std::hex << e.begin << "-" << e.end << " " << e.perms;
  auto find = [](const std::vector<MapsEntry> &m, uint64_t a) -> const MapsEntry * {
    for (const MapsEntry &e : m)
      if (a >= e.begin && a < e.end) return &e;
    return nullptr;
  };
  for (const host::MappedRegion &reg : regions) {
    const MapsEntry *e = find(maps, reinterpret_cast<uint64_t>(reg.address));
    ASSERT_NE(e, nullptr);
#if !defined(SK_TEST_EMULATED)  // qemu-user reports its host mappings, which merge R and R+X
    EXPECT_EQ(e->perms[0] == 'r', (reg.protection & PROT_READ) != 0);
    EXPECT_EQ(e->perms[1] == 'w', (reg.protection & PROT_WRITE) != 0);
    EXPECT_EQ(e->perms[2] == 'x', (reg.protection & PROT_EXEC) != 0);
#endif
    EXPECT_FALSE((reg.protection & PROT_WRITE) && (reg.protection & PROT_EXEC));
  }
  all.clear();
  maps = read_maps();
  for (const host::MappedRegion &reg : regions)
    EXPECT_EQ(find(maps, reinterpret_cast<uint64_t>(reg.address)), nullptr) << "still mapped: " << reg.address;
}

// Random byte flips in a good object: parsing and linking may fail with any status, never crash.
TEST(LinkerFuzz, RandomByteFlipsNeverCrash) {
  std::vector<uint8_t> good = kernel_bytes("gcc-O2-pic", "reloc_basic");
  ASSERT_FALSE(good.empty());
  Resolver r;
  r.names["reloc_ext_data"] = &reloc_test_ext_data;
  host::LinkOptions options = r.options();
  uint64_t state = 0x5eed1234abcdull;
  auto next = [&] {  // xorshift64: a fixed seed, the same run every time
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  int linked = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> b = good;
    int flips = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < flips; ++k) {
      // Half the flips land in the headers and tables at the end, where they matter most.
      size_t at = (next() & 1) ? next() % b.size() : b.size() - 1 - next() % std::min<size_t>(b.size(), 2048);
      b[at] ^= static_cast<uint8_t>(1u << (next() % 8));
    }
    Loaded l;
    if (load_bytes(b, "fuzz.o", options, &l) == SK_OK)
      ++linked;
    else
      EXPECT_FALSE(l.message.empty());
  }
  EXPECT_GT(linked, 0);  // some flips are harmless (unused bytes)
}

// A thread-local section is held to the limits of any section libsk places (its size, its
// alignment), and the thread-local block to a section's: each thread that reaches it allocates
// it. Hostile sizes and alignments are refused naming the section, not allocated (an alignment
// of 2^40 once asked for a 2^58-byte image).
TEST(LinkerHostile, ThreadLocalSectionsAreRefusedPastASectionsLimits) {
  Resolver resolver;
  auto with =
      [](const char *kernel, std::initializer_list<std::pair<const char *, std::pair<uint64_t, uint64_t>>> edits) {
    std::vector<uint8_t> b = kernel_bytes("gcc-O2-pic", kernel);
    const auto &eh = *reinterpret_cast<const Elf64_Ehdr *>(b.data());
    auto *sh = reinterpret_cast<Elf64_Shdr *>(b.data() + eh.e_shoff);
    const char *names = reinterpret_cast<const char *>(b.data() + sh[eh.e_shstrndx].sh_offset);
    for (const auto &[name, size_align] : edits)
      for (size_t i = 0; i < eh.e_shnum; ++i)
        if (std::string(names + sh[i].sh_name) == name) {
          if (size_align.first) sh[i].sh_size = size_align.first;
          if (size_align.second) sh[i].sh_addralign = size_align.second;
        }
    return b;
  };
  struct Case {
    const char *kernel, *why;
    std::vector<uint8_t> bytes;
  };
  const Case cases[] = {
      {"reloc_tls", "section '.tbss': alignment 1099511627776 is above",
       with("reloc_tls", {{".tbss", {0, 1ull << 40}}})},
      {"reloc_tls", "section '.tbss' is too large", with("reloc_tls", {{".tbss", {1ull << 40, 0}}})},
      // Each at most a section's limit, together past it.
      {"tls_counters", "the thread-local sections exceed 1073741824 bytes",
       with("tls_counters", {{".tbss", {1ull << 30, 0}}})},
  };
  for (const Case &c : cases) {
    Loaded l;
    EXPECT_EQ(load_bytes(c.bytes, std::string(c.kernel) + ".o", resolver.options(), &l), SK_ERR_UNSUPPORTED)
        << c.why;
    EXPECT_NE(l.message.find(c.why), std::string::npos) << l.message;
    EXPECT_NE(l.message.find(std::string(c.kernel) + ".o"), std::string::npos) << l.message;
  }
  // Unchanged, both link.
  for (const char *kernel : {"reloc_tls", "tls_counters"}) {
    Loaded l;
    EXPECT_EQ(load_bytes(with(kernel, {}), kernel, resolver.options(), &l), SK_OK) << l.message;
  }
}

}  // namespace
}  // namespace sk::test
