#include "common/core_layout.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/scope_options.hpp"

namespace sk {

bool parse_kernel_kind(std::string_view text, KernelKind *out) {
  if (text == "vector")
    *out = KernelKind::Vector;
  else if (text == "cube")
    *out = KernelKind::Cube;
  else if (text == "mix_1_1")
    *out = KernelKind::Mix11;
  else if (text == "mix_1_2")
    *out = KernelKind::Mix12;
  else
    return false;
  return true;
}

const char *kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::Vector: return "vector";
    case KernelKind::Cube: return "cube";
    case KernelKind::Mix11: return "mix_1_1";
    case KernelKind::Mix12: return "mix_1_2";
  }
  return "?";
}

uint32_t vector_cores_needed(KernelKind kind, uint32_t block_dim) {
  switch (kind) {
    case KernelKind::Vector:
    case KernelKind::Mix11: return block_dim;
    case KernelKind::Mix12: return block_dim > 0x7fffffffu ? 0xffffffffu : 2 * block_dim;
    case KernelKind::Cube: return 0;
  }
  return 0;
}

uint32_t cube_cores_needed(KernelKind kind, uint32_t block_dim) {
  return kind == KernelKind::Vector ? 0 : block_dim;
}

const char *CoreLayout::ratio_name() const {
  if (vectors_per_group == 1) return "1:1";
  if (vectors_per_group == 2) return "1:2";
  return cube ? "cube-only" : "vector-only";
}

uint32_t CoreLayout::units_for(KernelKind kind) const {
  switch (kind) {
    case KernelKind::Vector: return vector;
    case KernelKind::Cube: return cube;
    case KernelKind::Mix11: return groups;
    case KernelKind::Mix12: return vectors_per_group == 2 ? groups : 0;
  }
  return 0;
}

void LayoutDemand::add(KernelKind kind, uint32_t block_dim) {
  max_vector = std::max(max_vector, vector_cores_needed(kind, block_dim));
  max_cube = std::max(max_cube, cube_cores_needed(kind, block_dim));
  any_vector |= kind == KernelKind::Vector;
  any_cube |= kind == KernelKind::Cube;
  any_mixed |= is_mixed(kind);
  any_mix12 |= kind == KernelKind::Mix12;
}

CoreLayout LayoutDemand::nominal() const {
  CoreLayout l;
  if (!any_mixed && !any_cube) {
    l.vector = max_vector;
  } else if (!any_mixed && !any_vector) {
    l.cube = max_cube;
  } else if (!any_mix12 && max_vector <= max_cube) {
    l.vectors_per_group = 1;
    l.groups = max_cube;
  } else {
    l.vectors_per_group = 2;
    l.groups = std::max(max_cube, max_vector / 2 + max_vector % 2);
  }
  if (l.mixed()) {
    l.cube = l.groups;
    l.vector = l.groups * l.vectors_per_group;
  }
  return l;
}

CoreSlot core_slot(const CoreLayout &layout, uint32_t core) {
  CoreSlot s;
  if (!layout.mixed()) {
    s.type = layout.cube ? 1 : 0;
    s.group = core;
    s.index[s.type] = core;
    return s;
  }
  const uint32_t per_group = 1 + layout.vectors_per_group;
  s.group = core / per_group;
  const uint32_t place = core % per_group;
  s.index[2] = s.group;
  if (place == 0) {
    s.type = 1;
    s.index[1] = s.group;
  } else {
    s.type = 0;
    s.sub = place - 1;
    s.index[0] = s.group * layout.vectors_per_group + s.sub;
  }
  return s;
}

sk_status fit_layout(const CoreLayout &nominal, uint32_t device_cores, const ScopeOptions &options,
                     const std::string &subject, CoreLayout *out, std::string *note) {
  CoreLayout l = nominal;
  // The planner's per-kernel checks pass no note: they want the layout only.
  if (note) note->clear();
  if (l.mixed()) {
    const uint32_t per_group = 1 + l.vectors_per_group;
    const uint32_t fit = device_cores / per_group;
    if (fit == 0)
      return fail(SK_ERR_INCOMPATIBLE,
                  "%s: a %s super kernel needs groups of %u cores (1 cube + %u vector); the device "
                  "has %u cores (open it with more, e.g. \"host:cores=%u\")",
                  subject.c_str(), l.ratio_name(), per_group, l.vectors_per_group, device_cores, per_group);
    if (l.groups > fit) {
      if (note)
        *note = "groups clipped from " + std::to_string(l.groups) + " to the device's " + std::to_string(fit);
      l.groups = fit;
    }
    l.cube = l.groups;
    l.vector = l.groups * l.vectors_per_group;
  } else if (l.cores() > device_cores) {
    if (note)
      *note = "cores clipped from " + std::to_string(l.cores()) + " to the device's " + std::to_string(device_cores);
    (l.cube ? l.cube : l.vector) = device_cores;
  }
  if (!options.debug_aic_num && !options.debug_aiv_num) {
    *out = l;
    return SK_OK;
  }
  // Forced counts: the ratio they give must be one of the four, and the super kernel's own
  // kind must allow it (a vector-only super kernel has no cube core to force).
  uint32_t aic = options.debug_aic_num.value_or(
      l.mixed() ? options.debug_aiv_num.value_or(0) / std::max(1u, l.vectors_per_group) : l.cube);
  uint32_t aiv = options.debug_aiv_num.value_or(l.mixed() ? aic * l.vectors_per_group : l.vector);
  const bool ratio_ok = l.mixed() ? (aic > 0 && aiv == aic * l.vectors_per_group)
                                  : (l.cube ? aiv == 0 && aic > 0 : aic == 0 && aiv > 0);
  if (!ratio_ok)
    return fail(SK_ERR_INCOMPATIBLE,
                "%s: debug-aic-num=%u, debug-aiv-num=%u do not fit the kernels' %s super kernel "
                "(it needs %s)",
                subject.c_str(), aic, aiv, l.ratio_name(),
                l.mixed() ? (l.vectors_per_group == 1 ? "aiv = aic > 0" : "aiv = 2 * aic > 0")
                          : (l.cube ? "aiv = 0 and aic > 0" : "aic = 0 and aiv > 0"));
  if (aic > l.cube || aiv > l.vector) {
    if (note)
      *note += std::string(note->empty() ? "" : "; ") + "debug-aic-num/debug-aiv-num " + std::to_string(aic) + "/" +
               std::to_string(aiv) + " above what the kernels and device allow (" + std::to_string(l.cube) + "/" +
               std::to_string(l.vector) + "): kept at that";
    *out = l;
    return SK_OK;
  }
  l.cube = aic;
  l.vector = aiv;
  if (l.mixed()) l.groups = aic;
  if (note) *note += std::string(note->empty() ? "" : "; ") + "core counts forced by debug-aic-num/debug-aiv-num";
  *out = l;
  return SK_OK;
}

}  // namespace sk
