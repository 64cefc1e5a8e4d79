#include "host/program_explain.hpp"

namespace sk::host {

void write_execution_json(JsonWriter &j, const Program &p, uint32_t device_cores) {
  // Releases between sub-kernels: one shared counter, or a two-level combining tree (device
  // key barrier_group; the default above kCentralBarrierCores cores, plain programs only).
  if (p.release_groups != 0) {
    j.key("barrier").value("tree");
    j.key("barrier_group_cores").value(uint64_t{p.release_group});
    j.key("barrier_groups").value(uint64_t{p.release_groups});
  } else {
    j.key("barrier").value("central");
  }
  // "chain": the leanest step loop (no task overlap, no tree); "general" handles the rest.
  j.key("step_loop").value(p.chain ? "chain" : "general");
  // Core 0 completes a launch at its last release when that is the last thing every core does
  // with it (Executor::process); otherwise once every other core has reported.
  const bool at_last_release = p.ends_at_last_release && p.cores == device_cores;
  j.key("completes_at").value(at_last_release ? "last release" : "core reports");
}

}  // namespace sk::host
