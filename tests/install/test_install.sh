#!/usr/bin/env bash
# Installs the build into a fresh prefix and builds the example consumers against it: the CMake
# package (find_package(amax_tune)) and pkg-config (a C program), then runs both.
# Usage: test_install.sh <build dir> <source dir>
set -euo pipefail
build=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
test -f "$tmp/prefix/include/amax/amax_tune.h"
test -x "$tmp/prefix/bin/amax-tune"
libdir=$(dirname "$(find "$tmp/prefix" -name 'libamax_tune.so' | head -1)")
if [ -f "$src/data/system-db.jsonl" ]; then
  test -f "$tmp/prefix/share/amax-tune/system.db" || { echo "system database not installed"; exit 1; }
fi
# pkg-config + C
export PKG_CONFIG_PATH="$libdir/pkgconfig"
sed -i "s|^prefix=.*|prefix=$tmp/prefix|; s|^libdir=.*|libdir=$libdir|; s|^includedir=.*|includedir=$tmp/prefix/include|" "$libdir/pkgconfig/amax_tune.pc"
cc -std=c11 -Wall -Werror "$src/examples/consumer/c_api_check.c" $(pkg-config --cflags --libs amax_tune) -Wl,-rpath,"$libdir" -o "$tmp/c_check"
"$tmp/c_check"
# CMake package + C++ (needs the CUDA toolkit for the example's own allocations)
if [ -d /usr/local/cuda ] || command -v nvcc >/dev/null; then
  cmake -S "$src/examples/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCUDAToolkit_ROOT=/usr/local/cuda > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
  cmake --build "$tmp/consumer" > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
  "$tmp/consumer/amax_consumer"
else
  echo "no CUDA toolkit: C++ consumer not built"
fi
echo "install test passed"
