// A PTX module's text as one link compiles it: cut to what the link's kernels reach, its static
// `.shared` variables moved into the shared overlay. nvJitLink compiles every function of the
// text it is given; an engine's module (llama.cpp's quantized GEMVs: 294 kernels, 12 MB) costs
// its whole compile for the few kernels a super kernel calls. The cut keeps the module's
// variables and directives, the kernels taken, every function they call or name, and what
// another module may call; it removes the other functions' definitions and declarations. A
// variable the overlay places is declared no more, and each name of it becomes the overlay's
// symbol at its offset (the sub-kernels of a block run one after another: their variables
// share the bytes, as a cubin's do, elf/shared_overlay_layout.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
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

// The threads each function of `m` counts where a kernel that reaches it runs fewer than the
// super kernel's `block` (kernels[i] runs threads[i]): its barriers of the whole block and its
// %ntid.x count those (PtxFunctionText::barrier_counts, block_dims). "" with `*counts`, or why
// not: two kernels of different threads reach a function that counts them, or a narrow one
// reaches a visible or weak one that does and that another module of the link names
// (`named_elsewhere`: which, "y.ptx names it too", or "" for none): its kernels may call it, or a
// link keep its copy of a weak one.
std::string narrow_counts(const PtxModule &m, const std::vector<std::string> &kernels,
                          const std::vector<uint32_t> &threads, uint32_t block,
                          const std::function<std::string(std::string_view)> &named_elsewhere,
                          std::map<std::string, uint32_t> *counts);

// `m.text` without the functions that no kernel of `kernels` (names) reaches, nor any function
// kept always (PtxFunctionText::always), and with the variables `overlay` places moved; the
// whole text when `m.whole`. The functions of `counts` (narrow_counts) count those threads.
std::string ptx_text_for(const PtxModule &m, const std::vector<std::string> &kernels,
                         const PtxOverlay *overlay = nullptr,
                         const std::map<std::string, uint32_t> *counts = nullptr);

}  // namespace sk::cuda
