#include "amax/backend.hpp"

#include <algorithm>
#include <string>

#include "backends.hpp"

namespace amax {

void Backend::launch_cooperative(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle stream,
                                 void** args) {
  const std::uint32_t per_cu = max_active_blocks_per_cu(f, block);
  const auto cus = static_cast<std::uint32_t>(std::max(0, device().cu_count));
  const std::uint64_t resident = std::uint64_t{per_cu} * cus;
  if (grid > resident)
    throw BackendError("launch_cooperative", 0,
                       "launch_cooperative: a grid of " + std::to_string(grid) + " blocks of " + std::to_string(block) +
                           " threads exceeds the " + std::to_string(resident) + " blocks the device holds at once (" +
                           std::to_string(per_cu) + " per CU x " + std::to_string(cus) + " CUs)");
  launch_cooperative_unchecked(f, grid, block, stream, args);
}

int device_count(Vendor vendor) noexcept {
#if AMAX_HAVE_CUDA
  if (vendor == Vendor::nvidia) return detail::cuda_device_count();
#endif
#if AMAX_HAVE_HIP
  if (vendor == Vendor::amd) return detail::hip_device_count();
#endif
  (void)vendor;
  return 0;
}

std::string no_device_reason(Vendor vendor) {
#if AMAX_HAVE_CUDA
  if (vendor == Vendor::nvidia) return detail::cuda_no_device_reason();
#endif
#if AMAX_HAVE_HIP
  if (vendor == Vendor::amd) return detail::hip_no_device_reason();
#endif
  return "this build has no " + std::string(to_string(vendor)) + " backend";
}

std::unique_ptr<Backend> make_backend(Vendor vendor, int ordinal) {
#if AMAX_HAVE_CUDA
  if (vendor == Vendor::nvidia) return detail::make_cuda_backend(ordinal);
#endif
#if AMAX_HAVE_HIP
  if (vendor == Vendor::amd) return detail::make_hip_backend(ordinal);
#endif
  (void)ordinal;
  throw std::runtime_error(no_device_reason(vendor));
}

bool first_available_vendor(Vendor& out, int ordinal) noexcept {
  for (Vendor v : {Vendor::nvidia, Vendor::amd})
    if (ordinal >= 0 && device_count(v) > ordinal) {
      out = v;
      return true;
    }
  return false;
}

}  // namespace amax
