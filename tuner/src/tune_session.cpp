// The tune session's measuring part (session.hpp), once over the kernel family: the compile pool,
// the verification passes, the search per work item and the recording.
#include "session.hpp"

namespace amax::tune::detail {

namespace {

// Compiles k (through the binary cache; a CompileError is kept in k.outcome) and reads its resource
// usage from the AMD code object where it can. Thread-safe for distinct k.
template <class F>
void compile(const TuneContext& ctx, KernelBuild<F>& k) {
  try {
    k.binary = build_kernel(ctx.kernels.compiler(), ctx.kernels.binaries(), ctx.arch, k.config, k.dtype, k.capacity);
    k.usage = k.binary->usage;
    if (ctx.arch.vendor == Vendor::amd && can_read_amdgpu_code_objects()) {
      const auto u = amdgpu_resource_usage(k.binary->binary);
      if (auto it = u.find(F::kernel_name(k.config, k.dtype, k.capacity)); it != u.end()) k.usage = it->second;
    }
  } catch (const CompileError& e) {
    k.outcome = BuildOutcome::compile_failure(e.what());
  }
}

// Loads kernel k of `run` if built (a load failure becomes its outcome), counting it as compiled
// or read from the cache in `report`, and keeps what became of it by name.
template <class F>
void load_one(const TuneContext& ctx, FamilyRun<F>& run, KernelBuild<F>& k, TuneReport& report) {
  if (k.binary) {
    ++(k.binary->from_cache ? TuneFamily<F>::cached(report) : TuneFamily<F>::compiled(report));
    try {
      ctx.kernels.load(std::move(*k.binary));
    } catch (const BackendError& e) {
      k.outcome = BuildOutcome::load_failure(e.what());
    }
    k.binary.reset();
  }
  run.built[F::kernel_name(k.config, k.dtype, k.capacity)] = {k.outcome, k.usage};
}

// Loads every kernel of `run` not loaded yet (load_one).
template <class F>
void load(const TuneContext& ctx, FamilyRun<F>& run, TuneReport& report) {
  for (KernelBuild<F>& k : run.builds)
    if (!run.built.count(F::kernel_name(k.config, k.dtype, k.capacity))) load_one(ctx, run, k, report);
}

}  // namespace

void Session::build_kernels() {
  const auto t0 = Clock::now();
  const TuneContext ctx = context();
  auto& single = family<SingleFamily>();
  auto& multi = family<MultiFamily>();
  const auto say = [this](const std::string& l) { progress(l); };
  single.builds = TuneFamily<SingleFamily>::kernels(ctx, single.work, say);
  multi.builds = TuneFamily<MultiFamily>::kernels(ctx, multi.work, say);
  const std::size_t ns = single.builds.size(), nm = multi.builds.size();
  const unsigned jobs = o_.jobs ? o_.jobs : std::max(1u, std::thread::hardware_concurrency());
  progress(fmt::format("compiling {} kernels ({} single-tensor, {} multi-tensor) on {} threads", ns + nm, ns, nm, jobs));
  const bool tty = o_.progress && isatty(STDERR_FILENO);
  CompileProgress shown(ns + nm, tty, [this](const std::string& text) {
    if (o_.progress) std::fputs(text.c_str(), stderr);
  });
  // Jobs: the multi-tensor kernels first, then the single-tensor ones; each job's flag is set once
  // its kernel is built (release: the main thread then reads the build).
  std::vector<std::atomic<bool>> done(nm + ns);
  // While the pool compiles, the GPU would idle: this thread verifies what is built (verify_ahead).
  // Only on NVIDIA: hipRTC's comgr is not safe to call concurrently, and a module load may use it.
  const bool ahead = arch_.vendor == Vendor::nvidia;
  std::optional<StreamHandle> stream;
  std::optional<Verifier> verifier;
  if (ahead) {
    stream = backend_->create_stream();
    verifier.emplace(*backend_, *stream);
  }
  double beside_s = 0;
  std::exception_ptr failed;  // a verification error, rethrown once the pool has stopped
  run_compile_pool(
      nm + ns, jobs,
      [&](std::size_t j) {
        j < nm ? compile(ctx, multi.builds[j]) : compile(ctx, single.builds[j - nm]);
        done[j].store(true, std::memory_order_release);
      },
      std::chrono::milliseconds(100), [&](std::size_t) {
        const auto count = [&] {
          return static_cast<std::size_t>(
              std::count_if(done.begin(), done.end(), [](const auto& d) { return d.load(std::memory_order_acquire); }));
        };
        shown.update(count());
        if (!ahead || failed) return;
        const auto tv = Clock::now();
        // Step by step while the pool still runs, so that the progress line keeps moving.
        try {
          while (count() < done.size() &&
                 (verify_ahead<MultiFamily>(0, done, *verifier) || verify_ahead<SingleFamily>(nm, done, *verifier)))
            shown.update(count());
        } catch (...) {
          failed = std::current_exception();
        }
        beside_s += seconds_since(tv);
      });
  if (stream) {
    verifier.reset();
    backend_->destroy_stream(*stream);
  }
  if (failed) std::rethrow_exception(failed);
  report_.times.verify_beside_s = beside_s;
  const auto tl = Clock::now();
  load(ctx, single, report_);
  reference_ = ReferenceKernels::load(*backend_, *compiler_, kernels_->binaries());
  load(ctx, multi, report_);
  report_.times.load_s += seconds_since(tl);
  report_.compile_s = seconds_since(t0);
  progress(fmt::format("{}kernels: {} compiled, {} from the cache ({}){}, {:.1f} s", tty ? "\r" : "",
                       report_.kernels_compiled, report_.kernels_cached,
                       o_.cache_dir.empty() ? "disabled" : o_.cache_dir.string(),
                       multi.work.empty() ? std::string()
                                          : fmt::format("; multi-tensor: {} compiled, {} from the cache",
                                                        report_.multi_kernels_compiled, report_.multi_kernels_cached),
                       report_.compile_s));
}

template <class F>
void Session::tune_all(Clock::time_point t0) {
  using Fam = TuneFamily<F>;
  FamilyRun<F>& run = family<F>();
  if (run.work.empty()) return;
  FamilyTimes& times = Fam::times(report_);
  const auto tf0 = Clock::now();
  const TuneContext ctx = context();
  std::uint64_t out_words = 1, ws = 4;
  for (const auto& w : run.work) {
    out_words = std::max(out_words, Fam::out_words(w));
    ws = std::max(ws, Fam::workspace_bytes(ctx, w));
  }
  std::optional<PhaseTimer> region(std::in_place, times[Phase::region], nullptr);
  if (fill_.valid()) inputs_ = fill_.get();  // the first family waits for the fill, if it still runs
  Lane lane(*backend_, reference_, o_.protocol, *inputs_, out_words, ws);
  Verifier verifier(ctx.backend, lane.stream);
  region.reset();
  // ETA model from the H200 runs: a key costs about 0.35 s plus 1 s per 1.5 GB of input.
  auto cost = [](std::uint64_t bytes) { return 0.35 + static_cast<double>(bytes) / 1.5e9; };
  double cost_done = 0, cost_total = 0;
  for (const auto& w : run.work) cost_total += cost(Fam::result(ctx, w).bytes());
  const auto tf = Clock::now();
  const std::size_t count = run.work.size();
  for (std::size_t i = 0; i < count; ++i) {
    const auto& w = run.work[i];
    if (o_.time_budget_s > 0 && seconds_since(t0) > o_.time_budget_s) {
      for (std::size_t j = i; j < count; ++j) report_.not_done.push_back(Fam::kPrefix + Fam::name(run.work[j]));
      progress(fmt::format("time budget of {:.0f} s spent: {} {} left untuned (run again to continue)",
                           o_.time_budget_s, count - i, Fam::kUnits));
      break;
    }
    const DType d = Fam::result(ctx, w).dtype;
    if (!run.small.count(d)) {
      PhaseTimer timer(times[Phase::verify], nullptr);
      run.small[d] = Fam::verify_small(ctx, verifier, run.work, d);
    }
    auto r = tune_one<F>(i, lane, verifier);
    {
      PhaseTimer timer(times[Phase::record], nullptr);
      Fam::record(*db_, arch_.name, r, run.current);
    }
    ++times.items;
    cost_done += cost(r.bytes());
    const double eta = seconds_since(tf) / cost_done * (cost_total - cost_done);
    if (r.winner >= 0)
      progress(Fam::progress(i + 1, count, w, r, seconds_since(t0), seconds_since(tf), eta));
    else
      progress(fmt::format("[{:>3}/{}] {}{}: no variant passed verification", i + 1, count, Fam::kPrefix, Fam::name(w)));
    Fam::results(report_).push_back(std::move(r));
  }
  times.wall_s = seconds_since(tf0);
}

template <class F>
bool Session::verify_ahead(std::size_t first, const std::vector<std::atomic<bool>>& done, Verifier& verifier) {
  using Fam = TuneFamily<F>;
  FamilyRun<F>& run = family<F>();
  const TuneContext ctx = context();
  run.verified.resize(run.work.size());
  std::set<DType> dtypes;
  for (const auto& w : run.work) dtypes.insert(Fam::result(ctx, w).dtype);
  for (DType d : dtypes) {
    bool built = true;
    for (std::size_t j = 0; built && j < run.builds.size(); ++j)
      built = run.builds[j].dtype != d || done[first + j].load(std::memory_order_acquire);
    if (!built) continue;
    const auto tl = Clock::now();
    for (KernelBuild<F>& k : run.builds)
      if (k.dtype == d && !run.built.count(F::kernel_name(k.config, k.dtype, k.capacity))) load_one(ctx, run, k, report_);
    report_.times.load_s += seconds_since(tl);
    if (!run.small.count(d)) {
      run.small[d] = Fam::verify_small(ctx, verifier, run.work, d);
      return true;
    }
    if (!inputs_ && fill_.valid() && fill_.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
      inputs_ = fill_.get();
    if (!inputs_) continue;
    for (std::size_t i = 0; i < run.work.size(); ++i)
      if (!run.verified[i] && Fam::result(ctx, run.work[i]).dtype == d) {
        run.verified[i] = verified<F>(run.work[i], verifier, *inputs_, run.small[d]);
        ++report_.times.verified_beside;
        return true;
      }
  }
  return false;
}

template <class F>
typename TuneFamily<F>::Result Session::verified(const typename TuneFamily<F>::Work& w, Verifier& verifier,
                                                 InputRegion& inputs, const std::map<std::string, std::string>& small) {
  using Fam = TuneFamily<F>;
  const TuneContext ctx = context();
  const FamilyRun<F>& run = family<F>();
  auto r = Fam::result(ctx, w);
  for (const auto& c : Fam::timed_candidates(ctx, w)) {
    VariantResult v = Fam::variant(ctx, r, c);
    const auto b = run.built.find(F::kernel_name(c, r.dtype, Fam::capacity(r)));
    if (b == run.built.end()) {
      v.status = db::TrialStatus::compile_failed;
      v.reason = "not built";
    } else if (v.usage = b->second.usage; !b->second.outcome.ok()) {
      v.status = b->second.outcome.stage == BuildOutcome::Stage::load_failed ? db::TrialStatus::launch_failed
                                                                             : db::TrialStatus::compile_failed;
      v.reason = b->second.outcome.error;
    } else if (auto it = small.find(v.label()); it != small.end()) {
      v.status = db::TrialStatus::wrong_result;
      v.reason = it->second;
    }
    r.variants.push_back(std::move(v));
  }
  // verification at the work item's own size or shape
  std::vector<typename F::Config> cs;
  std::vector<const Loaded<typename F::Config>*> ks;
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < r.variants.size(); ++i)
    if (r.variants[i].status == db::TrialStatus::ok) {
      cs.push_back(Fam::config(r.variants[i]));
      ks.push_back(ctx.kernels.find(cs.back(), r.dtype, Fam::capacity(r)));
      idx.push_back(i);
    }
  const auto reasons = verifier.verify_at(inputs, Fam::shape(r), cs, ks);
  for (std::size_t j = 0; j < idx.size(); ++j)
    if (!reasons[j].empty()) {
      r.variants[idx[j]].status = db::TrialStatus::wrong_result;
      r.variants[idx[j]].reason = reasons[j];
    }
  return r;
}

template <class F>
typename TuneFamily<F>::Result Session::tune_one(std::size_t i, Lane& lane, Verifier& verifier) {
  using Fam = TuneFamily<F>;
  const TuneContext ctx = context();
  FamilyRun<F>& run = family<F>();
  FamilyTimes& times = Fam::times(report_);
  const TimingSpent* timed = &lane.runner.spent();
  std::optional<PhaseTimer> phase(std::in_place, times[Phase::verify], timed);
  const auto& w = run.work[i];
  run.verified.resize(run.work.size());
  auto r = run.verified[i] ? std::move(*run.verified[i])
                           : verified<F>(w, verifier, lane.inputs, run.small.at(Fam::result(ctx, w).dtype));
  run.verified[i].reset();
  FamilySource<F> source(ctx, lane, r);
  phase.emplace(times[Phase::screen], timed);
  screen(r.variants, o_.protocol, source);
  // Final: the family's finalists re-timed in interleaved rounds so that drift affects all alike.
  phase.emplace(times[Phase::final], timed);
  const auto fin = Fam::finalists(r, o_.protocol);
  const auto samples = final_pass(r.variants, fin, o_.protocol, source);
  // The winner: the preferred variant of the fastest one's statistical tie set, confirmed
  // against the runners-up in a second measurement.
  phase.emplace(times[Phase::confirm], timed);
  select_winner(r, fin, samples, o_.protocol, source);
  if (r.confirmation == Confirmation::pooled) progress(fmt::format("{}: {}", Fam::name(w), r.confirmation_note));
  phase.emplace(times[Phase::ceiling], timed);
  const std::uint64_t bytes = r.bytes();
  Timed t{[&](const void* in) { reference_.launch_stream_read(*backend_, in, bytes, lane.sink.get(), lane.stream); }};
  t.launches = 1;
  lane.runner.prepare(t, bytes, /*warm_up=*/false);
  r.ceiling = Stats::of(lane.runner.measure(t, bytes, o_.protocol.final_rounds));
  phase.reset();
  for (std::size_t i = 0; i < r.variants.size(); ++i)
    if (const TimingSpent s = source.spent(i); s.wall_s > 0) {
      KindTime& k = report_.times.kinds[Fam::kind(r.variants[i])];
      ++k.variants;
      k.timed += s;
    }
  return r;
}

template <class F>
std::uint64_t Session::max_input_bytes() {
  const TuneContext ctx = context();
  std::uint64_t max_bytes = 0;
  for (const auto& w : family<F>().work) max_bytes = std::max(max_bytes, TuneFamily<F>::result(ctx, w).bytes());
  return max_bytes;
}

template std::uint64_t Session::max_input_bytes<SingleFamily>();
template std::uint64_t Session::max_input_bytes<MultiFamily>();
template void Session::tune_all<SingleFamily>(Clock::time_point);
template void Session::tune_all<MultiFamily>(Clock::time_point);
template bool Session::verify_ahead<SingleFamily>(std::size_t, const std::vector<std::atomic<bool>>&, Verifier&);
template bool Session::verify_ahead<MultiFamily>(std::size_t, const std::vector<std::atomic<bool>>&, Verifier&);

}  // namespace amax::tune::detail
