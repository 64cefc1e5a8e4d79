#!/usr/bin/env bash
# tests/install/subproject.sh [WORK_DIR] — builds tests/install/subproject, a project that takes
# libsk from this tree with add_subdirectory and then with FetchContent, and runs its C and C++17
# consumers (tests/install/consumer.*). Called by scripts/test (not by ctest). WORK_DIR (default:
# a temporary folder) keeps both builds for the next run. Compiles go through ccache when it is
# installed: libsk's command lines are those of any RelWithDebInfo build of this tree, so with
# CCACHE_NOHASHDIR=1 and no CCACHE_BASEDIR they hit the main build's entries. SK_JOBS: parallelism.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ -n ${1:-} ]]; then
  mkdir -p "$1" && work=$(cd "$1" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
fail() { echo "subproject check: $*" >&2; exit 1; }

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_NOHASHDIR=1
fi
cc -O2 -c -I"$root/include" "$root/examples/quickstart_kernel.c" -o "$work/quickstart_kernel.o"

for mode in add_subdirectory fetchcontent; do
  dir=$work/$mode log=$work/$mode.log
  cmake -S "$here/subproject" -B "$dir" -DSK_CONSUME=$mode -DSK_SOURCE_DIR="$root" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >"$log" 2>&1 ||
    { cat "$log" >&2; fail "the $mode consumer does not configure"; }
  cmake --build "$dir" -j "${SK_JOBS:-$(nproc)}" >>"$log" 2>&1 ||
    { tail -40 "$log" >&2; fail "the $mode consumer does not build (all of it in $log)"; }
  "$dir/sk-consumer" || fail "the $mode C consumer failed"
  "$dir/sk-consumer-cxx" "$work/quickstart_kernel.o" || fail "the $mode C++ consumer failed"
done
echo "subproject check: ok (add_subdirectory and FetchContent: sk::sk and nothing else, C and C++17 consumers)"
