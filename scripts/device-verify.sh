#!/usr/bin/env bash
# On the GPU machine, against the committed data/system-db.jsonl (no tune): build (with the
# Python package where the interpreter has pybind11, and the HIP shim where its headers are
# carried), then the steps named as arguments, each with its own time limit so that the others'
# results come back. Results under $OUT/r-verify.
#   tests   every `gpu`-labelled CTest (C++ and python.gpu), ctest -j3
#   bench   amax-tune bench and bench-multi against the shipped database only, then the Python
#           bench (single tensors and groups: amax_multi against torch._foreach_norm) in the same run
#   usage: bash scripts/device-verify.sh tests bench      (a call of at most 10 minutes each)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; R="$OUT/r-verify"; mkdir -p "$R"
B=build-device; T=$B/tuner/amax-tune
log() { echo "== $(date -u +%H:%M:%S) $*"; }
. scripts/hipshim-flags.sh
py=()
if pbd=$(python3 -c "import pybind11; print(pybind11.get_cmake_dir())" 2>/dev/null); then
  py=(-Dpybind11_DIR="$pbd" -DPython3_EXECUTABLE="$(command -v python3)")
fi
export AMAX_TUNE_CACHE_DIR=/tmp/amax-kernel-cache
s=$SECONDS
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release "${shim[@]}" "${py[@]}" > "$R/configure.log" 2>&1 || { tail "$R/configure.log"; exit 1; }
cmake --build $B -j"$(nproc)" > "$R/build.log" 2>&1 || { grep -E "error|FAILED" "$R/build.log" | head -30; exit 1; }
log "build: $((SECONDS-s)) s"
for step in "$@"; do
  case $step in
    tests)
      s=$SECONDS
      timeout ${TESTS_TIMEOUT:-420} ctest --test-dir $B -L gpu -j3 --output-on-failure --timeout 300 > "$R/ctest.log" 2>&1
      log "ctest -L gpu rc=$? in $((SECONDS-s)) s"
      grep -E "tests passed|\(Failed\)|\(Timeout\)|Not Run|\(Skipped\)" "$R/ctest.log" | tail -20
      grep -B3 -A12 "Failure$\|FAILED  \|Error" "$R/ctest.log" | head -60
      grep -E "^(scale epilogue|explain|multi:)" "$R/ctest.log" | head -20 ;;
    bench)
      db=(--db "" --system-db $B/share/amax-tune/system.db)
      s=$SECONDS
      timeout 100 $T bench "${db[@]}" -o "$R/bench" > "$R/bench.txt" 2> "$R/bench.err"
      log "bench rc=$? in $((SECONDS-s)) s"; grep -E "^\| (2\^|[0-9])" "$R/bench.txt" | head -40; tail -14 "$R/bench.txt"
      s=$SECONDS
      timeout 100 $T bench-multi "${db[@]}" -o "$R/bench-multi" > "$R/bench-multi.txt" 2> "$R/bench-multi.err"
      log "bench-multi rc=$? in $((SECONDS-s)) s"; cat "$R/bench-multi.err" | tail -8; cat "$R/bench-multi.txt"
      s=$SECONDS
      AMAX_TUNE_SYSTEM_DB=$B/share/amax-tune/system.db PYTHONPATH=$B/python PYTHONUNBUFFERED=1 \
        timeout ${PY_TIMEOUT:-200} python3 python/bench/bench_torch.py -o "$R/torch.csv" > "$R/torch.txt" 2>&1
      log "python bench rc=$? in $((SECONDS-s)) s"; tail -45 "$R/torch.txt" ;;
    *) echo "device-verify: unknown step '$step' (tests, bench)"; exit 2 ;;
  esac
done
tar czf "$OUT/results-verify.tar.gz" -C "$OUT" r-verify
