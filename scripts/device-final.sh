#!/usr/bin/env bash
# On the GPU machine, one call (about 9 minutes): build; the default tune (every size and every
# multi-tensor group of the three dtypes) into a fresh database; its text dump turned into
# data/system-db.jsonl; a rebuild with it (system.db and the release bundle); the `gpu` tests that
# depend on the shipped database and bundle (TESTS); amax-tune bench against the shipped database
# only; bench-multi with it; the Python bench's groups section (PY_BENCH). Every step has its own
# time limit so that the results of the others come back. Results under $OUT/r-final.
#   usage: bash scripts/device-final.sh
set -uo pipefail
OUT=${OUT:-out}; R="$OUT/r-final"; mkdir -p "$R" "$OUT/data"
B=build-device; T=$B/tuner/amax-tune
log() { echo "== $(date -u +%H:%M:%S) $*"; }
# The Python package is built where the interpreter has pybind11 (its CMake directory named explicitly).
py=()
if pbd=$(python3 -c "import pybind11; print(pybind11.get_cmake_dir())" 2>/dev/null); then
  py=(-Dpybind11_DIR="$pbd" -DPython3_EXECUTABLE="$(command -v python3)")
fi
build() {
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release "${py[@]}" > "$R/configure$1.log" 2>&1 || { tail "$R/configure$1.log"; exit 1; }
  cmake --build $B -j"$(nproc)" > "$R/build$1.log" 2>&1 || { grep -E "error|FAILED" "$R/build$1.log" | head -30; exit 1; }
}
export AMAX_TUNE_CACHE_DIR=/tmp/amax-kernel-cache
s=$SECONDS; build ""; log "build: $((SECONDS-s)) s"
rm -rf "$AMAX_TUNE_CACHE_DIR" /tmp/amax-*.db*
s=$SECONDS
timeout ${TUNE_TIMEOUT:-240} $T --arch sm_90 --db /tmp/amax-h200.db --json "$R/tune.json" > "$R/tune.txt" 2> "$R/tune.err"
log "tune (cold kernel cache): rc=$? wall $((SECONDS-s)) s"; grep -E "wall time|^group|[0-9]x[0-9]+:" "$R/tune.txt" | head -45
$T export --format text --db /tmp/amax-h200.db -o "$R/run1.jsonl"
python3 scripts/make-system-db.py "$R/run1.jsonl" > data/system-db.jsonl && cp data/system-db.jsonl "$OUT/data/"
s=$SECONDS; build 2; log "rebuild with the new system database: $((SECONDS-s)) s"
TESTS=${TESTS:-Bundle|install|Reliability|CacheTrust|GpuMulti.Repeated|python}
s=$SECONDS
timeout ${TESTS_TIMEOUT:-200} ctest --test-dir $B -L gpu -R "$TESTS" -j3 --output-on-failure --timeout 180 -V > "$R/ctest.log" 2>&1
log "ctest -L gpu -R '$TESTS' rc=$? in $((SECONDS-s)) s"
grep -E "tests passed|\*\*\*Failed|Failed  |Timeout|first call|from the bundle|^multi:" "$R/ctest.log" | tail -15
grep -B2 -A10 "Failure" "$R/ctest.log" | head -40
s=$SECONDS
timeout 90 $T bench --db "" --system-db $B/share/amax-tune/system.db -o "$R/bench" > "$R/bench.txt" 2> "$R/bench.err"
log "bench rc=$? in $((SECONDS-s)) s"; grep -E "^\| (2\^|[0-9])" "$R/bench.txt" | head -30; tail -12 "$R/bench.txt"
s=$SECONDS
timeout 90 $T bench-multi --db "" --system-db $B/share/amax-tune/system.db -o "$R/bench-multi" > "$R/bench-multi.txt" 2> "$R/bench-multi.err"
log "bench-multi rc=$? in $((SECONDS-s)) s"; cat "$R/bench-multi.txt"
if [ "${PY_BENCH:-1}" = 1 ]; then
  s=$SECONDS
  AMAX_TUNE_SYSTEM_DB=$B/share/amax-tune/system.db PYTHONPATH=$B/python timeout ${PY_TIMEOUT:-100} \
    python3 python/bench/bench_torch.py --only-groups -o "$R/torch.csv" > "$R/torch.txt" 2>&1
  log "python bench (groups) rc=$? in $((SECONDS-s)) s"; tail -25 "$R/torch.txt"
fi
tar czf "$OUT/results-final.tar.gz" -C "$OUT" r-final
