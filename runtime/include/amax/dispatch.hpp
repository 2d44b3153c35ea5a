#pragma once
// The dispatch decision, apart from any GPU: which variant serves (dtype, n) on an arch, from the
// lookup order of DESIGN.md section 4: environment override, user database, system database,
// built-in default. Database rows are untrusted: parsed, validated against the arch and dtype,
// stale ones (other template hash, compiler or tool version) skipped, one warning per problem.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace amax::db {
class TuningDb;
}

#include "amax/backend.hpp"
#include "amax/db/provenance.hpp"
#include "amax/dtype.hpp"
#include "amax/db/nearest.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"
#include "amax/quantize_config.hpp"
#include "amax/search_space.hpp"

namespace amax {

/// Where a decision came from, in lookup order (values equal amax_source_t).
enum class Source : std::uint8_t { override_env = 0, user_db = 1, system_db = 2, builtin_default = 3 };

/// One usable table entry: the winner of a tuned key.
struct TableEntry {
  KernelConfig config;
  std::uint64_t n = 0;      ///< the tuned size, elements
  double median_us = 0;     ///< measured time at n, microseconds
  double gbps = 0;          ///< bytes / time at n, GB/s
  bool same_device = false; ///< measured on this device (name and CU count), preferred on ties
  std::string timestamp;    ///< when it was measured (ISO-8601 UTC); the newer wins a full tie
  std::string where;        ///< "measured on 'NVIDIA H200' (sm_90, 132 CUs) at 2026-11-30T03:16:11Z"
};

/// One usable multi-tensor table entry: the winner of a tuned group shape.
struct GroupEntry {
  MultiConfig config;
  GroupShape shape;          ///< the tuned group: tensors, total bytes, largest tensor's bytes
  db::GroupBucket bucket;    ///< db::group_bucket(shape): what the nearest-group rule compares
  double median_us = 0;      ///< measured time of the tuned group, microseconds
  double gbps = 0;           ///< total bytes / time, GB/s
  bool same_device = false;  ///< measured on this device, preferred on ties
  std::string timestamp;     ///< when it was measured (ISO-8601 UTC)
  std::string where;         ///< "measured on 'NVIDIA H200' (sm_90, 132 CUs) at ..."
};

/// One usable quantize table entry: the winner of a tuned (dtype, n); the format is not part of the
/// key (tuned_fp8_format: the choice serves every format of the arch).
struct QuantizeEntry {
  QuantizeConfig config;
  std::uint64_t n = 0;      ///< the tuned size, elements
  double median_us = 0;     ///< measured time at n, microseconds
  double gbps = 0;          ///< bytes read and written / time at n, GB/s
  bool same_device = false; ///< measured on this device, preferred on ties
  std::string timestamp;    ///< when it was measured (ISO-8601 UTC)
  std::string where;        ///< "measured on 'NVIDIA H200' (sm_90, 132 CUs) at ..."
};

/// The provenance of the running build on device @p dev with JIT compiler @p compiler_version:
/// the device fields, driver_version, compiler, this build's template_hash() and
/// generator_version(); timing_protocol and timestamp empty (the tuner fills them in). Database
/// rows are judged against it (db::stale_fields, db::same_device). The one place it is built.
db::Provenance running_provenance(const DeviceInfo& dev, std::string compiler_version);

/// Per-family facts of the dispatch tables (Config: KernelConfig or MultiConfig): the table entry
/// type and what a call is looked up by (its Query).
template <class Config>
struct DispatchRow;
template <>
struct DispatchRow<KernelConfig> {
  using Entry = TableEntry;
  using Query = std::uint64_t;  ///< n, elements
};
template <>
struct DispatchRow<MultiConfig> {
  using Entry = GroupEntry;
  using Query = GroupShape;     ///< the dtype group's shape
};
template <>
struct DispatchRow<QuantizeConfig> {
  using Entry = QuantizeEntry;
  using Query = std::uint64_t;  ///< n, elements
};
template <class Config>
using EntryOf = typename DispatchRow<Config>::Entry;

/// A decision of either family.
template <class Config>
struct Choice {
  Config config;  ///< with the amax epilogue (the call sets its own)
  Source source = Source::builtin_default;
  const EntryOf<Config>* entry = nullptr;  ///< the table row used (user/system), else null
  /// Why the family's forced label is not used for this dtype ("AMAX_TUNE_FORCE_MULTI_LABEL is not
  /// valid for sm_90 bf16 (<reason>): "), else "". The explain calls start their detail with it.
  std::string why;
};
using GroupChoice = Choice<MultiConfig>;

/// The tables of one context. Built once (load + read_environment), then read-only: choose() is
/// thread-safe and does no I/O.
class DispatchTables {
 public:
  /// @p current: the running build and device (running_provenance()); only its identity fields
  /// are read, and rows of other arches than current.arch are not. @p bundle_compiler: the
  /// compiler of the kernel bundle's entries for this arch (Bundle::compiler_for; "" without a
  /// bundle). A row is fresh when its compiler is current.compiler or this one (its kernel is then
  /// served from the bundle, or compiled by the installed JIT), so a machine without NVRTC, or
  /// with another NVRTC, does not make the shipped rows stale.
  DispatchTables(ArchInfo arch, db::Provenance current, std::string bundle_compiler = {});

  /// Loads the winners of this arch from the database at `path` into the user or system table,
  /// single-tensor and multi-tensor (group) winners alike, each family's rows judged against its
  /// own template hash (SingleFamily / MultiFamily::template_hash) and their labels parsed as that
  /// family's variants, valid for the arch and dtype.
  /// A missing file is skipped silently; a damaged or unreadable one with one warning; invalid
  /// rows and stale rows are counted and reported in one warning per kind and family; a file that
  /// a user other than the effective user and root can change (trust::database_writable_by_others)
  /// is still read, with one warning. Returns the number of entries kept.
  std::size_t load(Source which, const std::string& path);

  /// Reads the environment overrides of the kernel families (the one place they are read): each
  /// family's forced label (F::kForceLabelEnv: AMAX_TUNE_FORCE_LABEL, AMAX_TUNE_FORCE_MULTI_LABEL,
  /// AMAX_TUNE_FORCE_QUANTIZE_LABEL);
  /// for single tensors also AMAX_TUNE_FORCE_STRATEGY (a name of kStrategies) and ROCm
  /// TransformerEngine's NVTE_USE_ATOMIC_AMAX=1 (= strategy atomic). Bad values, and a strategy the
  /// arch cannot run (strategy_unsupported_reason), are ignored with one warning each
  /// ("AMAX_TUNE_FORCE_MULTI_LABEL ignored: <parse error>").
  void read_environment();

  /// The decision of either family, in the lookup order of DESIGN.md section 4 (the one place it
  /// is made): the family's forced label when it is valid for the arch and dtype (else Choice::why
  /// says why not); for single tensors then a forced strategy on the built-in default; else the
  /// user table's nearest entry, else the system table's; else the family's built-in default.
  /// Nearest: for one tensor of n elements, db::serves_better (log2 distance, ties to the larger
  /// tuned n, then same-device rows, then the newer); for a dtype group of `shape`,
  /// db::serves_group_better (the L1 distance between half-octave buckets of tensors, total bytes
  /// and largest tensor, ties to the larger total, then more tensors, then same-device rows, then
  /// the newer). Thread-safe, no I/O.
  Choice<KernelConfig> choose(DType dtype, std::uint64_t n) const { return choose_in<KernelConfig>(dtype, n); }
  Choice<MultiConfig> choose(DType dtype, const GroupShape& shape) const {
    return choose_in<MultiConfig>(dtype, shape);
  }
  /// The quantize family's: its forced label (AMAX_TUNE_FORCE_QUANTIZE_LABEL) when valid, else the
  /// user and system tables' entry nearest in n (as for one tensor), else
  /// QuantizeFamily::builtin_default. Thread-safe, no I/O.
  Choice<QuantizeConfig> choose_quantize(DType dtype, std::uint64_t n) const {
    return choose_in<QuantizeConfig>(dtype, n);
  }

  /// The loaded entries of one family, table and dtype.
  template <class Config = KernelConfig>
  const std::vector<EntryOf<Config>>& table(Source which, DType dtype) const {
    const auto& t = family<Config>();
    return (which == Source::user_db ? t.user : t.system)[index(dtype)];
  }
  /// The family's forced label (read_environment), if any.
  template <class Config>
  const std::optional<Config>& forced_label() const noexcept { return family<Config>().forced; }
  /// The warnings issued so far (also logged with spdlog), for tests and `explain`.
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

 private:
  template <class Config>
  struct Tables {
    std::array<std::vector<EntryOf<Config>>, kDTypeCount> user{}, system{};
    std::optional<Config> forced;
  };
  template <class Config>
  Tables<Config>& family() noexcept { return std::get<Tables<Config>>(tables_); }
  template <class Config>
  const Tables<Config>& family() const noexcept { return std::get<Tables<Config>>(tables_); }
  template <class Config>
  Choice<Config> choose_in(DType dtype, const typename DispatchRow<Config>::Query& query) const;
  /// Loads one family's rows of `tdb` into table `which` (load()); DbError when they cannot be read.
  template <class Config>
  std::size_t load_family(Source which, const std::string& path, const db::TuningDb& tdb);
  void warn(std::string message);
  /// db::stale_fields of a row against `current`, less the compiler when the row was compiled by
  /// the bundle's compiler (its kernels are served from the bundle): the one freshness rule of both
  /// families.
  std::vector<std::string_view> stale_fields_of(const db::Provenance& row, const db::Provenance& current) const;
  ArchInfo arch_;
  db::Provenance current_;
  std::string bundle_compiler_;
  // The quantize tables are filled once the tuning database holds the family (until then: its
  // forced label and built-in default).
  std::tuple<Tables<KernelConfig>, Tables<MultiConfig>, Tables<QuantizeConfig>> tables_;
  std::optional<Strategy> force_strategy_;
  std::vector<std::string> warnings_;
};

/// The entry of `table` that serves n best by the nearest-size rule of amax/db/nearest.hpp (the one
/// TuningDb::lookup_nearest uses): nearest in log2, a tie to the larger tuned size, then a
/// same-device row, then the newer; n = 0 counts as 1. nullptr when the table is empty.
const TableEntry* nearest_entry(const std::vector<TableEntry>& table, std::uint64_t n);

}  // namespace amax
