// One PTX text of a super kernel whose sub-kernels are all PTX: the generated entry and each
// module as it would be linked, joined so that the driver's JIT compiles them as one program.
// A link compiles each PTX input on its own (relocatable), so every sub-kernel is a called
// function with the call ABI's saves and no occupancy target; compiled whole, ptxas inlines
// the calls and the entry takes the registers its sub-kernels take alone.
//
// Joining keeps what the link would have meant: names a module keeps to itself (internal
// functions and variables, Triton's `_$_str`, nvcc's `$str`) are renamed where another part
// defines or declares the same name; a declaration of what another part defines is dropped, or
// made a forward declaration when that part comes later; `.extern .shared` arrays (dynamic
// shared memory, one base for all) are declared once; of a function or variable defined in
// several parts, weak (nvcc -rdc's template functions), the program keeps the definition a link
// keeps (the visible one, else the first), the others dropped or made declarations; line
// information stays, in the program's numbering: each module's `.file` numbers become the
// program's (one `.file` per path) in its `.loc`s, and the debug strings its `.loc`s name as
// inlined functions stay, their labels renamed where an earlier part has the same; the other
// debug sections (which address code by label) are left out. What
// it cannot join as the link would link it (a visible definition in two parts, a forward
// reference to a variable, a `.target` with more than an architecture) it refuses, saying why:
// the super kernel is then linked as before.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sk::cuda {

struct PtxPart {
  std::string_view text;  // a whole module: `.version`, `.target`, `.address_size`, then the rest
  std::string label;      // for the reasons
};

// `parts[0]` first (the entry), under one header: the newest `.version` of the parts and
// `.target target`. False with `*why` when the parts cannot be one program.
bool join_ptx(const std::vector<PtxPart> &parts, const std::string &target, std::string *out, std::string *why);

}  // namespace sk::cuda
