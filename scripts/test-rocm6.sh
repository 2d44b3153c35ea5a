#!/usr/bin/env bash
# The MI300X owner's build (docs/amd.md, "For an MI300X owner", step 1) as far as a machine without
# an AMD GPU goes: builds amax-tune (library, tuner, CPU tests; no CUDA) with -DAMAX_WITH_HIP=ON
# INSIDE the ROCm 6.4 sid root of scripts/fetch-rocm.sh --sid, against its ROCm 6.4 (CMake packages
# hip and hiprtc, libhiprtc.so.6, hipDeviceProp_t R0600, LLVM 21), then runs there the JIT tests
# (gfx90a, gfx942 target IDs and gfx950; the whole pruned space for gfx942:sramecc+:xnack- and
# gfx950), the release bundle of the gfx950 target IDs (ROCm 6.4 is the first hipRTC that knows
# gfx950; scripts/bundle-amd.sh adds those entries to the Debian 12 build's bundle, whose gfx942
# entries come from ROCm 5.7) with every code object's ELF notes read back and its releases and
# acquires audited (bundle.amd_memory_model), and the audit's checks and its control
# (memory_model.checker; MemoryModelAudit, which compiles gfx942 and gfx950 with ROCm 6.4). Extra
# arguments go to ctest.
# Skips (exit 0, with a message) where the root is absent. Needs root (chroot).
#   usage: [AMAX_ROCM_SID=DIR] scripts/test-rocm6.sh [CTEST ARGS]   (default DIR: .rocm/sid)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(realpath -m "${AMAX_ROCM_SID:-.rocm/sid}")
if [ ! -x "$root/usr/bin/cmake" ] || [ ! -e "$root/usr/include/hip/hiprtc.h" ]; then
  echo "test-rocm6: skipped: no ROCm 6.4 sid root at $root (make it with: bash scripts/fetch-rocm.sh --sid)"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "test-rocm6: needs root (chroot into $root)" >&2; exit 1; }
# The working tree (tracked and untracked, not ignored) is copied in; the build stays in the root.
rm -rf "$root/src/amax-tune"
mkdir -p "$root/src/amax-tune"
git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$root/src/amax-tune"
jobs=$(nproc)
chroot "$root" env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 bash -euo pipefail -c "
  cmake -S /src/amax-tune -B /src/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAMAX_WITH_CUDA=OFF \
        -DAMAX_WITH_HIP=ON -DAMAX_BUILD_BENCHMARKS=OFF -DAMAX_BUNDLE_ARCHES=gfx950:sramecc+:xnack-,gfx950 | grep -E 'amax-tune|CMake Error' || true
  cmake --build /src/build -j $jobs
  echo \"test-rocm6: built with \$(g++ --version | head -1), \$(dpkg-query -W -f='\${Package} \${Version}, ' libamdhip64-dev libhiprtc6 libamd-comgr3 llvm-dev)\"
  set +e
  ctest --test-dir /src/build -V -j $jobs \
    -R '^(Targets/JitCompile|CodeObject|ReleaseBundle|BundleLookup|MemoryModelAudit)\.|^bundle\.amd_(code_object_notes|memory_model)\$|^memory_model\.' \
    $* > /src/ctest-cpu.log 2>&1
  rc=\$?
  cat /src/build/share/amax-tune/kernels.bundle.txt
  grep -E '\[ (toolchain|resources|notes|memory model|control) \]|tests passed|tests failed|\*\*\*Failed|\*\*\*Skipped' /src/ctest-cpu.log
  if [ \$rc -ne 0 ]; then grep -E -B2 -A20 'Failure|FAILED' /src/ctest-cpu.log | head -300; fi
  exit \$rc
"
