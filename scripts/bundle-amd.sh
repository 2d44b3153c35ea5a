#!/usr/bin/env bash
# The release step that completes the kernel bundle of a Debian 12 build with the AMD entries its
# own hipRTC (ROCm 5.2) cannot compile, then checks it:
#   gfx942:sramecc+:xnack-, gfx942  ROCm 5.7's hipRTC (.rocm/trixie): the build compiles them itself
#                                   when the prefix was there at configure time; here they are
#                                   compiled (amax-tune bundle --update through run-with-rocm57.sh)
#                                   only if the bundle lacks them
#   gfx950:sramecc+:xnack-, gfx950  ROCm 6.4's hipRTC: copied (--update --from, every code object
#                                   verified) from the bundle the sid root's build made
#                                   (scripts/test-rocm6.sh, which also read its ELF notes back there)
# then runs the bundle tests and the install test of BUILD (every arch installed beside system.db,
# every AMD code object's ELF notes read back, every gfx942/gfx950 kernel's releases and acquires
# checked in its disassembly: bundle.amd_memory_model). Each step's report is appended to
# BUILD/share/amax-tune/kernels.bundle.txt. Exit 1 when a toolchain is missing or a check fails.
#   usage: [AMAX_ROCM57=PREFIX] [AMAX_ROCM_SID=DIR] scripts/bundle-amd.sh [BUILD]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bundle=$build/share/amax-tune/kernels.bundle
report=$bundle.txt
tune=$build/tuner/amax-tune
[ -f "$bundle/index.json" ] && [ -x "$tune" ] || {
  echo "bundle-amd: no built bundle at $bundle (build first: bash scripts/build.sh)" >&2; exit 1; }
has() { grep -q "\"arch\": \"$1\"" "$bundle/index.json"; }
# The report describes the final bundle: an arch added here is no longer "skipped".
unskip() { local a; for a in "$@"; do grep -v -F -x -e "$a: skipped" "$report" | grep -v -F "$a: skipped: " > "$report.new" || true; mv "$report.new" "$report"; done; }
db=$build/share/amax-tune/system.db
prefix=${AMAX_ROCM57:-.rocm/trixie}
if ! has 'gfx942:sramecc+:xnack-' || ! has gfx942; then
  [ -e "$prefix/usr/lib/x86_64-linux-gnu/libamdhip64.so.5" ] || {
    echo "bundle-amd: no ROCm 5.7 prefix at $prefix for the gfx942 entries (bash scripts/fetch-rocm.sh)" >&2; exit 1; }
  AMAX_ROCM57=$prefix scripts/run-with-rocm57.sh "$tune" bundle --update --db "$db" \
    --arch 'gfx942:sramecc+:xnack-,gfx942' -o "$bundle" > "$report.step"
  cat "$report.step"; unskip 'gfx942:sramecc+:xnack-' gfx942; cat "$report.step" >> "$report"; rm "$report.step"
fi
sid=$(realpath -m "${AMAX_ROCM_SID:-.rocm/sid}")
from=$sid/src/build/share/amax-tune/kernels.bundle
[ -f "$from/index.json" ] || {
  echo "bundle-amd: no ROCm 6.4 bundle at $from for the gfx950 entries (run scripts/test-rocm6.sh)" >&2; exit 1; }
"$tune" bundle --update --from "$from" --arch 'gfx950:sramecc+:xnack-,gfx950' -o "$bundle" > "$report.step"
cat "$report.step"; unskip 'gfx950:sramecc+:xnack-' gfx950; cat "$report.step" >> "$report"; rm "$report.step"
ctest --test-dir "$build" --output-on-failure \
  -R '^(ReleaseBundle|BundleLookup|rocm57\.BundleLookup)\.|^bundle\.amd_(code_object_notes|memory_model)$|^install\.'
python3 tests/runtime/check_bundle_notes.py "$bundle" --report "$report"
echo "bundle-amd: $bundle: $(grep -c '"kernel"' "$bundle/index.json") code objects, $(du -sb "$bundle" | cut -f1) bytes"
