// Block-local edges (SK_KERNEL_FLAG_BLOCK_LOCAL, scope option block-local; docs/semantics.md,
// "Block-local edges"): which edges of a plan need no barrier over all cores, the checks that
// keep them safe, and what they change in the steps' waits and arrivals. Placing a block-local
// step on its predecessor's units is step_placement.cpp's.
#pragma once
#include <sk.h>

#include "common/plan.hpp"

namespace sk {

// Whether the caller asked for step `k`'s edge to be block-local (the flag or the option).
bool wants_block_local(const ScopeOptions &options, const PlanInput &k);

// Marks the steps whose edge to `pred` is block-local (PlanStep::block_local) and those whose
// arrivals nothing waits for (PlanStep::arrives), and drops the task overlap these edges leave
// nothing to overlap with. Runs after the steps are linked, before they are placed. Fails with
// SK_ERR_INCOMPATIBLE naming both kernels and what differs: block counts, core types, a mixed
// or hard-sync kernel, a dispatch split or an event wait between them. The first step of a
// stream has no edge to relax: the request changes nothing there; debug-sync-all=1 keeps every
// barrier.
sk_status link_block_local(Plan *plan);

// "scope 'd': kernel 3 'b' is block-local to kernel 2 'a' (SK_KERNEL_FLAG_BLOCK_LOCAL)": how
// the refusals of step i's block-local edge begin.
std::string block_local_subject(const Plan &plan, uint32_t i);

}  // namespace sk
