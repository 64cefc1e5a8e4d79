// perf's map of JIT code, /tmp/perf-<pid>.map: one `START SIZE NAME` line (hex, no 0x) per
// function, which `perf report` uses to name samples in memory no file backs. Written for host
// devices whose key perf_map asks for it (include/sk.h, "Host device keys"); lines are only ever
// appended, as perf expects: the map describes the process's whole life.
#pragma once
#include <sk.h>

#include <string>

#include "host/linker/linker.hpp"

namespace sk::host {

// The map's path for this process.
std::string perf_map_path();

// Whether the environment asks for the map: the default of the device key.
bool perf_map_from_environment();

// Checks that the map can be appended to (at device open): SK_ERR_UNSUPPORTED naming the path.
sk_status check_perf_map();

// Appends one line per function of `object`. Best effort once check_perf_map passed: a write
// that fails later costs the profile its names, not the load.
void append_perf_map(const LinkedObject &object);

}  // namespace sk::host
