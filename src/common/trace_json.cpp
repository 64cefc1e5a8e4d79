#include "common/trace_json.hpp"

#include <algorithm>
#include <set>

#include "common/json_writer.hpp"

namespace sk {
namespace {

// The version of the trace's layout (events, their args, otherData): raised whenever it changes.
constexpr uint64_t kTraceFormatVersion = 1;

const char *core_type_name(uint32_t t) { return t == 1 ? "cube" : "vector"; }

// The common fields of an event; the caller adds the rest and closes the object.
void begin_event(JsonWriter &j, std::string_view name, const char *cat, const char *ph, uint32_t pid, uint32_t tid) {
  j.begin_object();
  j.key("name").value(name);
  if (cat) j.key("cat").value(cat);
  j.key("ph").value(ph);
  j.key("pid").value(uint64_t{pid});
  j.key("tid").value(uint64_t{tid});
}

}  // namespace

std::string chrome_trace_json(std::string_view superkernel, uint32_t pid, const std::vector<std::string> &step_names,
                              const std::vector<sk_profile_record> &records) {
  uint64_t origin = UINT64_MAX;
  for (const sk_profile_record &r : records) origin = std::min(origin, r.ready_ns);
  if (records.empty()) origin = 0;
  // Durations and offsets never go negative, even for a record a clock oddity left unordered.
  auto since = [](uint64_t t, uint64_t from) { return t > from ? t - from : 0; };

  JsonWriter j;
  j.begin_object();
  j.key("traceEvents").begin_array();
  begin_event(j, "process_name", nullptr, "M", pid, 0);
  j.key("args")
      .begin_object()
      .key("name")
      .value(std::string("super kernel ") + std::string(superkernel))
      .end_object();
  j.end_object();
  // Thread names once per core, in core order.
  std::set<std::pair<uint32_t, uint32_t>> cores;  // (core, type)
  for (const sk_profile_record &r : records) cores.emplace(r.core, r.core_type);
  uint32_t last_core = UINT32_MAX;
  for (const auto &[core, type] : cores) {
    if (core == last_core) continue;
    last_core = core;
    begin_event(j, "thread_name", nullptr, "M", pid, core);
    j.key("args").begin_object().key("name").value("core " + std::to_string(core) + " (" + core_type_name(type) +
                                                   ")");
    j.end_object().end_object();
    begin_event(j, "thread_sort_index", nullptr, "M", pid, core);
    j.key("args").begin_object().key("sort_index").value(uint64_t{core}).end_object();
    j.end_object();
  }
  for (const sk_profile_record &r : records) {
    const std::string name = r.step < step_names.size() ? step_names[r.step] : "step " + std::to_string(r.step);
    const uint64_t ready_wait = since(r.start_ns, r.ready_ns);
    if (ready_wait > 0) {
      begin_event(j, "wait", "sync", "X", pid, r.core);
      j.key("ts").fixed3(since(r.ready_ns, origin));
      j.key("dur").fixed3(ready_wait);
      j.key("args").begin_object().key("step").value(uint64_t{r.step}).key("before").value(name).end_object();
      j.end_object();
    }
    begin_event(j, name, "sub-kernel", "X", pid, r.core);
    j.key("ts").fixed3(since(r.start_ns, origin));
    j.key("dur").fixed3(since(r.end_ns, r.start_ns));
    j.key("args").begin_object();
    j.key("step").value(uint64_t{r.step});
    j.key("blocks").value(uint64_t{r.blocks});
    j.key("core_type").value(core_type_name(r.core_type));
    j.key("ready_wait_us").fixed3(ready_wait);
    j.key("sync_wait_us").fixed3(r.sync_wait_ns);
    j.end_object();
    j.end_object();
  }
  j.end_array();
  j.key("displayTimeUnit").value("ns");
  // Which libsk wrote it, in the object Chrome's trace format keeps for the writer's own data.
  j.key("otherData").begin_object();
  j.key("libsk_version").value(sk_version_string());
  j.key("trace_format_version").value(kTraceFormatVersion);
  j.key("superkernel").value(superkernel);
  j.key("clock").value("CLOCK_MONOTONIC");
  j.key("origin_ns").value(origin);
  j.end_object();
  j.end_object();
  return j.str();
}

}  // namespace sk
