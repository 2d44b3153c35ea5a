#include "amax/dispatch.hpp"

#include "amax/log.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "amax/db/nearest.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "amax/trust.hpp"

namespace amax {

KernelConfig builtin_default(const ArchInfo& arch, DType d, std::uint64_t n) {
  // AMD: ROCm TransformerEngine's shipped amax, every size (builtin_default_source cites it).
  if (arch.vendor == Vendor::amd) return transformer_engine_config(d, Strategy::two_stage);
  const std::uint32_t nvec = 16 / info(d).bytes;
  if (n <= (1ull << 21)) return {Strategy::one_pass, 512, nvec, 2, BlockCap::uncapped()};
  return {Strategy::atomic, 512, nvec, 4, BlockCap::uncapped()};
}

std::string builtin_default_source(const ArchInfo& arch) {
  // Kept short: amax_explain's detail holds 512 bytes with the database paths before this.
  if (arch.vendor == Vendor::amd)
    return "ROCm TransformerEngine's two-stage amax as shipped for AMD (512 threads, 32 bytes per thread per "
           "iteration, <= 65535 blocks, block maxima to a workspace, a one-block second stage: ROCm/"
           "TransformerEngine common/recipe/current_scaling.cu @01b61b5), not tuned on an AMD GPU";
  return "the H200 winners of 2026-11-30 (one_pass.t512 u2 up to 2^21 elements, atomic.t512 u4 above)";
}

const TableEntry* nearest_entry(const std::vector<TableEntry>& v, std::uint64_t n) {
  const std::size_t i = db::nearest_size(n, v.size(), [&](std::size_t k) {
    return db::SizeCandidate{v[k].n, v[k].same_device, v[k].timestamp};
  });
  return i < v.size() ? &v[i] : nullptr;
}

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

const std::vector<TableEntry>& DispatchTables::table(Source which, DType d) const {
  return (which == Source::user_db ? user_ : system_)[index(d)];
}

const std::vector<GroupEntry>& DispatchTables::group_table(Source which, DType d) const {
  return (which == Source::user_db ? user_groups_ : system_groups_)[index(d)];
}

const GroupEntry* DispatchTables::choose_group(DType d, const GroupShape& shape, Source* which) const {
  const db::GroupBucket q = db::group_bucket(shape);
  for (Source s : {Source::user_db, Source::system_db}) {
    const auto& v = group_table(s, d);
    const std::size_t i = db::nearest_group(q, v.size(), [&](std::size_t k) {
      return db::GroupCandidate{v[k].bucket, v[k].same_device, v[k].timestamp};
    });
    if (i < v.size()) {
      if (which) *which = s;
      return &v[i];
    }
  }
  return nullptr;
}

std::size_t DispatchTables::load_groups(Source which, const std::string& path, db::TuningDb& tdb) {
  const char* what = which == Source::user_db ? "user" : "system";
  auto& out = which == Source::user_db ? user_groups_ : system_groups_;
  std::vector<db::GroupWinnerRow> rows;
  try {
    rows = tdb.group_winners(db::WinnerFilter{arch_.name, std::nullopt});
  } catch (const db::DbError& e) {
    warn(fmt::format("{} database {}: its multi-tensor entries are unusable and are skipped: {}", what, path, e.what()));
    return 0;
  }
  db::Provenance current = current_;
  current.template_hash = multi_template_hash();
  std::size_t kept = 0, stale = 0, invalid = 0;
  std::string first_invalid;
  for (const auto& r : rows) {
    MultiConfig c;
    if (const auto why = unusable_row(arch_, r.key.dtype, r.winner, c)) {
      if (invalid++ == 0) first_invalid = fmt::format("{}: {}", db::to_string(r.key), *why);
      continue;
    }
    if (!stale_fields_of(r.provenance, current).empty()) {
      ++stale;
      continue;
    }
    const GroupShape shape{r.key.tensors, r.key.total_bytes, r.key.largest_bytes};
    out[index(r.key.dtype)].push_back(GroupEntry{
        c, shape, db::group_bucket(shape), r.winner.median_us, r.winner.gbps,
        db::same_device(r.provenance, current), r.provenance.timestamp,
        fmt::format("measured on {} at {}", db::describe_device(r.provenance), r.provenance.timestamp)});
    ++kept;
  }
  if (invalid)
    warn(fmt::format("{} database {}: {} multi-tensor entries for {} are invalid and are skipped (first: {})", what,
                     path, invalid, arch_.name, first_invalid));
  if (stale)
    warn(fmt::format("{} database {}: {} multi-tensor entries were made with other templates, compiler or tool and "
                     "are not used; re-tune them with `amax-tune --stale-only`", what, path, stale));
  return kept;
}

std::size_t DispatchTables::load(Source which, const std::string& path) {
  const char* what = which == Source::user_db ? "user" : "system";
  auto& out = which == Source::user_db ? user_ : system_;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return 0;
  std::vector<db::WinnerRow> rows;
  std::optional<db::TuningDb> tdb;
  try {
    tdb.emplace(db::TuningDb::open(path, db::OpenMode::ReadOnly));
    rows = tdb->winners(db::WinnerFilter{arch_.name, std::nullopt});
  } catch (const db::DbError& e) {
    warn(fmt::format("{} database {} is unusable and is skipped: {}", what, path, e.what()));
    return 0;
  }
  // Another user's rows are still used (validated below, they can only pick a generated
  // variant), with one warning: they can make this process pick a slower one.
  if (std::string w = trust::database_warning(fmt::format("{} database", what), path); !w.empty()) warn(std::move(w));
  std::size_t kept = 0, stale = 0, invalid = 0;
  std::set<std::string> stale_fields;
  std::string first_invalid;
  for (const auto& r : rows) {
    const DType d = r.key.dtype;
    KernelConfig c;
    if (const auto why = unusable_row(arch_, d, r.winner, c)) {
      if (invalid++ == 0) first_invalid = fmt::format("{} n={}: {}", to_string(r.key.dtype), r.key.n, *why);
      continue;
    }
    const auto f = stale_fields_of(r.provenance, current_);
    if (!f.empty()) {
      ++stale;
      for (auto s : f) stale_fields.insert(std::string(s));
      continue;
    }
    out[index(d)].push_back(TableEntry{
        c, r.key.n, r.winner.median_us, r.winner.gbps, db::same_device(r.provenance, current_), r.provenance.timestamp,
        fmt::format("measured on {} at {}", db::describe_device(r.provenance), r.provenance.timestamp)});
    ++kept;
  }
  if (invalid)
    warn(fmt::format("{} database {}: {} entries for {} are invalid and are skipped (first: {})", what, path, invalid,
                     arch_.name, first_invalid));
  if (stale) {
    std::string fields;
    for (const auto& f : stale_fields) fields += (fields.empty() ? "" : ", ") + f;
    warn(fmt::format("{} database {}: {} entries were made with another {} and are not used; re-tune them with "
                     "`amax-tune --stale-only`", what, path, stale, fields));
  }
  for (auto& v : out)
    std::stable_sort(v.begin(), v.end(), [](const TableEntry& a, const TableEntry& b) {
      return a.n != b.n ? a.n < b.n : a.same_device > b.same_device;
    });
  return kept + load_groups(which, path, *tdb);
}

void DispatchTables::read_environment() {
  if (const char* l = std::getenv("AMAX_TUNE_FORCE_LABEL"); l && *l) {
    try {
      force_label_ = KernelConfig::parse(l);
    } catch (const std::invalid_argument& e) {
      warn(fmt::format("AMAX_TUNE_FORCE_LABEL ignored: {}", e.what()));
    }
  }
  if (const char* s = std::getenv("AMAX_TUNE_FORCE_STRATEGY"); s && *s) {
    force_strategy_ = parse_strategy(s);
    if (!force_strategy_) {
      warn(fmt::format("AMAX_TUNE_FORCE_STRATEGY='{}' ignored (expected atomic, two_stage, one_pass, self_reset, spin or first_reset)", s));
    } else if (*force_strategy_ == Strategy::spin) {
      if (auto why = spin_unsupported_reason(arch_)) {
        warn(fmt::format("AMAX_TUNE_FORCE_STRATEGY=spin ignored: {}", *why));
        force_strategy_.reset();
      }
    }
  } else if (const char* te = std::getenv("NVTE_USE_ATOMIC_AMAX"); te && std::string(te) == "1") {
    force_strategy_ = Strategy::atomic;
  }
  if (const char* m = std::getenv("AMAX_TUNE_FORCE_MULTI_LABEL"); m && *m) {
    try {
      force_multi_label_ = MultiConfig::parse(m);
    } catch (const std::invalid_argument& e) {
      warn(fmt::format("AMAX_TUNE_FORCE_MULTI_LABEL ignored: {}", e.what()));
    }
  }
}

GroupChoice DispatchTables::choose_multi(DType d, const GroupShape& shape) const {
  GroupChoice out;
  if (force_multi_label_) {
    if (auto bad = force_multi_label_->validate(arch_, d)) {
      out.why = fmt::format("AMAX_TUNE_FORCE_MULTI_LABEL is not valid for {} {} ({}): ", arch_.name, to_string(d), *bad);
    } else {
      out.config = *force_multi_label_;
      out.config.epilogue = Epilogue::amax;
      out.source = Source::override_env;
      return out;
    }
  }
  Source from = Source::builtin_default;
  if (const GroupEntry* e = choose_group(d, shape, &from)) {
    out.config = e->config;
    out.source = from;
    out.entry = e;
    return out;
  }
  out.config = builtin_multi_default(arch_, d, shape);
  return out;
}

Choice DispatchTables::choose(DType d, std::uint64_t n) const {
  if (force_label_ && !force_label_->validate(arch_, d)) return {*force_label_, Source::override_env, nullptr};
  if (force_strategy_) {
    KernelConfig c = builtin_default(arch_, d, n);
    c.strategy = *force_strategy_;
    return {c, Source::override_env, nullptr};
  }
  if (const TableEntry* e = nearest_entry(user_[index(d)], n)) return {e->config, Source::user_db, e};
  if (const TableEntry* e = nearest_entry(system_[index(d)], n)) return {e->config, Source::system_db, e};
  return {builtin_default(arch_, d, n), Source::builtin_default, nullptr};
}

}  // namespace amax
