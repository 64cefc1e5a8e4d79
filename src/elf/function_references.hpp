// Which undefined symbols each function of a relocatable object may reach, and how: how the
// planner learns, from the binary alone, whether a kernel calls sk_sync_all or the task-overlap
// calls, and what explain and its messages say about why.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/reach_path.hpp"
#include "elf/elf_object.hpp"

namespace sk::elf {

struct FunctionReach {
  std::vector<std::string> undefined;  // sorted names of the undefined symbols its code may reach
  // For each of those the caller asked about: the shortest chain of steps from the function to
  // it, one through an indirect call or jump only where no other leads there.
  std::map<std::string, std::vector<ReachStep>> paths;
};

// For every defined global or weak function (STT_FUNC, or STT_NOTYPE in code), what its code may
// reach; `want_path` selects the undefined symbols whose path is kept (none when unset).
// Reachability is per function, not per section, so that kernels sharing one .text do not
// inherit each other's device-API use. The graph:
//  - functions and data objects with a size are nodes, and each section holds one more for what
//    no such symbol covers; a relocation belongs to the node whose bytes it patches;
//  - a relocation naming a symbol reaches it; one naming a section symbol (or a label) + addend
//    reaches the node at that address, or the section's node if none covers it. The address of
//    a label inside a function (a jump table's case, a landing pad) leads nowhere: only that
//    function jumps there;
//  - machine code is decoded (x86-64 with Zydis, AArch64 exactly) for what the assembler
//    resolved without a relocation: a call, tail jump, conditional jump or address computation
//    into another function of the same section is an edge too;
//  - a call or jump through a register or memory may reach every function whose address is
//    taken in the object (a reference to its start that is not a direct call or jump, from code
//    or allocated data other than .eh_frame and the init/fini arrays) and every undefined
//    symbol whose address is taken; a switch's dispatch through a jump table of the function
//    itself is not such a jump;
//  - code that is not decoded (another machine, or bytes that do not decode) may reach every
//    function of its section, and everything a pointer can reach.
std::map<std::string, FunctionReach> reach_by_function(const Object &obj,
                                                       const std::function<bool(std::string_view)> &want_path = {});

}  // namespace sk::elf
