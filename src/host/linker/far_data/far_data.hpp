// Rewriting PC-relative data references that cannot reach their target from where the object
// is placed (default PIE code reading variables that lie far apart: one copy-relocated into the
// executable, one in a shared library). The instruction holding the reference is replaced by a
// branch to a stub in the code part that does the same through the target's absolute address,
// so the variable itself is shared, never copied. One implementation per architecture
// (rewrite_x86_64.cpp, veneer_aarch64.cpp); the linker pass is linker_far_data.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace sk::host {

// One instruction to rewrite: where it starts in its section and how long it is.
struct FarDataSite {
  uint64_t offset = 0;
  unsigned length = 0;
};

struct FarDataRewriter {
  size_t stub_size;  // bytes reserved per rewritten instruction (a multiple of 16)
  // Relocation types a rewrite can stand in for (PC-relative data references in code).
  bool (*applies)(uint32_t type);
  // Finds the instruction of `code` (a section's `size` bytes) whose relocated field lies at
  // `field`, decoding from `start` (a function's start at or before it), and checks that it can
  // be rewritten. false with *why naming the instruction and the reason otherwise.
  bool (*plan)(const uint8_t *code, size_t size, uint64_t start, uint64_t field, FarDataSite *out, std::string *why);
  // Writes the stub at `stub` (run-time address stub_at) and replaces the instruction at `insn`
  // (run-time address insn_at; its bytes already relocated apart from this field) by a branch
  // to it. `target` is S + A of the relocation; `field` the field's offset in the instruction.
  bool (*write)(uint8_t *insn, uint64_t insn_at, const FarDataSite &site, unsigned field, uint8_t *stub,
                uint64_t stub_at, uint64_t target, std::string *why);
};

// The rewriter for the host's machine, or nullptr where there is none.
const FarDataRewriter *far_data_rewriter();

}  // namespace sk::host
