#!/usr/bin/env bash
# Fetches the two AMD toolchains the AMD compile tests use, into ignored folders of the clone
# (nothing is installed into the system; a rerun reuses what is there):
#   .rocm/trixie  Debian 13's HIP 5.7.1 with hipRTC and comgr 2.6 (LLVM 17): gfx942 targets, and LLVM
#                 17's llvm-objdump (the memory-model audit's gfx942 disassembler). A program built on
#                 Debian 12 runs against it through trixie's own loader (scripts/run-with-rocm57.sh).
#                 ~10 s, 80 MB download, 256 MB unpacked. No root.
#   .rocm/sid     (with --sid, instead of the prefix) a Debian sid root holding ROCm 6.4 (libhiprtc.so.6, comgr 3.0 on
#                 LLVM 21: gfx942 and gfx950), a compiler, CMake and this project's build
#                 dependencies, for scripts/test-rocm6.sh. debootstrap + apt, 2-4 min, ~1.9 GB, root.
# Both come from the Debian mirror this machine's apt already uses. sid moves daily: the tests print
# the versions they ran with.
#   usage: scripts/fetch-rocm.sh [--sid]
set -euo pipefail
cd "$(dirname "$0")/.."
want_sid=0
for a in "$@"; do
  case $a in
    --sid) want_sid=1 ;;
    *) echo "fetch-rocm: unknown argument '$a' (expected --sid)" >&2; exit 2 ;;
  esac
done
mkdir -p .rocm
uris=$( { grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
          grep -h '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
            sed -E 's/\[[^]]*\] *//' | awk '{print $2}'; } || true)
mirror=$(printf '%s\n' $uris | grep -E '/debian/?$' | head -1)
security=$(printf '%s\n' $uris | grep -E '/debian-security/?$' | head -1)
[ -n "$mirror" ] || { echo "fetch-rocm: no Debian mirror found in the apt sources" >&2; exit 1; }

# --- ROCm 5.7 (trixie), unpacked into a private prefix; apt's own state is untouched ---
prefix=$PWD/.rocm/trixie
if ((want_sid)); then :
elif [ ! -e "$prefix/usr/lib/x86_64-linux-gnu/libamdhip64.so.5" ] ||
     [ ! -e "$prefix/usr/lib/llvm-17/bin/llvm-objdump" ]; then
  work=$PWD/.rocm/trixie.apt
  rm -rf "$prefix" "$work"
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/dl" "$prefix"
  kr=/usr/share/keyrings/debian-archive-keyring.gpg
  cat > "$work/sources.list" <<LIST
deb [signed-by=$kr] $mirror trixie main
deb [signed-by=$kr] $mirror trixie-updates main
${security:+deb [signed-by=$kr] $security trixie-security main}
LIST
  apt_opts=(-o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=/nonexistent
            -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache"
            -o Dir::State::status=/var/lib/dpkg/status -o Debug::NoLocking=1)
  apt-get "${apt_opts[@]}" update -qq
  pkgs=(libamdhip64-5 libamd-comgr2 libllvm17t64 libhsa-runtime64-1 libhsakmt1 libc6 libstdc++6 libgcc-s1
        libnuma1 zlib1g libzstd1 libffi8 libedit2 libbsd0 libmd0 libtinfo6 libxml2 liblzma5 libz3-4
        libelf1t64 libdrm2 libdrm-amdgpu1)
  (cd "$work/dl" && apt-get "${apt_opts[@]}" download "${pkgs[@]}" llvm-17 2>&1 | grep -v -i unsandboxed || true)
  for f in "$work/dl"/*.deb; do
    case $(basename "$f") in
      # of LLVM 17's tools only its AMDGPU disassembler (tests/runtime/check_memory_model.py)
      llvm-17_*) dpkg-deb --fsys-tarfile "$f" | tar -x -C "$prefix" ./usr/lib/llvm-17/bin/llvm-objdump ;;
      *) dpkg-deb -x "$f" "$prefix" ;;
    esac
  done
  rm -rf "$work"
fi
if ! ((want_sid)) && { [ ! -e "$prefix/usr/lib/x86_64-linux-gnu/libamdhip64.so.5" ] ||
                        [ ! -e "$prefix/usr/lib/llvm-17/bin/llvm-objdump" ]; }; then
  rm -rf "$prefix"
  echo "fetch-rocm: the ROCm 5.7 prefix is incomplete (no libamdhip64.so.5 or llvm-objdump):" \
       "the download from $mirror failed" >&2
  exit 1
fi
((want_sid)) || echo "fetch-rocm: ROCm 5.7 prefix $prefix: $(ls "$prefix/usr/lib/x86_64-linux-gnu" | grep -E '^lib(amdhip64|amd_comgr)\.so\.[0-9.]+$' | sort | tr '\n' ' ')"

# --- ROCm 6.4 (sid root) ---
((want_sid)) || exit 0
root=$PWD/.rocm/sid
[ "$(id -u)" -eq 0 ] || { echo "fetch-rocm: --sid needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
if [ ! -x "$root/usr/bin/apt-get" ]; then
  rm -rf "$root"
  debootstrap --variant=minbase sid "$root" "$mirror" >/dev/null
fi
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  libamdhip64-dev libhiprtc6 g++ cmake ninja-build pkg-config llvm-dev \
  libspdlog-dev libfmt-dev libsqlite3-dev libsqlitecpp-dev libcli11-dev nlohmann-json3-dev \
  libgtest-dev libgmock-dev libssl-dev 2>&1 | grep -v -E '^debconf: |Can not write log|^$' || true
for f in usr/bin/cmake usr/bin/g++ usr/include/hip/hiprtc.h; do
  [ -e "$root/$f" ] || { echo "fetch-rocm: the sid root lacks /$f: apt-get install from $mirror failed" >&2; exit 1; }
done
echo "fetch-rocm: ROCm 6.4 sid root $root ($(du -shx "$root" | cut -f1)):" \
  $(chroot "$root" dpkg-query -W -f='${Package}=${Version} ' libamdhip64-dev libhiprtc6 libamd-comgr3 llvm-dev g++ cmake)
