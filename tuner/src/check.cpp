#include "amax/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "amax/kernel_cache.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/runner.hpp"
#include "amax/search.hpp"
#include "amax/verify.hpp"

namespace amax::tune {

std::vector<std::string> check_labels(const db::WinnerRow& w, const std::vector<db::TrialRow>& trials, std::size_t tied,
                                      std::size_t others) {
  std::vector<std::string> out{w.winner.label};
  std::vector<const db::Trial*> same;
  for (const auto& t : trials)
    if (db::same_identity(t.provenance, w.provenance) && t.trial.status == db::TrialStatus::ok &&
        t.trial.label != w.winner.label)
      same.push_back(&t.trial);
  std::vector<const db::Trial*> ties, rest;
  for (const auto* t : same) (t->tie_rank >= 1 ? ties : rest).push_back(t);
  std::sort(ties.begin(), ties.end(), [](auto* a, auto* b) { return a->tie_rank < b->tie_rank; });
  std::sort(rest.begin(), rest.end(), [](auto* a, auto* b) {
    return a->median_us != b->median_us ? a->median_us < b->median_us : a->label < b->label;
  });
  for (std::size_t i = 0; i < std::min(tied, ties.size()); ++i) out.push_back(ties[i]->label);
  for (std::size_t i = 0; i < std::min(others, rest.size()); ++i) out.push_back(rest[i]->label);
  return out;
}

void summarize(CheckReport& r) {
  r.measured = r.held = r.skipped = 0;
  r.max_regret = 0;
  r.max_at.clear();
  double log_sum = 0;
  int with_regret = 0;
  for (const auto& e : r.entries) {
    if (!e.skipped.empty()) {
      ++r.skipped;
      continue;
    }
    ++r.measured;
    r.held += e.holds;
    if (e.regret > 0) {
      log_sum += std::log(e.regret);
      ++with_regret;
      if (e.regret > r.max_regret) r.max_regret = e.regret, r.max_at = fmt::format("{} n={}", to_string(e.dtype), e.n);
    }
  }
  r.geomean_regret = with_regret ? std::exp(log_sum / with_regret) : 0;
}

namespace {

// A key to measure: its entry and the configs of its variants (nullopt where the label is invalid).
struct Work {
  CheckEntry* entry;
  std::vector<std::optional<KernelConfig>> configs;
};

}  // namespace

CheckReport run_check(const CheckOptions& o) {
  // The database first, read-only: a missing or damaged file is reported without a device.
  auto open = [](const std::filesystem::path& path) {
    try {
      return db::TuningDb::open(path, db::OpenMode::ReadOnly);
    } catch (const db::DbError& e) {
      throw CheckError(fmt::format("cannot check {}: {} (the file was left untouched)", path.string(), e.what()));
    }
  };
  std::optional<db::TuningDb> db;
  db.emplace(open(o.db_path));
  const auto winners = db->winners<SingleFamily>();
  std::vector<db::WinnerRow> other;
  if (!o.against.empty()) other = open(o.against).winners<SingleFamily>();
  Vendor vendor{};
  if (!first_available_vendor(vendor, o.device))
    throw CheckError(fmt::format("no GPU device {} to check on ({}); {} was left untouched", o.device,
                                 no_device_reason(Vendor::nvidia), o.db_path.string()));
  auto backend = make_backend(vendor, o.device);
  Backend& b = *backend;
  CheckReport rep;
  rep.device = b.device();
  const DeviceInfo& dev = rep.device;
  const ArchInfo arch = ArchInfo::parse(dev.arch);
  const auto cu = static_cast<std::uint32_t>(dev.cu_count);

  std::vector<Work> work;
  rep.entries.reserve(winners.size());
  for (const auto& w : winners) {
    const std::optional<DType> d = w.key.dtype;
    if (!o.dtypes.empty() && std::find(o.dtypes.begin(), o.dtypes.end(), *d) == o.dtypes.end()) continue;
    if (!o.sizes.empty() && std::find(o.sizes.begin(), o.sizes.end(), w.key.n) == o.sizes.end()) continue;
    CheckEntry e;
    e.dtype = *d;
    e.n = w.key.n;
    e.winner = w.winner.label;
    e.stored_us = w.winner.median_us;
    const auto& p = w.provenance;
    if (w.key.arch != dev.arch || p.device_name != dev.name || p.arch != dev.arch || p.cu_count != dev.cu_count)
      e.skipped = fmt::format("tuned on '{}' ({}, {} CUs), this device is '{}' ({}, {} CUs)", p.device_name, p.arch,
                              p.cu_count, dev.name, dev.arch, dev.cu_count);
    else if (const auto why = fit_error(dev, *d, w.key.n); !why.empty())
      e.skipped = why;
    rep.entries.push_back(std::move(e));
    if (!rep.entries.back().skipped.empty()) continue;
    Work wk{&rep.entries.back(), {}};
    auto labels = check_labels(w, db->trials<SingleFamily>(w.key), o.tied_alternatives, o.other_alternatives);
    for (const auto& x : other)
      if (x.key == w.key && x.provenance.device_name == dev.name && x.provenance.arch == dev.arch &&
          x.provenance.cu_count == dev.cu_count) {
        wk.entry->against = x.winner.label;
        if (std::find(labels.begin(), labels.end(), x.winner.label) == labels.end()) labels.push_back(x.winner.label);
      }
    for (const auto& label : labels) {
      CheckedVariant v{label, {}, 0, {}};
      try {
        const KernelConfig c = KernelConfig::parse(label);
        if (auto bad = c.validate(arch, *d)) v.problem = "not valid here: " + *bad;
        else wk.configs.push_back(c);
      } catch (const std::invalid_argument& ex) {
        v.problem = std::string("invalid label: ") + ex.what();
      }
      if (!v.problem.empty()) wk.configs.push_back(std::nullopt);
      wk.entry->variants.push_back(std::move(v));
    }
    work.push_back(std::move(wk));
  }
  db.reset();  // nothing more is read; the file was never opened for writing

  if (!work.empty()) {
    std::shared_ptr<const JitCompiler> compiler = make_compiler(vendor);
    KernelCache kernels(b, compiler, BinaryCache(o.cache_dir));
    std::uint64_t max_bytes = 0, max_ws = 16;
    for (const auto& wk : work) {
      max_bytes = std::max(max_bytes, wk.entry->n * info(wk.entry->dtype).bytes);
      for (const auto& c : wk.configs)
        if (c) max_ws = std::max(max_ws, launch_shape(*c, wk.entry->n, cu).workspace_bytes);
    }
    InputRegion inputs(b, max_bytes + 64);
    StreamHandle stream = b.create_stream();
    const DeviceBuffer out(b, 4), ws(b, max_ws), counter(b, 4);
    b.memset32_async(counter.get(), 0, 1, stream);
    try {
      Verifier verifier(b, stream);
      const ReferenceKernels ref = ReferenceKernels::load(b, *compiler, kernels.binaries());
      Gate gate(b, ref.gate, o.protocol.gate_timeout_ms);
      Runner runner(b, stream, inputs, o.protocol, &gate);
      const TieRule rule{o.protocol.tie_margin, o.protocol.tie_z};
      std::size_t step = 0;
      for (auto& wk : work) {
        CheckEntry& e = *wk.entry;
        ++step;
        std::vector<const LoadedKernel*> ks(wk.configs.size(), nullptr);
        for (std::size_t i = 0; i < wk.configs.size(); ++i) {
          if (!wk.configs[i]) continue;
          try {
            ks[i] = &kernels.get(*wk.configs[i], e.dtype);
          } catch (const CompileError& ex) {
            e.variants[i].problem = std::string("does not compile: ") + ex.what();
          }
        }
        // Verified at the key's size before timing (the templates may have changed since).
        std::vector<KernelConfig> cs;
        std::vector<const LoadedKernel*> vks;
        std::vector<std::size_t> idx;
        for (std::size_t i = 0; i < ks.size(); ++i)
          if (ks[i]) cs.push_back(*wk.configs[i]), vks.push_back(ks[i]), idx.push_back(i);
        const auto reasons = verifier.verify_at(inputs, GroupSpec{1, e.n, e.dtype}, cs, vks);
        std::vector<Timed> timed;
        std::vector<std::size_t> timed_idx;
        for (std::size_t j = 0; j < idx.size(); ++j) {
          if (!reasons[j].empty()) {
            e.variants[idx[j]].problem = "wrong result: " + reasons[j];
            continue;
          }
          const LaunchBuffers buffers{out.get<float>(), ws.get(), counter.get<std::uint32_t>()};
          timed.push_back(
              variant_timed(b, *vks[j], launch_shape(cs[j], e.n, cu, vks[j]->resident_per_cu), e.n, buffers, stream));
          timed_idx.push_back(idx[j]);
        }
        const auto samples = runner.interleaved(timed, e.n * info(e.dtype).bytes, o.protocol.final_rounds);
        for (std::size_t j = 0; j < timed_idx.size(); ++j) {
          e.variants[timed_idx[j]].now = Stats::of(samples[j]);
          e.variants[timed_idx[j]].host_us = Stats::of(timed[j].host_us).median_us;
        }
        const CheckedVariant* best = nullptr;
        for (const auto& v : e.variants)
          if (v.now.samples > 0 && (!best || v.now.median_us < best->now.median_us)) best = &v;
        const CheckedVariant& win = e.variants[0];
        if (best && win.now.samples > 0) {
          e.best = best->label;
          e.best_us = best->now.median_us;
          e.winner_us = win.now.median_us;
          e.regret = e.winner_us / e.best_us;
          e.tied = rule.tied(win.now, best->now);
          e.holds = e.regret <= o.hold_regret;
        }
        if (o.progress) {
          if (e.regret > 0)
            std::fprintf(stderr, "[%3zu/%zu] %s n=%-11llu %s %.2f us, best %s %.2f us: regret %.3fx%s\n", step,
                         work.size(), std::string(to_string(e.dtype)).c_str(),
                         static_cast<unsigned long long>(e.n), e.winner.c_str(), e.winner_us, e.best.c_str(),
                         e.best_us, e.regret, e.holds ? "" : " (does not hold)");
          else
            std::fprintf(stderr, "[%3zu/%zu] %s n=%llu: the stored winner %s could not be timed: %s\n", step,
                         work.size(), std::string(to_string(e.dtype)).c_str(),
                         static_cast<unsigned long long>(e.n), e.winner.c_str(), win.problem.c_str());
        }
      }
    } catch (...) {
      b.destroy_stream(stream);
      throw;
    }
    b.destroy_stream(stream);
  }
  summarize(rep);
  return rep;
}

}  // namespace amax::tune
