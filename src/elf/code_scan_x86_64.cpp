// x86-64 code decoded with Zydis (elf/code_scan.hpp): a linear pass over a function, which
// compilers lay out as instructions only. A switch's dispatch (`jmp *%rax` after loading from a
// jump table of this function) is told from a call or jump through a pointer by the table it
// reads: one whose relocated entries all lead into the function.
#include <Zydis/Zydis.h>
#include <elf.h>

#include <algorithm>
#include <array>
#include <map>

#include "elf/code_scan.hpp"

namespace sk::elf {
namespace {

bool got_slot(uint32_t type) {
  return type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX || type == R_X86_64_REX_GOTPCRELX;
}

ZydisRegister full(ZydisRegister r) {
  return r == ZYDIS_REGISTER_NONE ? r : ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
}

// What a dispatch looks back on, of one decoded instruction.
struct Seen {
  ZydisMnemonic mnemonic = ZYDIS_MNEMONIC_INVALID;
  bool branch = false;                      // a call, jump or return: where a dispatch's block starts
  ZydisRegister dst = ZYDIS_REGISTER_NONE;  // its first operand, when a register
  ZydisRegister src = ZYDIS_REGISTER_NONE;  // its second operand, when a register
  ZydisDecodedOperandMem mem{};             // its memory operand, if any
  bool has_mem = false;
  // The address its memory operand names, when known: (section, offset).
  bool addressed = false;
  uint32_t section = 0;
  uint64_t offset = 0;
};

class Scanner {
 public:
  Scanner(const ObjectIndex &index, const CodeRange &range, CodeScan *out)
      : index_(index), obj_(index.object()), range_(range), out_(out) {
    ZydisDecoderInit(&decoder_, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  }

  void run() {
    const Section &sec = obj_.sections[range_.section];
    const uint64_t end = std::min(range_.end, sec.size);
    for (uint64_t ip = range_.begin; ip < end;) {
      ZydisDecodedInstruction insn;
      std::array<ZydisDecodedOperand, ZYDIS_MAX_OPERAND_COUNT> ops;
      if (ZYAN_FAILED(ZydisDecoderDecodeFull(&decoder_, sec.data + ip, end - ip, &insn, ops.data()))) {
        out_->decoded = false;
        return;
      }
      instruction(ip, insn, ops.data());
      ip += insn.length;
    }
    // A dispatch whose table address is loaded outside its loop: the load may come later in
    // the code than the jump.
    for (const auto &[at, base] : pending_) {
      bool found = false;
      for (const Seen &lea : leas_)
        if (lea.dst == base) found |= table(lea);
      if (!found) out_->indirect.push_back({at, ReachHow::IndirectJump});
    }
    std::sort(out_->indirect.begin(), out_->indirect.end());
  }

 private:
  void instruction(uint64_t ip, const ZydisDecodedInstruction &insn, const ZydisDecodedOperand *ops) {
    const uint64_t next = ip + insn.length;
    const ZydisInstructionCategory cat = insn.meta.category;
    const bool call = cat == ZYDIS_CATEGORY_CALL;
    const bool jump = cat == ZYDIS_CATEGORY_UNCOND_BR || cat == ZYDIS_CATEGORY_COND_BR;
    const auto relocs = index_.relocations(range_.section, ip, next);
    const Relocation *at_disp = nullptr, *at_imm = nullptr;
    for (const Relocation *r : relocs) {
      if (insn.raw.disp.size && r->offset == ip + insn.raw.disp.offset) at_disp = r;
      if (insn.raw.imm[0].size && r->offset == ip + insn.raw.imm[0].offset) at_imm = r;
    }
    Seen s;
    s.mnemonic = insn.mnemonic;
    s.branch = call || jump || cat == ZYDIS_CATEGORY_RET;
    bool direct = false;  // a call or jump whose target is named: by its field, or a GOT slot
    for (uint8_t i = 0; i < insn.operand_count_visible; ++i) {
      const ZydisDecodedOperand &op = ops[i];
      if (op.type == ZYDIS_OPERAND_TYPE_REGISTER && i == 0) s.dst = full(op.reg.value);
      if (op.type == ZYDIS_OPERAND_TYPE_REGISTER && i == 1) s.src = full(op.reg.value);
      if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative && (call || jump)) {
        direct = true;
        if (!at_imm)
          target(ip, ip + insn.length + static_cast<uint64_t>(op.imm.value.s),
                 call ? ReachHow::Call : ReachHow::Jump);
      }
      if (op.type == ZYDIS_OPERAND_TYPE_MEMORY &&
          (op.mem.type == ZYDIS_MEMOP_TYPE_MEM || op.mem.type == ZYDIS_MEMOP_TYPE_AGEN)) {
        s.has_mem = true;
        s.mem = op.mem;
        if (at_disp) {
          direct |= (call || jump) && op.mem.base == ZYDIS_REGISTER_RIP && got_slot(at_disp->type);
          address_of(*at_disp, next, &s);
        } else if (op.mem.base == ZYDIS_REGISTER_RIP) {
          s.addressed = true;
          s.section = range_.section;
          s.offset = next + static_cast<uint64_t>(op.mem.disp.value);
          target(ip, s.offset, ReachHow::Reference);
        }
      }
    }
    for (const Relocation *r : relocs) {
      const bool branch_field = (r == at_imm && direct) || (r == at_disp && direct);
      out_->relocated[r->offset] = {ip,
                                    branch_field ? (call ? ReachHow::Call : ReachHow::Jump) : ReachHow::Reference,
                                    x86_64_pc_relative(r->type) ? static_cast<int64_t>(next - r->offset) : 0};
    }
    if ((call || cat == ZYDIS_CATEGORY_UNCOND_BR) && !direct) {
      if (call)
        out_->indirect.push_back({ip, ReachHow::IndirectCall});
      else if (!dispatch(ip, s))
        out_->indirect.push_back({ip, ReachHow::IndirectJump});
    }
    if (s.mnemonic == ZYDIS_MNEMONIC_LEA && s.addressed) leas_.push_back(s);
    window_[count_++ % window_.size()] = s;
  }

  // A call, jump or address of `to` (section offset) the assembler resolved in this section.
  void target(uint64_t at, uint64_t to, ReachHow how) {
    if (to < range_.begin || to >= range_.end) out_->targets.push_back({at, to, how});
  }

  // The address a relocated memory operand names, when it is in a section of this object.
  void address_of(const Relocation &r, uint64_t next, Seen *s) const {
    if (r.symbol >= obj_.symbols.size()) return;
    const Symbol &sym = obj_.symbols[r.symbol];
    if (sym.shndx == SHN_UNDEF || sym.shndx >= obj_.sections.size()) return;
    s->addressed = true;
    s->section = sym.shndx;
    s->offset = sym.value + static_cast<uint64_t>(r.addend) + (x86_64_pc_relative(r.type) ? next - r.offset : 0);
  }

  // Whether the table `s` addresses leads into this function; its entries are then consumed.
  bool table(const Seen &s) {
    if (!s.addressed) return false;
    auto [it, fresh] = tables_.try_emplace({s.section, s.offset});
    if (fresh) it->second = x86_64_jump_table(index_, s.section, s.offset, range_);
    if (it->second.empty()) return false;
    for (uint64_t e : it->second) out_->table_entries.push_back({s.section, e});
    return true;
  }

  // An indirect jump that dispatches a switch: it reads a jump table of this function itself
  // (`jmp *T(,%rax,8)`), or one whose address the instructions just before it loaded (`lea T;
  // movslq (T,%rax,4); add T; jmp`), or it is that sequence with T loaded elsewhere (outside a
  // loop: decided once the whole function is decoded).
  bool dispatch(uint64_t ip, const Seen &jmp) {
    if (table(jmp)) return true;
    const size_t n = std::min(count_, window_.size());
    for (size_t k = 1; k <= n; ++k) {
      const Seen &prev = window_[(count_ - k) % window_.size()];
      if (prev.branch) break;
      if (table(prev)) return true;
    }
    if (n < 2 || jmp.dst == ZYDIS_REGISTER_NONE) return false;
    const Seen &add = window_[(count_ - 1) % window_.size()];
    const Seen &load = window_[(count_ - 2) % window_.size()];
    if (add.mnemonic != ZYDIS_MNEMONIC_ADD || add.dst != jmp.dst || add.src == ZYDIS_REGISTER_NONE) return false;
    if (load.mnemonic != ZYDIS_MNEMONIC_MOVSXD || !load.has_mem || full(load.mem.base) != add.src ||
        load.mem.scale != 4)
      return false;
    pending_.push_back({ip, add.src});
    return true;
  }

  const ObjectIndex &index_;
  const Object &obj_;
  const CodeRange range_;
  CodeScan *out_;
  ZydisDecoder decoder_;
  std::array<Seen, 8> window_;  // the last instructions decoded, by count_ modulo its size
  size_t count_ = 0;
  std::vector<Seen> leas_;                                   // every lea of an address this function makes
  std::vector<std::pair<uint64_t, ZydisRegister>> pending_;  // dispatches by the table in a register
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint64_t>> tables_;
};

}  // namespace

void scan_x86_64(const ObjectIndex &index, const CodeRange &range, CodeScan *out) {
  Scanner(index, range, out).run();
}

std::vector<uint64_t> x86_64_jump_table(const ObjectIndex &index, uint32_t table_section, uint64_t table,
                                        const CodeRange &range) {
  const Object &obj = index.object();
  if (table_section >= obj.sections.size() || table >= obj.sections[table_section].size) return {};
  const auto first = index.relocations(table_section, table, table + 1);
  if (first.empty()) return {};
  const uint32_t kind = first[0]->type;
  const uint64_t stride = kind == R_X86_64_64 ? 8 : kind == R_X86_64_PC32 ? 4 : 0;
  if (stride == 0) return {};
  std::vector<uint64_t> entries;
  for (uint64_t p = table;; p += stride) {
    const auto here = index.relocations(table_section, p, p + 1);
    if (here.size() != 1 || here[0]->type != kind || here[0]->symbol >= obj.symbols.size()) break;
    const Symbol &s = obj.symbols[here[0]->symbol];
    if (s.shndx != range.section) break;
    // An absolute entry is the address; a relative one, the target minus the table's start.
    const uint64_t to = s.value + static_cast<uint64_t>(here[0]->addend) - (kind == R_X86_64_PC32 ? p - table : 0);
    if (to < range.begin || to >= range.end) break;
    entries.push_back(p);
  }
  return entries;
}

}  // namespace sk::elf
