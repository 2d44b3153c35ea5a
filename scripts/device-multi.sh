#!/usr/bin/env bash
# On the GPU machine (see ../shared/device/README.md): the multi-tensor work in one call: build, the
# `gpu` tests named by TESTS (a ctest -R regex; default: the multi-tensor, fused-scale, runtime,
# tuner, bench and correctness suites), a tune of a few groups (MULTI_GROUPS, default the target
# shapes) into a fresh database, then bench-multi with the untuned built-in default and with that
# database. Logs under $OUT/r-multi; a one-line summary of each step on stdout.
#   usage: bash scripts/device-multi.sh
set -uo pipefail
OUT=${OUT:-out}; R="$OUT/r-multi"; mkdir -p "$R"
B=build-device; T=$B/tuner/amax-tune
log() { echo "== $*"; }
source scripts/hipshim-flags.sh
s=$SECONDS
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release "${shim[@]}" > "$R/configure.log" 2>&1 || { tail "$R/configure.log"; exit 1; }
cmake --build $B -j"$(nproc)" > "$R/build.log" 2>&1 || { grep -E "error|FAILED" "$R/build.log" | head -30; exit 1; }
log "build: $((SECONDS-s)) s"
if [ -f scripts/probes/launch_params.cu ] && [ "${PROBE:-1}" = 1 ]; then  # kernel-parameter size vs launch cost
  nvcc -O2 -arch=sm_90 scripts/probes/launch_params.cu -o /tmp/lp > "$R/probe-build.log" 2>&1 && /tmp/lp | tee "$R/probe.txt"
fi
export AMAX_TUNE_CACHE_DIR=/tmp/amax-kernel-cache
TESTS=${TESTS:-GpuMulti|GpuScale|GpuBenchMulti|GpuRuntime|GpuTuner|GpuCorrectness|HipShim}
if [ "$TESTS" != none ]; then
  s=$SECONDS
  ctest --test-dir $B -L gpu -R "$TESTS" -E "${TESTS_EXCLUDE:-^python}" -j${TESTS_JOBS:-1} --output-on-failure --timeout 400 -V \
    > "$R/ctest-gpu.log" 2>&1; rc=$?
  log "ctest -L gpu -R '$TESTS' rc=$rc in $((SECONDS-s)) s"
  grep -E "tests passed|\*\*\*Failed|Failed  |Timeout" "$R/ctest-gpu.log" | tail -15
  grep -hE "^multi:|bit-exact|variant x case" "$R/ctest-gpu.log" | head -12
  grep -B2 -A12 "Failure" "$R/ctest-gpu.log" | head -60
fi
if [ "${TUNE:-1}" = 1 ]; then
  rm -f /tmp/amax-multi.db*
  s=$SECONDS
  timeout ${TUNE_TIMEOUT:-240} $T --arch sm_90 --sizes none --groups "${MULTI_GROUPS:-500x4096:fp32,4096x16k:bf16,512x64k:bf16,64x1M:bf16,8x16M:bf16}" \
    --db /tmp/amax-multi.db --json "$R/tune.json" > "$R/tune.txt" 2> "$R/tune.err"
  log "tune of groups rc=$? in $((SECONDS-s)) s"; sed -n '/group /,$p' "$R/tune.txt" | head -14; tail -3 "$R/tune.err"
fi
if [ "${BENCH:-1}" = 1 ]; then
  s=$SECONDS
  $T bench-multi --db "" --system-db "" -o "$R/bench-default" --rounds 9 > "$R/bench-default.txt" 2> "$R/bench-default.err"
  log "bench-multi (built-in default) rc=$? in $((SECONDS-s)) s"; grep -E "^\| [0-9]" "$R/bench-default.txt"; tail -2 "$R/bench-default.err"
  if [ -f /tmp/amax-multi.db ]; then
    s=$SECONDS
    $T bench-multi --db /tmp/amax-multi.db --system-db "" -o "$R/bench-tuned" --rounds 9 > "$R/bench-tuned.txt" 2> "$R/bench-tuned.err"
    log "bench-multi (tuned groups) rc=$? in $((SECONDS-s)) s"; grep -E "^\| [0-9]|^\| [a-z0-9x:]+ \|" "$R/bench-tuned.txt" | head -20; tail -2 "$R/bench-tuned.err"
  fi
fi
tar czf "$OUT/results-multi.tar.gz" -C "$OUT" r-multi
