#pragma once
// The GoogleTest parameter name of a JIT target: `nvrtc_sm_90`, `hiprtc_gfx942_srameccP_xnackM`
// (':' -> '_', '+' -> 'P', '-' -> 'M'); test_jit_rocm57's filter selects the gfx94x/gfx95x names.
#include <string>

#include "amax/arch.hpp"

namespace amax::test {
inline std::string jit_target_name(const char* arch, Vendor vendor) {
  std::string n = std::string(vendor == Vendor::nvidia ? "nvrtc_" : "hiprtc_") + arch;
  for (char& c : n)
    if (c == ':') c = '_';
    else if (c == '+') c = 'P';
    else if (c == '-') c = 'M';
  return n;
}
}  // namespace amax::test
