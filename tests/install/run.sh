#!/usr/bin/env bash
# tests/install/run.sh [BUILD_DIR] — installs libsk into a temporary prefix and uses it the ways
# users do: pkg-config, CMake's find_package, the exported symbol set and SONAME, and the public
# header alone under strict C and C++ compilers. Called by scripts/test (not by ctest).
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

# (b) CMake consumer: find_package(sk CONFIG REQUIRED) + sk::sk.
cmake -S "$here/cmake-consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null ||
  fail "find_package(sk) consumer does not configure"
cmake --build "$work/cmake-build" >/dev/null || fail "find_package(sk) consumer does not build"
LD_LIBRARY_PATH=$libdir "$work/cmake-build/sk-consumer" || fail "CMake consumer failed"

# (c) Exported symbols: only sk_* (plus the version node the version script defines), every
# SK_API function of sk.h among them; SONAME libsk.so.0.
exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort)
stray=$(grep -v '^sk_' <<<"$exported" || true)
[[ -z $stray ]] || fail "libsk.so.0 exports non-sk_ symbols: $(echo $stray)"
for fn in $(grep -o 'SK_API[^(]*(' "$prefix/include/sk.h" | grep -o 'sk_[a-z0-9_]*(' | tr -d '('); do
  grep -qx "$fn" <<<"$exported" || fail "$fn is declared in sk.h but not exported"
done
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == libsk.so.0 ]] || fail "SONAME is '$soname', not libsk.so.0"

# (d) The installed headers on their own: sk.h as C99 -pedantic and C++17; sk_kernel.h as C
# and C++ (kernel sources are compiled by both).
inc=$prefix/include
for compiler in gcc clang; do
  $compiler -std=c99 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$inc" -x c "$inc/sk.h"
  $compiler -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c "$inc/sk_kernel.h"
done
for compiler in g++ clang++; do
  $compiler -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c++ "$inc/sk.h"
  $compiler -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c++ "$inc/sk_kernel.h"
done

echo "install check: ok (prefix layout, pkg-config, find_package, $(wc -l <<<"$exported") exported sk_* symbols, SONAME, headers)"
