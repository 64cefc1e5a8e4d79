// Where a super kernel flushes the data cache (DCCI; docs/semantics.md, "Cache maintenance").
// Sub-kernels lose the flush that ends a standalone kernel, so the plan decides, per step,
// whether the scalar global-memory accessors (sk_gm_load / sk_gm_store) flush their line on every
// access, and whether the whole cache is flushed before and after the step:
//
//   default                      per-access flush; nothing around the kernel
//   dcci-before-kernel-start     no per-access flush; whole-cache flush before the kernel
//   dcci-after-kernel-end        no per-access flush; whole-cache flush after it
//   dcci-disable-on-kernel       no per-access flush, no flush around it (wins over the two above)
//   SK_KERNEL_FLAG_TILING_SINK   no per-access flush; flushes before and after, whatever the lists
//   debug-dcci-all=1             adds flushes before and after every kernel (a debugging aid:
//                                it wins over dcci-disable-on-kernel; per-access is unchanged)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/scope_options.hpp"

namespace sk {

class JsonWriter;
struct Plan;

struct CachePlacement {
  bool per_access_flush = true;
  bool flush_before = false;
  bool flush_after = false;
  std::vector<const char *> rules;  // the options and flags that decided it; empty: the default
};

// The placement of one sub-kernel named `name` with sk_kernel_options flags `flags`.
CachePlacement place_cache(const ScopeOptions &options, const std::string &name, uint32_t flags);
// Places every step of the plan (build_plan calls it last).
void place_cache(Plan *plan);
// "cache": {"per_access_flush":..,"flush_before":..,"flush_after":..,"rules":[..]} for explain.
void write_cache_json(JsonWriter &j, const CachePlacement &c);

}  // namespace sk
