// amax-tune tuning database: provenance, recorded with every trial and winner row
// (DESIGN.md section 5), and the staleness rule built on it.
#pragma once

#include <amax/db/field.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace amax::db {

/// Where and how a measurement was made. Every trial and winner row carries one.
///
/// Identity (FieldRole kIdentity: device_name, arch, cu_count, compiler, template_hash,
/// tool_version) decides whether two rows describe the same setup: record() replaces rows of
/// the same key and identity, and resume treats a key as finished when a winner with the current
/// identity exists. cu_count is part of the identity because a partitioned GPU (e.g. an MI300X
/// in CPX mode) keeps its name but not its compute units.
///
/// Staleness (FieldRole kStale: compiler, template_hash, tool_version): a row whose value of
/// any of these differs from the running build is stale and must be re-tuned before it is
/// trusted.
///
/// Thread-safety: plain value type.
struct Provenance {
  std::string device_name;      ///< as the driver reports it, e.g. "NVIDIA H200"
  std::string arch;             ///< target ID with features, e.g. "sm_90", "gfx942:sramecc+:xnack-"
  std::int64_t cu_count = 0;    ///< compute units (AMD CUs / NVIDIA SMs)
  std::string driver_version;   ///< as the backend reports it, e.g. "cuda driver 13.0", "hip driver 60443482"
  std::string compiler;         ///< JIT compiler and version, e.g. "nvrtc 13.0"
  std::string template_hash;    ///< 16 hex digits of the kernel templates' hash, e.g. "6f6ac6a1978dc457"
  std::string tool_version;     ///< amax-tune version that measured, e.g. "0.1.0"
  /// warm-up, batches, rounds and input rotation, as amax-tune's TimingProtocol::describe() writes it,
  /// e.g. "device events; batches >= 200 us (<= 200 calls); warmup 1; screen 3 (stop at 1.5x best);
  /// final 15 interleaved rounds x 6 finalists + baselines; cold (rotating over largest input + 5x L2)"
  std::string timing_protocol;
  std::string timestamp;        ///< ISO-8601 UTC of the measurement, e.g. "2026-11-30T02:51:00Z"

  /// Field-by-field equality over provenance_fields (all fields, timestamp included).
  friend bool operator==(const Provenance& a, const Provenance& b);
};

/// The fields of Provenance, listed once. SQL columns are "prov_" + name.
inline constexpr std::tuple provenance_fields{
    Field<Provenance, std::string>{"device_name", &Provenance::device_name,
                                   "device name as the driver reports it", kIdentity | kDevice},
    Field<Provenance, std::string>{"arch", &Provenance::arch,
                                   "target ID with target features", kIdentity | kDevice},
    Field<Provenance, std::int64_t>{"cu_count", &Provenance::cu_count,
                                    "compute units (CUs / SMs)", kIdentity | kDevice},
    Field<Provenance, std::string>{"driver_version", &Provenance::driver_version,
                                   "GPU driver version"},
    Field<Provenance, std::string>{"compiler", &Provenance::compiler,
                                   "JIT compiler and version (hipRTC/NVRTC)", kIdentity | kStale},
    Field<Provenance, std::string>{"template_hash", &Provenance::template_hash,
                                   "hex hash of the kernel templates", kIdentity | kStale},
    Field<Provenance, std::string>{"tool_version", &Provenance::tool_version,
                                   "amax-tune version", kIdentity | kStale},
    Field<Provenance, std::string>{"timing_protocol", &Provenance::timing_protocol,
                                   "warm-up, batches and input rotation used for timing"},
    Field<Provenance, std::string>{"timestamp", &Provenance::timestamp,
                                   "ISO-8601 UTC time of the measurement"},
};
static_assert(aggregate_arity<Provenance>() == std::tuple_size_v<decltype(provenance_fields)>,
              "every Provenance member must be listed in provenance_fields");

/// Names of the kStale fields (compiler, template_hash, tool_version) whose values differ
/// between a stored row's provenance @p row and the running build's @p current, in list order;
/// empty when the row is fresh. Thread-safe, never throws (beyond std::bad_alloc).
[[nodiscard]] std::vector<std::string_view> stale_fields(const Provenance& row,
                                                         const Provenance& current);

/// True when all kIdentity fields are equal. Thread-safe, never throws.
[[nodiscard]] bool same_identity(const Provenance& a, const Provenance& b) noexcept;

/// True when all kDevice fields (device_name, arch, cu_count) are equal. Thread-safe.
[[nodiscard]] bool same_device(const Provenance& a, const Provenance& b) noexcept;

/// Names of all fields whose values differ between @p a and @p b, in list order. Thread-safe.
[[nodiscard]] std::vector<std::string_view> differing_fields(const Provenance& a,
                                                             const Provenance& b);

/// "NVIDIA H200 (sm_90, 132 CUs)", for messages. Thread-safe.
[[nodiscard]] std::string describe_device(const Provenance& p);

/// The current time as ISO-8601 UTC with second resolution, e.g. "2026-11-30T02:51:00Z", the
/// format Provenance::timestamp expects. Thread-safe.
[[nodiscard]] std::string utc_timestamp_now();

}  // namespace amax::db
