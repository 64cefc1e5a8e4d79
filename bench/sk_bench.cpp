// sk-bench: what a super kernel saves, measured side by side in one run.
//
//   overhead   K empty kernels (block_dim = cores): super kernel, with task overlap, unfused
//              launches, OpenMP regions, a condition-variable pool, and the floor (bare spin
//              barriers among the same number of threads)
//   small-ops  256 axpy kernels on 16 Ki floats, and a mixed norm / mat-vec / softmax chain:
//              fused vs unfused vs OpenMP, outputs checked equal
//   block-local 256 axpy kernels fused with block-local edges, with a barrier per kernel,
//              and unfused, at three sizes, outputs checked equal
//   calls      K empty kernels whose parameters take each way the host calls a kernel (direct,
//              register map, libffi), fused
//   gaps       the decode loop: a step of 256 empty kernels after G us of host work, for G
//              from 0 to 1000 (long enough for idle cores to sleep): fused, unfused, OpenMP
//   repeat     the decode loop on the device: T steps of K empty kernels, unfused, one
//              sk_launch per step (synchronized, or queued), one sk_launch_repeat of T steps
//   streams    a decode-shaped step of 90 1-block mat-vecs on three scope streams: streams
//              off, on with every kernel on core 0, on as the planner places them
//   core0      steps launched and synchronized one at a time with core 0 run by the caller
//              (core0=caller) and on a thread of its own (core0=thread): what the thread costs
//   build      scope build and finalize per sub-kernel (first and cached), link per KiB vs
//              dlopen of the same code as a shared object, memory per sub-kernel, the cost of
//              the first launch after the cores went to sleep
//   core-sharing (only with --only) whether the two threads of a 2-core run share a physical
//              core, round by round, with fused/floor for each answer: what the overhead
//              table's floor depends on in a VM whose vCPUs move between SMT siblings
//
// Usage: sk-bench [--quick] [--cores 2,16] [--only SCENARIO] [--device KEYS] [--json FILE]
// --device KEYS: more host device keys for every device the run opens (e.g. pin=0,spin_us=0).
// The kernels are read from the build tree, or from $SK_BENCH_KERNELS when set.
#include <sk.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_report.hpp"
#include "scenarios.hpp"

namespace {

// The names --only takes, in the order a run prints them (core-sharing runs only when named).
constexpr const char *kScenarios[] = {"overhead", "small-ops", "block-local", "calls", "gaps",
                                      "repeat",   "streams",   "core0",       "build", "core-sharing"};

bool is_scenario(const char *name) {
  for (const char *s : kScenarios)
    if (!std::strcmp(s, name)) return true;
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  bench::Options opt;
  opt.cores.clear();
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      opt.quick = true;
    } else if (!std::strcmp(argv[i], "--cores") && i + 1 < argc) {
      for (char *tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ","))
        opt.cores.push_back(static_cast<uint32_t>(std::strtoul(tok, nullptr, 10)));
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc && is_scenario(argv[i + 1])) {
      opt.only = argv[++i];
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      opt.json_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      opt.device_keys = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--cores 2,16] [--only SCENARIO] [--device KEYS] [--json FILE]\n",
                   argv[0]);
      std::fprintf(stderr, "SCENARIO:");
      for (const char *name : kScenarios) std::fprintf(stderr, " %s", name);
      std::fprintf(stderr, "\n");
      return 2;
    }
  }
  const uint32_t online = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN));
  // The CPUs this process can use (affinity mask, cgroup quota): a default device's cores.
  uint32_t usable = online;
  if (sk_device *probe = nullptr; sk_device_open("host", &probe) == SK_OK) {
    sk_device_cores(probe, &usable);
    sk_device_close(probe);
  }
  if (opt.cores.empty()) {
    // 2 cores and all of them; on one CPU only 1 (two spinning threads on one CPU measure
    // the scheduler: the spin-barrier floor read 4 ms per kernel).
    opt.cores.push_back(usable < 2 ? 1 : 2);
    if (usable > 2) opt.cores.push_back(usable);
  }
  bench::Report report;
  std::printf("sk-bench (libsk %u): %u online CPUs, %u usable; per-kernel medians in ns, %s\n", sk_version(), online,
              usable, opt.quick ? "quick run" : "full run");
  bool ok = true;
  for (uint32_t cores : opt.cores) {
    if (opt.runs("overhead")) ok &= bench::run_overhead(opt, cores, report);
    if (opt.runs("small-ops")) ok &= bench::run_small_ops(opt, cores, report);
    if (opt.runs("block-local")) ok &= bench::run_block_local(opt, cores, report);
    if (opt.runs("calls")) ok &= bench::run_kernel_calls(opt, cores, report);
    if (opt.runs("gaps")) ok &= bench::run_host_gaps(opt, cores, report);
    if (opt.runs("repeat")) ok &= bench::run_repeat(opt, cores, report);
    if (opt.runs("streams")) ok &= bench::run_streams(opt, cores, report);
    if (opt.runs("core0")) ok &= bench::run_core0(opt, cores, report);
  }
  if (opt.runs("build")) ok &= bench::run_build_costs(opt, report);
  if (opt.only == "core-sharing") ok &= bench::run_core_sharing(opt, report);
  if (!opt.json_path.empty() && !report.write_json(opt.json_path)) ok = false;
  return ok ? 0 : 1;
}
