#include "elf/function_references.hpp"

#include <elf.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <set>

namespace sk::elf {
namespace {

bool in_section(const Symbol &s, const Object &obj) {
  return s.size > 0 && s.shndx != SHN_UNDEF && s.shndx < obj.sections.size();
}
bool is_function(const Symbol &s, const Object &obj) { return s.type == STT_FUNC && in_section(s, obj); }
// Functions and data objects with a size are nodes of their own; the rest of a section is one.
bool is_sized(const Symbol &s, const Object &obj) {
  return (s.type == STT_FUNC || s.type == STT_OBJECT) && in_section(s, obj);
}

bool x86_64_pc_relative(uint32_t type) {
  switch (type) {
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
    case R_X86_64_GOTPCREL:
    case R_X86_64_PC64:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
    case R_X86_64_PC16:
    case R_X86_64_PC8: return true;
  }
  return false;
}

class Graph {
 public:
  explicit Graph(const Object &obj) : obj_(obj), nsym_(obj.symbols.size()) {
    edges_.resize(nsym_ + obj.sections.size());
    undefined_.resize(edges_.size());
    for (size_t i = 0; i < nsym_; ++i)
      if (is_sized(obj.symbols[i], obj)) by_section_[obj.symbols[i].shndx].push_back(i);
    build();
  }

  std::vector<std::string> reach(size_t function_symbol) const {
    std::vector<bool> seen(edges_.size(), false);
    std::vector<size_t> stack{function_symbol};
    std::set<std::string> names;
    seen[function_symbol] = true;
    while (!stack.empty()) {
      size_t n = stack.back();
      stack.pop_back();
      names.insert(undefined_[n].begin(), undefined_[n].end());
      for (size_t m : edges_[n])
        if (!seen[m]) {
          seen[m] = true;
          stack.push_back(m);
        }
    }
    return {names.begin(), names.end()};
  }

 private:
  size_t section_node(uint32_t shndx) const { return nsym_ + shndx; }

  // The function or data object of section `shndx` holding `offset`, or none.
  long symbol_at(uint32_t shndx, uint64_t offset) const {
    auto it = by_section_.find(shndx);
    if (it == by_section_.end()) return -1;
    for (size_t f : it->second) {
      const Symbol &s = obj_.symbols[f];
      if (offset >= s.value && offset - s.value < s.size) return static_cast<long>(f);
    }
    return -1;
  }

  // Whether function f's bytes may refer to local function g of the same section without a
  // relocation (the assembler resolved it). A false match only adds an edge (a safe
  // over-approximation). Machines without a scan: assume every local may be reached.
  bool may_reach_unrelocated(size_t f, size_t g) const {
    const Section &sec = obj_.sections[obj_.symbols[f].shndx];
    if (!sec.data) return true;
    if (obj_.machine == EM_X86_64) return x86_64_may_reach(sec, obj_.symbols[f], obj_.symbols[g].value);
    if (obj_.machine == EM_AARCH64) return aarch64_may_reach(sec, obj_.symbols[f], obj_.symbols[g].value);
    return true;
  }

  // x86-64: any 4-byte window that, read as a rel32 ending 0, 1, 2 or 4 bytes before the next
  // instruction, lands on the target (call, jmp, jcc, lea/mov rip-relative), or a short
  // jump/jcc whose rel8 lands on it.
  static bool x86_64_may_reach(const Section &sec, const Symbol &fs, uint64_t g) {
    const int64_t target = static_cast<int64_t>(g);
    const uint64_t end = std::min<uint64_t>(fs.value + fs.size, sec.size);
    for (uint64_t i = fs.value; i < end; ++i) {
      if (i + 4 <= sec.size) {
        int32_t rel;
        std::memcpy(&rel, sec.data + i, 4);
        for (int64_t imm : {0, 1, 2, 4})
          if (static_cast<int64_t>(i) + 4 + imm + rel == target) return true;
      }
      if (i > fs.value) {
        const uint8_t op = sec.data[i - 1];
        const bool short_jump = op == 0xEB || (op >= 0x70 && op <= 0x7F) || op == 0xE3;
        if (short_jump && static_cast<int64_t>(i) + 1 + static_cast<int8_t>(sec.data[i]) == target) return true;
      }
    }
    return false;
  }

  // AArch64: every instruction is 4 aligned bytes; a PC-relative one that lands on the target:
  // B/BL (imm26), B.cond, CBZ/CBNZ (imm19), TBZ/TBNZ (imm14), ADR (address taken, imm21).
  static bool aarch64_may_reach(const Section &sec, const Symbol &fs, uint64_t g) {
    const int64_t target = static_cast<int64_t>(g);
    const uint64_t end = std::min<uint64_t>(fs.value + fs.size, sec.size);
    auto sext = [](uint32_t v, unsigned bits) {
      return static_cast<int64_t>(static_cast<int32_t>(v << (32 - bits)) >> (32 - bits));
    };
    for (uint64_t i = (fs.value + 3) & ~uint64_t(3); i + 4 <= end; i += 4) {
      uint32_t insn;
      std::memcpy(&insn, sec.data + i, 4);
      const int64_t pc = static_cast<int64_t>(i);
      int64_t dest = INT64_MIN;
      if ((insn & 0x7c000000u) == 0x14000000u)
        dest = pc + 4 * sext(insn & 0x3ffffff, 26);
      else if ((insn & 0xff000010u) == 0x54000000u || (insn & 0x7e000000u) == 0x34000000u)
        dest = pc + 4 * sext((insn >> 5) & 0x7ffff, 19);
      else if ((insn & 0x7e000000u) == 0x36000000u)
        dest = pc + 4 * sext((insn >> 5) & 0x3fff, 14);
      else if ((insn & 0x9f000000u) == 0x10000000u)
        dest = pc + sext(((insn >> 5) & 0x7ffff) << 2 | ((insn >> 29) & 3), 21);
      if (dest == target) return true;
    }
    return false;
  }

  void build() {
    for (const auto &[shndx, nodes] : by_section_) {
      // Code reached at an unnamed spot may be any of its functions; data reached at an unnamed
      // spot reaches only the relocations outside its named objects. Each function reaches
      // the local functions of its section that its code may call without a relocation.
      const bool code = obj_.sections[shndx].flags & SHF_EXECINSTR;
      for (size_t f : nodes) {
        if (code) edges_[section_node(shndx)].push_back(f);
        if (!is_function(obj_.symbols[f], obj_)) continue;
        for (size_t g : nodes)
          if (g != f && is_function(obj_.symbols[g], obj_) && obj_.symbols[g].bind == STB_LOCAL &&
              may_reach_unrelocated(f, g))
            edges_[f].push_back(g);
      }
    }
    for (const RelocationSection &rs : obj_.relocation_sections) {
      if (rs.target >= obj_.sections.size()) continue;
      for (const Relocation &r : rs.relocations) {
        long owner_fn = symbol_at(rs.target, r.offset);
        size_t owner = owner_fn >= 0 ? static_cast<size_t>(owner_fn) : section_node(rs.target);
        if (r.symbol >= nsym_) continue;
        const Symbol &t = obj_.symbols[r.symbol];
        if (t.shndx == SHN_UNDEF) {
          if (!t.name.empty()) undefined_[owner].push_back(t.name);
          continue;
        }
        if (t.shndx >= obj_.sections.size()) continue;  // SHN_ABS, SHN_COMMON: no code
        if (is_sized(t, obj_)) {
          edges_[owner].push_back(r.symbol);
          continue;
        }
        // Section symbol (or a label) + addend. An absolute field points at the addend; an
        // x86-64 PC-relative field at addend + 4 plus the size of an immediate that may follow
        // it in the instruction (0, 1, 2 or 4 bytes): every candidate is an edge.
        const uint64_t at = t.value + static_cast<uint64_t>(r.addend);
        bool hit_any = false;
        auto reach_at = [&](uint64_t where) {
          long hit = symbol_at(t.shndx, where);
          if (hit >= 0) edges_[owner].push_back(static_cast<size_t>(hit));
          hit_any |= hit >= 0;
        };
        if (obj_.machine == EM_X86_64 && x86_64_pc_relative(r.type)) {
          for (uint64_t imm : {0, 1, 2, 4}) reach_at(at + 4 + imm);
        } else {
          reach_at(at);
        }
        if (!hit_any) edges_[owner].push_back(section_node(t.shndx));
      }
    }
  }

  const Object &obj_;
  size_t nsym_;
  std::vector<std::vector<size_t>> edges_;
  std::vector<std::vector<std::string>> undefined_;
  std::map<uint32_t, std::vector<size_t>> by_section_;
};

}  // namespace

std::map<std::string, std::vector<std::string>> undefined_references_by_function(const Object &obj) {
  Graph g(obj);
  std::map<std::string, std::vector<std::string>> out;
  for (size_t i = 0; i < obj.symbols.size(); ++i) {
    const Symbol &s = obj.symbols[i];
    if (is_function(s, obj) && (s.bind == STB_GLOBAL || s.bind == STB_WEAK)) out[s.name] = g.reach(i);
  }
  return out;
}

}  // namespace sk::elf
