#include "host/executor/kernel_fork.hpp"

#include <unistd.h>

#include <cstdio>

namespace sk::host {

void end_forked_kernel_child(const CoreContext &ctx) {
  // No allocation and no stdio lock: another thread of the parent may have held one at the fork.
  char line[512];
  const int n = std::snprintf(line, sizeof line,
                              "libsk: process %d, forked by kernel '%s' (block %u, core %u, super kernel '%s') "
                              "in process %d, returned from the kernel; the launch's other cores are in the "
                              "parent, so it exits with status %d (a child forked in a kernel must exec or _exit)\n",
                              static_cast<int>(getpid()), ctx.step ? ctx.step->name.c_str() : "?", ctx.block_idx,
                              ctx.core, ctx.program ? ctx.program->name.c_str() : "?", static_cast<int>(getppid()),
                              kForkedKernelChildStatus);
  if (n > 0) {
    ssize_t ignored = write(STDERR_FILENO, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
    (void)ignored;
  }
  _exit(kForkedKernelChildStatus);
}

}  // namespace sk::host
