#!/usr/bin/env bash
# On the GPU machine (see ../shared/device/README.md): build, run the `gpu` tests, then tune the
# default grid twice (cold and warm binary cache), show a run killed midway resuming, and write
# logs, the JSON summaries and the database dump under ${OUT:-out}.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/configure.log" 2>&1 || { tail "$OUT/configure.log"; exit 1; }
cmake --build build-device -j"$(nproc)" > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
T=build-device/tuner/amax-tune
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  ctest --test-dir build-device -L gpu --output-on-failure > "$OUT/ctest-gpu.log" 2>&1; echo "ctest -L gpu rc=$?"
  grep -E "tests passed|variant x case|Passed|Failed|GPU:" "$OUT/ctest-gpu.log" | tail -12
fi
export AMAX_TUNE_CACHE_DIR=/tmp/amax-kernel-cache; rm -rf "$AMAX_TUNE_CACHE_DIR" /tmp/amax-*.db*
s=$SECONDS; timeout 400 $T --arch sm_90 --db /tmp/amax-cold.db --json "$OUT/tune-cold.json" > "$OUT/tune-cold.txt" 2> "$OUT/tune-cold.err"
echo "tune cold cache: rc=$? wall $((SECONDS-s)) s"
s=$SECONDS; timeout 300 $T --arch sm_90 --db /tmp/amax-warm.db --json "$OUT/tune-warm.json" > "$OUT/tune-warm.txt" 2> "$OUT/tune-warm.err"
echo "tune warm cache: rc=$? wall $((SECONDS-s)) s"
$T --arch sm_90 --db /tmp/amax-kill.db --dtypes bf16 > /dev/null 2> "$OUT/kill-1.err" & pid=$!
sleep "${KILL_AFTER:-4}"; kill -9 $pid; wait $pid 2>/dev/null
echo "killed after ${KILL_AFTER:-4} s: $(grep -c '^\[' "$OUT/kill-1.err") keys finished"
s=$SECONDS; $T --arch sm_90 --db /tmp/amax-kill.db --dtypes bf16 > "$OUT/kill-2.txt" 2> "$OUT/kill-2.err"
echo "restart: rc=$? wall $((SECONDS-s)) s; $(grep resuming "$OUT/kill-2.err"); $(grep -c '^\[' "$OUT/kill-2.err") keys measured"
$T show --db /tmp/amax-cold.db > "$OUT/show.txt"; head -3 "$OUT/show.txt"
$T export --format text --db /tmp/amax-cold.db -o "$OUT/h200-sm_90.jsonl"
cat "$OUT/tune-cold.txt"
