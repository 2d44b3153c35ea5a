// The tune session's measuring part (session.hpp): the compile pool, the verification passes, the
// search per key and per group, and the recording.
#include "session.hpp"

namespace amax::tune::detail {

// Compiles (or reads from the disk cache) every single-tensor kernel of the keys' candidates and
// every multi-tensor kernel of the groups' candidates in one pool (the longer multi-tensor
// compiles first), reporting progress on stderr, then loads them on this thread.
void Session::build_kernels() {
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

Stats Session::time_ceiling(std::uint64_t n, DType d) {
  const std::uint64_t bytes = n * info(d).bytes;
  Timed t{[&](const void* in) { reference_.launch_stream_read(*backend_, in, bytes, sink_.get(), stream_); }};
  runner_->prepare(t, bytes, /*warm_up=*/false);
  return Stats::of(runner_->measure(t, bytes, o_.protocol.final_rounds));
}

void Session::tune_keys(Clock::time_point t0) {
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

void Session::tune_groups(Clock::time_point t0) {
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

KeyResult Session::tune_key(DType d, std::uint64_t n, Verifier& verifier, const std::map<std::string, std::string>& small) {
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

}  // namespace amax::tune::detail
