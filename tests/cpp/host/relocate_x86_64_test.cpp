// x86-64 relocations: the psABI formula and the overflow check of each type on synthetic values
// (on any host: it is arithmetic), then — on x86-64 hosts — every type as the compilers'
// assemblers emit it (reloc_asm.c, one slot per type), linked and read back, and the overflow
// and placement errors on real objects.
#include <sys/mman.h>

#include "host/linker/relocate_x86_64.hpp"
#include "linker_test_support.hpp"

extern "C" {
int reloc_test_reach_a = 1, reloc_test_reach_b = 2;
int reloc_test_ext_fn(int x) { return 3 * x + 1; }
}

namespace sk::test {
namespace {

using host::x86_64::apply;
using host::x86_64::RelocSite;
using host::x86_64::RelocValues;

const RelocSite kSite{"unit.o", ".text", 0x10, "sym"};

// Applies `type` into a guarded buffer; returns the status and the written bytes.
sk_status run(uint32_t type, RelocValues v, uint64_t *out, unsigned *touched = nullptr) {
  uint8_t buf[16];
  std::memset(buf, 0xee, sizeof buf);
  sk_status s = apply(type, buf + 4, v, kSite);
  *out = 0;
  std::memcpy(out, buf + 4, 8);
  if (touched) {
    *touched = 0;
    for (unsigned i = 0; i < 16; ++i) *touched += buf[i] != 0xee;
  }
  EXPECT_EQ(buf[0], 0xee);  // nothing written before the place
  return s;
}

RelocValues values(uint64_t S, int64_t A, uint64_t P) {
  RelocValues v;
  v.S = v.L = S;
  v.A = A;
  v.P = P;
  return v;
}

TEST(RelocateX86_64, Formulas) {
  uint64_t w;
  const uint64_t P = 0x7f0000001000;
  ASSERT_EQ(run(R_X86_64_64, values(0x123456789abc, 4, P), &w), SK_OK);
  EXPECT_EQ(w, 0x123456789ac0u);
  ASSERT_EQ(run(R_X86_64_PC64, values(0x1000, -8, P), &w), SK_OK);
  EXPECT_EQ(w, 0x1000 - 8 - P);
  ASSERT_EQ(run(R_X86_64_PC32, values(P + 0x100, -4, P), &w), SK_OK);
  EXPECT_EQ(uint32_t(w), 0xfcu);
  RelocValues plt = values(0x1000, -4, P);
  plt.L = P - 0x40;  // the stub, not the far symbol
  ASSERT_EQ(run(R_X86_64_PLT32, plt, &w), SK_OK);
  EXPECT_EQ(int32_t(w), -0x44);
  RelocValues got = values(0x5555, -4, P);
  got.GOT = P + 0x2000;
  got.G = P + 0x2010;
  for (uint32_t t : {R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX, R_X86_64_REX_GOTPCRELX}) {
    ASSERT_EQ(run(t, got, &w), SK_OK);
    EXPECT_EQ(int32_t(w), 0x2010 - 4);  // G + A - P: the entry, never the symbol itself
  }
  ASSERT_EQ(run(R_X86_64_GOTPCREL64, got, &w), SK_OK);
  EXPECT_EQ(int64_t(w), 0x2010 - 4);
  ASSERT_EQ(run(R_X86_64_GOTPC32, got, &w), SK_OK);
  EXPECT_EQ(int32_t(w), 0x2000 - 4);
  ASSERT_EQ(run(R_X86_64_GOTPC64, got, &w), SK_OK);
  EXPECT_EQ(int64_t(w), 0x2000 - 4);
  ASSERT_EQ(run(R_X86_64_GOTOFF64, got, &w), SK_OK);
  EXPECT_EQ(w, 0x5555 - 4 - got.GOT);
  ASSERT_EQ(run(R_X86_64_GOT64, got, &w), SK_OK);
  EXPECT_EQ(int64_t(w), 0x10 - 4);
  ASSERT_EQ(run(R_X86_64_GOT32, got, &w), SK_OK);
  EXPECT_EQ(int32_t(w), 0x10 - 4);
  ASSERT_EQ(run(R_X86_64_PLTOFF64, got, &w), SK_OK);
  EXPECT_EQ(w, 0x5555 - 4 - got.GOT);
  RelocValues sized = values(0, 3, P);
  sized.Z = 40;
  ASSERT_EQ(run(R_X86_64_SIZE64, sized, &w), SK_OK);
  EXPECT_EQ(w, 43u);
  ASSERT_EQ(run(R_X86_64_SIZE32, sized, &w), SK_OK);
  EXPECT_EQ(uint32_t(w), 43u);
  unsigned touched;
  ASSERT_EQ(run(R_X86_64_NONE, values(1, 2, P), &w, &touched), SK_OK);
  EXPECT_EQ(touched, 0u);
}

TEST(RelocateX86_64, WritesOnlyTheField) {
  uint64_t w;
  unsigned touched;
  struct {
    uint32_t type;
    unsigned width;
  } cases[] = {{R_X86_64_64, 8}, {R_X86_64_32, 4}, {R_X86_64_16, 2}, {R_X86_64_8, 1}};
  for (auto c : cases) {
    ASSERT_EQ(run(c.type, values(0x11, 0, 0), &w, &touched), SK_OK);
    EXPECT_EQ(touched, c.width) << c.type;  // 0x11 then zeros: every byte of the field changes
  }
}

TEST(RelocateX86_64, OverflowEdges) {
  uint64_t w;
  const uint64_t P = 0x7f0000000000;
  struct Case {
    uint32_t type;
    uint64_t S;
    uint64_t P;
    bool ok;
  };
  const Case cases[] = {
      {R_X86_64_PC32, P + 0x7fffffff, P, true},
      {R_X86_64_PC32, P + 0x80000000, P, false},
      {R_X86_64_PC32, P - 0x80000000, P, true},
      {R_X86_64_PC32, P - 0x80000001, P, false},
      {R_X86_64_PLT32, P + 0x80000000, P, false},
      {R_X86_64_32, 0xffffffff, 0, true},
      {R_X86_64_32, 0x100000000, 0, false},
      {R_X86_64_32, uint64_t(-1), 0, false},
      {R_X86_64_32S, 0x7fffffff, 0, true},
      {R_X86_64_32S, 0x80000000, 0, false},
      {R_X86_64_32S, uint64_t(-0x80000000ll), 0, true},
      {R_X86_64_32S, uint64_t(-0x80000001ll), 0, false},
      {R_X86_64_16, 0xffff, 0, true},
      {R_X86_64_16, uint64_t(-0x8000), 0, true},
      {R_X86_64_16, 0x10000, 0, false},
      {R_X86_64_16, uint64_t(-0x8001), 0, false},
      {R_X86_64_8, 0xff, 0, true},
      {R_X86_64_8, uint64_t(-128), 0, true},
      {R_X86_64_8, 0x100, 0, false},
      {R_X86_64_8, uint64_t(-129), 0, false},
      {R_X86_64_PC16, P + 0x7fff, P, true},
      {R_X86_64_PC16, P + 0x8000, P, false},
      {R_X86_64_PC16, P - 0x8000, P, true},
      {R_X86_64_PC8, P + 127, P, true},
      {R_X86_64_PC8, P + 128, P, false},
      {R_X86_64_PC8, P - 129, P, false},
  };
  for (const Case &c : cases) {
    sk_status s = run(c.type, values(c.S, 0, c.P), &w);
    EXPECT_EQ(s, c.ok ? SK_OK : SK_ERR_UNSUPPORTED) << host::x86_64::reloc_name(c.type) << " S=" << std::hex << c.S;
    if (!c.ok) {
      std::string m = last_error();
      EXPECT_NE(m.find("unit.o"), std::string::npos) << m;
      EXPECT_NE(m.find(host::x86_64::reloc_name(c.type) + " at .text+0x10 against 'sym' overflows"),
                std::string::npos)
          << m;
    }
  }
  // GOT-relative 32-bit fields are checked as well.
  RelocValues far = values(0, 0, P);
  far.G = P + 0x100000000;
  EXPECT_EQ(run(R_X86_64_GOTPCRELX, far, &w), SK_ERR_UNSUPPORTED);
}

TEST(RelocateX86_64, NamesKindsAndBranches) {
  EXPECT_EQ(host::x86_64::reloc_name(R_X86_64_REX_GOTPCRELX), "R_X86_64_REX_GOTPCRELX");
  EXPECT_EQ(host::x86_64::reloc_name(200), "type 200");
  uint64_t w;
  EXPECT_EQ(run(200, values(0, 0, 0), &w), SK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error()).find("unsupported relocation type 200"), std::string::npos) << last_error();
  EXPECT_TRUE(host::x86_64::classify(R_X86_64_TPOFF32).tls);
  EXPECT_EQ(host::x86_64::classify(R_X86_64_TPOFF32).tls_use, host::TlsUse::TpOffset);
  EXPECT_EQ(host::x86_64::classify(R_X86_64_TLSGD).tls_use, host::TlsUse::GdEntry);
  EXPECT_EQ(host::x86_64::classify(R_X86_64_TLSLD).tls_use, host::TlsUse::LdEntry);
  EXPECT_EQ(host::x86_64::classify(R_X86_64_GOTTPOFF).tls_use, host::TlsUse::IeEntry);
  EXPECT_EQ(host::x86_64::classify(R_X86_64_GOTPC32_TLSDESC).tls_use, host::TlsUse::DescEntry);
  EXPECT_FALSE(host::x86_64::classify(R_X86_64_DTPMOD64).known);  // a dynamic relocation
  EXPECT_FALSE(host::x86_64::classify(R_X86_64_GOTPLT64).known);
  EXPECT_TRUE(host::x86_64::classify(R_X86_64_GOTPCRELX).got_entry);
  EXPECT_TRUE(host::x86_64::classify(R_X86_64_PLT32).branch);
  EXPECT_EQ(host::x86_64::classify(R_X86_64_32S).abs_limit, 1ull << 31);
  const uint8_t call[] = {0xe8, 0, 0, 0, 0}, jcc[] = {0x0f, 0x84, 0, 0, 0, 0}, mov[] = {0x8b, 0x05, 0, 0, 0, 0};
  EXPECT_TRUE(host::x86_64::is_branch_displacement(call, 1));
  EXPECT_TRUE(host::x86_64::is_branch_displacement(jcc, 2));
  EXPECT_FALSE(host::x86_64::is_branch_displacement(mov, 2));
  EXPECT_FALSE(host::x86_64::is_branch_displacement(call, 0));
}

#if defined(__x86_64__)  // the objects are the host's: only an x86-64 host links them
// reloc_asm.c: one slot per relocation type, read back after linking.
Resolver asm_resolver() {
  Resolver r;
  r.names["reloc_ext_fn"] = reinterpret_cast<void *>(&reloc_test_ext_fn);
  r.names["reloc_far_low"] = reinterpret_cast<void *>(0x10000);
  r.names["reloc_far_high"] = reinterpret_cast<void *>(0x7ff000000000);
  r.names["reloc_reach_a"] = &reloc_test_reach_a;
  r.names["reloc_reach_b"] = &reloc_test_reach_b;
  r.names["reloc_abs16"] = reinterpret_cast<void *>(0x1234);
  r.names["reloc_abs8"] = reinterpret_cast<void *>(0x7f);
  r.names["reloc_abs32"] = reinterpret_cast<void *>(0xfedcba98);
  r.names["reloc_abs32s"] = reinterpret_cast<void *>(intptr_t(-256));
  return r;
}

template <typename T>
T rd(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

class RelocateVariant : public testing::TestWithParam<std::string> {};

TEST_P(RelocateVariant, EveryTypeInTheObject) {
  std::vector<uint8_t> bytes = kernel_bytes(GetParam(), "reloc_asm");
  elf::Object o;
  ASSERT_EQ(elf::parse_object(bytes.data(), bytes.size(), "asm.o", &o), SK_OK) << last_error();
  for (uint32_t t :
       {R_X86_64_NONE,       R_X86_64_64,           R_X86_64_PC64,     R_X86_64_GOTOFF64, R_X86_64_GOTPC64,
        R_X86_64_GOTPCREL64, R_X86_64_GOT64,        R_X86_64_PLTOFF64, R_X86_64_SIZE64,   R_X86_64_GOTPC32,
        R_X86_64_GOTPCREL,   R_X86_64_PC32,         R_X86_64_PLT32,    R_X86_64_32,       R_X86_64_32S,
        R_X86_64_SIZE32,     R_X86_64_PC16,         R_X86_64_16,       R_X86_64_PC8,      R_X86_64_8,
        R_X86_64_GOTPCRELX,  R_X86_64_REX_GOTPCRELX})
    EXPECT_TRUE(has_relocation(o, t)) << host::x86_64::reloc_name(t);
}

TEST_P(RelocateVariant, SlotsHoldThePsAbiValues) {
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_asm", asm_resolver().options(), &l), SK_OK) << l.message;
  auto slot = [&](const char *name) { return l.sym<uint8_t>(name); };
  auto addr = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
  const uint64_t target = addr(slot("asm_target"));
  EXPECT_EQ(rd<uint64_t>(slot("asm_target")), 0x1122334455667788u);
  EXPECT_EQ(rd<uint64_t>(slot("slot_64")), target + 8);
  EXPECT_EQ(rd<uint64_t>(slot("slot_pc64")), target - addr(slot("slot_pc64")));
  const uint64_t got = addr(slot("slot_gotpc64")) + rd<uint64_t>(slot("slot_gotpc64"));
  EXPECT_EQ(got, addr(slot("slot_gotpc32")) + rd<int32_t>(slot("slot_gotpc32")));
  EXPECT_EQ(got + rd<uint64_t>(slot("slot_gotoff64")), target);
  EXPECT_EQ(rd<uint64_t>(slot("slot_gotpcrel64") + rd<int64_t>(slot("slot_gotpcrel64"))), target);
  EXPECT_EQ(rd<uint64_t>(slot("slot_gotpcrel") + rd<int32_t>(slot("slot_gotpcrel"))), target);
  EXPECT_EQ(rd<uint64_t>(reinterpret_cast<uint8_t *>(got + rd<uint64_t>(slot("slot_got64")))), target);
  EXPECT_EQ(got + rd<uint64_t>(slot("slot_pltoff64")), reinterpret_cast<uint64_t>(&reloc_test_ext_fn));
  EXPECT_EQ(rd<uint64_t>(slot("slot_size64")), 9u);
  EXPECT_EQ(rd<uint32_t>(slot("slot_size32")), 8u);
  EXPECT_EQ(addr(slot("slot_pc32")) + rd<int32_t>(slot("slot_pc32")), target + 4);
  EXPECT_EQ(addr(slot("slot_pc32_ext")) + rd<int32_t>(slot("slot_pc32_ext")), addr(&reloc_test_reach_a));
  EXPECT_EQ(addr(slot("slot_pc32_ext_b")) + rd<int32_t>(slot("slot_pc32_ext_b")), addr(&reloc_test_reach_b));
  EXPECT_EQ(rd<uint32_t>(slot("slot_abs32")), 0xfedcba98u);
  EXPECT_EQ(rd<int32_t>(slot("slot_abs32s")), -256);
  EXPECT_EQ(addr(slot("slot_pc16")) + rd<int16_t>(slot("slot_pc16")), target);
  EXPECT_EQ(rd<uint16_t>(slot("slot_abs16")), 0x1234);
  EXPECT_EQ(addr(slot("slot_pc8")) + rd<int8_t>(slot("slot_pc8")), target);
  EXPECT_EQ(rd<uint8_t>(slot("slot_abs8")), 0x7f);
  EXPECT_EQ(rd<uint8_t>(slot("slot_none")), 0x5a);  // R_X86_64_NONE leaves the bytes alone

  // The GOT lies in a read-only region, the stubs in the executable one.
  auto region_of = [&](uint64_t a) {
    for (const host::MappedRegion &r : l.linked->regions())
      if (a >= addr(r.address) && a < addr(r.address) + r.size) return r.protection;
    return -1;
  };
  EXPECT_EQ(region_of(got), PROT_READ);
  // PLT32 to a far function: the direct target, or a stub `jmp *0(%rip)` holding it. Both far
  // targets cannot be in reach of one mapping, so at least one stub exists.
  int stubs = 0;
  for (auto [name, far] : {std::pair{"slot_plt_low", 0x10000ull}, {"slot_plt_high", 0x7ff000000000ull}}) {
    const uint8_t *dest = slot(name) + rd<int32_t>(slot(name));
    if (addr(dest) == far) continue;
    ++stubs;
    EXPECT_EQ(region_of(addr(dest)), PROT_READ | PROT_EXEC);
    const uint8_t jmp[] = {0xff, 0x25, 0, 0, 0, 0};
    EXPECT_EQ(std::memcmp(dest, jmp, 6), 0);
    EXPECT_EQ(rd<uint64_t>(dest + 6), far);
  }
  EXPECT_GE(stubs, 1);
  // Code through the GOT (GOTPCRELX, REX_GOTPCRELX) and a PC32 jump to an external function.
  EXPECT_EQ(l.fn<int (*)(int)>("reloc_asm_call_got")(5), 16);
  EXPECT_EQ(addr(l.fn<void *(*)()>("reloc_asm_got_address")()), target);
  EXPECT_EQ(l.fn<int (*)(int)>("reloc_asm_jmp_pc32")(7), 22);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, RelocateVariant, testing::ValuesIn(kernel_variants()), variant_name);

// A value that does not fit its field fails the link, naming the symbol, the type and the place.
TEST(RelocateErrors, OverflowNamesSymbolTypeAndOffset) {
  expect_overflows(
      "reloc_asm", asm_resolver(),
      {
          {"reloc_abs16", 0x12345,
           "relocation R_X86_64_16 at .data.reloc_slots+0x2 against 'reloc_abs16' overflows"},
          {"reloc_abs8", 0x1ff, "relocation R_X86_64_8 at .data.reloc_slots+0x5 against 'reloc_abs8' overflows"},
          {"reloc_abs32", 0x100000000, "relocation R_X86_64_32 at "},
          {"reloc_abs32", uint64_t(-1), "against 'reloc_abs32' overflows"},
          {"reloc_abs32s", 0x80000000, "relocation R_X86_64_32S at "},
          {"reloc_abs32s", uint64_t(-0x80000001ll), "against 'reloc_abs32s' overflows"},
      });
}

// Two external data symbols 64 TiB apart, both read with R_X86_64_PC32: no placement reaches both.
TEST(RelocateErrors, UnreachableConstraintsNameBothSymbols) {
  Resolver r = asm_resolver();
  r.names["reloc_reach_a"] = reinterpret_cast<void *>(0x100000000000);
  r.names["reloc_reach_b"] = reinterpret_cast<void *>(0x500000000000);
  Loaded l;
  EXPECT_EQ(load_kernel("gcc-O2-pic", "reloc_asm", r.options(), &l), SK_ERR_UNSUPPORTED);
  EXPECT_NE(l.message.find("'reloc_reach_a' (0x100000000000) with R_X86_64_PC32"), std::string::npos) << l.message;
  EXPECT_NE(l.message.find("'reloc_reach_b' (0x500000000000)"), std::string::npos) << l.message;
}

// Relocation types changed in a good object's bytes: unknown and thread-local ones are refused.
TEST(RelocateErrors, MutatedRelocationTypes) {
  MutableTextRelocation m;
  ASSERT_NO_FATAL_FAILURE(first_text_relocation("gcc-O2-pic", "reloc_basic", &m));
  const elf::Object &o = m.object;
  const elf::Relocation &first = *m.first;
  auto with_type = [&](uint32_t type) { return m.with_type(type); };
  Loaded unknown;
  EXPECT_EQ(load_bytes(with_type(200), "m.o", Resolver().options(), &unknown), SK_ERR_UNSUPPORTED);
  char where[96];
  std::snprintf(where, sizeof where, "type 200 (type 200) in section '.text' at offset 0x%" PRIx64, first.offset);
  EXPECT_NE(unknown.message.find(where), std::string::npos) << unknown.message;
  // A thread-local relocation against a symbol that is not a thread-local of the module.
  Loaded tls;
  EXPECT_EQ(load_bytes(with_type(R_X86_64_TPOFF32), "m.o", Resolver().options(), &tls), SK_ERR_UNSUPPORTED);
  EXPECT_NE(tls.message.find("local exec, R_X86_64_TPOFF32 at .text+0x"), std::string::npos) << tls.message;
  const elf::Symbol &s = o.symbols[first.symbol];
  std::string name = s.type == STT_SECTION ? o.sections[s.shndx].name : s.name;
  EXPECT_NE(tls.message.find("thread-local variable '" + name + "'"), std::string::npos) << tls.message;
  EXPECT_NE(tls.message.find("is not defined by the module's objects"), std::string::npos) << tls.message;
}

#endif  // __x86_64__

}  // namespace
}  // namespace sk::test
