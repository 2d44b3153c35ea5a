#!/usr/bin/env bash
# On the GPU machine (see ../shared/device/README.md): the release pipeline, in two phases that each
# fit one device call (run `tune`, then `bench` while the machine is still warm; `all` runs both).
#   tune:  build; every `gpu` test but the Python ones; tune the default grid twice (the first with
#          a cold kernel cache) into two databases; `amax-tune check` of the first against the
#          second; both runs exported as text; the first turned into data/system-db.jsonl.
#   bench: rebuild (the new system.db and its bundle), the install test, `amax-tune bench` against
#          the shipped database only, the Python package's install, tests and bench.
#   test:  build; every `gpu` test (Python's too) and the `multigpu` tests (they skip with one GPU).
# Results go to $OUT: results-PHASE.tar.gz (every log) and data/system-db.jsonl.
#   usage: bash scripts/device-release.sh test|tune|bench|all
set -uo pipefail
phase=${1:-all}
OUT=${OUT:-out}; R="$OUT/r-$phase"; mkdir -p "$R"
B=build-device; T=$B/tuner/amax-tune
log() { echo "== $*"; }
# The HIP backend's host code runs on this NVIDIA GPU through tests/hipshim when ROCm's HIP
# headers are carried (.device/hipshim/libamdhip64-dev_*.deb; see the README's hipshim section).
source scripts/hipshim-flags.sh
build() {
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release "${shim[@]}" > "$R/configure$1.log" 2>&1 || { tail "$R/configure$1.log"; exit 1; }
  cmake --build $B -j"$(nproc)" > "$R/build$1.log" 2>&1 || { tail -30 "$R/build$1.log"; exit 1; }
}
export AMAX_TUNE_CACHE_DIR=/tmp/amax-kernel-cache
if [[ $phase == test ]]; then
  s=$SECONDS; build ""; log "build: $((SECONDS-s)) s"
  s=$SECONDS; ctest --test-dir $B -L 'gpu|multigpu' --output-on-failure --timeout 300 -V > "$R/ctest-gpu.log" 2>&1; rc=$?
  log "ctest -L 'gpu|multigpu' rc=$rc in $((SECONDS-s)) s"; grep -E "tests passed|\*\*\*|Failed  |Skipped" "$R/ctest-gpu.log" | tail -20
  grep -hE "bit-exact|first call|from the bundle|wrong-device checks|node tune|keys agree" "$R/ctest-gpu.log" | head -20
fi
if [[ $phase == tune || $phase == all ]]; then
  s=$SECONDS; build ""; log "build: $((SECONDS-s)) s"
  # GPU_TESTS_EXCLUDE: a regex of further tests to leave out (ones a run just before passed on this code).
  s=$SECONDS; ctest --test-dir $B -L gpu -E "^python${GPU_TESTS_EXCLUDE:+|$GPU_TESTS_EXCLUDE}" --output-on-failure --timeout 300 -V > "$R/ctest-gpu.log" 2>&1; rc=$?
  log "ctest -L gpu rc=$rc in $((SECONDS-s)) s"; grep -E "tests passed|\*\*\*|Failed  " "$R/ctest-gpu.log" | tail -12
  grep -hE "^\[reliability\] GPU|variant x case|bit-exact|first call|from the bundle" "$R/ctest-gpu.log" | head -12
  rm -rf "$AMAX_TUNE_CACHE_DIR" /tmp/amax-*.db*
  s=$SECONDS; $T --arch sm_90 --db /tmp/amax-h200.db --json "$R/tune.json" > "$R/tune.txt" 2> "$R/tune.err"
  log "tune 1 (cold kernel cache): rc=$? wall $((SECONDS-s)) s"; tail -1 "$R/tune.txt"
  s=$SECONDS; $T --arch sm_90 --db /tmp/amax-h200-2.db > "$R/tune2.txt" 2> "$R/tune2.err"
  log "tune 2: rc=$? wall $((SECONDS-s)) s"; tail -1 "$R/tune2.txt"
  s=$SECONDS; $T check --db /tmp/amax-h200.db --against /tmp/amax-h200-2.db > "$R/check.txt" 2> "$R/check.err"
  log "check of run 1 against run 2: rc=$? in $((SECONDS-s)) s"; tail -6 "$R/check.txt"
  $T export --format text --db /tmp/amax-h200.db -o "$R/run1.jsonl"
  $T export --format text --db /tmp/amax-h200-2.db -o "$R/run2.jsonl"
  python3 scripts/make-system-db.py "$R/run1.jsonl" > data/system-db.jsonl && mkdir -p "$OUT/data" && cp data/system-db.jsonl "$OUT/data/"
fi
if [[ $phase == bench || $phase == all ]]; then
  s=$SECONDS; build 2; log "rebuild with the new system database: $((SECONDS-s)) s"
  ctest --test-dir $B -R 'install|[Bb]undle' -L gpu --output-on-failure -V > "$R/install.log" 2>&1; log "install + bundle tests rc=$?"
  grep -E "amax =|explain:|all amax|WRONG|tests passed|first call|bundle" "$R/install.log" | head -12
  s=$SECONDS; $T bench --db "" --system-db $B/share/amax-tune/system.db -o "$R/bench" > "$R/bench.txt" 2> "$R/bench.err"
  log "bench rc=$? in $((SECONDS-s)) s"; sed -n '1,40p' "$R/bench.txt"
  s=$SECONDS; $T bench-multi --db "" --system-db $B/share/amax-tune/system.db -o "$R/bench-multi" > "$R/bench-multi.txt" 2> "$R/bench-multi.err"
  log "bench-multi rc=$? in $((SECONDS-s)) s"; sed -n '1,30p' "$R/bench-multi.txt"
  s=$SECONDS; OUT="$R" timeout ${PY_TIMEOUT:-300} bash scripts/device-python.sh $B > "$R/python.log" 2>&1
  log "python package rc=$? in $((SECONDS-s)) s"; grep -E "^== |bit-exact|^Ran|^OK|FAILED|target" "$R/python.log" | head -20
fi
tar czf "$OUT/results-$phase.tar.gz" -C "$OUT" "r-$phase"
