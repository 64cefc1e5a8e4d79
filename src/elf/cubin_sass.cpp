#include "elf/cubin_sass.hpp"

#include <cstring>

namespace sk::elf {
namespace {

constexpr size_t kInstructionBytes = 16;

uint64_t low_word(const uint8_t *instruction) {
  uint64_t w;
  std::memcpy(&w, instruction, sizeof w);  // little-endian, as every CUDA host
  return w;
}

// BPT.TRAP 0x1 (`__trap()`), its guard predicate (bits 12-15) left out.
bool is_trap(uint64_t w) { return (w & ~(uint64_t{0xf} << 12)) == 0x000000040000095cull; }

// An operand c[bank][offset] of an ALU instruction keeps offset / 4 in bits 40-53 and the bank in
// bits 54-58; LDC and ULDC keep the byte offset in bits 38-53, the same bits for an aligned one.
bool reads_constant(uint64_t w, uint32_t offset) {
  return ((w >> 54) & 0x1f) == 0 && ((w >> 40) & 0x3fff) == offset / 4;
}

// The offset in constant bank 0 of %envreg2, the low word of the grid workspace's address (the
// driver's layout: nvcc puts it there for every compile of the architecture); 0: unknown.
uint32_t grid_workspace_constant(uint32_t sm) {
  if (sm >= 75 && sm < 90) return 0x90;
  if (sm == 90) return 0x48;
  return 0;
}

}  // namespace

SassFacts read_sass(const uint8_t *code, size_t size, uint32_t sm) {
  const uint32_t workspace = grid_workspace_constant(sm);
  SassFacts facts;
  facts.reads_grid_workspace = workspace == 0;
  for (size_t at = 0; at + kInstructionBytes <= size; at += kInstructionBytes) {
    const uint64_t w = low_word(code + at);
    facts.traps = facts.traps || is_trap(w);
    facts.reads_grid_workspace = facts.reads_grid_workspace || reads_constant(w, workspace);
  }
  return facts;
}

}  // namespace sk::elf
