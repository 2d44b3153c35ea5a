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
  # The release kernel bundle beside it (built when a backend is), readable by all, writable by
  # its owner only (the trust rule refuses a bundle other users can write).
  bundle="$tmp/prefix/share/amax-tune/kernels.bundle"
  if grep -q '^AMAX_BUNDLE_ARCHES:' "$build/CMakeCache.txt"; then
    test -f "$bundle/index.json" || { echo "kernel bundle not installed"; exit 1; }
    bad=$(find "$bundle" -perm /022 | head -1)
    [ -z "$bad" ] || { echo "installed bundle file writable by group or others: $bad"; exit 1; }
    # Every arch the build compiled or copied into its bundle (its report, kernels.bundle.txt:
    # gfx942 with ROCm 5.7, gfx950 from the ROCm 6.4 root by scripts/bundle-amd.sh) is installed,
    # and the AMD code objects read back (target ID, wave 64, launch bound, no spills or scratch).
    report="$build/share/amax-tune/kernels.bundle.txt"
    for a in $(sed -n -E 's/^([^ ]+): [0-9]+ kernels.*/\1/p' "$report"); do
      grep -q "\"arch\": \"$a\"" "$bundle/index.json" || { echo "installed bundle lacks $a (built: $report)"; exit 1; }
    done
    rc=0; python3 "$src/tests/runtime/check_bundle_notes.py" "$bundle" --report "$report" || rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || { echo "installed bundle fails the code-object checks"; exit 1; }
    echo "installed bundle beside system.db: $(sed -n -E 's/^([^ ]+): [0-9]+ kernels.*/\1/p' "$report" | tr '\n' ' ')"
  fi
fi
# pkg-config + C, with the .pc file as installed (relocatable: paths relative to itself)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
pkg-config --cflags amax_tune | grep -q -- "-I$tmp/prefix" || pkg-config --cflags amax_tune | grep -q "pkgconfig/../../include" \
  || { echo "pkg-config does not point into the install prefix: $(pkg-config --cflags amax_tune)"; exit 1; }
cc -std=c11 -Wall -Werror "$src/examples/consumer/c_api_check.c" $(pkg-config --cflags --libs amax_tune) -Wl,-rpath,"$libdir" -o "$tmp/c_check"
"$tmp/c_check"
# CMake package + C++ (needs the CUDA toolkit for the example's own allocations)
if [ -d /usr/local/cuda ] || command -v nvcc >/dev/null; then
  cmake -S "$src/examples/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCUDAToolkit_ROOT=/usr/local/cuda > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
  cmake --build "$tmp/consumer" > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
  "$tmp/consumer/amax_consumer"
  # Again on a machine with only the GPU driver: NVRTC unreachable, a fresh HOME and kernel cache.
  # On a GPU every kernel must come from the installed bundle (explain: "code object: bundle").
  out=$(HOME="$tmp/home" AMAX_TUNE_CACHE_DIR="$tmp/home/cache" AMAX_TUNE_NVRTC_LIBRARY=/nonexistent \
    "$tmp/consumer/amax_consumer") || { echo "$out"; echo "consumer failed with NVRTC unreachable"; exit 1; }
  echo "$out"
  if ! echo "$out" | grep -q "no GPU here"; then
    echo "$out" | grep -q "code object: bundle;" || { echo "consumer's kernel did not come from the bundle"; exit 1; }
    echo "consumer with NVRTC unreachable: served from the installed bundle"
  fi
  grep -q "amax_tune_SYSTEM_DB_DIR \"\${PACKAGE_PREFIX_DIR}" "$libdir/cmake/amax_tune/amax_tuneConfig.cmake" \
    || { echo "amax_tuneConfig.cmake is not relocatable"; exit 1; }
else
  echo "no CUDA toolkit: C++ consumer not built"
fi
echo "install test passed"
