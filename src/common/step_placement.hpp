// Which units a step's blocks run on (docs/semantics.md, "Placement"): with stream fusion,
// steps that may run at the same time get disjoint unit ranges where the cores allow, so that
// small kernels of independent streams do not all queue on the low cores; a kernel added with
// sk_kernel_options.first_core / core_count runs where the caller pinned it.
#pragma once
#include <sk.h>

#include "common/plan.hpp"

namespace sk {

// "default", "packed", "pinned", "follows".
const char *placement_name(StepPlacement placement);

// Sets every step's first_unit and placement, and for pinned steps units, cores and
// blocks_per_core; widens a segment (up to the device's cores) whose steps need more units
// than its layout has, and plan->cores with it. Runs after the steps are linked (pred,
// after). A block-local step (PlanStep::block_local) runs on its predecessor's units. Fails
// with SK_ERR_INCOMPATIBLE naming the kernel and the field when a pin does not fit the device
// or the kernel's synchronisation, or a block-local step cannot run where its predecessor does.
sk_status place_steps(Plan *plan);

}  // namespace sk
