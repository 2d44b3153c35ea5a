# Sourced by scripts/gpu.sh: where ROCm's HIP headers are carried (.device/hipshim/
# libamdhip64-dev_*.deb; see docs/amd.md, "The HIP backend on an NVIDIA GPU"), unpacks them and sets `shim` to the CMake
# flag that builds tests/hipshim (the HIP backend's host code on the NVIDIA GPU); else `shim` is empty.
shim=()
for deb in .device/hipshim/libamdhip64-dev_*.deb; do
  [ -f "$deb" ] && mkdir -p /tmp/hipshim-root && dpkg -x "$deb" /tmp/hipshim-root &&
    shim=(-DAMAX_HIP_SHIM_INCLUDE=/tmp/hipshim-root/usr/include)
done
