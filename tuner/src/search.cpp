#include "amax/search.hpp"

#include <algorithm>
#include <cmath>

namespace amax::tune {

const VariantResult* KeyResult::best(Strategy s) const {
  const VariantResult* b = nullptr;
  for (const auto& v : variants)
    if (v.status == db::TrialStatus::ok && v.stats.samples > 0 && v.config.strategy == s &&
        (!b || v.stats.median_us < b->stats.median_us))
      b = &v;
  return b;
}

const VariantResult* KeyResult::find(const std::string& label) const {
  for (const auto& v : variants)
    if (v.config.label() == label) return &v;
  return nullptr;
}

std::vector<KernelConfig> transformer_engine_baselines(DType d) {
  return {transformer_engine_config(d, Strategy::atomic), transformer_engine_config(d, Strategy::two_stage)};
}

std::vector<KernelConfig> candidates(const ArchInfo& arch, DType d, SpaceKind kind) {
  auto v = enumerate_space(arch, d, kind);
  for (const auto& te : transformer_engine_baselines(d))
    if (std::find(v.begin(), v.end(), te) == v.end()) v.push_back(te);
  return v;
}

void screen(std::vector<VariantResult>& variants, const TimingProtocol& protocol, SampleSource& source) {
  double best = INFINITY;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    auto& r = variants[i];
    if (r.status != db::TrialStatus::ok) continue;
    try {
      std::vector<double> times = source.sample(i, 1, true);
      if (times[0] <= protocol.early_stop * best) {  // else clearly slower: one batch is its sample
        const auto more = source.sample(i, protocol.screen_batches - 1, false);
        times.insert(times.end(), more.begin(), more.end());
      }
      r.stats = Stats::of(times);
      best = std::min(best, r.stats.median_us);
    } catch (const BackendError& e) {
      r.status = db::TrialStatus::launch_failed;
      r.reason = e.what();
      source.recover();
    }
  }
}

std::set<std::size_t> finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                DType dtype) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (variants[i].status == db::TrialStatus::ok && variants[i].stats.samples > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](auto a, auto b) { return variants[a].stats.median_us < variants[b].stats.median_us; });
  std::set<std::size_t> fin(order.begin(),
                            order.begin() + std::min<std::size_t>(order.size(), static_cast<std::size_t>(protocol.finalists)));
  for (Strategy s : kStrategies)
    for (std::size_t i : order)
      if (variants[i].config.strategy == s) {
        fin.insert(i);
        break;
      }
  for (const auto& te : transformer_engine_baselines(dtype))
    for (std::size_t i : order)
      if (variants[i].config == te) fin.insert(i);
  return fin;
}

std::vector<std::vector<double>> final_pass(std::vector<VariantResult>& variants, const std::set<std::size_t>& fin,
                                            const TimingProtocol& protocol, SampleSource& source) {
  const std::vector<std::size_t> which(fin.begin(), fin.end());
  auto samples = source.rounds(which, protocol.final_rounds, false);
  for (std::size_t j = 0; j < which.size(); ++j) {
    variants[which[j]].stats = Stats::of(samples[j]);
    variants[which[j]].finalist = true;
  }
  return samples;
}

}  // namespace amax::tune
