#!/usr/bin/env bash
# Installs every build and test dependency of amax-tune from Debian 12 packages. Idempotent: a
# second run installs nothing new. Used by the README and by .ci/run.
# The CUDA 13 toolkit (nvcc, NVRTC, headers) is expected at /usr/local/cuda where present; it is
# not a Debian package and is optional (without it the CUDA backend is not built).
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config git
  libspdlog-dev libfmt-dev libssl-dev libsqlite3-dev libsqlitecpp-dev sqlite3 libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # ROCm 5.2 HIP runtime + hipRTC (compiles for gfx90a without a GPU) and LLVM tooling for AMD
  # code-object metadata (llvm-readelf --notes).
  libamdhip64-dev libhiprtc-builtins5 hipcc llvm
  # matplotlib renders the bench's plots (scripts/amax-tune-plot; tested on the CPU).
  python3-matplotlib
  # the amax_tune Python package (python/): pybind11 extension; pip install ./python (CTest
  # python.pip_install installs it into a fresh venv)
  python3-dev python3-pybind11 python3-pip python3-venv
  # The ROCm 6.4 root of scripts/fetch-rocm.sh --sid (CI's gfx942/gfx950 compiles).
  debootstrap
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all ${#pkgs[@]} packages already installed"
fi
