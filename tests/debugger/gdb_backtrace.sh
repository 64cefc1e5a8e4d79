#!/usr/bin/env bash
# gdb's backtrace through a kernel names the kernel's functions (GDB's JIT interface,
# src/host/linker/debug_registration.hpp): for each object given, gdb_kernel launches debug_trap_kernel,
# which raises SIGTRAP in debug_trap_inner. `bt` must name debug_trap_inner, and the frame below
# it must be debug_trap_kernel (always at -O0) or, where the kernel tail-calls it, the executor's
# run_blocks: gdb unwound through the kernel's code, without an unknown frame between.
#
# usage: gdb_backtrace.sh GDB_KERNEL_EXE KERNEL.o...   Exit 77 (ctest: skipped) with a message
# where gdb is absent or may not trace (a container without CAP_SYS_PTRACE, ptrace_scope).
set -u
exe=$1
shift
if ! command -v gdb >/dev/null; then
  echo "skipped: gdb is not installed (scripts/deps installs it)"
  exit 77
fi
status=0
for obj in "$@"; do
  # Randomization stays on: turning it off needs a personality call containers refuse.
  out=$(timeout 120 gdb -batch -nx -ex "set disable-randomization off" -ex run -ex bt --args "$exe" "$obj" 2>&1)
  if grep -q "ptrace: Operation not permitted\|Could not trace the inferior process" <<<"$out"; then
    echo "skipped: gdb may not trace processes here (ptrace is not permitted):"
    grep -m1 "ptrace\|trace the inferior" <<<"$out"
    exit 77
  fi
  # The frame line below debug_trap_inner's ("#4  0x... in NAME (args) at ...").
  below=$(grep '^#[0-9]' <<<"$out" | grep -A1 ' debug_trap_inner (' | sed -n 2p)
  case $below in
    *" in debug_trap_kernel ("*) ok=1 ;;
    *"::run_blocks ("*) [[ $obj != *-O0-* ]] && ok=1 || ok=0 ;;
    *) ok=0 ;;
  esac
  if [[ $ok == 1 ]]; then
    echo "ok: $obj: debug_trap_inner, called from $below"
  else
    echo "FAIL: $obj: gdb's backtrace does not show debug_trap_inner called from the kernel:"
    echo "$out"
    status=1
  fi
done
exit $status
