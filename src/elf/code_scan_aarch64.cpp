// AArch64 code decoded exactly (elf/code_scan.hpp): every instruction is 4 aligned bytes, so a
// linear pass over a function meets each one; data that $d mapping symbols mark is skipped.
#include <cstring>

#include "elf/code_scan.hpp"

namespace sk::elf {
namespace {

int64_t sext(uint32_t v, unsigned bits) {
  return static_cast<int64_t>(static_cast<int32_t>(v << (32 - bits)) >> (32 - bits));
}

enum class Op { Other, Call, Jump, Adr, IndirectCall, IndirectJump, AddShifted };

struct Insn {
  Op op = Op::Other;
  int64_t dest = 0;         // Call, Jump, Adr: the PC-relative target
  unsigned rd = 0, rn = 0;  // Adr, AddShifted: the register written; IndirectJump: the target register
};

Insn decode(uint32_t w, uint64_t pc) {
  Insn i;
  const auto here = static_cast<int64_t>(pc);
  i.rd = w & 31;
  i.rn = (w >> 5) & 31;
  if ((w & 0x7c000000u) == 0x14000000u) {  // B, BL
    i.op = (w >> 31) ? Op::Call : Op::Jump;
    i.dest = here + 4 * sext(w & 0x3ffffff, 26);
  } else if ((w & 0xff000000u) == 0x54000000u || (w & 0x7e000000u) == 0x34000000u) {  // B.cond, BC.cond, CB(N)Z
    i.op = Op::Jump;
    i.dest = here + 4 * sext((w >> 5) & 0x7ffff, 19);
  } else if ((w & 0x7e000000u) == 0x36000000u) {  // TB(N)Z
    i.op = Op::Jump;
    i.dest = here + 4 * sext((w >> 5) & 0x3fff, 14);
  } else if ((w & 0x9f000000u) == 0x10000000u) {  // ADR (ADRP's page is not known before the link)
    i.op = Op::Adr;
    i.dest = here + sext(((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3), 21);
  } else if ((w & 0xfe1f0000u) == 0xd61f0000u) {  // branch to register: opc in bits 24..21
    const uint32_t opc = (w >> 21) & 0xf;
    if (opc == 0 || opc == 8) i.op = Op::IndirectJump;  // BR, BRAA(Z), BRAB(Z)
    if (opc == 1 || opc == 9) i.op = Op::IndirectCall;  // BLR, BLRAA(Z), BLRAB(Z)
  } else if ((w & 0xffe00000u) == 0x8b000000u || (w & 0xffe00000u) == 0x8b200000u) {
    i.op = Op::AddShifted;  // ADD Xd, Xn, Rm{, LSL|<extend> #k}: a jump table's step
  }
  return i;
}

// A switch's dispatch: `br Xd` right after `add Xd, Xn, Rm{, <extend|lsl> #k}` where Xn came
// from an ADR to a label of this function (gcc's .Lrtx, clang's first case or the ADR itself):
// the entries are offsets from that label, so every target lies in the function.
bool jump_table_dispatch(const std::vector<Insn> &seen, const Insn &br, const CodeRange &r) {
  if (seen.empty()) return false;
  const Insn &add = seen.back();
  if (add.op != Op::AddShifted || add.rd != br.rn) return false;
  for (size_t d = seen.size() - 1; d > 0 && d + 8 > seen.size(); --d) {
    const Insn &adr = seen[d - 1];
    if (adr.op == Op::Adr && adr.rd == add.rn)
      return adr.dest >= static_cast<int64_t>(r.begin) && adr.dest < static_cast<int64_t>(r.end);
  }
  return false;
}

}  // namespace

void scan_aarch64(const ObjectIndex &index, const CodeRange &range, CodeScan *out) {
  const Section &sec = index.object().sections[range.section];
  const auto relocs = index.relocations(range.section, range.begin, range.end);
  const auto &mapping = index.mapping(range.section);
  size_t next_map = 0, next_reloc = 0;
  bool data = false;
  // The last instructions decoded since the last data: what a dispatch looks back on.
  std::vector<Insn> seen;
  for (uint64_t pc = (range.begin + 3) & ~uint64_t{3}; pc + 4 <= range.end && pc + 4 <= sec.size; pc += 4) {
    while (next_map < mapping.size() && mapping[next_map].first <= pc) data = mapping[next_map++].second;
    while (next_reloc < relocs.size() && relocs[next_reloc]->offset < pc) ++next_reloc;
    if (data) {
      seen.clear();
      continue;
    }
    const bool relocated = next_reloc < relocs.size() && relocs[next_reloc]->offset < pc + 4;
    uint32_t w;
    std::memcpy(&w, sec.data + pc, 4);
    Insn i = decode(w, pc);
    // A relocated instruction's address is the relocation's (its class says how it is used).
    if (relocated && (i.op == Op::Call || i.op == Op::Jump || i.op == Op::Adr)) i.op = Op::Other;
    const bool inside = i.dest >= static_cast<int64_t>(range.begin) && i.dest < static_cast<int64_t>(range.end);
    switch (i.op) {
      case Op::Call:
      case Op::Jump:
      case Op::Adr:
        if (!inside)
          out->targets.push_back({pc, static_cast<uint64_t>(i.dest),
                                  i.op == Op::Call   ? ReachHow::Call
                                  : i.op == Op::Jump ? ReachHow::Jump
                                                     : ReachHow::Reference});
        break;
      case Op::IndirectCall: out->indirect.push_back({pc, ReachHow::IndirectCall}); break;
      case Op::IndirectJump:
        if (!jump_table_dispatch(seen, i, range)) out->indirect.push_back({pc, ReachHow::IndirectJump});
        break;
      default: break;
    }
    if (seen.size() == 64) seen.erase(seen.begin(), seen.begin() + 32);
    seen.push_back(i);
  }
}

}  // namespace sk::elf
