#!/usr/bin/env bash
# On the GPU machine (see ../shared/device/README.md): the whole release pipeline in one call.
#  1. build, run every `gpu` test;  2. tune the default grid (cold binary cache), kill a second run
#  midway and resume it;  3. turn the tuning into data/system-db.jsonl and rebuild, so the
#  installed package ships it; run the install test (the example consumer on the GPU);
#  4. amax-tune bench against the shipped database.  Results go to $OUT (results.tar.gz + a few files).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT/r"; R="$OUT/r"
B=build-device; T=$B/tuner/amax-tune
log() { echo "== $*"; }
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release > "$R/configure.log" 2>&1 || { tail "$R/configure.log"; exit 1; }
cmake --build $B -j"$(nproc)" > "$R/build.log" 2>&1 || { tail -30 "$R/build.log"; exit 1; }
s=$SECONDS; ctest --test-dir $B -L gpu --output-on-failure > "$R/ctest-gpu.log" 2>&1; rc=$?
log "ctest -L gpu rc=$rc in $((SECONDS-s)) s"; grep -E "tests passed|Failed|\*\*\*" "$R/ctest-gpu.log" | tail -8
grep -hE "variant x case|random \(dtype|explain bf16" "$R/ctest-gpu.log" | head -8
export AMAX_TUNE_CACHE_DIR=/tmp/amax-kernel-cache; rm -rf "$AMAX_TUNE_CACHE_DIR" /tmp/amax-*.db*
s=$SECONDS; $T --arch sm_90 --db /tmp/amax-h200.db --json "$R/tune.json" > "$R/tune.txt" 2> "$R/tune.err"
log "tune default grid, cold kernel cache: rc=$? wall $((SECONDS-s)) s"; tail -1 "$R/tune.txt"
$T --arch sm_90 --db /tmp/amax-kill.db --dtypes fp16 > /dev/null 2> "$R/kill-1.err" & pid=$!
sleep 4; kill -9 $pid; wait $pid 2>/dev/null
k1=$(grep -c '^\[' "$R/kill-1.err"); s=$SECONDS
$T --arch sm_90 --db /tmp/amax-kill.db --dtypes fp16 > "$R/kill-2.txt" 2> "$R/kill-2.err"
log "SIGKILL after 4 s with $k1 keys finished; restart rc=$? in $((SECONDS-s)) s: $(grep resuming "$R/kill-2.err"); $(grep -c '^\[' "$R/kill-2.err") keys measured"
s=$SECONDS; $T --arch sm_90 --db /tmp/amax-h200.db > "$R/tune-again.txt" 2>&1; log "rerun with everything tuned: $((SECONDS-s)) s"
$T export --format text --db /tmp/amax-h200.db -o "$R/h200-full.jsonl"
mkdir -p data && python3 scripts/make-system-db.py "$R/h200-full.jsonl" > data/system-db.jsonl && cp data/system-db.jsonl "$OUT/"
cmake -S . -B $B > /dev/null && cmake --build $B -j"$(nproc)" > "$R/build2.log" 2>&1 || tail "$R/build2.log"
ctest --test-dir $B -R install --output-on-failure -V > "$R/install.log" 2>&1; log "install test rc=$?"
grep -E "amax =|explain:|all amax|WRONG" "$R/install.log"
s=$SECONDS; $T bench --db "" --system-db $B/share/amax-tune/system.db -o "$R/bench" > "$R/bench.txt" 2> "$R/bench.err"
log "bench rc=$? in $((SECONDS-s)) s"; sed -n '1,12p' "$R/bench.txt"
cp "$R/bench/bench.md" "$R/bench/bench.csv" "$R/bench/"*.png "$R/bench/"*.svg "$R/tune.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/results.tar.gz" -C "$OUT" r
