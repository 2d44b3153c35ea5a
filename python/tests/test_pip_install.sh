#!/usr/bin/env bash
# The README's install command in a fresh virtual environment, offline: `pip install ./python`
# (pip's default build isolation; the venv has no `wheel` module) reusing the configured build tree
# BUILD, found two ways:
#   1. named by a relative AMAX_TUNE_BUILD_DIR, relative to the directory pip is started in (not
#      python/, where pip runs the backend);
#   2. found without naming it (AMAX_BUILD_DIR, as scripts/build.sh names its tree).
# Each install must reuse BUILD (the backend's log says so) and take seconds; then the venv's
# interpreter, isolated (-I: no PYTHONPATH, no user site), imports the installed copy and checks
# its library, database, version and metadata (Requires-Python, the torch extra).
# usage: test_pip_install.sh PYTHON BUILD VERSION   (exit 77 = skipped: no venv / ensurepip)
set -euo pipefail
python=$1 build=$(cd "$2" && pwd) version=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! "$python" -c "import venv, ensurepip" 2>/dev/null; then
  echo "SKIP: $python cannot make a virtual environment with pip (Debian: apt-get install python3-venv)"; exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
"$python" -m venv "$tmp/venv"
py=$tmp/venv/bin/python
echo "venv made in $(( $(date +%s) - start )) s"
if "$py" -c "import wheel" 2>/dev/null; then echo "note: the venv has the wheel module"; else
  echo "the venv has no wheel module (the backend needs none)"; fi

install() {  # install LOG: pip install of $src/python from the current directory, its log in LOG
  local t0=$(date +%s)
  "$py" -m pip install -v --no-index --disable-pip-version-check --no-cache-dir --force-reinstall "$src/python" \
    > "$1" 2>&1 || { cat "$1"; echo "FAIL: pip install failed (log above)"; exit 1; }
  echo "installed in $(( $(date +%s) - t0 )) s"
  grep "amax_tune build: " "$1" || true
}

# 1. a relative AMAX_TUNE_BUILD_DIR, from another directory than the repository root
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
rel=$(realpath --relative-to="$tmp/elsewhere" "$build")
AMAX_TUNE_BUILD_DIR=$rel install "$tmp/pip1.log"
grep -q "amax_tune build: build tree $build (named by AMAX_TUNE_BUILD_DIR=$rel)" "$tmp/pip1.log" || {
  cat "$tmp/pip1.log"; echo "FAIL: the relative AMAX_TUNE_BUILD_DIR=$rel did not mean $build"; exit 1; }

# 2. found without naming it
cd "$src"
(unset AMAX_TUNE_BUILD_DIR; export AMAX_BUILD_DIR=$build; install "$tmp/pip2.log")
grep -q "amax_tune build: build tree $build (an existing build tree)" "$tmp/pip2.log" || {
  cat "$tmp/pip2.log"; echo "FAIL: the configured tree $build was not found"; exit 1; }
if grep -q "configuring a tree\|reconfiguring" "$tmp/pip1.log" "$tmp/pip2.log"; then
  echo "FAIL: a reused tree was (re)configured"; exit 1; fi

cd "$tmp"
env -u LD_LIBRARY_PATH -u PYTHONPATH AMAX_TUNE_SYSTEM_DB= "$py" -I -c "
import os, sys
import importlib.metadata as md
import amax_tune
pkg = os.path.dirname(amax_tune.__file__)
assert pkg.startswith('$tmp/venv/'), pkg
assert amax_tune.__version__ == '$version', (amax_tune.__version__, '$version')
libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libamax_tune' in l})
assert libs == [pkg + '/libamax_tune.so.0'], libs
assert amax_tune.system_db_path() == pkg + '/data/system.db', amax_tune.system_db_path()
assert open(amax_tune.system_db_path(), 'rb').read(16) == b'SQLite format 3\x00'
meta = md.metadata('amax-tune')
assert meta['Version'] == '$version', meta['Version']
assert meta['Requires-Python'] == '>=3.9', meta['Requires-Python']
assert md.requires('amax-tune') == ['torch>=2.4; extra == \"torch\"'], md.requires('amax-tune')
try:
    amax_tune.context(0)
    print('installed amax_tune', amax_tune.__version__, 'created a context on device 0')
except amax_tune.Error as e:
    assert e.status == amax_tune.Status.NO_DEVICE, e
    print('installed amax_tune', amax_tune.__version__, 'without a GPU:', e)
"
echo "total $(( $(date +%s) - start )) s"
