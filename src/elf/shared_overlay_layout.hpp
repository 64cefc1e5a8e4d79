// Where the static __shared__ variables of the cubins of one link lie in the shared overlay:
// one array that every variable which may move (CubinSharedVar::overlay) is rewritten to
// address at an offset (cubin_shared_overlay.hpp). A block runs its sub-kernels one after
// another, with a block barrier between them, so only the variables that one call tree
// reaches together must not overlap: the overlay needs the largest call tree's bytes, not the
// sum over every sub-kernel.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "elf/cubin.hpp"

namespace sk::elf {

// A call tree's root: a sub-kernel, defined in cubin `module` of the layout's list.
struct OverlayRoot {
  uint32_t module = 0;
  std::string function;
};

struct SharedOverlayLayout {
  uint64_t bytes = 0;  // the overlay's size: what the largest call tree needs
  uint32_t align = 1;  // the largest alignment of a variable placed
  // Per cubin, per Cubin::shared_vars entry: its offset in the overlay (0 for one no root
  // reaches, whose code does not run), or kInPlace for a variable that does not move.
  std::vector<std::vector<uint64_t>> offsets;
  static constexpr uint64_t kInPlace = UINT64_MAX;
};

// Lays out the movable variables of `cubins` (all relocatable cubins of the link) so that no
// two that one root's call tree reaches overlap. A call tree follows .nv.callgraph and, from a
// function's undefined callees, the global functions of that name in the other cubins.
// `opaque_calls`: the link has code whose calls are not known before the link (LTO-IR), which
// may call any global function of the cubins: then every variable stays in place, and the
// linker places those the linked call graph reaches, each apart, as without the overlay.
SharedOverlayLayout layout_shared_overlay(const std::vector<const Cubin *> &cubins,
                                          const std::vector<OverlayRoot> &roots, bool opaque_calls);

}  // namespace sk::elf
