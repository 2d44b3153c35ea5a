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
  const auto td = Clock::now();
  if (device_count(vendor) <= o_.device)
    throw TuneError(fmt::format("no {} device {} to tune for --arch {}: {}", to_string(vendor), o_.device, o_.arch,
                                device_count(vendor) == 0 ? no_device_reason(vendor) : "ordinal out of range"));
  backend_ = make_backend(vendor, o_.device);
  report_.times.device_s = seconds_since(td);
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
  db::Provenance current = running_provenance(dev, compiler_->version());
  current.timing_protocol = o_.protocol.describe();
  std::apply([&](auto&... run) {
    ((run.current = current, run.current.template_hash = std::decay_t<decltype(run)>::Family::template_hash()), ...);
  }, runs_);
  open_db();
  plan<SingleFamily>();
  plan<MultiFamily>();
  if (family<SingleFamily>().work.empty() && family<MultiFamily>().work.empty()) {
    progress("nothing to tune: every key and group already has a winner for this device and build (use --retune)");
  } else {
    report_.times.startup_s = seconds_since(t0);
    // The input region needs only the device: it is allocated and filled while the kernels compile.
    const std::uint64_t max_bytes = std::max(max_input_bytes<SingleFamily>(), max_input_bytes<MultiFamily>());
    fill_ = std::async(std::launch::async, [this, max_bytes] {
      const auto tf = Clock::now();
      auto region = std::make_unique<InputRegion>(*backend_, max_bytes + 64);
      report_.times.fill_s = seconds_since(tf);  // read once fill_.get() returned
      return region;
    });
    build_kernels();
    tune_all<SingleFamily>(t0);
    tune_all<MultiFamily>(t0);
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

// Which work items of family F to measure, and which are already done (resumed): with --stale,
// the stale keys of the device and those of its winners of this identity measured before GPU time
// (host-inclusive); else the sizes or groups asked for. A winner of this identity is kept unless
// --retune.
template <class F>
void Session::plan() {
  using Fam = TuneFamily<F>;
  FamilyRun<F>& run = family<F>();
  std::vector<typename Fam::Work> wanted;
  if (o_.stale_only) {
    for (const auto& s : db_->stale_keys<F>(run.current))
      for (DType d : o_.dtypes)
        if (s.key.arch == arch_.name && d == s.key.dtype)
          if (const auto w = Fam::work_of(s.key, false)) wanted.push_back(*w);
    for (DType d : o_.dtypes)
      for (const auto& row : db_->winners<F>(db::WinnerFilter{arch_.name, d}))
        if (db::same_identity(row.provenance, run.current) && !measured_in_gpu_time(row.provenance.timing_protocol))
          if (const auto w = Fam::work_of(row.key, true); w && std::find(wanted.begin(), wanted.end(), *w) == wanted.end())
            wanted.push_back(*w);
  } else {
    wanted = Fam::wanted(o_, o_.dtypes);
  }
  for (const auto& w : wanted)
    if (const auto why = Fam::fit_problem(backend_->device(), w); !why.empty()) throw TuneError(why);
  std::size_t resumed = 0;
  for (const auto& w : wanted) {
    if (!o_.retune && !o_.stale_only && db_->has_winner<F>(Fam::key(arch_.name, w), run.current)) {
      Fam::results(report_).push_back(Fam::resumed(w, *db_, arch_.name, run.current));
      ++resumed;
    } else {
      run.work.push_back(w);
    }
  }
  if (resumed)
    progress(fmt::format("resuming: {} of {} {} already tuned for this device and build are kept", resumed,
                         wanted.size(), Fam::kKeys));
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
