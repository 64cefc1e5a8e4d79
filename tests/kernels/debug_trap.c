/* A kernel that stops in a debugger: raise(SIGTRAP) from a function of its own, for the gdb
 * test (tests/debugger). Launched only under gdb: without one, SIGTRAP ends the process. */
#include <signal.h>
#include <sk_kernel.h>

__attribute__((noinline)) static void debug_trap_inner(uint32_t *out) {
  raise(SIGTRAP);
  out[0] = 1;
}

SK_KERNEL(debug_trap_kernel, "ptr")
void debug_trap_kernel(uint32_t *out) {
  if (sk_block_idx() == 0) debug_trap_inner(out);
}
