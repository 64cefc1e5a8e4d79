// Chrome trace-event JSON of a profiled launch (sk_superkernel_write_trace): loadable in
// Perfetto (ui.perfetto.dev) and chrome://tracing.
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sk {

// One process (pid) per super kernel, one thread (tid) per core, one complete ("ph":"X") slice
// per sub-kernel run on a core, named after the sub-kernel, and before it a "wait" slice for the
// time the core spent waiting for the previous step. Times are microseconds from the earliest
// ready time of the launch. step_names[i] names step i; records come from sk_superkernel_profile.
std::string chrome_trace_json(std::string_view superkernel, uint32_t pid, const std::vector<std::string> &step_names,
                              const std::vector<sk_profile_record> &records);

}  // namespace sk
