#!/usr/bin/env bash
# Investigation on the GPU machine: do the tuner and the bench agree on the same variants?
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
B=build-device; T=$B/tuner/amax-tune
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/configure.log" 2>&1 && cmake --build $B -j"$(nproc)" --target amax-tune > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
export AMAX_TUNE_CACHE_DIR=/tmp/kc
for i in 1 2; do
  $T --arch sm_90 --db /tmp/x.db --dtypes fp32 --sizes ${SIZES:-1M,4M} --retune -q --json "$OUT/t$i.json" > /dev/null
  python3 - "$OUT/t$i.json" <<'PY'
import json,sys
for k in json.load(open(sys.argv[1]))["keys"]:
    b=k.get("baselines",{}); print("tuner", k["n"], k["winner"]["label"], round(k["winner"]["median_us"],2), "TE atomic", round(b["te_atomic"]["median_us"],2), "best atomic", b["best_atomic"]["label"], round(b["best_atomic"]["median_us"],2), "best one_pass", round(b["best_one_pass"]["median_us"],2))
PY
done
for i in 1 2; do
  $T bench --dtypes fp32 --sizes ${SIZES:-1M,4M} --regime cold --db /tmp/x.db --system-db "" -o "$OUT/b$i" -q > /dev/null
  grep -E "amax-tune|TE atomic" "$OUT/b$i/bench.csv" | awk -F, '{print "bench", $5, $7, $8, $9}'
done
