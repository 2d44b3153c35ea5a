#include "amax/tuner.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "amax/code_object.hpp"
#include "amax/compile_pool.hpp"
#include "amax/device_buffer.hpp"
#include "amax/dispatch.hpp"
#include "amax/log.hpp"
#include "amax/record.hpp"
#include "amax/reference.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/render.hpp"
#include "amax/runner_source.hpp"
#include "amax/trust.hpp"
#include "amax/verify.hpp"

namespace amax::tune {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string fmt_duration(double s) {
  const int t = static_cast<int>(std::lround(s));
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

struct Built {
  std::optional<KernelBinary> binary;
  BuildOutcome outcome;  // compiled (then loaded), or why not
  ResourceUsage usage;
};

// Orchestration of a run: device and database checks, the keys to tune, the compile pool, then
// per key the verification passes (verify.hpp), the search (search.hpp) over samples the runner
// takes (runner.hpp), and the recording (record.hpp).
class Session {
 public:
  Session(const TuneOptions& o, TuneReport& report) : o_(o), report_(report) {}

  void run() {
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

 private:
  // Read-only checks of the database: nothing is created, moved or written (an existing file is
  // read as immutable where it has no -wal/-shm beside it, so that none appear). A damaged file
  // is refused unless --rebuild (then open_db moves it aside), as are a newer schema and, unless
  // db_in_memory, a file or directory this process cannot write.
  void check_db() {
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
  void open_db() {
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
  void plan_keys() {
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
  void plan_groups() {
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

  // Compiles (or reads from the disk cache) every single-tensor kernel of the keys' candidates and
  // every multi-tensor kernel of the groups' candidates in one pool (the longer multi-tensor
  // compiles first), reporting progress on stderr, then loads them on this thread.
  void build_kernels() {
    const auto t0 = Clock::now();
    std::set<DType> dtypes;
    for (auto& [d, n] : work_) dtypes.insert(d);
    if (!group_work_.empty()) {
      group_ctx_.emplace(GroupTuneContext{*backend_, *kernels_, arch_, o_.protocol, o_.space, reference_,
                                          [this](const std::string& l) { progress(l); }});
    }
    std::vector<std::pair<KernelConfig, DType>> todo;
    for (DType d : dtypes) {
      cands_[d] = candidates(arch_, d, o_.space);
      if (!o_.strategies.empty())
        std::erase_if(cands_[d], [&](const KernelConfig& c) {
          return std::find(o_.strategies.begin(), o_.strategies.end(), c.strategy) == o_.strategies.end();
        });
      for (const auto& c : distinct_kernels(cands_[d])) todo.emplace_back(c, d);
    }
    std::vector<MultiKernelBuild> multi;
    if (group_ctx_) {
      multi = multi_kernels_needed(*group_ctx_, group_work_);
      const auto cu = static_cast<std::uint32_t>(backend_->device().cu_count);
      std::size_t timed = 0, all = 0;
      for (const GroupSpec& g : group_work_) {
        timed += group_candidates(arch_, o_.space, g, cu).size();
        all += multi_candidates(arch_, g.dtype, o_.space, g.shape()).size();
      }
      progress(fmt::format("multi-tensor groups: {} variants to time over {} groups ({} others left out: their "
                           "launches repeat a timed variant's work)", timed, group_work_.size(), all - timed));
    }
    const unsigned jobs = o_.jobs ? o_.jobs : std::max(1u, std::thread::hardware_concurrency());
    progress(fmt::format("compiling {} kernels ({} single-tensor, {} multi-tensor) on {} threads",
                         todo.size() + multi.size(), todo.size(), multi.size(), jobs));
    std::vector<Built> built(todo.size());
    const bool tty = o_.progress && isatty(STDERR_FILENO);
    CompileProgress shown(todo.size() + multi.size(), tty, [this](const std::string& text) {
      if (o_.progress) std::fputs(text.c_str(), stderr);
    });
    run_compile_pool(
        multi.size() + todo.size(), jobs,
        [&](std::size_t j) {
          if (j < multi.size()) return compile_multi_kernel(*group_ctx_, multi[j]);
          const std::size_t i = j - multi.size();
          try {
            built[i].binary = build_kernel(*compiler_, kernels_->binaries(), arch_, todo[i].first, todo[i].second);
            built[i].usage = built[i].binary->usage;
            if (arch_.vendor == Vendor::amd && can_read_amdgpu_code_objects()) {
              auto u = amdgpu_resource_usage(built[i].binary->binary);
              const auto it = u.find(kernel_name(todo[i].first, todo[i].second));
              if (it != u.end()) built[i].usage = it->second;
            }
          } catch (const CompileError& e) {
            built[i].outcome = BuildOutcome::compile_failure(e.what());
          }
        },
        std::chrono::milliseconds(100), [&](std::size_t done) { shown.update(done); });
    for (std::size_t i = 0; i < todo.size(); ++i) {
      const std::string name = kernel_name(todo[i].first, todo[i].second);
      if (built[i].binary) {
        (built[i].binary->from_cache ? report_.kernels_cached : report_.kernels_compiled)++;
        try {
          kernels_->load(std::move(*built[i].binary));
        } catch (const BackendError& e) {
          built[i].outcome = BuildOutcome::load_failure(e.what());
        }
      }
      builds_[name] = built[i].outcome;
      usage_[name] = built[i].usage;
    }
    reference_ = ReferenceKernels::load(*backend_, *compiler_, kernels_->binaries());
    if (group_ctx_)
      multi_builds_ =
          load_multi_kernels(*group_ctx_, multi, &report_.multi_kernels_compiled, &report_.multi_kernels_cached);
    report_.compile_s = seconds_since(t0);
    progress(fmt::format("{}kernels: {} compiled, {} from the cache ({}){}, {:.1f} s", tty ? "\r" : "",
                         report_.kernels_compiled, report_.kernels_cached,
                         o_.cache_dir.empty() ? "disabled" : o_.cache_dir.string(),
                         group_ctx_ ? fmt::format("; multi-tensor: {} compiled, {} from the cache",
                                                  report_.multi_kernels_compiled, report_.multi_kernels_cached)
                                    : std::string(),
                         report_.compile_s));
  }

  const LoadedKernel* kernel(const KernelConfig& c, DType d) const {
    return builds_.at(kernel_name(c, d)).ok() ? kernels_->find(c, d) : nullptr;
  }

  // The sample source of the search: variant i of the key being tuned, timed by the runner.
  class Source : public RunnerSource {
   public:
    Source(Session& s, DType d, std::uint64_t n, const std::vector<VariantResult>& vs)
        : RunnerSource(*s.runner_, n * info(d).bytes), s_(s), d_(d), n_(n), vs_(vs) {}

   private:
    Timed& timed(std::size_t i) override {
      auto it = timed_.find(i);
      if (it != timed_.end()) return it->second;
      const LoadedKernel& k = *s_.kernel(vs_[i].config, d_);
      const LaunchShape shape =
          launch_shape(vs_[i].config, n_, static_cast<std::uint32_t>(s_.backend_->device().cu_count), k.resident_per_cu);
      const LaunchBuffers buffers{s_.out_.get<float>(), s_.workspace_.get(), s_.counter_.get<std::uint32_t>()};
      return timed_[i] = variant_timed(*s_.backend_, k, shape, n_, buffers, s_.stream_);
    }
    Session& s_;
    DType d_;
    std::uint64_t n_;
    const std::vector<VariantResult>& vs_;
    std::map<std::size_t, Timed> timed_;
  };

  Stats time_ceiling(std::uint64_t n, DType d) {
    const std::uint64_t bytes = n * info(d).bytes;
    Timed t{[&](const void* in) { reference_.launch_stream_read(*backend_, in, bytes, sink_.get(), stream_); }};
    runner_->prepare(t, bytes, /*warm_up=*/false);
    return Stats::of(runner_->measure(t, bytes, o_.protocol.final_rounds));
  }

  std::vector<const LoadedKernel*> kernels_of(const std::vector<KernelConfig>& cs, DType d) const {
    std::vector<const LoadedKernel*> ks;
    for (const auto& c : cs) ks.push_back(kernel(c, d));
    return ks;
  }

  void tune_keys(Clock::time_point t0) {
    std::uint64_t max_bytes = 0, max_ws = 4;
    std::size_t max_variants = 0;
    const auto cu = static_cast<std::uint32_t>(backend_->device().cu_count);
    for (auto [d, n] : work_) {
      max_bytes = std::max(max_bytes, n * info(d).bytes);
      max_variants = std::max(max_variants, cands_[d].size());
      for (const auto& c : cands_[d]) {
        max_ws = std::max(max_ws, launch_shape(c, n, cu).workspace_bytes);
        for (std::uint64_t v : kSmallVerifySizes) max_ws = std::max(max_ws, launch_shape(c, v, cu).workspace_bytes);
      }
    }
    inputs_ = std::make_unique<InputRegion>(*backend_, max_bytes + 64);
    stream_ = backend_->create_stream();
    gate_ = std::make_unique<Gate>(*backend_, reference_.gate, o_.protocol.gate_timeout_ms);
    runner_ = std::make_unique<Runner>(*backend_, stream_, *inputs_, o_.protocol, gate_.get());
    out_ = DeviceBuffer(*backend_, 4);
    workspace_ = DeviceBuffer(*backend_, max_ws);
    counter_ = DeviceBuffer(*backend_, 4 * kSlotWords);
    sink_ = DeviceBuffer(*backend_, 4);
    backend_->memset32_async(counter_.get(), 0, kSlotWords, stream_);
    Verifier verifier(*backend_, stream_, max_variants, max_ws);
    std::map<DType, std::map<std::string, std::string>> small_failures;

    const auto tt = Clock::now();
    // ETA model from the H200 runs: a key costs about 0.35 s plus 1 s per 1.5 GB of input.
    auto cost = [](std::uint64_t bytes) { return 0.35 + static_cast<double>(bytes) / 1.5e9; };
    double bytes_done = 0, bytes_total = 0;
    for (auto [d, n] : work_) bytes_total += cost(n * info(d).bytes);
    for (std::size_t w = 0; w < work_.size(); ++w) {
      const auto [d, n] = work_[w];
      if (o_.time_budget_s > 0 && seconds_since(t0) > o_.time_budget_s) {
        for (std::size_t r = w; r < work_.size(); ++r)
          report_.not_done.push_back(fmt::format("{} n={}", to_string(work_[r].first), work_[r].second));
        progress(fmt::format("time budget of {:.0f} s spent: {} keys left untuned (run again to continue)",
                             o_.time_budget_s, report_.not_done.size()));
        break;
      }
      if (!small_failures.count(d))
        small_failures[d] = verify_small(*backend_, verifier, d, cands_[d], kernels_of(cands_[d], d));
      KeyResult k = tune_key(d, n, verifier, small_failures[d]);
      record_key(*db_, arch_.name, k, current_);
      bytes_done += cost(k.bytes());
      const double el = seconds_since(tt);
      const double eta = el / bytes_done * (bytes_total - bytes_done);
      if (k.winner >= 0) {
        const auto& wv = k.variants[k.winner];
        progress(fmt::format("[{:>3}/{}] {} n={:<11} {:<28} {:>9.2f} us {:>7.0f} GB/s   elapsed {} ETA {}", w + 1,
                             work_.size(), to_string(d), n, wv.config.label(), wv.stats.median_us,
                             gbps(k.bytes(), wv.stats.median_us), fmt_duration(seconds_since(t0)),
                             fmt_duration(eta)));
      } else {
        progress(fmt::format("[{:>3}/{}] {} n={}: no variant passed verification", w + 1, work_.size(),
                             to_string(d), n));
      }
      report_.keys.push_back(std::move(k));
    }
    for (DeviceBuffer* buf : {&out_, &workspace_, &counter_, &sink_}) buf->reset();
    backend_->destroy_stream(stream_);
  }

  void tune_groups(Clock::time_point t0) {
    std::uint64_t max_bytes = 0;
    for (const GroupSpec& g : group_work_) max_bytes = std::max(max_bytes, g.bytes());
    InputRegion inputs(*backend_, max_bytes + 64);
    StreamHandle stream = backend_->create_stream();
    MultiVerifier verifier(*backend_, stream);
    std::map<DType, std::map<std::string, std::string>> small;
    const auto tg = Clock::now();
    for (std::size_t w = 0; w < group_work_.size(); ++w) {
      const GroupSpec& g = group_work_[w];
      if (o_.time_budget_s > 0 && seconds_since(t0) > o_.time_budget_s) {
        for (std::size_t r = w; r < group_work_.size(); ++r) report_.not_done.push_back("group " + group_work_[r].name());
        progress(fmt::format("time budget of {:.0f} s spent: {} groups left untuned (run again to continue)",
                             o_.time_budget_s, group_work_.size() - w));
        break;
      }
      if (!small.count(g.dtype)) {
        std::vector<MultiConfig> cs;
        std::vector<const LoadedMultiKernel*> ks;
        for (const GroupSpec& h : group_work_)
          if (h.dtype == g.dtype)
            for (const MultiConfig& c : multi_candidates(arch_, g.dtype, o_.space, h.shape())) {
              if (const LoadedMultiKernel* k = kernels_->find_multi(c, g.dtype, multi_capacity_for(arch_, h.tensors));
                  k && std::find(cs.begin(), cs.end(), c) == cs.end()) {
                cs.push_back(c);
                ks.push_back(k);
              }
            }
        small[g.dtype] = verifier.verify_small(g.dtype, cs, ks);
      }
      GroupResult r = tune_group(*group_ctx_, g, verifier, inputs, stream, multi_builds_, small[g.dtype]);
      record_group(*db_, arch_.name, r, current_multi_);
      if (r.winner >= 0) {
        const auto& wv = r.variants[r.winner];
        progress(fmt::format("[{:>3}/{}] group {:<18} {:<36} {:>9.2f} us {:>7.0f} GB/s   elapsed {} (groups {})", w + 1,
                             group_work_.size(), g.name(), wv.label(), wv.stats.median_us,
                             gbps(r.bytes(), wv.stats.median_us), fmt_duration(seconds_since(t0)),
                             fmt_duration(seconds_since(tg))));
      } else {
        progress(fmt::format("[{:>3}/{}] group {}: no variant passed verification", w + 1, group_work_.size(), g.name()));
      }
      report_.groups.push_back(std::move(r));
    }
    backend_->destroy_stream(stream);
  }

  KeyResult tune_key(DType d, std::uint64_t n, Verifier& verifier, const std::map<std::string, std::string>& small) {
    KeyResult k;
    k.dtype = d;
    k.n = n;
    // One variant per distinct launch at this n (variants differing only in a grid cap that gives
    // the same grid do the same work): the others are neither timed nor recorded.
    const auto cu = static_cast<std::uint32_t>(backend_->device().cu_count);
    for (std::size_t i : distinct_launches(cands_[d], d, n, cu)) {
      const KernelConfig& c = cands_[d][i];
      VariantResult r;
      r.config = c;
      r.usage = usage_[kernel_name(c, d)];
      r.launches = launch_shape(c, n, static_cast<std::uint32_t>(backend_->device().cu_count)).launches();
      if (const BuildOutcome& b = builds_[kernel_name(c, d)]; !b.ok()) {
        r.status = b.stage == BuildOutcome::Stage::load_failed ? db::TrialStatus::launch_failed
                                                               : db::TrialStatus::compile_failed;
        r.reason = b.error;
      } else if (auto it = small.find(c.label()); it != small.end()) {
        r.status = db::TrialStatus::wrong_result;
        r.reason = it->second;
      }
      k.variants.push_back(std::move(r));
    }
    {
      std::vector<KernelConfig> cs;
      std::vector<std::size_t> idx;
      for (std::size_t i = 0; i < k.variants.size(); ++i)
        if (k.variants[i].status == db::TrialStatus::ok) cs.push_back(k.variants[i].config), idx.push_back(i);
      const auto reasons = verify_at_size(*backend_, verifier, *inputs_, d, n, cs, kernels_of(cs, d));
      for (std::size_t j = 0; j < idx.size(); ++j)
        if (!reasons[j].empty()) {
          k.variants[idx[j]].status = db::TrialStatus::wrong_result;
          k.variants[idx[j]].reason = reasons[j];
        }
    }
    Source source(*this, d, n, k.variants);
    screen(k.variants, o_.protocol, source);
    // Final: the fastest few, TransformerEngine's configs and the best of each strategy,
    // re-timed in interleaved rounds so that drift affects all alike.
    const auto fin = finalists(k.variants, o_.protocol, d);
    const auto samples = final_pass(k.variants, fin, o_.protocol, source);
    // The winner: the preferred variant of the fastest one's statistical tie set, confirmed
    // against the runners-up in a second measurement.
    select_winner(k, fin, samples, o_.protocol, source);
    if (k.confirmation == Confirmation::pooled) progress(fmt::format("{} n={}: {}", to_string(d), n, k.confirmation_note));
    k.ceiling = time_ceiling(n, d);
    return k;
  }

  void progress(const std::string& line) const {
    if (o_.progress) std::fprintf(stderr, "%s\n", line.c_str());
  }

  const TuneOptions& o_;
  TuneReport& report_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<const JitCompiler> compiler_;
  std::unique_ptr<KernelCache> kernels_;
  ReferenceKernels reference_;
  ArchInfo arch_;
  db::Provenance current_;
  db::Provenance current_multi_;  // current_ with the multi-tensor family's template hash
  std::vector<GroupSpec> group_work_;
  std::optional<GroupTuneContext> group_ctx_;
  std::map<std::string, BuildOutcome> multi_builds_;
  std::optional<db::TuningDb> db_;
  bool rebuild_ = false;  // check_db found the file damaged and --rebuild was given
  std::vector<std::pair<DType, std::uint64_t>> work_;
  std::map<DType, std::vector<KernelConfig>> cands_;
  std::map<std::string, BuildOutcome> builds_;
  std::map<std::string, ResourceUsage> usage_;
  std::unique_ptr<InputRegion> inputs_;
  std::unique_ptr<Gate> gate_;
  std::unique_ptr<Runner> runner_;
  StreamHandle stream_ = nullptr;
  DeviceBuffer out_, workspace_, counter_, sink_;  // tune_keys' outputs, workspace, stream slot, sink
};

}  // namespace

std::vector<std::uint64_t> default_sizes() {
  std::vector<std::uint64_t> s = power_of_two_sizes();
  for (std::uint64_t extra : {1000ull, 100000ull, 3000000ull, 50000000ull, 300000000ull}) s.push_back(extra);
  std::sort(s.begin(), s.end());
  return s;
}

TuneReport run_tuning(const TuneOptions& options) {
  TuneReport report;
  Session(options, report).run();
  return report;
}

}  // namespace amax::tune
