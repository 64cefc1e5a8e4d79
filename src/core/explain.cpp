// explain_json: the plan as a reader (or a tool) wants to see it.
#include "core/device_api_usage.hpp"
#include "core/json_writer.hpp"
#include "core/plan.hpp"

namespace sk {

std::string explain_json(const Plan &plan, const std::string &backend) {
  JsonWriter j;
  j.begin_object();
  j.key("name").value(plan.name);
  j.key("backend").value(backend);
  j.key("device_cores").value(uint64_t{plan.device_cores});
  j.key("max_block_dim").value(uint64_t{plan.max_block_dim});
  j.key("cores").value(uint64_t{plan.cores});
  j.key("dispatches").value(uint64_t{1});
  j.key("options").begin_object();
  for (const auto &kv : plan.options.given) j.key(kv.first).value(kv.second);
  j.end_object();
  j.key("steps").begin_array();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &s = plan.steps[i];
    j.begin_object();
    j.key("index").value(uint64_t{i});
    j.key("name").value(s.kernel.name);
    j.key("symbol").value(s.kernel.symbol);
    j.key("module").value(s.kernel.module);
    j.key("signature").value(s.kernel.signature);
    j.key("core_type").value(s.kernel.core_type);
    j.key("block_dim").value(uint64_t{s.kernel.block_dim});
    j.key("cores").value(uint64_t{s.cores});
    j.key("blocks_per_core").value(uint64_t{s.blocks_per_core});
    j.key("device_api").begin_array();
    for (const char *n : device_api_names(s.kernel.usage)) j.value(n);
    j.end_array();
    // Where this step waits for the previous one, and lets the next one start.
    j.key("wait_previous").value(i == 0 ? "launch" : s.wait_in_kernel ? "sk_wait_pre_task_end" : "kernel start");
    j.key("release_next").value(s.arrive_in_kernel ? "sk_set_next_task_start" : "kernel end");
    j.key("sync_all_scope").value((s.kernel.usage & kUsesSyncAll) ? "own cores" : "none");
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.str();
}

}  // namespace sk
