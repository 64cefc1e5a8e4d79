// Rewrites a relocatable cubin so that its movable static __shared__ variables
// (CubinSharedVar::overlay) lie in the shared overlay: every relocation against one, of code or
// of any other section (debug info), is retargeted to one new global undefined shared symbol,
// its addend raised by the variable's offset (shared_overlay_layout.hpp), and the variable's
// size becomes 0, so that the linker allocates nothing for it. Whoever links the result
// defines the overlay symbol, as large as the layout says. Symbol indices do not change (the
// new symbol is appended), so nothing else in the cubin (.nv.info, .nv.callgraph) needs editing.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "elf/cubin.hpp"

namespace sk::elf {

// `image` is the cubin `cubin` was parsed from; `offsets` has an entry per
// cubin.shared_vars (SharedOverlayLayout::offsets of that cubin). `out` is left empty when no
// variable moves: `image` links as it is. Malformed bytes are SK_ERR_BAD_BINARY naming `label`.
sk_status rewrite_shared_overlay(const std::vector<uint8_t> &image, const Cubin &cubin, std::string_view label,
                                 std::string_view overlay_symbol, const std::vector<uint64_t> &offsets,
                                 std::vector<uint8_t> *out);

}  // namespace sk::elf
