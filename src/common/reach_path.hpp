// How a kernel's code reaches a symbol (a device-API function): the chain of functions from the
// kernel to the one that calls it, each with the kind of control transfer or reference that
// leads on. Both backends' binary readers produce it; explain and the messages that refuse a
// kernel's block count show it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sk {

enum class ReachHow : uint8_t {
  Call,          // a direct call
  Jump,          // a direct jump: a tail call, a conditional or short jump
  Reference,     // an address taken, or data that holds one
  IndirectCall,  // a call through a register or memory: any function whose address is taken
  IndirectJump,  // the same as a jump (a tail call through a pointer)
  Member,        // from an unnamed part of a code section to one of its functions
  Undecoded,     // code that was not decoded: it may go anywhere in its section
};

struct ReachStep {
  std::string from, to;  // symbol names, or a section's name where `*_section` says so
  ReachHow how = ReachHow::Call;
  bool from_section = false, to_section = false;
  int64_t at = -1;  // offset in `from` of the instruction (or relocation) that leads on, -1 unknown
};

// True when a step only may happen: the path is an over-approximation, not a certainty.
bool conservative(const std::vector<ReachStep> &steps);
// One sentence: "'k' jumps to 'helper', which calls sk_sync_all". The last step's `to` is
// written bare (a device-API function), the others quoted.
std::string describe(const std::vector<ReachStep> &steps);

}  // namespace sk
