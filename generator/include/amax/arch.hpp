#pragma once
// What the generator needs to know about a target before any device is present: vendor, wave size
// and the per-block thread limit, derived from the arch name alone.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace amax {

/// GPU vendor; selects the kernel prelude, the JIT compiler and the driver API.
enum class Vendor : std::uint8_t { nvidia, amd };
std::string_view to_string(Vendor v) noexcept;

/// A compilation target.
/// - NVIDIA: `sm_XY` (compute capability X.Y), e.g. `sm_90`.
/// - AMD: a target ID, `gfxNNN` optionally followed by features, e.g. `gfx942:sramecc+:xnack-`;
///   `processor` is the part before the first ':'.
/// wave_size: 32 on NVIDIA and on RDNA (gfx10xx, gfx11xx, gfx12xx compile wave32 by default),
/// 64 on GCN/CDNA (gfx9xx). max_threads_per_block: 1024 on both vendors (CUDA programming guide,
/// HIP `hipDeviceProp_t::maxThreadsPerBlock` on every CDNA part).
struct ArchInfo {
  Vendor vendor;
  std::string name;       ///< as given: "sm_90", "gfx942:sramecc+:xnack-"
  std::string processor;  ///< "sm_90", "gfx942"
  int wave_size;
  int max_threads_per_block;

  /// Parses an arch name. Errors: std::invalid_argument naming the value and the expected forms.
  static ArchInfo parse(std::string_view arch);
};

}  // namespace amax
