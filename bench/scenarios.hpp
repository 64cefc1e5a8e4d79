// The scenarios of sk-bench; each prints its table and adds its records. false on a failure
// (an sk_* error or outputs that differ between methods).
#pragma once
#include <sk.h>

#include <cstdint>
#include <string>

#include "bench_report.hpp"

namespace bench {

bool run_overhead(const Options &opt, uint32_t cores, Report &report);
bool run_small_ops(const Options &opt, uint32_t cores, Report &report);
bool run_block_local(const Options &opt, uint32_t cores, Report &report);  // 256 axpy: block-local vs barrier
bool run_build_costs(const Options &opt, Report &report);
bool run_kernel_calls(const Options &opt, uint32_t cores, Report &report);
bool run_host_gaps(const Options &opt, uint32_t cores, Report &report);
bool run_repeat(const Options &opt, uint32_t cores, Report &report);  // the decode loop, T steps
bool run_streams(const Options &opt, uint32_t cores, Report &report);
bool run_core0(const Options &opt, uint32_t cores, Report &report);  // core0=caller against core0=thread
// Not in the default run: a diagnosis of the machine (--only core-sharing).
bool run_core_sharing(const Options &opt, Report &report);

// Helpers shared by the scenarios.
std::string kernel_object(const char *name);  // path of a bench kernel object
bool sk_ok(sk_status st, const char *what);   // prints sk_last_error() on failure
// The host device with `cores` cores, `keys` (more device keys, or null) and the run's
// --device keys; null after printing the error.
sk_device *open_host(const Options &opt, uint32_t cores, const char *keys = nullptr);
// Loads `object` on `dev` and takes `kernel` from it.
bool load_kernel(sk_device *dev, const char *object, const char *kernel, sk_module **mod, sk_kernel **out);
// A super kernel of `count` launches of `k` (block_dim each, all with `args`); null after
// printing the error.
sk_superkernel *chain_of(sk_device *dev, sk_kernel *k, size_t count, uint32_t block_dim, const char *name,
                         void **args = nullptr);
// sk_superkernel_explain's JSON; empty after printing the error.
std::string explain_of(sk_superkernel *sk);

}  // namespace bench
