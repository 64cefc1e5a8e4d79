#!/usr/bin/env bash
# tests/install/run.sh [BUILD_DIR] — installs libsk into a temporary prefix and uses it the ways
# users do: pkg-config and CMake's find_package from C and from C++17 (sk.hpp), the exported
# symbol set and SONAME, the public headers alone under strict C and C++ compilers, the Python
# binding and the `sk` command from the installed tree. Called by scripts/test (not by ctest).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install check: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(find "$prefix" -name libsk.so.0 -print -quit)
[[ -n $lib ]] || fail "libsk.so.0 not installed under $prefix"
libdir=$(dirname "$lib")
inc=$prefix/include
# The quickstart's kernel, as a user compiles it: run by the C++ consumers, the binding and sk.
cc -O2 -c -I"$inc" "$root/examples/quickstart_kernel.c" -o "$work/quickstart_kernel.o"

# (a) pkg-config consumer. The .pc file must describe where it was installed, not the
# configure-time prefix (cmake --install --prefix relocates the files).
export PKG_CONFIG_PATH=$libdir/pkgconfig
cflags=$(pkg-config --cflags sk) || fail "pkg-config does not find sk in $PKG_CONFIG_PATH"
libs=$(pkg-config --libs sk)
[[ -f $(pkg-config --variable=includedir sk)/sk.h ]] ||
  fail "sk.pc points to $(pkg-config --variable=includedir sk), not the install prefix (not relocatable)"
# shellcheck disable=SC2086 # word splitting of the flags is wanted
cc -std=c99 -Wall -Wextra -pedantic -Werror $cflags "$here/consumer.c" -o "$work/consumer-pc" $libs
LD_LIBRARY_PATH=$libdir "$work/consumer-pc" || fail "pkg-config consumer failed"
# shellcheck disable=SC2086 # as above
c++ -std=c++17 -Wall -Wextra -Wpedantic -Werror $cflags "$here/consumer.cpp" -o "$work/consumer-pc-cxx" $libs
LD_LIBRARY_PATH=$libdir "$work/consumer-pc-cxx" "$work/quickstart_kernel.o" || fail "pkg-config C++ consumer failed"

# (b) CMake consumers, C and C++17: find_package(sk CONFIG REQUIRED) + sk::sk.
cmake -S "$here/cmake-consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null ||
  fail "find_package(sk) consumer does not configure"
cmake --build "$work/cmake-build" >/dev/null || fail "find_package(sk) consumer does not build"
LD_LIBRARY_PATH=$libdir "$work/cmake-build/sk-consumer" || fail "CMake consumer failed"
LD_LIBRARY_PATH=$libdir "$work/cmake-build/sk-consumer-cxx" "$work/quickstart_kernel.o" ||
  fail "CMake C++ consumer failed"

# (b') The version promise (docs/conventions.md): the CMake package accepts a request for any
# earlier release of the same major version and refuses a later minor or another major, as the
# SONAME and the Python binding's import check do; pkg-config states the header's version.
read -r major minor patch <<<"$(sed -n 's/^#define SK_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  "$root/include/sk.h" | tr '\n' ' ')"
[[ $(pkg-config --modversion sk) == "$major.$minor.$patch" ]] ||
  fail "pkg-config says $(pkg-config --modversion sk), sk.h says $major.$minor.$patch"
mkdir -p "$work/version-probe"
printf '%s\n' 'cmake_minimum_required(VERSION 3.20)' 'project(probe LANGUAGES NONE)' \
  'find_package(sk ${WANT} CONFIG QUIET)' 'if(NOT sk_FOUND)' '  message(FATAL_ERROR "no sk ${WANT}")' \
  'endif()' >"$work/version-probe/CMakeLists.txt"
probe() {
  rm -rf "$work/version-probe/build"
  cmake -S "$work/version-probe" -B "$work/version-probe/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DWANT="$1" >/dev/null 2>&1
}
for want in "$major.$minor" "$major.$minor.$patch" "$major.0"; do
  probe "$want" || fail "find_package(sk $want) does not accept libsk $major.$minor.$patch"
done
for want in "$major.$((minor + 1))" "$((major + 1)).0"; do
  ! probe "$want" || fail "find_package(sk $want) accepts libsk $major.$minor.$patch"
done

# (c) Exported symbols: only sk_* and GDB's JIT interface (plus the version node the version script defines), every
# SK_API function of sk.h among them; SONAME libsk.so.0.
exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort)
stray=$(grep -v -e '^sk_' -e '^__jit_debug_register_code$' -e '^__jit_debug_descriptor$' <<<"$exported" || true)
[[ -z $stray ]] || fail "libsk.so.0 exports non-sk_ symbols: $(echo $stray)"
for fn in $(grep -o 'SK_API[^(]*(' "$prefix/include/sk.h" | grep -o 'sk_[a-z0-9_]*(' | tr -d '('); do
  grep -qx "$fn" <<<"$exported" || fail "$fn is declared in sk.h but not exported"
done
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == libsk.so.0 ]] || fail "SONAME is '$soname', not libsk.so.0"

# (d) The installed headers on their own: sk.h as C99 -pedantic and C++17; sk_kernel.h as C
# and C++ (kernel sources are compiled by both); sk.hpp as C++17 and C++20 -pedantic.
for compiler in gcc clang; do
  $compiler -std=c99 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$inc" -x c "$inc/sk.h"
  $compiler -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c "$inc/sk_kernel.h"
done
for compiler in g++ clang++; do
  $compiler -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c++ "$inc/sk.h"
  $compiler -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c++ "$inc/sk_kernel.h"
  for std in c++17 c++20; do
    $compiler -std=$std -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$inc" -x c++ "$inc/sk.hpp"
  done
done

# The JSON Schema of the explain output, beside sk.h.
cmp -s "$root/include/sk_explain.schema.json" "$inc/sk_explain.schema.json" ||
  fail "sk_explain.schema.json is not installed beside sk.h in $inc"

# (e) The Python binding from the installed tree (no pip, no numpy: any python3 will do), found
# through PYTHONPATH, libsk through the system library path; a tiny fused launch.
pydir=$prefix/lib/python3/dist-packages
[[ -f $pydir/superkernel/__init__.py ]] || fail "the superkernel package is not installed in $pydir"
env -u SK_LIBRARY PYTHONPATH=$pydir LD_LIBRARY_PATH=$libdir python3 - "$work/quickstart_kernel.o" "$prefix" <<'PY' ||
import ctypes, sys
import superkernel as sk
assert sk.__file__.startswith(sys.argv[2]), f"imported {sk.__file__}, not the installed copy"
n = 256
x, y = (ctypes.c_float * n)(*[1.0] * n), (ctypes.c_float * n)()
with sk.Device("host:cores=2") as dev:
    saxpy = dev.load(sys.argv[1]).kernel("saxpy")
    with dev.scope("install-check") as scope:
        for _ in range(3):
            scope.add(saxpy, 2, 2.0, x, y, n)
    scope.superkernel.launch()
    dev.synchronize()
assert list(y) == [6.0] * n, list(y)[:4]
PY
  fail "the installed Python binding does not import or run a fused launch"

# (f) The installed `sk` command: runs with the installed binding and libsk (relative to bin/,
# whatever the prefix), inspects an object and runs a scope fused and unfused.
# Output is captured before it is searched: grep -q leaves at the first match, and sk writing
# into the closed pipe would fail the pipeline.
version=$(env -u SK_LIBRARY "$prefix/bin/sk" --version 2>&1) && [[ $version == *"($libdir/libsk.so.0)"* ]] ||
  fail "installed sk does not run with the installed libsk: $version"
inspect=$(env -u SK_LIBRARY "$prefix/bin/sk" inspect "$work/quickstart_kernel.o") &&
  [[ $inspect == *"saxpy(f32,ptr,ptr,u32)"* ]] || fail "installed sk inspect does not list the saxpy kernel"
cat >"$work/scope.json" <<'JSON'
{"device": "host:cores=2", "objects": {"k": "quickstart_kernel.o"},
 "buffers": {"x": {"type": "f32", "count": 64, "fill": "random"}, "y": {"type": "f32", "count": 64}},
 "kernels": [{"object": "k", "kernel": "saxpy", "block_dim": 2, "args": [2.0, "@x", "@y", 64]},
             {"object": "k", "kernel": "saxpy", "block_dim": 1, "args": [0.5, "@x", "@y", 64]}],
 "repeat": 3}
JSON
env -u SK_LIBRARY "$prefix/bin/sk" run "$work/scope.json" >/dev/null || fail "installed sk run failed"

echo "install check: ok (prefix layout, pkg-config, find_package, C and C++, $(wc -l <<<"$exported") exported sk_* symbols, SONAME, headers, Python binding, sk command)"
