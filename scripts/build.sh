#!/usr/bin/env bash
# Sets up a build: installs the dependencies (Debian 12 packages), configures and builds into
# ${AMAX_BUILD_DIR:-build}. Backends are auto-detected (CUDA where the toolkit is found, HIP where
# the ROCm runtime is found).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${AMAX_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} >/dev/null
cmake --build "$build" -j "$(nproc)"
