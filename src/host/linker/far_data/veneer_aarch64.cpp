// AArch64's far-data rewriter (host/linker/far_data/far_data.hpp): an ADRP whose page lies beyond ±4 GiB becomes
// `b veneer`, and the veneer loads the page's address into the same register:
//
//   ldr xN, 8     ; the literal below
//   b   <after the ADRP>
//   .quad page
//
// Neither instruction touches the flags or another register; the :lo12: ADD or LDR that follows
// the ADRP is unchanged, since the page's low 12 bits are zero as ADRP's are.
#include <elf.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "host/linker/far_data/far_data.hpp"

namespace sk::host {
namespace {

constexpr size_t kVeneerSize = 16;
constexpr int64_t kBranchReach = 128ll << 20;

uint32_t read32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void write32(uint8_t *p, uint32_t v) { std::memcpy(p, &v, 4); }

bool is_adrp(uint32_t insn) { return (insn & 0x9f000000u) == 0x90000000u; }

bool applies(uint32_t type) { return type == R_AARCH64_ADR_PREL_PG_HI21 || type == R_AARCH64_ADR_PREL_PG_HI21_NC; }

bool plan(const uint8_t *code, size_t size, uint64_t, uint64_t field, FarDataSite *out, std::string *why) {
  char buf[160];
  if (field % 4 != 0 || field + 4 > size || !is_adrp(read32(code + field))) {
    std::snprintf(buf, sizeof buf, "the word at +0x%" PRIx64 " is not an ADRP instruction", field);
    *why = buf;
    return false;
  }
  out->offset = field;
  out->length = 4;
  return true;
}

// b from `at` to `to`, or false when beyond its ±128 MiB.
bool branch(uint64_t at, uint64_t to, uint32_t *insn) {
  const int64_t d = static_cast<int64_t>(to - at);
  if (d < -kBranchReach || d >= kBranchReach) return false;
  *insn = 0x14000000u | (static_cast<uint32_t>(d >> 2) & 0x03ffffffu);
  return true;
}

bool write(uint8_t *insn, uint64_t insn_at, const FarDataSite &, unsigned, uint8_t *stub, uint64_t stub_at,
           uint64_t target, std::string *why) {
  const uint32_t rd = read32(insn) & 0x1f;
  uint32_t to_veneer, back;
  if (!branch(insn_at, stub_at, &to_veneer) || !branch(stub_at + 4, insn_at + 4, &back)) {
    *why = "the veneer lies beyond a branch's ±128 MiB";
    return false;
  }
  const uint64_t page = target & ~uint64_t(0xfff);
  write32(stub, 0x58000040u | rd);  // ldr xN, .+8
  write32(stub + 4, back);
  std::memcpy(stub + 8, &page, 8);
  write32(insn, to_veneer);
  return true;
}

const FarDataRewriter kVeneers = {kVeneerSize, applies, plan, write};

}  // namespace

const FarDataRewriter *far_data_rewriter() { return &kVeneers; }

}  // namespace sk::host
