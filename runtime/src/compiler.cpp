#include "amax/compiler.hpp"

#include "compilers.hpp"

namespace amax {

bool have_compiler(Vendor vendor) noexcept {
  return vendor == Vendor::nvidia ? AMAX_HAVE_CUDA : AMAX_HAVE_HIP;
}

std::unique_ptr<JitCompiler> make_compiler(Vendor vendor) {
#if AMAX_HAVE_CUDA
  if (vendor == Vendor::nvidia) return detail::make_nvrtc_compiler();
#endif
#if AMAX_HAVE_HIP
  if (vendor == Vendor::amd) return detail::make_hiprtc_compiler();
#endif
  throw std::runtime_error("this build of amax-tune has no " + std::string(to_string(vendor)) +
                           " backend (configure with the " +
                           (vendor == Vendor::nvidia ? "CUDA toolkit" : "HIP runtime") +
                           " present)");
}

}  // namespace amax
