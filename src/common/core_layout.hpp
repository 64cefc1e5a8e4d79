// Core types and the super kernel's core layout (docs/semantics.md, "Core types and layouts").
// Cores come in two types, cube and vector. A mixed kernel runs on groups of one cube core and
// one (1:1) or two (1:2) vector cores; its block_dim counts groups. A dispatch's layout is
// vector-only, cube-only, or G groups of 1 cube + R vector cores, chosen from its kernels.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace sk {

enum class KernelKind : uint8_t { Vector, Cube, Mix11, Mix12 };

// "vector", "cube", "mix_1_1", "mix_1_2" (sk_kernel.h's SK_CORE_* strings).
bool parse_kernel_kind(std::string_view text, KernelKind *out);
const char *kernel_kind_name(KernelKind kind);
// What a kernel of `kind` counts its blocks in: "vector cores", "cube cores" or "groups".
inline const char *kernel_unit_name(KernelKind kind) {
  return kind == KernelKind::Vector ? "vector cores" : kind == KernelKind::Cube ? "cube cores" : "groups";
}
inline bool is_mixed(KernelKind k) { return k == KernelKind::Mix11 || k == KernelKind::Mix12; }

// What a kernel of `kind` on `block_dim` blocks asks for.
uint32_t vector_cores_needed(KernelKind kind, uint32_t block_dim);
uint32_t cube_cores_needed(KernelKind kind, uint32_t block_dim);

// Logical cores 0 .. cores()-1 of a dispatch. In a mixed layout group g's cube core is core
// g*(1+R) and its vector cores follow it, so a group's cores are neighbours.
struct CoreLayout {
  uint32_t cube = 0, vector = 0;
  uint32_t groups = 0;             // mixed layouts only
  uint32_t vectors_per_group = 0;  // R: 1 or 2 in mixed layouts, 0 in pure ones
  uint32_t cores() const { return cube + vector; }
  bool mixed() const { return vectors_per_group != 0; }
  const char *ratio_name() const;  // "vector-only", "cube-only", "1:1", "1:2"
  // Units a kernel of `kind` runs its blocks on: vector or cube cores, or groups. 0: it cannot
  // run here (no core of its type, or a 1:2 kernel in a 1:1 layout).
  uint32_t units_for(KernelKind kind) const;
  // Cores that `units` units of a `kind` kernel occupy: a mixed kernel's group is its cube core
  // and its vector cores.
  uint32_t cores_for(KernelKind kind, uint32_t units) const {
    return is_mixed(kind) ? units * (1 + vectors_per_group) : units;
  }
};

// Running maxima of what a sequence of kernels asks for; the layout follows from them.
struct LayoutDemand {
  uint32_t max_vector = 0, max_cube = 0;
  bool any_vector = false, any_cube = false, any_mixed = false, any_mix12 = false;
  void add(KernelKind kind, uint32_t block_dim);
  bool operator==(const LayoutDemand &) const = default;
  // The ratio rules, before any device limit: all vector -> vector-only; all cube -> cube-only;
  // any 1:2 kernel -> 1:2; otherwise 1:1 when the vector demand fits the cube demand, else 1:2
  // with groups = max(max_cube, ceil(max_vector / 2)).
  CoreLayout nominal() const;
};

// Where a logical core sits: its type, its index among the cores of that type, its group and
// its place among the group's vector cores. index[k] is the core's unit for kernel class k
// (0: vector kernels, 1: cube kernels, 2: mixed kernels), or kNoUnit.
struct CoreSlot {
  static constexpr uint32_t kNoUnit = 0xffffffffu;
  uint32_t type = 0;  // SK_CORE_TYPE_VECTOR (0) or SK_CORE_TYPE_CUBE (1)
  uint32_t group = 0, sub = 0;
  uint32_t index[3] = {kNoUnit, kNoUnit, kNoUnit};
};
CoreSlot core_slot(const CoreLayout &layout, uint32_t core);
// 0, 1 or 2: the CoreSlot::index a kernel of `kind` uses.
inline uint32_t unit_class(KernelKind kind) {
  return kind == KernelKind::Vector ? 0 : kind == KernelKind::Cube ? 1 : 2;
}

// Clips a nominal layout to the device's cores and applies debug-aic-num / debug-aiv-num
// (ratios 1:0, 0:1, 1:1, 1:2 only; never above the nominal counts). Fails naming `subject` (the
// scope, as Plan::subject) and the option or the limit; *note (if not null) gets what was clipped or forced ("" if nothing).
struct ScopeOptions;
sk_status fit_layout(const CoreLayout &nominal, uint32_t device_cores, const ScopeOptions &options,
                     const std::string &subject, CoreLayout *out, std::string *note);

}  // namespace sk
