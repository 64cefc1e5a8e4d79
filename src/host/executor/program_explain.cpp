#include "host/executor/program_explain.hpp"

#include "host/executor/kernel_call.hpp"

namespace sk::host {

void write_execution_json(JsonWriter &j, const Program &p, const ExecutorConfig &device) {
  const uint32_t device_cores = device.cores;
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
  // The device's keys core0 and stack_kb, as the executor resolved them when it opened.
  j.key("core0").value(device.core0_thread ? "thread" : "caller");
  j.key("core_stack_kib").value(device.stack_kib);
  // How the step loop calls each step's kernel (host/executor/kernel_call.hpp): libffi costs far more
  // than the two direct ways (docs/benchmarks.md, "Kernel calls").
  uint64_t calls[3] = {0, 0, 0};
  for (const StepExec &s : p.steps)
    ++calls[static_cast<int>(s.direct     ? CallKind::Direct
                             : s.call_map ? CallKind::Mapped
                             : s.refs     ? s.refs->kind  // loaded by reference, then called the same way
                                          : CallKind::Libffi)];
  j.key("calls").begin_object();
  for (CallKind kind : {CallKind::Direct, CallKind::Mapped, CallKind::Libffi})
    j.key(call_kind_name(kind)).value(calls[static_cast<int>(kind)]);
  j.end_object();
}

}  // namespace sk::host
