// AArch64 relocations: the AAELF64 formula, the overflow/alignment checks and the instruction
// field of each type on synthetic values (on any host: it is arithmetic), then — on AArch64
// hosts — every type as the assemblers emit it (reloc_asm_aarch64.c), linked, read back from the
// patched instructions and data, and called; and the overflow and placement errors.
#include <sys/mman.h>

#include "host/linker/relocate_aarch64.hpp"
#include "linker_test_support.hpp"

extern "C" {
int reloc_a64_reach_a = 1, reloc_a64_reach_b = 2;
int reloc_a64_ext_fn(int x) { return 3 * x + 1; }
}

namespace sk::test {
namespace {

using host::RelocSite;
using host::RelocValues;
namespace a64 = host::aarch64;

const RelocSite kSite{"unit.o", ".text", 0x10, "sym"};

// Applies `type` to the 4-byte instruction `insn` (or data word) in a guarded buffer; returns
// the status and the 8 bytes at the place.
sk_status run(uint32_t type, RelocValues v, uint32_t insn, uint64_t *out) {
  uint8_t buf[16];
  std::memset(buf, 0xee, sizeof buf);
  std::memcpy(buf + 4, &insn, 4);
  sk_status s = a64::apply(type, buf + 4, v, kSite);
  *out = 0;
  std::memcpy(out, buf + 4, 8);
  const unsigned width = a64::needs(type).width;
  for (unsigned i = 0; i < 16; ++i)  // nothing written outside the field's bytes
    if (i < 4 || i >= 4 + std::max(width, 4u)) EXPECT_EQ(buf[i], 0xee) << a64::reloc_name(type) << " byte " << i;
  return s;
}

RelocValues values(uint64_t S, int64_t A, uint64_t P) {
  RelocValues v;
  v.S = v.L = S;
  v.A = A;
  v.P = P;
  return v;
}

int64_t sext(uint64_t v, unsigned bits) { return static_cast<int64_t>(v << (64 - bits)) >> (64 - bits); }
uint32_t field(uint32_t insn, unsigned lsb, unsigned bits) { return (insn >> lsb) & ((1u << bits) - 1); }
// ADR/ADRP's 21-bit immediate (immhi:immlo).
int64_t adr_imm(uint32_t insn) { return sext(field(insn, 5, 19) << 2 | field(insn, 29, 2), 21); }

constexpr uint32_t kBl = 0x94000000, kB = 0x14000000, kBeq = 0x54000000, kTbz = 0x36000000;
constexpr uint32_t kLdrLit = 0x58000000, kAdr = 0x10000000, kAdrp = 0x90000000;
constexpr uint32_t kAddImm = 0x91000000, kMovz = 0xd2800000, kMovk = 0xf2800000;

TEST(RelocateAArch64, DataFormulasAndEdges) {
  uint64_t w;
  const uint64_t P = 0x7f0000001000;
  ASSERT_EQ(run(R_AARCH64_ABS64, values(0x123456789abc, 4, P), 0, &w), SK_OK);
  EXPECT_EQ(w, 0x123456789ac0u);
  ASSERT_EQ(run(R_AARCH64_PREL64, values(0x1000, -8, P), 0, &w), SK_OK);
  EXPECT_EQ(w, 0x1000 - 8 - P);
  struct Case {
    uint32_t type;
    uint64_t S;
    bool ok;
  };
  const Case cases[] = {
      {R_AARCH64_ABS32, 0xffffffff, true},
      {R_AARCH64_ABS32, 0x100000000, false},
      {R_AARCH64_ABS32, uint64_t(-0x80000000ll), true},
      {R_AARCH64_ABS32, uint64_t(-0x80000001ll), false},
      {R_AARCH64_ABS16, 0xffff, true},
      {R_AARCH64_ABS16, 0x10000, false},
      {R_AARCH64_ABS16, uint64_t(-0x8000), true},
      {R_AARCH64_ABS16, uint64_t(-0x8001), false},
      {R_AARCH64_PREL32, P + 0xffffffff, true},
      {R_AARCH64_PREL32, P + 0x100000000, false},
      {R_AARCH64_PREL32, P - 0x80000000, true},
      {R_AARCH64_PREL32, P - 0x80000001, false},
      {R_AARCH64_PREL16, P + 0xffff, true},
      {R_AARCH64_PREL16, P + 0x10000, false},
      {R_AARCH64_PREL16, P - 0x8000, true},
      {R_AARCH64_PREL16, P - 0x8001, false},
  };
  for (const Case &c : cases) {
    sk_status s = run(c.type, values(c.S, 0, P), 0, &w);
    EXPECT_EQ(s, c.ok ? SK_OK : SK_ERR_UNSUPPORTED) << a64::reloc_name(c.type) << " S=" << std::hex << c.S;
    if (!c.ok)
      EXPECT_NE(std::string(last_error()).find(a64::reloc_name(c.type) + " at .text+0x10 against 'sym' overflows"),
                std::string::npos)
          << last_error();
  }
  // Only the field's bytes change.
  ASSERT_EQ(run(R_AARCH64_ABS16, values(0x1111, 0, 0), 0xffffffff, &w), SK_OK);
  EXPECT_EQ(w & 0xffffffff, 0xffff1111u);
  ASSERT_EQ(run(R_AARCH64_NONE, values(1, 2, P), 0x12345678, &w), SK_OK);
  EXPECT_EQ(w & 0xffffffff, 0x12345678u);
}

TEST(RelocateAArch64, BranchesPatchTheirImmediate) {
  uint64_t w;
  const uint64_t P = 0x7f0000001000;
  struct Case {
    uint32_t type, insn;
    unsigned lsb, bits;
    int64_t reach;
  };
  const Case cases[] = {
      {R_AARCH64_CALL26, kBl, 0, 26, 1 << 27},
      {R_AARCH64_JUMP26, kB, 0, 26, 1 << 27},
      {R_AARCH64_CONDBR19, kBeq | 1, 5, 19, 1 << 20},
      {R_AARCH64_LD_PREL_LO19, kLdrLit | 3, 5, 19, 1 << 20},
      {R_AARCH64_TSTBR14, kTbz | 0x80001f, 5, 14, 1 << 15},
  };
  for (const Case &c : cases) {
    const unsigned lsb = c.lsb, bits = c.bits;
    const std::string name = a64::reloc_name(c.type);
    for (int64_t d : {int64_t(0), int64_t(8), int64_t(-4), c.reach - 4, -c.reach}) {
      ASSERT_EQ(run(c.type, values(P + d, 0, P), c.insn, &w), SK_OK) << name << " " << d;
      const uint32_t insn = static_cast<uint32_t>(w);
      EXPECT_EQ(sext(field(insn, lsb, bits), bits) * 4, d) << name;
      const uint32_t mask = ((1u << bits) - 1) << lsb;
      EXPECT_EQ(insn & ~mask, c.insn & ~mask) << name;  // opcode, condition, register kept
    }
    for (int64_t d : {c.reach, -c.reach - 4}) {
      EXPECT_EQ(run(c.type, values(P + d, 0, P), c.insn, &w), SK_ERR_UNSUPPORTED) << name << " " << d;
      EXPECT_NE(std::string(last_error()).find(name + " at .text+0x10 against 'sym' overflows"), std::string::npos)
          << last_error();
    }
    EXPECT_EQ(run(c.type, values(P + 6, 0, P), c.insn, &w), SK_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(last_error()).find("is not a multiple of 4"), std::string::npos) << last_error();
  }
  // CALL26 and JUMP26 go to L: the stub standing in for a far symbol, not S itself.
  RelocValues far = values(0x10000, 0, P);
  far.L = P + 0x40;
  ASSERT_EQ(run(R_AARCH64_CALL26, far, kBl, &w), SK_OK);
  EXPECT_EQ(static_cast<uint32_t>(w), kBl | 0x10);
}

TEST(RelocateAArch64, AdrAndAdrp) {
  uint64_t w;
  const uint64_t P = 0x7f0000001234;
  for (int64_t d : {int64_t(0), int64_t(0xfffff), int64_t(-0x100000), int64_t(-3)}) {
    ASSERT_EQ(run(R_AARCH64_ADR_PREL_LO21, values(P + d, 0, P), kAdr | 7, &w), SK_OK);
    EXPECT_EQ(adr_imm(static_cast<uint32_t>(w)), d);
    EXPECT_EQ(w & 0x9f00001f, kAdr | 7);
  }
  EXPECT_EQ(run(R_AARCH64_ADR_PREL_LO21, values(P + 0x100000, 0, P), kAdr, &w), SK_ERR_UNSUPPORTED);
  const uint64_t page = P & ~0xfffull;
  for (int64_t d : {int64_t(0x12345678), int64_t(0xffffffff), -int64_t(0x100000000), int64_t(-0x2000)}) {
    ASSERT_EQ(run(R_AARCH64_ADR_PREL_PG_HI21, values(page + d, 0, P), kAdrp | 9, &w), SK_OK) << d;
    EXPECT_EQ(adr_imm(static_cast<uint32_t>(w)) * 4096,
              static_cast<int64_t>((page + d) & ~0xfffull) - static_cast<int64_t>(page));
    EXPECT_EQ(w & 0x9f00001f, kAdrp | 9);
  }
  EXPECT_EQ(run(R_AARCH64_ADR_PREL_PG_HI21, values(page + 0x100000000, 0, P), kAdrp, &w), SK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error()).find("R_AARCH64_ADR_PREL_PG_HI21 at .text+0x10 against 'sym' overflows"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(run(R_AARCH64_ADR_PREL_PG_HI21, values(page - 0x100001000, 0, P), kAdrp, &w), SK_ERR_UNSUPPORTED);
  // The _NC form keeps the low 21 bits of the page difference, unchecked.
  ASSERT_EQ(run(R_AARCH64_ADR_PREL_PG_HI21_NC, values(page + 0x200001000, 0, P), kAdrp, &w), SK_OK);
  EXPECT_EQ(adr_imm(static_cast<uint32_t>(w)), 1);
  // ADR_GOT_PAGE: the page of the GOT entry G, never of the symbol.
  RelocValues got = values(0x5555000, 0, P);
  got.G = page + 0x3008;
  ASSERT_EQ(run(R_AARCH64_ADR_GOT_PAGE, got, kAdrp, &w), SK_OK);
  EXPECT_EQ(adr_imm(static_cast<uint32_t>(w)), 3);
  got.G = page + 0x200000000;
  EXPECT_EQ(run(R_AARCH64_ADR_GOT_PAGE, got, kAdrp, &w), SK_ERR_UNSUPPORTED);
}

TEST(RelocateAArch64, Lo12AddAndLoads) {
  uint64_t w;
  const uint64_t S = 0x7f0000345670;
  ASSERT_EQ(run(R_AARCH64_ADD_ABS_LO12_NC, values(S, 3, 0), kAddImm | 0x3ff, &w), SK_OK);
  EXPECT_EQ(field(static_cast<uint32_t>(w), 10, 12), 0x673u);
  EXPECT_EQ(w & ~(0xfffull << 10) & 0xffffffff, kAddImm | 0x3ff);
  struct Case {
    uint32_t type, insn;
    unsigned scale;
  };
  const Case cases[] = {{R_AARCH64_LDST8_ABS_LO12_NC, 0x39400020, 1},
                        {R_AARCH64_LDST16_ABS_LO12_NC, 0x79400020, 2},
                        {R_AARCH64_LDST32_ABS_LO12_NC, 0xb9400020, 4},
                        {R_AARCH64_LDST64_ABS_LO12_NC, 0xf9400020, 8},
                        {R_AARCH64_LDST128_ABS_LO12_NC, 0x3dc00020, 16}};
  for (const Case &c : cases) {
    ASSERT_EQ(run(c.type, values(S, 0, 0), c.insn, &w), SK_OK) << a64::reloc_name(c.type);
    EXPECT_EQ(field(static_cast<uint32_t>(w), 10, 12), 0x670u / c.scale) << a64::reloc_name(c.type);
    EXPECT_EQ(w & ~(0xfffull << 10) & 0xffffffff, c.insn);
    if (c.scale > 1) {
      EXPECT_EQ(run(c.type, values(S + c.scale / 2, 0, 0), c.insn, &w), SK_ERR_UNSUPPORTED)
          << a64::reloc_name(c.type);
      EXPECT_NE(std::string(last_error()).find("is not a multiple of"), std::string::npos) << last_error();
    }
  }
  RelocValues got = values(0x1234, 0, 0);
  got.G = 0x7f0000002ff8;
  ASSERT_EQ(run(R_AARCH64_LD64_GOT_LO12_NC, got, 0xf9400000, &w), SK_OK);
  EXPECT_EQ(field(static_cast<uint32_t>(w), 10, 12), 0x1ffu);
  got.A = 8;  // one entry per symbol: an addend would need an entry of its own
  EXPECT_EQ(run(R_AARCH64_LD64_GOT_LO12_NC, got, 0xf9400000, &w), SK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error()).find("addend 8"), std::string::npos) << last_error();
}

TEST(RelocateAArch64, MovwGroups) {
  uint64_t w;
  const uint64_t X = 0xfedcba9876543210;
  struct Case {
    uint32_t type;
    unsigned shift;
    uint64_t limit;
  };
  const Case cases[] = {{R_AARCH64_MOVW_UABS_G0, 0, 1ull << 16},  {R_AARCH64_MOVW_UABS_G0_NC, 0, 0},
                        {R_AARCH64_MOVW_UABS_G1, 16, 1ull << 32}, {R_AARCH64_MOVW_UABS_G1_NC, 16, 0},
                        {R_AARCH64_MOVW_UABS_G2, 32, 1ull << 48}, {R_AARCH64_MOVW_UABS_G2_NC, 32, 0},
                        {R_AARCH64_MOVW_UABS_G3, 48, 0}};
  for (const Case &c : cases) {
    const uint64_t v = c.limit ? (X & (c.limit - 1)) : X;
    const uint32_t insn = (c.shift ? kMovk : kMovz) | (c.shift / 16) << 21 | 5;
    ASSERT_EQ(run(c.type, values(v, 0, 0), insn, &w), SK_OK) << a64::reloc_name(c.type);
    EXPECT_EQ(field(static_cast<uint32_t>(w), 5, 16), (X >> c.shift) & 0xffff) << a64::reloc_name(c.type);
    EXPECT_EQ(w & ~(0xffffull << 5) & 0xffffffff, insn);  // MOVZ/MOVK and hw stay the assembler's
    if (c.limit) {
      EXPECT_EQ(run(c.type, values(c.limit, 0, 0), insn, &w), SK_ERR_UNSUPPORTED) << a64::reloc_name(c.type);
      EXPECT_NE(std::string(last_error()).find("overflows"), std::string::npos) << last_error();
    }
  }
}

TEST(RelocateAArch64, NamesNeedsAndStub) {
  EXPECT_EQ(a64::reloc_name(R_AARCH64_CALL26), "R_AARCH64_CALL26");
  EXPECT_EQ(a64::reloc_name(R_AARCH64_TLSDESC_CALL), "R_AARCH64_TLSDESC_CALL");
  EXPECT_EQ(a64::reloc_name(200), "type 200");
  uint64_t w;
  EXPECT_EQ(run(200, values(0, 0, 0), 0, &w), SK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error()).find("unsupported relocation type 200"), std::string::npos) << last_error();
  EXPECT_TRUE(a64::needs(R_AARCH64_TLSLE_ADD_TPREL_HI12).tls);
  EXPECT_TRUE(a64::needs(R_AARCH64_TLSDESC).tls);
  EXPECT_EQ(a64::needs(R_AARCH64_TLSGD_ADR_PAGE21).tls_use, host::TlsUse::GdEntry);
  EXPECT_EQ(a64::needs(R_AARCH64_TLSDESC_ADR_PAGE21).tls_use, host::TlsUse::DescEntry);
  EXPECT_EQ(a64::needs(R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC).tls_use, host::TlsUse::IeEntry);
  EXPECT_TRUE(a64::needs(R_AARCH64_TLSLE_ADD_TPREL_LO12_NC).tls_addend_in_entry);
  EXPECT_FALSE(a64::needs(R_AARCH64_TLSDESC).known);  // a dynamic relocation
  EXPECT_FALSE(a64::needs(R_AARCH64_MOVW_PREL_G0).known);
  EXPECT_FALSE(a64::needs(R_AARCH64_MOVW_PREL_G0).tls);
  EXPECT_TRUE(a64::needs(R_AARCH64_NONE).none);
  EXPECT_TRUE(a64::needs(R_AARCH64_CALL26).branch);
  EXPECT_TRUE(a64::needs(R_AARCH64_JUMP26).branch);
  EXPECT_FALSE(a64::needs(R_AARCH64_CONDBR19).branch);
  EXPECT_TRUE(a64::needs(R_AARCH64_ADR_GOT_PAGE).got_entry);
  EXPECT_TRUE(a64::needs(R_AARCH64_LD64_GOT_LO12_NC).got_entry);
  EXPECT_EQ(a64::needs(R_AARCH64_ADR_PREL_PG_HI21).reach, 1ull << 32);
  EXPECT_EQ(a64::needs(R_AARCH64_PREL32).reach, 1ull << 31);
  EXPECT_EQ(a64::needs(R_AARCH64_ABS32).abs_limit, 1ull << 32);
  EXPECT_EQ(a64::needs(R_AARCH64_MOVW_UABS_G1).abs_limit, 1ull << 32);
  EXPECT_EQ(a64::needs(R_AARCH64_ABS64).width, 8u);
  EXPECT_EQ(a64::needs(R_AARCH64_PREL16).width, 2u);
  EXPECT_EQ(host::reloc_arch(EM_AARCH64), &a64::kArch);
  uint8_t stub[a64::kStubSize];
  a64::write_stub(stub, 0x123456789abc);
  const uint32_t ldr_br[2] = {0x58000050, 0xd61f0200};  // ldr x16, #8; br x16
  EXPECT_EQ(std::memcmp(stub, ldr_br, 8), 0);
  uint64_t target;
  std::memcpy(&target, stub + 8, 8);
  EXPECT_EQ(target, 0x123456789abcu);
}

#if defined(__aarch64__)
// reloc_asm_aarch64.c, linked and read back.
Resolver asm_resolver() {
  Resolver r;
  r.names["reloc_ext_fn"] = reinterpret_cast<void *>(&reloc_a64_ext_fn);
  r.names["reloc_far_fn"] = reinterpret_cast<void *>(&reloc_a64_ext_fn);
  r.names["reloc_far_low"] = reinterpret_cast<void *>(0x10000);
  r.names["reloc_far_high"] = reinterpret_cast<void *>(0x7ff000000000);
  r.names["reloc_reach_a"] = &reloc_a64_reach_a;
  r.names["reloc_reach_b"] = &reloc_a64_reach_b;
  r.names["reloc_abs16"] = reinterpret_cast<void *>(0x1234);
  r.names["reloc_abs32"] = reinterpret_cast<void *>(0xfedcba98);
  r.names["reloc_movw16"] = reinterpret_cast<void *>(0xbeef);
  r.names["reloc_movw32"] = reinterpret_cast<void *>(0xdeadbeef);
  r.names["reloc_movw48"] = reinterpret_cast<void *>(0x123456789abc);
  r.names["reloc_movw64"] = reinterpret_cast<void *>(0xfedcba9876543210);
  return r;
}

template <typename T>
T rd(const void *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t addr(const void *p) { return reinterpret_cast<uint64_t>(p); }

// A function `x -> 2x + 1` copied to a page far from this binary: calls to it need a stub.
struct FarFunction {
  void *page = nullptr;
  size_t size = 0;
  FarFunction() {
    size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const uint64_t here = addr(reinterpret_cast<void *>(&reloc_a64_ext_fn));
    void *hint = reinterpret_cast<void *>(here > (1ull << 40) ? 0x10000000ull : 0x400000000000ull);
    page = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
      page = nullptr;
      return;
    }
    const uint32_t code[] = {0x0b000000 /* add w0, w0, w0 */, 0x11000400 /* add w0, w0, #1 */, 0xd65f03c0 /* ret */};
    std::memcpy(page, code, sizeof code);
    __builtin___clear_cache(static_cast<char *>(page), static_cast<char *>(page) + sizeof code);
    mprotect(page, size, PROT_READ | PROT_EXEC);
  }
  ~FarFunction() {
    if (page) munmap(page, size);
  }
};

const uint8_t *code_of(const Loaded &l, const char *name) {
  const host::LinkedFunction *f = l.linked->find_function(name);
  EXPECT_NE(f, nullptr) << name;
  return f ? static_cast<const uint8_t *>(f->address) : nullptr;
}

uint32_t insn_at(const void *p) { return rd<uint32_t>(p); }

// Where the PC-relative branch or ADR at `p` leads.
uint64_t branch_dest(const void *p) {
  const uint32_t insn = insn_at(p);
  if ((insn & 0x7c000000u) == 0x14000000u) return addr(p) + sext(field(insn, 0, 26), 26) * 4;
  if ((insn & 0x7e000000u) == 0x36000000u) return addr(p) + sext(field(insn, 5, 14), 14) * 4;
  return addr(p) + sext(field(insn, 5, 19), 19) * 4;  // b.cond, cbz, ldr literal
}

class RelocateAArch64Variant : public testing::TestWithParam<std::string> {};

TEST_P(RelocateAArch64Variant, EveryTypeInTheObject) {
  std::vector<uint8_t> bytes = kernel_bytes(GetParam(), "reloc_asm_aarch64");
  elf::Object o;
  ASSERT_EQ(elf::parse_object(bytes.data(), bytes.size(), "asm.o", &o), SK_OK) << last_error();
  bool none = has_relocation(o, R_AARCH64_NONE) || has_relocation(o, 256);
  EXPECT_TRUE(none);
  for (uint32_t t : {R_AARCH64_ABS64,
                     R_AARCH64_ABS32,
                     R_AARCH64_ABS16,
                     R_AARCH64_PREL64,
                     R_AARCH64_PREL32,
                     R_AARCH64_PREL16,
                     R_AARCH64_CALL26,
                     R_AARCH64_JUMP26,
                     R_AARCH64_CONDBR19,
                     R_AARCH64_TSTBR14,
                     R_AARCH64_LD_PREL_LO19,
                     R_AARCH64_ADR_PREL_LO21,
                     R_AARCH64_ADR_PREL_PG_HI21,
                     R_AARCH64_ADR_PREL_PG_HI21_NC,
                     R_AARCH64_ADD_ABS_LO12_NC,
                     R_AARCH64_LDST8_ABS_LO12_NC,
                     R_AARCH64_LDST16_ABS_LO12_NC,
                     R_AARCH64_LDST32_ABS_LO12_NC,
                     R_AARCH64_LDST64_ABS_LO12_NC,
                     R_AARCH64_LDST128_ABS_LO12_NC,
                     R_AARCH64_ADR_GOT_PAGE,
                     R_AARCH64_LD64_GOT_LO12_NC,
                     R_AARCH64_MOVW_UABS_G0,
                     R_AARCH64_MOVW_UABS_G0_NC,
                     R_AARCH64_MOVW_UABS_G1,
                     R_AARCH64_MOVW_UABS_G1_NC,
                     R_AARCH64_MOVW_UABS_G2,
                     R_AARCH64_MOVW_UABS_G2_NC,
                     R_AARCH64_MOVW_UABS_G3})
    EXPECT_TRUE(has_relocation(o, t)) << a64::reloc_name(t);
}

TEST_P(RelocateAArch64Variant, DataSlotsHoldTheValues) {
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_asm_aarch64", asm_resolver().options(), &l), SK_OK) << l.message;
  auto slot = [&](const char *name) { return l.sym<uint8_t>(name); };
  const uint64_t target = addr(slot("asm_target"));
  EXPECT_EQ(target % 16, 0u);
  EXPECT_EQ(rd<uint64_t>(slot("slot_abs64")), target + 8);
  EXPECT_EQ(rd<uint64_t>(slot("slot_prel64")), target - addr(slot("slot_prel64")));
  EXPECT_EQ(rd<uint32_t>(slot("slot_abs32")), 0xfedcba98u);
  EXPECT_EQ(addr(slot("slot_prel32")) + rd<int32_t>(slot("slot_prel32")), target + 4);
  EXPECT_EQ(addr(slot("slot_prel32_ext")) + rd<int32_t>(slot("slot_prel32_ext")), addr(&reloc_a64_reach_a));
  EXPECT_EQ(addr(slot("slot_prel16")) + rd<int16_t>(slot("slot_prel16")), target);
  EXPECT_EQ(rd<uint16_t>(slot("slot_abs16")), 0x1234);
  EXPECT_EQ(rd<uint8_t>(slot("slot_none")), 0x5a);  // R_AARCH64_NONE leaves the byte alone
}

TEST_P(RelocateAArch64Variant, InstructionsHoldTheValuesAndRun) {
  FarFunction far;
  ASSERT_NE(far.page, nullptr);
  Resolver r = asm_resolver();
  r.names["reloc_far_fn"] = far.page;
  Loaded l;
  ASSERT_EQ(load_kernel(GetParam(), "reloc_asm_aarch64", r.options(), &l), SK_OK) << l.message;
  const uint64_t target = addr(l.sym<uint8_t>("asm_target"));
  auto page = [](uint64_t a) { return a & ~0xfffull; };
  // ADRP + ADD: the page difference and the low 12 bits, then the address they build.
  for (const char *fn : {"a64_adrp_add", "a64_adrp_nc"}) {
    const uint8_t *c = code_of(l, fn);
    EXPECT_EQ(page(addr(c)) + adr_imm(insn_at(c)) * 4096, page(target)) << fn;
    EXPECT_EQ(field(insn_at(c + 4), 10, 12), target & 0xfff) << fn;
    EXPECT_EQ(l.fn<uint64_t (*)()>(fn)(), target) << fn;
  }
  EXPECT_EQ(addr(code_of(l, "a64_adr")) + adr_imm(insn_at(code_of(l, "a64_adr"))), target);
  EXPECT_EQ(l.fn<uint64_t (*)()>("a64_adr")(), target);
  EXPECT_EQ(l.fn<int *(*)()>("a64_adrp_ext")(), &reloc_a64_reach_b);
  // Loads at each access size: the scaled :lo12: offset, and the value loaded.
  struct Load {
    const char *fn;
    unsigned offset, scale;
    uint64_t value;
  };
  const Load loads[] = {{"a64_ldst8", 0, 1, 0x88},
                        {"a64_ldst16", 2, 2, 0x5566},
                        {"a64_ldst32", 4, 4, 0x11223344},
                        {"a64_ldst64", 8, 8, 0x99aabbccddeeff00},
                        {"a64_ldst128", 0, 16, 0x1122334455667788 ^ 0x99aabbccddeeff00}};
  for (const Load &ld : loads) {
    const uint8_t *c = code_of(l, ld.fn);
    EXPECT_EQ(field(insn_at(c + 4), 10, 12), ((target + ld.offset) & 0xfff) / ld.scale) << ld.fn;
    EXPECT_EQ(l.fn<uint64_t (*)()>(ld.fn)(), ld.value) << ld.fn;
  }
  // GOT: ADRP to the entry's page, LDR of the entry; the entry is read-only and holds the symbol.
  const uint8_t *g = code_of(l, "a64_got");
  const uint64_t entry = page(addr(g)) + adr_imm(insn_at(g)) * 4096 + field(insn_at(g + 4), 10, 12) * 8;
  EXPECT_EQ(rd<uint64_t>(reinterpret_cast<const void *>(entry)), addr(&reloc_a64_reach_b));
  EXPECT_EQ(l.fn<int *(*)()>("a64_got")(), &reloc_a64_reach_b);
  auto region_of = [&](uint64_t a) {
    for (const host::MappedRegion &reg : l.linked->regions())
      if (a >= addr(reg.address) && a < addr(reg.address) + reg.size) return reg.protection;
    return -1;
  };
  EXPECT_EQ(region_of(entry), PROT_READ);
  // MOVZ/MOVK groups build the symbols' values.
  EXPECT_EQ(l.fn<uint64_t (*)()>("a64_movw16")(), 0xbeefu);
  EXPECT_EQ(l.fn<uint64_t (*)()>("a64_movw32")(), 0xdeadbeefu);
  EXPECT_EQ(l.fn<uint64_t (*)()>("a64_movw48")(), 0x123456789abcu);
  EXPECT_EQ(l.fn<uint64_t (*)()>("a64_movw64")(), 0xfedcba9876543210u);
  EXPECT_EQ(field(insn_at(code_of(l, "a64_movw64")), 5, 16), 0xfedcu);
  // Conditional branches and the literal load.
  EXPECT_EQ(branch_dest(code_of(l, "a64_condbr") + 4), addr(l.linked->find_function("asm_zero")->address));
  EXPECT_EQ(l.fn<uint64_t (*)(uint64_t)>("a64_condbr")(0), 42u);
  EXPECT_EQ(l.fn<uint64_t (*)(uint64_t)>("a64_condbr")(5), 1u);
  EXPECT_EQ(branch_dest(code_of(l, "a64_tstbr")), addr(l.linked->find_function("asm_even")->address));
  EXPECT_EQ(l.fn<uint64_t (*)(uint64_t)>("a64_tstbr")(2), 43u);
  EXPECT_EQ(l.fn<uint64_t (*)(uint64_t)>("a64_tstbr")(3), 1u);
  EXPECT_EQ(branch_dest(code_of(l, "a64_literal")), addr(l.sym<uint8_t>("asm_literal")));
  EXPECT_EQ(l.fn<uint64_t (*)()>("a64_literal")(), 0x0123456789abcdefu);
  // Calls: near ones direct, far ones through a stub `ldr x16, #8; br x16; .quad target` in the
  // executable part. Both far addresses are beyond ±128 MiB of any mapping near this binary.
  EXPECT_EQ(l.fn<int (*)(int)>("a64_call")(5), 16);
  EXPECT_EQ(l.fn<int (*)(int)>("a64_jump")(7), 22);
  EXPECT_EQ(l.fn<int (*)(int)>("a64_call_far")(5), 11);
  EXPECT_EQ(l.fn<int (*)(int)>("a64_jump_far")(20), 41);
  auto is_stub_to = [&](uint64_t dest, uint64_t far_target) {
    if (dest == far_target) return false;
    EXPECT_EQ(region_of(dest), PROT_READ | PROT_EXEC);
    EXPECT_EQ(insn_at(reinterpret_cast<const void *>(dest)), 0x58000050u);
    EXPECT_EQ(insn_at(reinterpret_cast<const void *>(dest + 4)), 0xd61f0200u);
    EXPECT_EQ(rd<uint64_t>(reinterpret_cast<const void *>(dest + 8)), far_target);
    return true;
  };
  EXPECT_TRUE(is_stub_to(branch_dest(l.sym<uint8_t>("slot_call_low")), 0x10000));
  EXPECT_TRUE(is_stub_to(branch_dest(l.sym<uint8_t>("slot_jump_high")), 0x7ff000000000));
  const uint64_t call_far = branch_dest(code_of(l, "a64_call_far") + 8);
  const int64_t distance = static_cast<int64_t>(addr(far.page) - addr(code_of(l, "a64_call_far")));
  if (distance > (1ll << 27) || distance < -(1ll << 27)) {
    EXPECT_TRUE(is_stub_to(call_far, addr(far.page)));
  }
  EXPECT_EQ(branch_dest(code_of(l, "a64_call") + 8), addr(reinterpret_cast<void *>(&reloc_a64_ext_fn)));
}

INSTANTIATE_TEST_SUITE_P(AllVariants, RelocateAArch64Variant, testing::ValuesIn(kernel_variants()), variant_name);

// A value that does not fit its field fails the link, naming the symbol, the type and the place.
TEST(RelocateAArch64Errors, OverflowNamesSymbolTypeAndOffset) {
  expect_overflows("reloc_asm_aarch64", asm_resolver(),
                   {
                       {"reloc_abs16", 0x12345,
                        "relocation R_AARCH64_ABS16 at .data.reloc_slots+0x2 against 'reloc_abs16' overflows"},
                       {"reloc_abs32", 0x100000000, "relocation R_AARCH64_ABS32 at .data.reloc_slots+"},
                       {"reloc_movw16", 0x10000, "relocation R_AARCH64_MOVW_UABS_G0 at .text+"},
                       {"reloc_movw32", 0x100000000, "R_AARCH64_MOVW_UABS_G1 at .text+"},
                       {"reloc_movw48", 1ull << 48, "against 'reloc_movw48' overflows"},
                   });
}

// External data 64 TiB apart, read with PREL32 and ADRP: no placement reaches both.
// A data word (PREL32, ±2 GiB) holds the mapping near one symbol; an ADRP to an address 64 GiB
// from it (never read) goes through a veneer that loads its page, and the :lo12: ADD after it
// is unchanged.
TEST(RelocateAArch64, AnAdrpBeyondReachOfThePlacementGoesThroughAVeneer) {
  Resolver r = asm_resolver();
  const uint64_t near = addr(&reloc_a64_reach_a);
  const uint64_t far = near > (1ull << 40) ? near - (64ull << 30) : near + (64ull << 30);
  r.names["reloc_reach_b"] = reinterpret_cast<void *>(far);
  Loaded l;
  ASSERT_EQ(load_kernel("gcc-O2-pic", "reloc_asm_aarch64", r.options(), &l), SK_OK) << l.message;
  EXPECT_EQ(addr(l.fn<void *(*)()>("a64_adrp_ext")()), far);
  const auto *slot = static_cast<const uint8_t *>(l.linked->find_symbol("slot_prel32_ext"));
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(addr(slot) + static_cast<int64_t>(rd<int32_t>(slot)), near);
}

// Relocation types changed in a good object's bytes: unknown and thread-local ones are refused.
TEST(RelocateAArch64Errors, MutatedRelocationTypes) {
  MutableTextRelocation m;
  ASSERT_NO_FATAL_FAILURE(first_text_relocation("gcc-O2-pic", "reloc_basic", &m));
  const elf::Relocation &first = *m.first;
  auto with_type = [&](uint32_t type) { return m.with_type(type); };
  Loaded unknown;
  EXPECT_EQ(load_bytes(with_type(R_AARCH64_MOVW_SABS_G0), "m.o", Resolver().options(), &unknown),
            SK_ERR_UNSUPPORTED);
  char where[128];
  std::snprintf(where, sizeof where, "type 270 (R_AARCH64_MOVW_SABS_G0) in section '.text' at offset 0x%" PRIx64,
                first.offset);
  EXPECT_NE(unknown.message.find(where), std::string::npos) << unknown.message;
  Loaded tls;
  EXPECT_EQ(load_bytes(with_type(R_AARCH64_TLSLE_ADD_TPREL_HI12), "m.o", Resolver().options(), &tls),
            SK_ERR_UNSUPPORTED);
  EXPECT_NE(tls.message.find("local exec, R_AARCH64_TLSLE_ADD_TPREL_HI12 at .text+0x"), std::string::npos)
      << tls.message;
  EXPECT_NE(tls.message.find("is not defined by the module's objects"), std::string::npos) << tls.message;
}
#endif  // __aarch64__

}  // namespace
}  // namespace sk::test
