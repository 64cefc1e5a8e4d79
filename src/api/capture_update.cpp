// sk_superkernel_update_from_capture: a capture of the same launches with new argument values
// rebinds an existing super kernel in place instead of building another (CUDA's
// cudaGraphExecUpdate is the model). The structure must match step for step.
#include <algorithm>
#include <string>

#include "api/capture.hpp"
#include "common/kernel_metadata.hpp"

using sk::fail;

namespace {

std::string options_text(const sk::ScopeOptions &o) {
  std::string text;
  for (const auto &[key, value] : o.given) text += (text.empty() ? "" : ":") + key + "=" + value;
  return "\"" + text + "\"";
}

std::string steps_text(const std::vector<uint32_t> &steps) {
  std::string text;
  for (uint32_t s : steps) text += (text.empty() ? "" : ",") + std::to_string(s);
  return "[" + text + "]";
}

// sk_kernel_options.arg_refs as the messages show it: the parameter indices.
std::string refs_text(uint64_t refs) {
  std::string text;
  for (uint32_t i = 0; i < 64; ++i)
    if (refs >> i & 1) text += (text.empty() ? "" : ",") + std::to_string(i);
  return "[" + text + "]";
}

// A sk_kernel_options pin as the messages show it.
std::string pin_text(uint32_t first, uint32_t count) {
  if (count == 0) return "cores placed by the plan";
  if (count == 1) return "pinned to core " + std::to_string(first);
  return "pinned to cores " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

// A grid's shape as sk_launch_kernel_grid takes it; "none" (one dimension) for zeros.
std::string grid_text(const sk::GridShape &g) {
  if (!(g[0] | g[1] | g[2])) return "none";
  return "{" + std::to_string(g[0]) + ", " + std::to_string(g[1]) + ", " + std::to_string(g[2]) + "}";
}

// The first difference between what the capture recorded and sk's steps; "" when they match.
std::string first_difference(const sk::backend::SuperKernel &b, const sk_scope &scope) {
  const std::string &sk_name = b.plan.name;
  const std::vector<ScopeLaunch> &rec = scope.launches;
  if (rec.size() != b.plan.steps.size())
    return std::to_string(rec.size()) + " steps captured, " + std::to_string(b.plan.steps.size()) + " in '" +
           sk_name + "'";
  if (scope.options.given != b.plan.options.given)
    return "capture options " + options_text(scope.options) + " where '" + sk_name + "' has " +
           options_text(b.plan.options);
  for (uint32_t i = 0; i < rec.size(); ++i) {
    const sk::PlanInput &in = b.plan.steps[i].kernel;
    const ScopeLaunch &l = rec[i];
    const std::string step = "step " + std::to_string(i) + ": ";
    if (l.kernel != b.kernels[i]) {
      if (l.kernel->symbol != in.symbol)
        return step + "kernel '" + std::string(in.symbol) + "' where '" + l.kernel->symbol + "' was captured";
      return step + sk::kernel_of(in.symbol, in.module) + " where the one of " +
             std::string(l.kernel->module_label()) + " was captured";
    }
    const std::string named = step.substr(0, step.size() - 2) + " '" + in.name + "': ";
    if (l.name != in.name) return step + "name '" + in.name + "' where '" + l.name + "' was captured";
    if (l.block_dim != in.block_dim)
      return named + "block_dim " + std::to_string(in.block_dim) + " where " + std::to_string(l.block_dim) +
             " was captured";
    if (l.grid != in.grid)
      return named + "grid " + grid_text(in.grid) + " where " + grid_text(l.grid) + " was captured";
    if (l.kind != in.kind)
      return named + "core type " + sk::kernel_kind_name(in.kind) + " where " + sk::kernel_kind_name(l.kind) +
             " was captured";
    if (l.flags != in.flags)
      return named + "flags " + std::to_string(in.flags) + " where " + std::to_string(l.flags) + " was captured";
    if (l.first_core != in.first_core || l.core_count != in.core_count)
      return named + pin_text(in.first_core, in.core_count) + " where " + pin_text(l.first_core, l.core_count) +
             " was captured";
    const uint32_t stream = b.plan.streams ? in.stream : 0;
    if (l.stream != stream)
      return named + "stream " + std::to_string(stream) + " where " + std::to_string(l.stream) + " was captured";
    if (l.after != in.after)
      return named + "waits for steps " + steps_text(in.after) + " where " + steps_text(l.after) + " was captured";
    if (l.arg_refs != in.arg_refs)
      return named + "arguments read by reference " + refs_text(in.arg_refs) + " where " + refs_text(l.arg_refs) +
             " were captured";
  }
  return "";
}

}  // namespace

extern "C" {

SK_API sk_status sk_superkernel_update_from_capture(sk_superkernel *sk, sk_stream *stream) {
  constexpr const char *kCall = "sk_superkernel_update_from_capture";
  if (sk_status st = sk::api::check(sk, kCall)) return st;
  if (sk_status st = sk::api::check(stream, kCall)) return st;
  sk::backend::SuperKernel &b = *sk->backend;
  if (stream->backend->device() != b.device())
    return sk::api::different_devices(kCall, "super kernel '" + b.plan.name + "'", "the stream");
  return sk::api::guarded(kCall, [&]() -> sk_status {
    std::unique_ptr<sk::api::Capture> c;
    if (sk_status st = sk::api::take_capture(stream, kCall, &c); st != SK_OK) return st;
    const std::string diff = first_difference(b, *c->scope);
    if (!diff.empty())
      return fail(SK_ERR_INCOMPATIBLE, "%s: capture '%s' does not match super kernel '%s': %s (it is unchanged)",
                  kCall, c->scope->name.c_str(), b.plan.name.c_str(), diff.c_str());
    if (sk_status st = sk::api::refuse_set_arg(sk)) return st;
    std::vector<uint64_t> now;
    for (uint32_t i = 0; i < b.plan.steps.size(); ++i) {
      const std::vector<uint64_t> &captured = c->scope->launches[i].args;
      const std::vector<uint32_t> &at = b.kernels[i]->arg_slots;
      now.resize(captured.size());
      b.current_args(i, now.data());
      for (uint32_t a = 0; a + 1 < at.size(); ++a)
        if (!std::equal(captured.begin() + at[a], captured.begin() + at[a + 1], now.begin() + at[a]))
          if (sk_status st = b.set_arg(i, a, captured.data() + at[a]); st != SK_OK) return st;
    }
    return SK_OK;
  });
}

}  // extern "C"
