#include "amax/tuner.hpp"

#include "session.hpp"

namespace amax::tune {
namespace detail {

void Session::run() {
  const auto t0 = Clock::now();
  Vendor vendor = ArchInfo::parse(o_.arch).vendor;
  // The database is checked first without changing it (cheap, and a problem is reported even
  // where the device is missing); it is opened for writing only once the device checks passed.
  check_db();
  if (device_count(vendor) <= o_.device)
    throw TuneError(fmt::format("no {} device {} to tune for --arch {}: {}", to_string(vendor), o_.device, o_.arch,
                                device_count(vendor) == 0 ? no_device_reason(vendor) : "ordinal out of range"));
  backend_ = make_backend(vendor, o_.device);
  const DeviceInfo& dev = backend_->device();
  // `--arch gfx942` is served by a device reporting gfx942:sramecc+:xnack-; entries are keyed by
  // the device's full target ID, so xnack+ and xnack- results never mix.
  if (!ArchInfo::parse(o_.arch).accepts(ArchInfo::parse(dev.arch)))
    throw TuneError(fmt::format("--arch {} does not match device {} ({}), whose arch is {}; run with --arch {}",
                                o_.arch, o_.device, dev.name, dev.arch, dev.arch));
  arch_ = ArchInfo::parse(dev.arch);
  compiler_ = make_compiler(vendor);
  kernels_ = std::make_unique<KernelCache>(*backend_, compiler_, BinaryCache(o_.cache_dir));
  report_.device = dev;
  report_.compiler = compiler_->version();
  report_.protocol = o_.protocol.describe();
  current_ = running_provenance(dev, compiler_->version());
  current_.timing_protocol = o_.protocol.describe();
  current_multi_ = current_;
  current_multi_.template_hash = multi_template_hash();
  open_db();
  plan_keys();
  plan_groups();
  if (work_.empty() && group_work_.empty()) {
    progress("nothing to tune: every key and group already has a winner for this device and build (use --retune)");
  } else {
    build_kernels();
    if (!work_.empty()) tune_keys(t0);
    if (!group_work_.empty()) tune_groups(t0);
  }
  report_.wall_s = seconds_since(t0);
}

// Read-only checks of the database: nothing is created, moved or written (an existing file is
// read as immutable where it has no -wal/-shm beside it, so that none appear). A damaged file
// is refused unless --rebuild (then open_db moves it aside), as are a newer schema and, unless
// db_in_memory, a file or directory this process cannot write.
void Session::check_db() {
  const std::string where = o_.db_path.string();
  if (o_.rebuild_db && o_.db_in_memory)
    throw TuneError("--rebuild moves a damaged database aside and --db-in-memory never writes it: give one of them");
  if (!o_.db_in_memory)
    if (const std::string why = db::TuningDb::write_problem(o_.db_path); !why.empty())
      throw TuneError(fmt::format(
          "cannot tune into the tuning database {}: {}; nothing was tuned. Make it writable, name another "
          "database with --db FILE (or $AMAX_TUNE_DB), or tune without keeping the results with --db-in-memory "
          "(--json FILE keeps the summary)", where, why));
  std::error_code ec;
  if (!std::filesystem::exists(o_.db_path, ec) || std::filesystem::file_size(o_.db_path, ec) == 0) return;
  db::OpenOptions ro;
  ro.immutable = !std::filesystem::exists(o_.db_path.string() + "-wal", ec) &&
                 !std::filesystem::exists(o_.db_path.string() + "-shm", ec);
  try {
    (void)db::TuningDb::open(o_.db_path, db::OpenMode::ReadOnly, ro);
  } catch (const db::DbError& e) {
    if (e.kind() != db::ErrorKind::Corrupt || !o_.rebuild_db)
      throw TuneError(fmt::format("cannot use the tuning database {}: {}", where, e.what()));
    rebuild_ = true;
  }
}

// Opens the database for the run (after check_db and the device checks): creates or migrates
// it, or moves a damaged one aside (--rebuild); with db_in_memory an in-memory copy.
void Session::open_db() {
  db::OpenOptions opts;
  opts.memory_only = o_.db_in_memory;
  try {
    if (rebuild_) {
      std::filesystem::path moved;
      db_.emplace(db::TuningDb::rebuild(o_.db_path, &moved, opts));
      progress(fmt::format("damaged database moved to {}; starting a new one", moved.string()));
    } else {
      db_.emplace(db::TuningDb::open(o_.db_path, db::OpenMode::ReadWrite, opts));
    }
  } catch (const db::DbError& e) {
    throw TuneError(fmt::format("cannot use the tuning database {}: {}", o_.db_path.string(), e.what()));
  }
  if (std::string w = trust::database_warning("tuning database", o_.db_path); !w.empty()) log().warn("{}", w);
  report_.db_in_memory = db_->in_memory();
  if (report_.db_in_memory)
    progress(fmt::format("--db-in-memory: {} is not written; results are kept in memory only for this run "
                         "(--json FILE saves the summary)", o_.db_path.string()));
}

// Which keys to measure, and which are already done (resumed).
void Session::plan_keys() {
  std::vector<std::pair<DType, std::uint64_t>> wanted;
  if (o_.stale_only) {
    for (const auto& s : db_->stale_keys(current_))
      for (DType d : o_.dtypes)
        if (s.key.arch == arch_.name && d == s.key.dtype) wanted.emplace_back(d, s.key.n);
    // Winners of this identity measured before GPU time (host-inclusive) are re-tuned too.
    for (DType d : o_.dtypes)
      for (const auto& w : db_->winners(db::WinnerFilter{arch_.name, d}))
        if (db::same_identity(w.provenance, current_) && !measured_in_gpu_time(w.provenance.timing_protocol) &&
            std::find(wanted.begin(), wanted.end(), std::pair{d, w.key.n}) == wanted.end())
          wanted.emplace_back(d, w.key.n);
  } else if (o_.tune_sizes) {
    const auto sizes = o_.sizes.empty() ? default_sizes() : o_.sizes;
    for (DType d : o_.dtypes)
      for (auto n : sizes) wanted.emplace_back(d, n);
  }
  const DeviceInfo& dev = backend_->device();
  for (auto [d, n] : wanted)
    if (const auto why = fit_error(dev, d, n); !why.empty()) throw TuneError(why);
  for (auto [d, n] : wanted) {
    const db::TuningKey key{arch_.name, d, n};
    if (!o_.retune && !o_.stale_only && db_->has_winner(key, current_)) {
      KeyResult k;
      k.dtype = d;
      k.n = n;
      k.resumed = true;
      for (auto& w : db_->winners(db::WinnerFilter{arch_.name, d}))
        if (w.key.n == n && db::same_identity(w.provenance, current_)) k.stored = w;
      report_.keys.push_back(std::move(k));
    } else {
      work_.emplace_back(d, n);
    }
  }
  if (!report_.keys.empty())
    progress(fmt::format("resuming: {} of {} keys already tuned for this device and build are kept",
                         report_.keys.size(), wanted.size()));
}

// Which groups to measure, and which are already done (resumed).
void Session::plan_groups() {
  std::vector<GroupSpec> wanted;
  if (o_.stale_only) {
    for (const auto& k : db_->stale_group_keys(current_multi_))
      for (DType d : o_.dtypes)
        if (k.key.arch == arch_.name && d == k.key.dtype && k.key.largest_bytes % info(d).bytes == 0)
          wanted.push_back({k.key.tensors, k.key.largest_bytes / info(d).bytes, d});
    // Group winners of this identity measured before GPU time are re-tuned too (a uniform group:
    // total = tensors x largest).
    for (DType d : o_.dtypes)
      for (const auto& w : db_->group_winners(db::WinnerFilter{arch_.name, d}))
        if (db::same_identity(w.provenance, current_multi_) && !measured_in_gpu_time(w.provenance.timing_protocol) &&
            w.key.largest_bytes % info(d).bytes == 0 && w.key.total_bytes == w.key.tensors * w.key.largest_bytes) {
          const GroupSpec g{w.key.tensors, w.key.largest_bytes / info(d).bytes, d};
          if (std::none_of(wanted.begin(), wanted.end(), [&](const GroupSpec& h) {
                return h.tensors == g.tensors && h.n == g.n && h.dtype == g.dtype;
              }))
            wanted.push_back(g);
        }
  } else {
    wanted = o_.groups ? *o_.groups : default_groups(o_.dtypes);
  }
  const DeviceInfo& dev = backend_->device();
  for (const GroupSpec& g : wanted)
    if (const auto why = fit_error(dev, g.dtype, g.tensors * g.n); !why.empty())
      throw TuneError(fmt::format("group {}: {}", g.name(), why));
  std::size_t resumed = 0;
  for (const GroupSpec& g : wanted) {
    const db::GroupKey key = group_key(arch_.name, g);
    if (!o_.retune && !o_.stale_only && db_->has_group_winner(key, current_multi_)) {
      GroupResult r;
      r.spec = g;
      r.dtype = g.dtype;
      r.n = g.tensors * g.n;
      r.resumed = true;
      report_.groups.push_back(std::move(r));
      ++resumed;
    } else {
      group_work_.push_back(g);
    }
  }
  if (resumed)
    progress(fmt::format("resuming: {} of {} multi-tensor groups already tuned for this device and build are kept",
                         resumed, wanted.size()));
}

}  // namespace detail

std::vector<std::uint64_t> default_sizes() {
  std::vector<std::uint64_t> s = power_of_two_sizes();
  for (std::uint64_t extra : {1000ull, 100000ull, 3000000ull, 50000000ull, 300000000ull}) s.push_back(extra);
  std::sort(s.begin(), s.end());
  return s;
}

TuneReport run_tuning(const TuneOptions& options) {
  TuneReport report;
  detail::Session(options, report).run();
  return report;
}

}  // namespace amax::tune
