#include "common/cache_plan.hpp"

#include <sk.h>

#include "common/json_writer.hpp"
#include "common/plan.hpp"

namespace sk {

CachePlacement place_cache(const ScopeOptions &o, const std::string &name, uint32_t flags) {
  CachePlacement c;
  if (flags & SK_KERNEL_FLAG_TILING_SINK) {
    // Its tiling data is written on the device just before it runs: only a whole-cache flush
    // on both sides makes it (and what it writes) visible; the lists do not apply.
    c.per_access_flush = false;
    c.flush_before = c.flush_after = true;
    c.rules.push_back("tiling-sink");
  } else if (o.dcci_disable_on_kernel.matches(name)) {
    c.per_access_flush = false;
    c.rules.push_back("dcci-disable-on-kernel");
  } else {
    if (o.dcci_before_kernel_start.matches(name)) {
      c.per_access_flush = false;
      c.flush_before = true;
      c.rules.push_back("dcci-before-kernel-start");
    }
    if (o.dcci_after_kernel_end.matches(name)) {
      c.per_access_flush = false;
      c.flush_after = true;
      c.rules.push_back("dcci-after-kernel-end");
    }
  }
  if (o.debug_dcci_all) {
    c.flush_before = c.flush_after = true;
    c.rules.push_back("debug-dcci-all");
  }
  return c;
}

void place_cache(Plan *plan) {
  for (PlanStep &s : plan->steps) s.cache = place_cache(plan->options, s.kernel.name, s.kernel.flags);
}

void write_cache_json(JsonWriter &j, const CachePlacement &c) {
  j.key("cache").begin_object();
  j.key("per_access_flush").value(c.per_access_flush);
  j.key("flush_before").value(c.flush_before);
  j.key("flush_after").value(c.flush_after);
  j.key("rules").begin_array();
  for (const char *r : c.rules) j.value(r);
  j.end_array();
  j.end_object();
}

}  // namespace sk
