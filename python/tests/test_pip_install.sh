#!/usr/bin/env bash
# The README's install command, offline: pip builds the amax_tune wheel from python/ reusing the
# build tree BUILD (AMAX_TUNE_BUILD_DIR) and installs it into a temporary --target; then a fresh
# interpreter that sees only that copy (-I: no PYTHONPATH, no user site) imports it and checks that
# libamax_tune and the database it uses are the installed package's own (no LD_LIBRARY_PATH).
# usage: test_pip_install.sh PYTHON BUILD VERSION   (exit 77 = skipped: pip or wheel missing)
set -euo pipefail
python=$1 build=$2 version=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
for m in pip wheel setuptools; do
  if ! "$python" -c "import $m" 2>/dev/null; then
    echo "SKIP: $python has no '$m' module (Debian: apt-get install python3-$m)"; exit 77
  fi
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# pip builds in place: a copy of python/ keeps setuptools' build/ and egg-info out of the tree.
cp -r "$src/python" "$tmp/src"
AMAX_TUNE_BUILD_DIR=$build AMAX_TUNE_SOURCE_DIR=$src "$python" -m pip install --no-build-isolation --no-deps \
  --no-index --disable-pip-version-check --no-cache-dir --target "$tmp/site" "$tmp/src"
cd "$tmp"
env -u LD_LIBRARY_PATH -u PYTHONPATH AMAX_TUNE_SYSTEM_DB= "$python" -I -c "
import os, sys
sys.path.insert(0, '$tmp/site')
import amax_tune
pkg = os.path.dirname(amax_tune.__file__)
assert pkg == '$tmp/site/amax_tune', pkg
assert amax_tune.__version__ == '$version', (amax_tune.__version__, '$version')
libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libamax_tune' in l})
assert libs == [pkg + '/libamax_tune.so.0'], libs
assert amax_tune.system_db_path() == pkg + '/data/system.db', amax_tune.system_db_path()
assert open(amax_tune.system_db_path(), 'rb').read(16) == b'SQLite format 3\x00'
try:
    amax_tune.context(0)
    print('installed amax_tune', amax_tune.__version__, 'created a context on device 0')
except amax_tune.Error as e:
    assert e.status == amax_tune.Status.NO_DEVICE, e
    print('installed amax_tune', amax_tune.__version__, 'without a GPU:', e)
"
