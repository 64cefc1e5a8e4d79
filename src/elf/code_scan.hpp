// What a function's machine code says about where it goes, beyond what its relocations name:
// the calls, jumps and addresses the assembler resolved without leaving a relocation (a tail
// jump to a function of the same section), how each relocated instruction uses its address,
// and the indirect calls and jumps, those that dispatch through a switch's jump table (whose
// targets lie inside the function) left out. elf/function_references.cpp builds the call graph
// from it.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "common/reach_path.hpp"
#include "elf/elf_object.hpp"

namespace sk::elf {

// What the scanners look up in an object: relocations by the place they patch, and the AArch64
// mapping symbols that mark data ($d, literal pools) inside code ($x).
class ObjectIndex {
 public:
  explicit ObjectIndex(const Object &obj);
  const Object &object() const { return obj_; }
  // The relocations patching [begin, end) of section `section`, by offset.
  std::span<const Relocation *const> relocations(uint32_t section, uint64_t begin, uint64_t end) const;
  // Where section `section` switches between instructions and data: (offset, data), by offset.
  const std::vector<std::pair<uint64_t, bool>> &mapping(uint32_t section) const;

 private:
  const Object &obj_;
  std::vector<std::vector<const Relocation *>> relocations_;
  std::vector<std::vector<std::pair<uint64_t, bool>>> mapping_;
};

struct CodeScan {
  // An instruction at `at` that calls, jumps to or takes the address of `to` (section offsets)
  // with no relocation: the assembler resolved it within the section. how: Call, Jump, Reference.
  struct Target {
    uint64_t at, to;
    ReachHow how;
  };
  // How the instruction at `insn` uses the address its relocation writes (Call, Jump,
  // Reference), and where that address points: S + A + adjust (a PC-relative field is read
  // from the end of the instruction, `adjust` bytes past the field).
  struct Use {
    uint64_t insn = 0;
    ReachHow how = ReachHow::Reference;
    int64_t adjust = 0;
  };
  std::vector<Target> targets;
  std::map<uint64_t, Use> relocated;  // by the relocation's offset
  // Calls and jumps through a register or memory: offset, IndirectCall or IndirectJump.
  std::vector<std::pair<uint64_t, ReachHow>> indirect;
  // The relocations (section, offset) of jump tables whose entries lead into the code scanned:
  // their targets are labels of the function itself, not edges of the graph.
  std::vector<std::pair<uint32_t, uint64_t>> table_entries;
  bool decoded = true;  // false: not decoded (no decoder, or bytes that do not decode)
};

// [begin, end) of code section `section`: one function, or a part of the section no function covers.
struct CodeRange {
  uint32_t section = 0;
  uint64_t begin = 0, end = 0;
};

// Whether an x86-64 relocation type writes an address relative to the place it patches.
bool x86_64_pc_relative(uint32_t type);

// AArch64: every instruction decoded exactly (4 bytes each, data between $d and $x skipped).
void scan_aarch64(const ObjectIndex &index, const CodeRange &range, CodeScan *out);
#if defined(SK_X86_64_DECODER)
// x86-64, decoded with Zydis (the x86-64 build's disassembler).
void scan_x86_64(const ObjectIndex &index, const CodeRange &range, CodeScan *out);

// The relocations (offsets in `table_section`) of a jump table starting at `table` whose
// entries lead into `range`: consecutive entries of one kind (R_X86_64_64: 8-byte absolute
// addresses; R_X86_64_PC32: 4-byte offsets from the table's start), up to the first that does
// not. Empty: no such table there.
std::vector<uint64_t> x86_64_jump_table(const ObjectIndex &index, uint32_t table_section, uint64_t table,
                                        const CodeRange &range);
#endif

}  // namespace sk::elf
