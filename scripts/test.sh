#!/usr/bin/env bash
# Sets up (dependencies, configure, build) and runs the test suite. GPU tests (CTest label `gpu`)
# skip with a message where no GPU is present. Extra arguments go to ctest (e.g. -L gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir "${AMAX_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
