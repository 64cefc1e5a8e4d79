// PTX text as a module of sub-kernels: what nvcc -ptx, a fatbinary's PTX and Triton write.
// Every `.entry` (a `__global__` kernel, a Triton kernel) becomes a `.func` a super kernel calls,
// by a mechanical rewrite of the text: the block index and grid size read through libsk's
// device API (the virtual block of sk_block_idx / sk_block_num), `exit` as `ret`, the entry
// directives (.reqntid, .maxntid, .minnctapersm, .maxnreg) taken out as the kernel's launch
// facts, parameter attributes of kernels only (.ptr .global .align N) dropped, and `.version`
// lowered to what the installed nvJitLink accepts. The text is compiled in the link; nothing
// here needs a GPU or nvJitLink. Each change is recorded, for sk_module_inspect and explain.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/signature.hpp"
#include "elf/cubin.hpp"

namespace sk::cuda {

// A kernel of a PTX module: a rewritten `.entry`, or a visible `.func` (a libsk sub-kernel
// compiled to PTX).
struct PtxKernel {
  std::string name;
  bool entry = false;
  Signature signature;              // from the parameter list
  uint32_t reqntid[3] = {0, 0, 0};  // .reqntid (0: not given)
  uint32_t maxntid[3] = {0, 0, 0};  // .maxntid
  uint32_t min_blocks_per_sm = 0;   // .minnctapersm
  uint32_t max_registers = 0;       // .maxnreg
  // It, or a function it reaches, reads a grid register beyond x (%ctaid.y/z, %nctaid.y/z):
  // its blocks need their grid's shape (sk_kernel_options.grid).
  bool multi_dimensional_grid = false;
  // It reads a thread register beyond x (%tid.y, %ntid.y) of a block whose shape its PTX does not
  // give (no .reqntid): the caller gives it (sk_kernel_desc.block).
  bool block_shape_needed = false;
  // It, or a helper it reaches, reads its thread registers through __sk_thread: its call site
  // stores its block's shape.
  bool reads_block_shape = false;
  // The parameters whose address it takes (a `__grid_constant__` CUtensorMap, a Triton tensor
  // descriptor), in order: each is passed as the generic address of its bytes, wherever the
  // super kernel holds them (ptx_param_address.hpp).
  std::vector<uint32_t> by_address;
  // It, or a helper it reaches, runs griddepcontrol.launch_dependents (taken out): a kernel of
  // programmatic dependent launch after it may start early (common/plan.cpp).
  bool launches_dependents = false;
  // It, or a function it reaches, reallocates registers between warps (setmaxnreg: warp
  // specialization), which compiled into one program would hold for the steps after it too.
  bool trades_registers = false;
  // It waits at griddepcontrol.wait but may write memory another block reads before (the
  // statement, as ptx_dependent_wait.hpp names it; "" if not): its step waits at its start.
  std::string write_before_dependent_wait;
  // Static `.shared` bytes of the variables it and the functions it reaches name, each on its
  // alignment: fused, they move into the shared overlay the sub-kernels share (ptx_prune.hpp).
  uint64_t static_shared = 0;
  std::vector<std::string> rewrites;  // what loading changed in it, one line each
  // Why it cannot run on fewer threads than its super kernel's block ("" if it can: it then runs
  // its copy, and of each function it reaches that counts threads, counting its own, ptx_prune.hpp).
  std::string narrow_refusal;
  // Why it cannot be fused, naming the construct ("" if it can). A refused entry stays an
  // `.entry` in the text, as it was written, so that the other kernels still link.
  std::string refusal;
};

// A function's text in `PtxModule::text`: its definition, or a declaration of it.
struct PtxFunctionText {
  std::string name;
  size_t at = 0, len = 0;
  bool definition = false;
  // (A definition) a visible or weak `.func`, which another module may call: a link keeps it
  // where another module's kept function calls or names it (ptx_prune.hpp).
  bool exported = false;
  bool named = false;             // (a definition) a module-scope variable names it: always kept
  std::vector<std::string> uses;  // (a definition) the module's functions it calls or names
  // (A definition) the functions it calls or names that the module declares and does not
  // define: another module's, or libsk's device API.
  std::vector<std::string> outside;
  // (A definition) where the number of its kernel's threads goes in the text, for a kernel that
  // runs fewer than its super kernel's block: past the id of each barrier that waits for every
  // thread of the block (a thread count added), and each %ntid.x it reads (replaced).
  std::vector<size_t> barrier_counts, block_dims;
};

// Where the text declares and names a static `.shared` variable (the same index of
// `PtxModule::graph.shared_vars`, which says its size and whether it may move), for a link to
// move it into the shared overlay: its declaration taken out, each name the overlay's symbol
// at the variable's offset (ptx_prune.hpp).
struct PtxSharedText {
  size_t at = 0, len = 0;
  std::vector<size_t> refs;
};

struct PtxModule {
  std::string version;  // `.version` as written ("9.4")
  std::string target;   // `.target`'s architecture as written ("sm_90a")
  // The architecture nvJitLink must link it for: the device's, with the `a` suffix when the
  // PTX targets the device's arch-specific features (Triton writes sm_90a on sm_90).
  std::string link_arch;
  std::string text;                   // rewritten, ready for nvJitLink
  std::vector<std::string> rewrites;  // of the module (the version), one line each
  std::vector<PtxKernel> kernels;     // in text order
  // Its functions and their calls, in the form the cubin reader gives a cubin's, so that one
  // walk (elf::Cubin::reach) finds what a kernel reaches: device API calls, `exit` and the
  // refused constructs of the functions it calls.
  elf::Cubin graph;
  // It calls a function it neither defines nor is libsk's device API (another module's).
  bool calls_outside = false;
  // Where each function stands in `text`, so that a link compiles only what its kernels reach
  // (ptx_prune.hpp); `whole` when debug sections address code by label and nothing may go.
  std::vector<PtxFunctionText> functions;
  // The functions its module-scope variables name (a table of pointers) that it does not
  // define: another module's, which a link keeps whatever its kernels reach.
  std::vector<std::string> variables_name;
  bool whole = false;
  std::vector<PtxSharedText> shared_text;
  size_t declarations_at = 0;  // past `.version`, `.target` and `.address_size`: where a link declares

  const PtxKernel *find(std::string_view name) const;
};

// True for bytes that read as PTX text: a `.version` directive before any NUL, past comments.
bool looks_like_ptx(const void *bytes, size_t size);

// The newest PTX ISA version ("9.0") an nvJitLink of version "13.0" compiles; "" when unknown.
std::string ptx_isa_of_nvjitlink(const std::string &nvjitlink_version);

// Reads and rewrites PTX text for a device of architecture `arch` ("sm_90"). `max_version` is
// the newest `.version` the linker takes ("" to leave it). A module for another GPU (a newer
// architecture, or another one's arch-specific features) is SK_ERR_INCOMPATIBLE; text that is
// not PTX as the grammar below reads it is SK_ERR_BAD_BINARY naming `label` and the line.
sk_status read_ptx_module(std::string_view text, const std::string &label, const std::string &arch,
                          const std::string &max_version, PtxModule *out);

}  // namespace sk::cuda
