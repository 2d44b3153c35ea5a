#!/usr/bin/env bash
# Configures with CMake's default generator (Unix Makefiles on Linux), the way a CMake user builds
# without -G, and builds a few targets: the generator library (C++20, the embedded templates) and,
# where nvcc is found, the CUB object library (CUDA 17). scripts/build.sh builds everything with
# Ninja; this only proves the other generator configures and compiles. Into ${AMAX_MAKE_BUILD_DIR:-build-make}.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${AMAX_MAKE_BUILD_DIR:-build-make}
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Unix Makefiles$' "$build/CMakeCache.txt"; then
  echo "check-default-generator: $build was configured with another generator; remove it or set AMAX_MAKE_BUILD_DIR" >&2
  exit 1
fi
env -u CMAKE_GENERATOR cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(amax_generator)
if cmake --build "$build" --target help | grep '^\.\.\. amax_cub$' >/dev/null; then targets+=(amax_cub); fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
echo "check-default-generator: configured and built ${targets[*]} with Unix Makefiles in $build"
