// A PTX module's text as one link compiles it: cut to what the link's kernels reach, its static
// `.shared` variables moved into the shared overlay. nvJitLink compiles every function of the
// text it is given; an engine's module (llama.cpp's quantized GEMVs: 294 kernels, 12 MB) costs
// its whole compile for the few kernels a super kernel calls. The cut keeps the module's
// variables and directives, the kernels taken, every function they call or name, and the
// visible functions another module of the link calls or names (all of them where the link is not
// known); it removes the other functions' definitions and declarations: a visible function no
// part of the program reaches, which may call a function nothing defines, is not compiled. A
// variable the overlay places is declared no more, and each name of it becomes the overlay's
// symbol at its offset (the sub-kernels of a block run one after another: their variables
// share the bytes, as a cubin's do, elf/shared_overlay_layout.hpp). A kernel that runs fewer
// threads than its block gets copies that count those (below).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cuda/ptx_module.hpp"

namespace sk::cuda {

// Where a link's shared overlay puts the module's variables: its symbol, size and alignment,
// and per `m.graph.shared_vars` entry an offset, or elf::SharedOverlayLayout::kInPlace.
struct PtxOverlay {
  std::string symbol;
  uint64_t bytes = 0;
  uint32_t align = 1;
  const std::vector<uint64_t> *offsets = nullptr;
};

// A kernel of the link that runs fewer threads than its super kernel's block, on the block's
// first ones.
struct PtxNarrow {
  std::string kernel;
  uint32_t threads = 0;
};

// The name a super kernel calls `kernel` of `m` by when it runs `threads` of its block's `block`:
// its own, or, where it or a function it reaches counts the block's threads (a barrier of the
// whole block, %ntid.x: PtxFunctionText::barrier_counts, block_dims) and `threads` is fewer, its
// copy for that many threads ("k$w128"), which counts those.
std::string narrow_call_name(const PtxModule &m, const std::string &kernel, uint32_t threads, uint32_t block);

// Per module of one link (each with the kernels the link takes of it, by name), its exported
// functions (PtxFunctionText::exported) that the functions the other modules keep call or name,
// or their module-scope variables name: what they keep for it may in turn call a third module's,
// so the sets grow until none does.
std::vector<std::set<std::string>> called_across(const std::vector<const PtxModule *> &modules,
                                                 const std::vector<std::vector<std::string>> &kernels);

// `m.text` without the functions that no kernel of `kernels` (names) reaches, nor a function a
// module-scope variable names, nor an exported one of `called` (called_across's set for `m`; every
// exported one without it), and with the variables `overlay` places moved; the whole text when
// `m.whole`. Each kernel of `narrow` gets its copy of every function it reaches
// that counts the block's threads, or calls one that does (narrow_call_name names them, the
// same per thread count), appended with its declaration: the originals stay as they were for the
// kernels of the block's width and for other modules, so one function is reached at any number
// of widths.
std::string ptx_text_for(const PtxModule &m, const std::vector<std::string> &kernels,
                         const PtxOverlay *overlay = nullptr, const std::vector<PtxNarrow> &narrow = {},
                         const std::set<std::string> *called = nullptr);

}  // namespace sk::cuda
