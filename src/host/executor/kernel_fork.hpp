// A kernel that calls fork() on a core. fork() copies only the calling thread, so the child
// is that one core, inside a launch whose other cores (and, for a core-0 share, the waiting
// host call) stayed in the parent: were it to come back into the step loop it would wait for
// them for ever. A child that execs or _exits itself (what fork is for in a kernel) never
// comes back; one that returns from the kernel ends there, with a line on stderr naming the
// kernel and the exit status kForkedKernelChildStatus, as no API call can report to it.
#pragma once
#include <cstdint>

#include "common/fork_guard.hpp"
#include "host/executor/core_context.hpp"

namespace sk::host {

// sysexits.h's EX_SOFTWARE: the child's program did not do what a forked child must.
constexpr int kForkedKernelChildStatus = 70;

// Writes the line and _exits with kForkedKernelChildStatus (no atexit handlers, no stdio
// flush: those are the parent's).
[[noreturn]] void end_forked_kernel_child(const CoreContext &ctx);

// After each kernel call: this process forked since the launch began (one load of a word
// written only by fork's child handler), so it is the child of a fork inside the kernel.
inline void end_if_forked_in_kernel(const CoreContext &ctx) {
  if (fork_generation() != ctx.fork_generation) [[unlikely]]
    end_forked_kernel_child(ctx);
}

}  // namespace sk::host
