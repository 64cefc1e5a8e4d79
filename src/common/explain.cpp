// explain_json: the plan as a reader (or a tool) wants to see it.
#include "common/cache_plan.hpp"
#include "common/device_api_usage.hpp"
#include "common/json_writer.hpp"
#include "common/plan.hpp"
#include "common/step_placement.hpp"

namespace sk {
namespace {
// The version of the layout include/sk_explain.schema.json describes: raised, with the schema,
// whenever a key or a value's meaning changes, so a reader can tell which layout it holds.
constexpr uint64_t kExplainSchemaVersion = 8;
}  // namespace

std::string explain_json(const Plan &plan, const std::string &backend,
                         const std::function<void(JsonWriter &)> &execution, const char *section) {
  JsonWriter j;
  j.begin_object();
  j.key("schema_version").value(kExplainSchemaVersion);
  j.key("name").value(plan.name);
  j.key("backend").value(backend);
  j.key("device_cores").value(uint64_t{plan.device_cores});
  j.key("max_block_dim").value(uint64_t{plan.max_block_dim});
  j.key("cores").value(uint64_t{plan.cores});
  j.key("dispatches").value(uint64_t{plan.segments.size()});
  j.key("stream_fusion").value(plan.streams);
  if (execution) {
    j.key(section).begin_object();
    execution(j);
    j.end_object();
  }
  // One entry per dispatch: its core layout, and why the scope was split before it.
  j.key("segments").begin_array();
  for (const PlanSegment &seg : plan.segments) {
    j.begin_object();
    j.key("first_step").value(uint64_t{seg.first});
    j.key("last_step").value(uint64_t{seg.end - 1});
    j.key("ratio").value(seg.layout.ratio_name());
    j.key("cube_cores").value(uint64_t{seg.layout.cube});
    j.key("vector_cores").value(uint64_t{seg.layout.vector});
    j.key("groups").value(uint64_t{seg.layout.groups});
    if (!seg.layout_note.empty()) j.key("note").value(seg.layout_note);
    j.key("split_reason").value(seg.reason.empty() ? "first dispatch" : seg.reason);
    if (seg.plain_launch) j.key("plain_launch").value(true);
    j.end_object();
  }
  j.end_array();
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
    if (s.kernel.arg_refs) {
      j.key("arguments_by_reference").begin_array();
      for (uint64_t a = 0; a < 64; ++a)
        if (s.kernel.arg_refs >> a & 1) j.value(a);
      j.end_array();
    }
    if (s.kernel.plain_launch) j.key("plain_launch").value(true);
    j.key("core_type").value(s.kernel.core_type);
    j.key("block_dim").value(uint64_t{s.kernel.block_dim});
    if (s.kernel.grid[0]) {
      j.key("grid").begin_array();
      for (uint32_t extent : s.kernel.grid) j.value(uint64_t{extent});
      j.end_array();
    }
    j.key("segment").value(uint64_t{s.segment});
    j.key("units").value(uint64_t{s.units});
    j.key("cores").value(uint64_t{s.cores});
    j.key("first_unit").value(uint64_t{s.first_unit});
    j.key("placement").value(placement_name(s.placement));
    if (plan.streams) j.key("stream").value(uint64_t{s.kernel.stream});
    if (!s.after.empty()) {
      j.key("waits_for_steps").begin_array();
      for (uint32_t d : s.after) j.value(uint64_t{d});
      j.end_array();
    }
    j.key("blocks_per_core").value(uint64_t{s.blocks_per_core});
    j.key("device_api").begin_array();
    for (const char *n : device_api_names(s.kernel.usage)) j.value(n);
    j.end_array();
    if (const std::vector<const char *> c = construct_names(s.kernel.usage); !c.empty()) {
      j.key("constructs").begin_array();
      for (const char *n : c) j.value(n);
      j.end_array();
    }
    // How it reaches what it does not call itself: which function brings each one in.
    if (!s.kernel.usage_paths.empty()) {
      j.key("device_api_paths").begin_array();
      for (const DeviceApiPath &p : s.kernel.usage_paths) {
        j.begin_object();
        j.key("function").value(p.function);
        j.key("chain").begin_array();
        for (const ReachStep &step : p.steps) j.value(step.from);
        j.end_array();
        j.key("path").value(describe(p.steps));
        j.key("conservative").value(conservative(p.steps));
        j.end_object();
      }
      j.end_array();
    }
    // Where this step waits for the previous one, and lets the next one start.
    if (s.pred >= 0) {
      j.key("previous_step").value(uint64_t(s.pred));
      j.key("edge").value(s.block_local ? "block-local" : "barrier");
    }
    j.key("wait_previous")
        .value(s.pred < 0      ? "launch"
               : s.block_local ? "none"
               : s.wait_in_kernel
                   ? ((s.kernel.usage & kUsesWaitPreTaskEnd) ? "sk_wait_pre_task_end"
                                                             : construct_names(kUsesGridDependencyWait)[0])
                   : "kernel start");
    j.key("release_next").value(!s.arrives ? "none" : s.arrive_in_kernel ? "sk_set_next_task_start" : "kernel end");
    j.key("sync_all_scope")
        .value((s.kernel.usage & (kUsesSyncAll | kUsesGridSync | kUsesOwnGridBarrier)) ? "own cores" : "none");
    write_cache_json(j, s.cache);  // where DCCI flushes go (common/cache_plan.cpp)
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.str();
}

}  // namespace sk
