#include "amax/dispatch.hpp"

#include "amax/log.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "amax/db/nearest.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/family.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "amax/trust.hpp"

namespace amax {

namespace {
// The entry of `v` (entries with n, same_device, timestamp) that serves n best: db::nearest_size.
template <class Entry>
const Entry* nearest_by_size(const std::vector<Entry>& v, std::uint64_t n) {
  const std::size_t i = db::nearest_size(n, v.size(), [&](std::size_t k) {
    return db::SizeCandidate{v[k].n, v[k].same_device, v[k].timestamp};
  });
  return i < v.size() ? &v[i] : nullptr;
}
}  // namespace

const TableEntry* nearest_entry(const std::vector<TableEntry>& v, std::uint64_t n) { return nearest_by_size(v, n); }

db::Provenance running_provenance(const DeviceInfo& dev, std::string compiler_version) {
  return db::Provenance{.device_name = dev.name,
                        .arch = dev.arch,
                        .cu_count = dev.cu_count,
                        .driver_version = dev.driver_version,
                        .compiler = std::move(compiler_version),
                        .template_hash = template_hash(),
                        .tool_version = std::string(generator_version())};
}

namespace {

// Why a winner row of either family (Config: KernelConfig or MultiConfig) is not usable on `arch`
// for `d`: its label does not parse, is not valid for the arch and dtype, is a fused (.scale)
// label, or its time is not positive; nullopt when it is usable (`config` then holds it). The one
// row rule of both tables.
template <class Config>
std::optional<std::string> unusable_row(const ArchInfo& arch, DType d, const db::Winner& w, Config& config) {
  std::optional<std::string> why;
  try {
    config = Config::parse(w.label);
    why = config.validate(arch, d);
    if (!why && config.epilogue != Epilogue::amax) why = "a fused (.scale) label: the tables hold amax-only winners";
  } catch (const std::invalid_argument& e) {
    why = e.what();
  }
  if (!why && !(w.median_us > 0)) why = fmt::format("time {} us is not positive", w.median_us);
  return why;
}

// Per-family rows of the database, for DispatchTables::load_family: the rows of an arch, how an
// invalid row is named, the table entry a usable row becomes, and the entry that serves a query.
template <class Config>
struct RowsOf;
template <>
struct RowsOf<KernelConfig> {
  static constexpr std::string_view kWhat = "";  // "N entries": single-tensor rows are the plain ones
  static auto rows(const db::TuningDb& tdb, const db::WinnerFilter& f) { return tdb.winners<SingleFamily>(f); }
  static std::string name(const db::WinnerRow& r) { return fmt::format("{} n={}", to_string(r.key.dtype), r.key.n); }
  static TableEntry entry(const db::WinnerRow& r, const KernelConfig& c, bool same_device, std::string where) {
    return {c, r.key.n, r.winner.median_us, r.winner.gbps, same_device, r.provenance.timestamp, std::move(where)};
  }
  static const TableEntry* nearest(const std::vector<TableEntry>& v, std::uint64_t n) { return nearest_entry(v, n); }
};
template <>
struct RowsOf<MultiConfig> {
  static constexpr std::string_view kWhat = "multi-tensor ";
  static auto rows(const db::TuningDb& tdb, const db::WinnerFilter& f) { return tdb.winners<MultiFamily>(f); }
  static std::string name(const db::GroupWinnerRow& r) { return db::to_string(r.key); }
  static GroupEntry entry(const db::GroupWinnerRow& r, const MultiConfig& c, bool same_device, std::string where) {
    const GroupShape shape{r.key.tensors, r.key.total_bytes, r.key.largest_bytes};
    return {c, shape, db::group_bucket(shape), r.winner.median_us, r.winner.gbps, same_device, r.provenance.timestamp,
            std::move(where)};
  }
  static const GroupEntry* nearest(const std::vector<GroupEntry>& v, const GroupShape& shape) {
    const std::size_t i = db::nearest_group(db::group_bucket(shape), v.size(), [&](std::size_t k) {
      return db::GroupCandidate{v[k].bucket, v[k].same_device, v[k].timestamp};
    });
    return i < v.size() ? &v[i] : nullptr;
  }
};

template <>
struct RowsOf<QuantizeConfig> {
  static const QuantizeEntry* nearest(const std::vector<QuantizeEntry>& v, std::uint64_t n) {
    return nearest_by_size(v, n);
  }
};

}  // namespace

DispatchTables::DispatchTables(ArchInfo arch, db::Provenance current, std::string bundle_compiler)
    : arch_(std::move(arch)), current_(std::move(current)), bundle_compiler_(std::move(bundle_compiler)) {}

void DispatchTables::warn(std::string m) {
  log().warn("{}", m);
  warnings_.push_back(std::move(m));
}

std::vector<std::string_view> DispatchTables::stale_fields_of(const db::Provenance& row,
                                                              const db::Provenance& current) const {
  auto f = db::stale_fields(row, current);
  if (!bundle_compiler_.empty() && row.compiler == bundle_compiler_)  // its kernels come from the bundle
    f.erase(std::remove(f.begin(), f.end(), std::string_view("compiler")), f.end());
  return f;
}

template <class Config>
std::size_t DispatchTables::load_family(Source which, const std::string& path, const db::TuningDb& tdb) {
  using F = family_of_t<Config>;
  using R = RowsOf<Config>;
  const char* what = which == Source::user_db ? "user" : "system";
  auto& out = which == Source::user_db ? family<Config>().user : family<Config>().system;
  const auto rows = R::rows(tdb, db::WinnerFilter{arch_.name, std::nullopt});
  db::Provenance current = current_;
  current.template_hash = F::template_hash();
  std::size_t kept = 0, stale = 0, invalid = 0;
  std::set<std::string> stale_fields;
  std::string first_invalid;
  for (const auto& r : rows) {
    const DType d = r.key.dtype;
    Config c;
    if (const auto why = unusable_row(arch_, d, r.winner, c)) {
      if (invalid++ == 0) first_invalid = fmt::format("{}: {}", R::name(r), *why);
      continue;
    }
    if (const auto f = stale_fields_of(r.provenance, current); !f.empty()) {
      ++stale;
      for (auto s : f) stale_fields.insert(std::string(s));
      continue;
    }
    out[index(d)].push_back(
        R::entry(r, c, db::same_device(r.provenance, current),
                 fmt::format("measured on {} at {}", db::describe_device(r.provenance), r.provenance.timestamp)));
    ++kept;
  }
  if (invalid)
    warn(fmt::format("{} database {}: {} {}entries for {} are invalid and are skipped (first: {})", what, path, invalid,
                     R::kWhat, arch_.name, first_invalid));
  if (stale) {
    warn(fmt::format("{} database {}: {} {}entries were made with another {} and are not used; re-tune them with "
                     "`amax-tune --stale-only`", what, path, stale, R::kWhat, fmt::join(stale_fields, ", ")));
  }
  return kept;
}

std::size_t DispatchTables::load(Source which, const std::string& path) {
  const char* what = which == Source::user_db ? "user" : "system";
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return 0;
  std::optional<db::TuningDb> tdb;
  std::size_t kept = 0;
  try {
    tdb.emplace(db::TuningDb::open(path, db::OpenMode::ReadOnly));
    kept = load_family<KernelConfig>(which, path, *tdb);
  } catch (const db::DbError& e) {
    warn(fmt::format("{} database {} is unusable and is skipped: {}", what, path, e.what()));
    return 0;
  }
  // Another user's rows are still used (validated, they can only pick a generated variant), with
  // one warning: they can make this process pick a slower one.
  if (std::string w = trust::database_warning(fmt::format("{} database", what), path); !w.empty()) warn(std::move(w));
  try {
    kept += load_family<MultiConfig>(which, path, *tdb);
  } catch (const db::DbError& e) {
    warn(fmt::format("{} database {}: its multi-tensor entries are unusable and are skipped: {}", what, path, e.what()));
  }
  return kept;
}

void DispatchTables::read_environment() {
  auto read_label = [&]<class Config>(std::optional<Config>& forced, std::string_view var) {
    if (const char* l = std::getenv(std::string(var).c_str()); l && *l) {
      try {
        forced = Config::parse(l);
      } catch (const std::invalid_argument& e) {
        warn(fmt::format("{} ignored: {}", var, e.what()));
      }
    }
  };
  read_label(family<KernelConfig>().forced, SingleFamily::kForceLabelEnv);
  if (const char* s = std::getenv("AMAX_TUNE_FORCE_STRATEGY"); s && *s) {
    force_strategy_ = parse_strategy(s);
    if (!force_strategy_) {
      warn(fmt::format("AMAX_TUNE_FORCE_STRATEGY='{}' ignored (expected {})", s, strategy_names()));
    } else if (auto why = strategy_unsupported_reason(*force_strategy_, arch_)) {
      warn(fmt::format("AMAX_TUNE_FORCE_STRATEGY={} ignored: {}", s, *why));
      force_strategy_.reset();
    }
  } else if (const char* te = std::getenv("NVTE_USE_ATOMIC_AMAX"); te && std::string(te) == "1") {
    force_strategy_ = Strategy::atomic;
  }
  read_label(family<MultiConfig>().forced, MultiFamily::kForceLabelEnv);
  read_label(family<QuantizeConfig>().forced, QuantizeFamily::kForceLabelEnv);
}

template <class Config>
Choice<Config> DispatchTables::choose_in(DType d, const typename DispatchRow<Config>::Query& q) const {
  using F = family_of_t<Config>;
  using R = RowsOf<Config>;
  Choice<Config> out;
  const Tables<Config>& t = family<Config>();
  if (t.forced) {
    if (auto bad = t.forced->validate(arch_, d)) {
      out.why = fmt::format("{} is not valid for {} {} ({}): ", F::kForceLabelEnv, arch_.name, to_string(d), *bad);
    } else {
      out.config = *t.forced;
      if constexpr (requires { out.config.epilogue; }) out.config.epilogue = Epilogue::amax;
      out.source = Source::override_env;
      return out;
    }
  }
  if constexpr (F::kForcedStrategy) {
    if (force_strategy_) {
      out.config = builtin_default(arch_, d, q);
      out.config.strategy = *force_strategy_;
      out.source = Source::override_env;
      return out;
    }
  }
  for (Source s : {Source::user_db, Source::system_db})
    if (const EntryOf<Config>* e = R::nearest((s == Source::user_db ? t.user : t.system)[index(d)], q)) {
      out.config = e->config;
      out.source = s;
      out.entry = e;
      return out;
    }
  out.config = F::builtin_default(arch_, d, q);
  return out;
}

template Choice<KernelConfig> DispatchTables::choose_in(DType, const std::uint64_t&) const;
template Choice<MultiConfig> DispatchTables::choose_in(DType, const GroupShape&) const;
template Choice<QuantizeConfig> DispatchTables::choose_in(DType, const std::uint64_t&) const;

}  // namespace amax
