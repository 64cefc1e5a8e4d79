// Hard cross-core sync state of one step (sk_cross_core_set_flag / _wait_flag and the _all
// pair). Counters count sets since the launch began; a waiting core compares them with how many
// waits it has done itself, so a set may come before or after its wait. The last core of a
// launch zeroes them (Executor::complete_task), outside the hot path.
#pragma once
#include <sk_kernel.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/cache_line.hpp"

namespace sk::host {

struct alignas(kCacheLine) FlagCounters {
  std::atomic<uint32_t> sets[SK_CROSS_CORE_FLAGS] = {};
  void reset() {
    for (auto &s : sets) s.store(0, std::memory_order_relaxed);
  }
};

struct StepFlags {
  FlagCounters all;                             // whole-core: arrivals per flag
  std::unique_ptr<FlagCounters[]> cube_sets;    // per group: the cube core's sets
  std::unique_ptr<FlagCounters[]> vector_sets;  // per group and vector sub-block
  uint32_t groups = 0, vectors_per_group = 0;
  uint32_t all_cores = 0;  // cores a whole-core wait counts: the segment's cores of this kind
  // Counter sets allocated (at least one of each, also in a layout without groups).
  uint32_t cube_count = 0, vector_count = 0;

  StepFlags(uint32_t groups_, uint32_t vectors_per_group_, uint32_t all_cores_)
      : groups(groups_),
        vectors_per_group(vectors_per_group_),
        all_cores(all_cores_),
        cube_count(groups_ ? groups_ : 1),
        vector_count(cube_count * (vectors_per_group_ ? vectors_per_group_ : 1)) {
    cube_sets = std::make_unique<FlagCounters[]>(cube_count);
    vector_sets = std::make_unique<FlagCounters[]>(vector_count);
  }
  void reset() {
    all.reset();
    for (uint32_t g = 0; g < cube_count; ++g) cube_sets[g].reset();
    for (uint32_t v = 0; v < vector_count; ++v) vector_sets[v].reset();
  }
};

}  // namespace sk::host
