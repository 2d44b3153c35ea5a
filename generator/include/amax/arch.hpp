#pragma once
// What the generator needs to know about a target before any device is present: vendor, wave size
// and the per-block thread limit, derived from the arch name alone.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

  /// Parses an arch name. AMD features are `sramecc` and `xnack` with `+` or `-`, each at most
  /// once, in that order (`gfx942:sramecc+:xnack-`). Errors: std::invalid_argument naming the
  /// value, the bad feature (`gfx942:foo+`, `gfx942:xnack`, an empty feature) and the expected forms.
  static ArchInfo parse(std::string_view arch);

  /// parse() for an arch a user names (--arch): the processor must also be one of
  /// known_processors() (an NVIDIA name may carry NVRTC's a/f suffix: sm_90a). Errors:
  /// std::invalid_argument naming the value and listing the known processors ("unknown arch
  /// 'sm_91': amax-tune knows sm_50, ..., gfx1201"). A device's own arch is read with parse()
  /// (a GPU newer than this list still tunes).
  static ArchInfo parse_known(std::string_view arch);

  /// The setting of target feature `f` ("xnack", "sramecc") in this target ID: true (+), false (-),
  /// nullopt when the ID leaves it unspecified ("any").
  std::optional<bool> feature(std::string_view f) const;

  /// True when a request for this arch is served by `device`'s: same vendor and processor, and every
  /// feature this ID specifies has the same setting on the device (`gfx942` accepts
  /// `gfx942:sramecc+:xnack-`; `gfx942:xnack-` does not accept `gfx942:xnack+`). NVIDIA: equal names.
  bool accepts(const ArchInfo& device) const;
};

/// The processors amax-tune knows, NVIDIA first, each vendor's in ascending order: the compute
/// capabilities NVRTC 12-13 targets (sm_50 to sm_121) and the AMD processors ROCm 6 supports
/// (gfx906 to gfx1201). "sm_90", "gfx942". Thread-safe (static table).
const std::vector<std::string_view>& known_processors();

/// known_processors() as one comma-separated list, for messages.
std::string known_processors_list();

/// The compute capability of an NVIDIA arch as one number: 90 for sm_90 (and sm_90a), 100 for
/// sm_100; 0 for an AMD arch. Thread-safe.
int compute_capability(const ArchInfo& arch) noexcept;

/// What the timing protocol and the resource rules need to know about one AMD processor that the
/// device does not report (hipDeviceProp_t::l2CacheSize is the L2 only). One row per processor;
/// every number has its source in `source`.
struct AmdArchFacts {
  std::string_view processor;            ///< "gfx942"
  std::uint64_t last_level_cache_bytes;  ///< the last cache level before HBM, whole device
  std::string_view last_level_cache;     ///< what that cache is, e.g. "256 MiB Infinity Cache (MALL)"
  int simds_per_cu;                      ///< SIMD units per CU
  int vgprs_per_simd_lane;               ///< VGPR file per SIMD lane (VGPRs + AGPRs where unified)
  int vgpr_granule;                      ///< VGPRs are allocated per wave in multiples of this
  bool unified_agprs;                    ///< AGPRs share the VGPR file (gfx90a and later)
  int max_waves_per_simd;                ///< wave slots per SIMD
  std::uint32_t lds_bytes_per_cu;        ///< LDS a CU holds (a block can use all of it)
  std::string_view source;
};

/// The row for `processor` (the part of a target ID before the first ':'), or nullptr for a
/// processor without one (NVIDIA, older or RDNA AMD parts). Thread-safe (static table).
const AmdArchFacts* amd_arch_facts(std::string_view processor) noexcept;

/// The last cache level before memory that a cold-cache measurement must defeat, bytes: the larger
/// of what the device reports as its L2 (`reported_l2_bytes`; NVIDIA's L2 is its last level) and
/// the arch's AmdArchFacts::last_level_cache_bytes (gfx942/gfx950: the 256 MiB Infinity Cache that
/// hipDeviceProp_t::l2CacheSize leaves out).
std::uint64_t last_level_cache_bytes(const ArchInfo& arch, std::uint64_t reported_l2_bytes) noexcept;

}  // namespace amax
