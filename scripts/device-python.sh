#!/usr/bin/env bash
# On the GPU machine: the Python package end to end, in one call (a few minutes).
#  1. a preflight of the interpreter (torch with a GPU, pybind11, Python.h);
#  2. the README's install command, offline (pip --no-build-isolation), into a fresh --target,
#     reusing the C++ build tree BUILD (default build-device; configured fresh when absent);
#  3. the CPU and GPU unittest suites against the installed copy (python/tests);
#  4. the bench against torch (python/bench/bench_torch.py).
# Results: $OUT/python/ (test logs, bench.txt, torch.csv). Exit status: non-zero if a step failed.
# usage: bash scripts/device-python.sh [BUILD]      (PYTHON=... picks the interpreter)
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(realpath -m "${1:-${AMAX_TUNE_BUILD_DIR:-build-device}}")
py=${PYTHON:-python3}
out=${OUT:-$src/.device}/python
mkdir -p "$out"
log() { echo "== $*"; }
"$py" - <<'EOF' || exit 1
import os, sys, sysconfig
problems = []
h = os.path.join(sysconfig.get_paths()["include"], "Python.h")
if not os.path.isfile(h):
    problems.append("no %s (install python%d.%d-dev)" % (h, *sys.version_info[:2]))
try:
    import pybind11
    print("pybind11", pybind11.__version__, pybind11.get_cmake_dir())
except ImportError:
    problems.append("pybind11 is not importable (pip install pybind11, or Debian python3-pybind11)")
try:
    import setuptools
    v = tuple(int(p) for p in setuptools.__version__.split(".")[:2])
    if v < (70, 1):
        import wheel  # older setuptools build wheels through the wheel package
except ImportError as e:
    problems.append("setuptools (>= 70.1, or older with wheel) is missing: %s" % e)
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "device:",
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
except ImportError as e:
    problems.append("torch is not importable (%s)" % e)
for p in problems:
    print("device-python: " + p)
sys.exit(1 if problems else 0)
EOF
site=$(mktemp -d)/site
s=$SECONDS
AMAX_TUNE_BUILD_DIR=$build "$py" -m pip install --no-build-isolation --no-deps --no-index --disable-pip-version-check \
  --target "$site" ./python > "$out/pip.log" 2>&1
rc=$?; log "pip install into $site: rc=$rc in $((SECONDS-s)) s"; tail -n 3 "$out/pip.log"
[ $rc -eq 0 ] || { tail -n 40 "$out/pip.log"; exit 1; }
fail=0
s=$SECONDS; (cd python/tests && PYTHONPATH=$site "$py" -m unittest -v test_cpu) > "$out/test_cpu.log" 2>&1
rc=$?; log "python CPU tests rc=$rc in $((SECONDS-s)) s"; tail -n 3 "$out/test_cpu.log"; [ $rc -eq 0 ] || fail=1
s=$SECONDS; PYTHONPATH=$site "$py" python/tests/test_gpu.py > "$out/test_gpu.log" 2>&1
rc=$?; log "python GPU tests rc=$rc in $((SECONDS-s)) s"
grep -E "^(bit-exact|explain|amax_multi)|ERROR|FAIL|skipped|^Ran|^OK" "$out/test_gpu.log" | head -n 30; [ $rc -eq 0 ] || fail=1
s=$SECONDS; PYTHONPATH=$site "$py" python/bench/bench_torch.py -o "$out/torch.csv" > "$out/bench.txt" 2>&1
rc=$?; log "bench rc=$rc in $((SECONDS-s)) s"; cat "$out/bench.txt"; [ $rc -eq 0 ] || fail=1
exit $fail
