// Which undefined symbols each function of a relocatable object may reach: how the planner
// learns, from the binary alone, whether a kernel calls sk_sync_all or the task-overlap calls.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "elf/elf_object.hpp"

namespace sk::elf {

// For every defined global or weak function: the sorted names of the undefined symbols that
// code reachable from it references. Reachability is per function, not per section, so that
// kernels sharing one .text do not inherit each other's device-API use:
//  - functions and data objects with a size are nodes; a relocation belongs to the one whose
//    [value, value+size) holds its offset, else to the rest of its section;
//  - a reference to such a symbol, or to a section symbol + addend that lands in one (the
//    addend, or addend + 4 for PC-relative fields), reaches it; any other reference reaches the
//    rest of the target section (code: all its functions; data: its unnamed parts' relocations);
//  - a function also reaches the local functions of its own section that its bytes may refer
//    to: the assembler resolves calls to those without leaving a relocation (x86-64: a scan
//    for rel32/rel8 displacements landing on them; AArch64: for B/BL, B.cond, CB(N)Z, TB(N)Z
//    and ADR immediates landing on them; other machines: all of them).
std::map<std::string, std::vector<std::string>> undefined_references_by_function(const Object &obj);

}  // namespace sk::elf
