// The step loops: what one core does through one launch, step by step (waiting for the step
// before, running its blocks, releasing the next). The waits and releases they call are in
// executor_sync.cpp; run_core_steps picks the loop once per launch (Program::chain, plain).
#include "host/device_api/device_api_cache.hpp"
#include "host/executor/core_context.hpp"
#include "host/executor/kernel_call.hpp"
#include "host/executor/kernel_exception.hpp"
#include "host/executor/kernel_fork.hpp"
#include "host/executor/profiler.hpp"

namespace sk::host {

namespace {

// The core's blocks of step `s`, from its first: first, first + units, ... (block b runs on
// the step's unit first_unit + b % units).
// An exception that escapes the kernel (C++ objects, their .eh_frame registered at load) ends
// the core's share of the step and fails the launch; try costs nothing until something throws.
inline void run_blocks(CoreContext &ctx, const StepExec &s, uint32_t first) {
  const uint64_t *a = ctx.arg_slots + s.first_slot;
  try {
    for (uint32_t b = first; b < s.block_dim; b += s.units) {
      ctx.block_idx = b;
      ctx.progress->position.store(uint64_t{ctx.step_index} << 32 | b, std::memory_order_relaxed);
      ctx.last_block = b + s.units >= s.block_dim;
      if (s.direct) {
        reinterpret_cast<DirectFn>(s.fn)(a[0], a[1], a[2], a[3], a[4], a[5]);
      } else if (s.call_map) {
        call_mapped(s.fn, a, s.call_map, s.call_stack);
      } else if (s.refs) {
        call_with_refs(s.fn, a, *s.refs);
      } else if (s.copy_avalues) {
        call_libffi_copying(s.cif, s.fn, ctx.arg_pointers + s.first_param);
      } else {
        ffi_arg ret;
        ffi_call(s.cif, FFI_FN(s.fn), &ret, ctx.arg_pointers + s.first_param);
      }
      end_if_forked_in_kernel(ctx);
    }
  } catch (...) {
    end_if_forked_in_kernel(ctx);
    record_kernel_exception(ctx);
  }
}

// The step loop of a chain (Program::chain): begin_step and end_step inlined to what they do
// for it. A wait that does not end at the second look goes through wait_previous_step, which
// reports a hang.
void run_chain_steps(Program &p, CoreContext &ctx, uint32_t core, const TaskFailure &failure) {
  ctx.slot = p.segments[0].slots[core];
  std::atomic<uint32_t> &released = p.released.value;
  const uint32_t launches_before = (ctx.epoch - 1) * p.releases_per_launch;
  const uint32_t end = p.core_steps_end[core];
  for (uint32_t i = 0; i < end; ++i) {
    const StepExec &s = p.steps[i];
    if (core >= s.units) continue;
    if (failure.aborted.load(std::memory_order_relaxed)) break;
    ctx.step = &s;
    ctx.step_index = i;
    ctx.arrived = false;
    // Step i - 1 has released step i once every core of the steps before i has released; a
    // block-local step needs only this core's own blocks of step i - 1, which it ran.
    const uint32_t target = launches_before + p.released_before[i];
    ctx.waited = i == 0 || s.block_local || reached(released.load(std::memory_order_acquire), target);
    if (!ctx.waited) {
      // One pause and a second look before the general wait: the other cores' releases are
      // usually a line transfer away (docs/benchmarks.md, "The chain's step loop").
      cpu_relax();
      ctx.waited = reached(released.load(std::memory_order_acquire), target);
      if (!ctx.waited) wait_previous_step(ctx);
    }
    run_blocks(ctx, s, core);
    ctx.arrived = true;
    if (s.arrives) add_and_notify(released, 1, *ctx.channel);
  }
}

// The step loop of one core through one task. kPlain: a program of vector-only steps in one
// segment with no profiling, cache flushes, flags or events (Program::plain, the common case),
// whose loop carries none of their checks, which would otherwise be paid at every step.
template <bool kPlain>
void run_steps(Program &p, CoreContext &ctx, uint32_t core, const TaskFailure &failure) {
  if constexpr (kPlain) ctx.slot = p.segments[0].slots[core];
  const uint32_t end = kPlain ? p.core_steps_end[core] : static_cast<uint32_t>(p.steps.size());
  for (uint32_t i = 0; i < end; ++i) {
    const StepExec &s = p.steps[i];
    uint32_t first = core;
    if constexpr (!kPlain) {
      if (s.segment != ctx.slot_segment) {
        ctx.slot_segment = s.segment;
        const std::vector<CoreSlot> &slots = p.segments[s.segment].slots;
        ctx.slot = core < slots.size() ? slots[core] : CoreSlot{};
      }
      first = s.first_block(ctx.slot);
    }
    // Cores without a block here, or past the step's units, pass the step.
    if (first >= s.units) continue;
    if (failure.aborted.load(std::memory_order_relaxed)) break;
    ctx.step = &s;
    ctx.step_index = i;
    ctx.waited = false;
    ctx.arrived = false;
    if constexpr (!kPlain) profile_ready(ctx);
    begin_step<kPlain>(ctx);
    if constexpr (!kPlain) {
      if (s.flush_before) flush_cache_around_step(ctx);
      profile_start(ctx);
    }
    run_blocks(ctx, s, first);
    if constexpr (!kPlain) {
      profile_end(ctx);
      if (s.flush_after) flush_cache_around_step(ctx);
    }
    end_step<kPlain>(ctx);
  }
}

}  // namespace

void run_core_steps(Program &p, CoreContext &ctx, uint32_t core, const TaskFailure &failure) {
  if (p.chain)
    run_chain_steps(p, ctx, core, failure);
  else if (p.plain)
    run_steps<true>(p, ctx, core, failure);
  else
    run_steps<false>(p, ctx, core, failure);
}

}  // namespace sk::host
