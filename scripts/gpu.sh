#!/usr/bin/env bash
# The GPU machine's steps, in the order given (docs/DESIGN.md, "The GPU machine"):
#
#   source .device/setup.sh; bash scripts/gpu.sh build tests bench
#
#   build    configure and build build-device/ (Release): the HIP shim test where ROCm's HIP headers
#            are carried (.device/hipshim/libamdhip64-dev_*.deb), the Python extension where the
#            interpreter has pybind11
#   tests    every `gpu`- and `multigpu`-labelled CTest (C++ and python.gpu; multigpu skips on one GPU)
#   tune     a default tune into a fresh database (cold kernel cache), a second one, `amax-tune check`
#            of the first against the second, both dumped as text with their rerun regret; the first
#            becomes data/system-db.jsonl (in the tree and in $OUT)
#   bench    amax-tune bench and bench-multi against the build's shipped system.db only, then
#            python/bench/bench_torch.py
#   quantize amax-tune bench --quantize (cold; bf16, fp16, fp32 -> e4m3, then bf16 -> e5m2), then
#            python/bench/bench_quantize.py where the Python package is built
#   python   the package installed with pip (offline) into a fresh --target, its CPU and GPU suites
#            against that copy
#   release  rebuild with the tree's data/system-db.jsonl (system.db and the kernel bundle), the
#            install and bundle tests, the bundle's report and the shipped winners
#
# Each step runs under its own time limit (GPU_SH_<STEP>_TIMEOUT seconds overrides the default), so a
# step that hangs leaves the others' results. Step STEP writes its files into $WORK/STEP/ and packs them
# as ${OUT:-out}/STEP.tar.gz; every step's one-line result goes to ${OUT:-out}/summary.txt; the tune
# step also writes ${OUT:-out}/system-db.jsonl (the GPU machine returns at most 8 files from $OUT).
# Exit status: 0 when every step passed, 1 when one failed or timed out, 2 for an unknown step.
#   environment: OUT (default out), PYTHON (default python3), GPU_SH_WORK (default /tmp/amax-gpu-sh),
#                AMAX_TUNE_CACHE_DIR (default /tmp/amax-kernel-cache), TESTS (a ctest -R regex for
#                the tests step), TESTS_JOBS (default 3), ARCH (the tune step's --arch, default sm_90)
set -uo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$SELF")/.." || exit 1
OUT=$(realpath -m "${OUT:-out}")
WORK=$(realpath -m "${GPU_SH_WORK:-/tmp/amax-gpu-sh}")
B=build-device
T=$B/tuner/amax-tune
PY=${PYTHON:-python3}
SYSDB=$B/share/amax-tune/system.db
export AMAX_TUNE_CACHE_DIR=${AMAX_TUNE_CACHE_DIR:-/tmp/amax-kernel-cache}
PYTHONUNBUFFERED=1; export PYTHONUNBUFFERED

declare -A LIMIT=([build]=540 [tests]=540 [tune]=480 [bench]=360 [quantize]=420 [python]=300 [release]=360)

say() { echo "== $(date -u +%H:%M:%S) $*"; }

# One command of a step: its output into FILE, its exit status and time in the step's log.
# usage: step_cmd NAME FILE LIMIT command...
step_cmd() {
  local name=$1 file=$2 limit=$3; shift 3
  local s=$SECONDS rc
  timeout "$limit" "$@" > "$file" 2>&1; rc=$?
  say "$name: rc=$rc in $((SECONDS - s)) s$([ $rc = 124 ] && echo " (timed out after $limit s)")"
  return $rc
}

configure_and_build() {  # $1: the log suffix
  local shim=() py=()
  source scripts/hipshim-flags.sh  # sets shim=(-DAMAX_HIP_SHIM_INCLUDE=...) where the headers are carried
  if pbd=$("$PY" -c "import pybind11; print(pybind11.get_cmake_dir())" 2>/dev/null); then
    py=(-Dpybind11_DIR="$pbd" -DPython3_EXECUTABLE="$(command -v "$PY")")
  else
    say "$PY cannot import pybind11: configuring without -Dpybind11_DIR (configure.log says whether the Python package is built)"
  fi
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release "${shim[@]}" "${py[@]}" > "$R/configure$1.log" 2>&1 ||
    { tail -20 "$R/configure$1.log"; return 1; }
  grep -E "amax-tune: " "$R/configure$1.log"
  cmake --build $B -j"$(nproc)" > "$R/build$1.log" 2>&1 ||
    { grep -E "error|FAILED" "$R/build$1.log" | head -30; return 1; }
}

step_build() {
  local s=$SECONDS
  configure_and_build "" || return 1
  say "build: $((SECONDS - s)) s"
}

step_tests() {
  local rc
  step_cmd "ctest -L 'gpu|multigpu'${TESTS:+ -R '$TESTS'}" "$R/ctest.log" "$((GPU_SH_LIMIT - 20))" \
    ctest --test-dir $B -L 'gpu|multigpu' ${TESTS:+-R "$TESTS"} -j"${TESTS_JOBS:-3}" --output-on-failure --timeout 300 -V
  rc=$?
  grep -E "tests passed|\(Failed\)|\(Timeout\)|Not Run|\(Skipped\)" "$R/ctest.log" | tail -25 | tee "$R/summary.txt"
  grep -hE "variant x case|bit-exact|first call|from the bundle|wrong-device checks|^\[reliability\] GPU" "$R/ctest.log" | head -20
  return $rc
}

step_tune() {
  local rc=0
  rm -rf "$AMAX_TUNE_CACHE_DIR" /tmp/amax-gpu-sh-tune*.db*
  step_cmd "tune 1 (cold kernel cache)" "$R/tune1.txt" 200 \
    $T --arch "${ARCH:-sm_90}" --db /tmp/amax-gpu-sh-tune1.db --json "$R/tune1.json" || rc=1
  grep -E "^wall time|^time: " "$R/tune1.txt"
  step_cmd "tune 2" "$R/tune2.txt" 150 $T --arch "${ARCH:-sm_90}" --db /tmp/amax-gpu-sh-tune2.db || rc=1
  grep -E "^wall time|^time: " "$R/tune2.txt"
  $T export --format text --db /tmp/amax-gpu-sh-tune1.db -o "$R/run1.jsonl" || rc=1
  $T export --format text --db /tmp/amax-gpu-sh-tune2.db -o "$R/run2.jsonl" || rc=1
  "$PY" scripts/rerun-regret.py "$R/run1.jsonl" "$R/run2.jsonl" > "$R/rerun-regret.txt" 2>&1 && grep "within 1.05x" "$R/rerun-regret.txt"
  step_cmd "check of run 1 against run 2 (exit 1: a key does not hold)" "$R/check.txt" 100 \
    $T check --db /tmp/amax-gpu-sh-tune1.db --against /tmp/amax-gpu-sh-tune2.db
  grep -E "^summary" "$R/check.txt"
  if [ -s "$R/run1.jsonl" ] && "$PY" scripts/make-system-db.py "$R/run1.jsonl" > "$R/system-db.jsonl"; then
    cp "$R/system-db.jsonl" data/system-db.jsonl && cp "$R/system-db.jsonl" "$OUT/system-db.jsonl"
    say "data/system-db.jsonl: $(wc -l < data/system-db.jsonl) rows from run 1"
  else
    rc=1
  fi
  return $rc
}

step_bench() {
  local rc=0
  [ -f $SYSDB ] || { say "no $SYSDB: run the build step first"; return 1; }
  # No user database (a path that does not exist): the benches dispatch from the shipped system.db alone.
  export AMAX_TUNE_DB=$WORK/no-user-db/tuning.db
  step_cmd "amax-tune bench" "$R/bench.txt" 120 $T bench --system-db $SYSDB -o "$R" || rc=1
  grep -E "^\| (2\^|[0-9])" "$R/bench.txt" | head -40; grep -E "^\| [<>e]" "$R/bench.txt"
  step_cmd "amax-tune bench-multi" "$R/bench-multi.txt" 120 $T bench-multi --system-db $SYSDB -o "$R" || rc=1
  cat "$R/bench-multi.txt"
  if [ -d $B/python/amax_tune ]; then
    step_cmd "python bench" "$R/torch.txt" "$((GPU_SH_LIMIT - 250))" \
      env AMAX_TUNE_SYSTEM_DB=$SYSDB PYTHONPATH=$B/python "$PY" python/bench/bench_torch.py -o "$R/torch.csv" || rc=1
    tail -45 "$R/torch.txt"
  else
    say "python bench: not run ($B/python/amax_tune was not built: no pybind11 for $PY)"
  fi
  return $rc
}

step_quantize() {
  local rc=0
  [ -f $SYSDB ] || { say "no $SYSDB: run the build step first"; return 1; }
  export AMAX_TUNE_DB=$WORK/no-user-db/tuning.db
  step_cmd "amax-tune bench --quantize (e4m3)" "$R/quantize-e4m3.txt" 180 $T bench --quantize --regime cold \
    --dtypes bf16,fp16,fp32 --formats e4m3 --system-db $SYSDB -o "$R/e4m3" || rc=1
  grep -E "^\| " "$R/quantize-e4m3.txt" | head -80
  step_cmd "amax-tune bench --quantize (bf16 e5m2)" "$R/quantize-e5m2.txt" 90 $T bench --quantize --regime cold \
    --dtypes bf16 --formats e5m2 --system-db $SYSDB -o "$R/e5m2" || rc=1
  grep -E "^\| " "$R/quantize-e5m2.txt" | tail -25
  for f in e4m3 e5m2; do
    [ -f "$R/$f/bench_quantize.csv" ] && { scripts/amax-tune-plot "$R/$f/bench_quantize.csv" --quiet ||
      say "amax-tune-plot $f: exit $?"; }
  done
  if [ -d $B/python/amax_tune ]; then
    step_cmd "python quantize bench" "$R/torch-quantize.txt" 120 \
      env AMAX_TUNE_SYSTEM_DB=$SYSDB PYTHONPATH=$B/python "$PY" python/bench/bench_quantize.py \
      -o "$R/torch-quantize.csv" || rc=1
    tail -45 "$R/torch-quantize.txt"
  else
    say "python quantize bench: not run ($B/python/amax_tune was not built: no pybind11 for $PY)"
  fi
  return $rc
}

step_python() {
  local site rc=0
  "$PY" - <<'EOF' || return 1
import os, sys, sysconfig
problems = []
h = os.path.join(sysconfig.get_paths()["include"], "Python.h")
if not os.path.isfile(h):
    problems.append("no %s (install python%d.%d-dev)" % (h, *sys.version_info[:2]))
try:
    import pybind11
    print("pybind11", pybind11.__version__)
except ImportError:
    problems.append("pybind11 is not importable (pip install pybind11, or Debian python3-pybind11)")
# (no setuptools / wheel check: python/amax_tune_build.py, pip's backend, needs neither)
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "device:",
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
except ImportError as e:
    problems.append("torch is not importable (%s)" % e)
for p in problems:
    print("gpu.sh python: " + p)
sys.exit(1 if problems else 0)
EOF
  site=$WORK/python-site; rm -rf "$site"
  step_cmd "pip install into $site" "$R/pip.log" 200 env AMAX_TUNE_BUILD_DIR="$(realpath $B)" \
    "$PY" -m pip install --no-build-isolation --no-deps --no-index --disable-pip-version-check --target "$site" ./python ||
    { tail -n 30 "$R/pip.log"; return 1; }
  step_cmd "python CPU tests" "$R/test_cpu.log" 60 \
    env -C python/tests PYTHONPATH="$site" "$PY" -m unittest -v test_cpu || rc=1
  tail -n 3 "$R/test_cpu.log"
  step_cmd "python GPU tests" "$R/test_gpu.log" 200 env PYTHONPATH="$site" "$PY" python/tests/test_gpu.py || rc=1
  grep -E "ERROR|FAIL|skipped|^Ran|^OK" "$R/test_gpu.log" | head -n 30
  return $rc
}

step_release() {
  local rc=0 s=$SECONDS
  configure_and_build 2 || return 1
  say "rebuild with data/system-db.jsonl ($(wc -l < data/system-db.jsonl) rows): $((SECONDS - s)) s"
  step_cmd "install and bundle tests" "$R/install.log" 200 \
    ctest --test-dir $B -R 'install|[Bb]undle' -L gpu --output-on-failure --timeout 180 -V || rc=1
  grep -E "tests passed|\(Failed\)|first call|from the bundle" "$R/install.log" | head -12
  cp $B/share/amax-tune/kernels.bundle.txt "$R/" 2>/dev/null && cat "$R/kernels.bundle.txt"
  $T show --db $SYSDB --integrity > "$R/show.txt" 2>&1 || rc=1
  tail -n 2 "$R/show.txt"
  return $rc
}

if [ "${1:-}" = --one ]; then  # one step, run by the loop below under its time limit
  step=$2; R=$WORK/$step; mkdir -p "$R"; GPU_SH_LIMIT=${GPU_SH_LIMIT:-${LIMIT[$step]}}
  "step_$step"
  exit $?
fi

[ $# -gt 0 ] || { echo "usage: bash scripts/gpu.sh STEP... (build, tests, tune, bench, quantize, python, release)"; exit 2; }
for step in "$@"; do
  [ -n "${LIMIT[$step]:-}" ] || { echo "gpu.sh: unknown step '$step' (build, tests, tune, bench, quantize, python, release)"; exit 2; }
done
mkdir -p "$OUT" "$WORK"
: > "$OUT/summary.txt"
failed=0
for step in "$@"; do
  var=GPU_SH_${step^^}_TIMEOUT; limit=${!var:-${LIMIT[$step]}}
  rm -rf "${WORK:?}/$step"; s=$SECONDS
  say "$step (limit $limit s)"
  mkdir -p "$WORK/$step"
  GPU_SH_LIMIT=$limit timeout --kill-after=10 "$limit" bash "$SELF" --one "$step" 2>&1 | tee "$WORK/$step/gpu.log"
  rc=${PIPESTATUS[0]}
  case $rc in
    0) result=passed ;;
    124|137) result="timed out after $limit s" ;;
    *) result="failed (rc=$rc)" ;;
  esac
  [ $rc = 0 ] || failed=1
  tar czf "$OUT/$step.tar.gz" -C "$WORK" "$step" 2>/dev/null
  line="$step: $result in $((SECONDS - s)) s (files: $step.tar.gz)"
  say "$line"; echo "$line" >> "$OUT/summary.txt"
done
exit $failed
