#!/bin/sh
# Runs a program built on Debian 12 against the ROCm 5.7 prefix of scripts/fetch-rocm.sh, through
# trixie's own loader (its libc and libstdc++ first, then the system's libraries). Where the
# prefix is absent the program runs as it is (its own ROCm), so that its tests skip with the reason.
#   usage: [AMAX_ROCM57=PREFIX] scripts/run-with-rocm57.sh PROG ARGS...   (default .rocm/trixie of the clone)
P=${AMAX_ROCM57:-$(dirname "$0")/../.rocm/trixie}
if [ -x "$P/usr/lib64/ld-linux-x86-64.so.2" ] && [ -e "$P/usr/lib/x86_64-linux-gnu/libamdhip64.so.5" ]; then
  exec "$P/usr/lib64/ld-linux-x86-64.so.2" --library-path "$P/usr/lib/x86_64-linux-gnu" "$@"
fi
echo "run-with-rocm57: no ROCm 5.7 prefix at $P (bash scripts/fetch-rocm.sh): running with this build's own ROCm" >&2
exec "$@"
