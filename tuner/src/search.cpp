#include "amax/search.hpp"

#include "amax/launch.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

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
    if (v.label() == label) return &v;
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

std::vector<std::size_t> distinct_launches(const std::vector<KernelConfig>& cands, DType dtype, std::uint64_t n,
                                           std::uint32_t cu_count) {
  const auto baselines = transformer_engine_baselines(dtype);
  std::map<std::pair<KernelConfig, std::uint32_t>, std::size_t> classes;  // (config uncapped, grid) -> its entry
  for (std::size_t i = 0; i < cands.size(); ++i) {
    KernelConfig work = cands[i];
    work.max_blocks = BlockCap::uncapped();
    const auto [it, added] = classes.try_emplace({work, launch_shape(cands[i], n, cu_count).grid}, i);
    if (!added && std::find(baselines.begin(), baselines.end(), cands[i]) != baselines.end()) it->second = i;
  }
  std::vector<std::size_t> out;
  for (const auto& [cls, i] : classes) out.push_back(i);
  std::sort(out.begin(), out.end());
  return out;
}

void screen(std::vector<VariantResult>& variants, const TimingProtocol& protocol, SampleSource& source) {
  double best = INFINITY;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    auto& r = variants[i];
    if (r.status != db::TrialStatus::ok) continue;
    try {
      // A first batch above early_stop x best is clearly slower: one batch is its sample.
      const std::vector<double> times = source.screen_sample(i, protocol.screen_batches - 1, protocol.early_stop * best);
      r.stats = Stats::of(times);
      r.host_us = source.host_us(i);
      best = std::min(best, r.stats.median_us);
    } catch (const BackendError& e) {
      r.status = db::TrialStatus::launch_failed;
      r.reason = e.what();
      source.recover();
    }
  }
}

std::set<std::size_t> finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                const std::function<int(const VariantResult&)>& kind,
                                const std::function<bool(std::size_t)>& always) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (variants[i].status == db::TrialStatus::ok && variants[i].stats.samples > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](auto a, auto b) { return variants[a].stats.median_us < variants[b].stats.median_us; });
  std::set<std::size_t> fin(order.begin(),
                            order.begin() + std::min<std::size_t>(order.size(), static_cast<std::size_t>(protocol.finalists)));
  std::set<int> kinds;
  for (std::size_t i : order)
    if (kinds.insert(kind(variants[i])).second || always(i)) fin.insert(i);
  return fin;
}

std::set<std::size_t> finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                DType dtype) {
  const auto te = transformer_engine_baselines(dtype);
  return finalists(
      variants, protocol, [](const VariantResult& v) { return static_cast<int>(v.config.strategy); },
      [&](std::size_t i) { return std::find(te.begin(), te.end(), variants[i].config) != te.end(); });
}

std::vector<std::vector<double>> final_pass(std::vector<VariantResult>& variants, const std::set<std::size_t>& fin,
                                            const TimingProtocol& protocol, SampleSource& source) {
  const std::vector<std::size_t> which(fin.begin(), fin.end());
  auto samples = source.rounds(which, protocol.final_rounds, false);
  for (std::size_t j = 0; j < which.size(); ++j) {
    variants[which[j]].stats = Stats::of(samples[j]);
    variants[which[j]].host_us = source.host_us(which[j]);
    variants[which[j]].finalist = true;
  }
  return samples;
}

double TieRule::threshold_us(const Stats& a, const Stats& b) const {
  auto se = [](const Stats& x) { return x.samples > 0 ? 0.93 * x.spread_us / std::sqrt(static_cast<double>(x.samples)) : 0.0; };
  return std::max(margin * std::min(a.median_us, b.median_us), z * std::sqrt(se(a) * se(a) + se(b) * se(b)));
}

bool TieRule::tied(const Stats& a, const Stats& b) const {
  return std::abs(a.median_us - b.median_us) <= threshold_us(a, b);
}

std::string TieRule::describe() const {
  return fmt::format("tie: |median difference| <= max({:g}% x faster median, {:g} x combined median SE "
                     "(0.93 IQR / sqrt(samples)))",
                     100 * margin, z);
}

bool preferred(const VariantResult& a, const VariantResult& b) {
  if (a.launches != b.launches) return a.launches < b.launches;
  // An unknown host cost (0) ranks after every known one.
  auto bucket = [](double h) { return h > 0 ? std::lround(h / kHostCostStepUs) : std::numeric_limits<long>::max(); };
  if (bucket(a.host_us) != bucket(b.host_us)) return bucket(a.host_us) < bucket(b.host_us);
  const double ra = a.stats.median_us > 0 ? a.stats.spread_us / a.stats.median_us : INFINITY;
  const double rb = b.stats.median_us > 0 ? b.stats.spread_us / b.stats.median_us : INFINITY;
  if (ra != rb) return ra < rb;
  if (a.stats.median_us != b.stats.median_us) return a.stats.median_us < b.stats.median_us;
  return a.label() < b.label();
}

std::vector<std::size_t> tie_set(const std::vector<VariantResult>& v, const std::vector<std::size_t>& which,
                                 const TieRule& rule) {
  if (which.empty()) return {};
  std::size_t fastest = which[0];
  for (std::size_t i : which)
    if (v[i].stats.median_us < v[fastest].stats.median_us) fastest = i;
  std::vector<std::size_t> t;
  for (std::size_t i : which)
    if (i == fastest || rule.tied(v[i].stats, v[fastest].stats)) t.push_back(i);
  std::stable_sort(t.begin(), t.end(), [&](std::size_t a, std::size_t b) { return preferred(v[a], v[b]); });
  return t;
}

void select_winner(KeyResult& k, const std::set<std::size_t>& fin, const std::vector<std::vector<double>>& final_samples,
                   const TimingProtocol& protocol, SampleSource& source) {
  const TieRule rule{protocol.tie_margin, protocol.tie_z};
  auto& v = k.variants;
  const std::vector<std::size_t> all(fin.begin(), fin.end());
  std::map<std::size_t, const std::vector<double>*> first;
  for (std::size_t j = 0; j < all.size(); ++j) first[all[j]] = &final_samples.at(j);
  k.tie_set = tie_set(v, all, rule);
  k.winner = k.tie_set.empty() ? -1 : static_cast<int>(k.tie_set[0]);
  k.confirmation = Confirmation::none;
  k.confirmation_note.clear();
  if (k.winner >= 0 && all.size() > 1 && protocol.confirm_rounds > 0) {
    // The entrants: the winner, the rest of its tie set, the fastest finalist outside it.
    std::vector<std::size_t> entrants(k.tie_set.begin(),
                                      k.tie_set.begin() + std::min(k.tie_set.size(), kMaxConfirmation - 1));
    std::size_t next = v.size();
    for (std::size_t i : all)
      if (std::find(k.tie_set.begin(), k.tie_set.end(), i) == k.tie_set.end() &&
          (next == v.size() || v[i].stats.median_us < v[next].stats.median_us))
        next = i;
    if (next != v.size()) entrants.push_back(next);
    const auto second = source.rounds(entrants, protocol.confirm_rounds, true);
    std::vector<VariantResult> conf;  // the entrants with their confirmation stats, for the tie rule
    for (std::size_t j = 0; j < entrants.size(); ++j) {
      v[entrants[j]].confirm = Stats::of(second[j]);
      v[entrants[j]].host_us = source.host_us(entrants[j]);
      conf.push_back(v[entrants[j]]);
      conf.back().stats = v[entrants[j]].confirm;
    }
    std::vector<std::size_t> idx(entrants.size());
    for (std::size_t j = 0; j < idx.size(); ++j) idx[j] = j;
    const auto t2 = tie_set(conf, idx, rule);
    std::size_t fastest2 = 0;
    for (std::size_t j : idx)
      if (conf[j].stats.median_us < conf[fastest2].stats.median_us) fastest2 = j;
    const std::string won = v[k.winner].label();
    if (std::find(t2.begin(), t2.end(), std::size_t{0}) != t2.end()) {
      k.confirmation = Confirmation::agreed;
      k.confirmation_note = fmt::format("confirmed against {} runner(s)-up: {} {:.2f} us, fastest {} {:.2f} us",
                                        entrants.size() - 1, won, conf[0].stats.median_us,
                                        conf[fastest2].label(), conf[fastest2].stats.median_us);
    } else {
      // Disagreement: both measurements of the entrants pooled decide.
      for (std::size_t j = 0; j < entrants.size(); ++j) {
        std::vector<double> pooled = *first.at(entrants[j]);
        pooled.insert(pooled.end(), second[j].begin(), second[j].end());
        v[entrants[j]].stats = Stats::of(pooled);
      }
      k.tie_set = tie_set(v, entrants, rule);
      k.winner = static_cast<int>(k.tie_set[0]);
      k.confirmation = Confirmation::pooled;
      k.confirmation_note = fmt::format(
          "confirmation disagreed ({} {:.2f} us against {} {:.2f} us): pooled samples chose {} ({:.2f} us)", won,
          conf[0].stats.median_us, conf[fastest2].label(), conf[fastest2].stats.median_us,
          v[k.winner].label(), v[k.winner].stats.median_us);
    }
  }
  for (auto& r : v) r.tie_rank = -1;
  for (std::size_t r = 0; r < k.tie_set.size(); ++r) v[k.tie_set[r]].tie_rank = static_cast<int>(r);
}

}  // namespace amax::tune
