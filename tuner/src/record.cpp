#include "amax/record.hpp"

namespace amax::tune {

std::vector<db::Trial> trials_of(const KeyResult& k) {
  std::vector<db::Trial> trials;
  for (const auto& r : k.variants) {
    db::Trial t;
    t.label = r.label();
    t.status = r.status;
    t.reason = r.reason;
    if (r.status == db::TrialStatus::ok && r.stats.samples > 0) {
      t.median_us = r.stats.median_us;
      t.spread_us = r.stats.spread_us;
      t.samples = r.stats.samples;
      t.gbps = gbps(k.bytes(), r.stats.median_us);
      t.host_us = r.host_us;
    }
    t.launches = r.launches > 0 ? r.launches : -1;
    t.tie_rank = r.tie_rank;
    t.confirm_median_us = r.confirm.samples > 0 ? r.confirm.median_us : 0.0;
    t.registers = r.usage.registers;
    t.spill_bytes = r.usage.spill_stores < 0 ? -1 : r.usage.spill_stores;
    trials.push_back(std::move(t));
  }
  return trials;
}

std::optional<db::Winner> winner_of(const KeyResult& k) {
  if (k.winner < 0) return std::nullopt;
  const auto& v = k.variants[static_cast<std::size_t>(k.winner)];
  return db::Winner{v.label(), v.stats.median_us, gbps(k.bytes(), v.stats.median_us)};
}

void record_key(db::TuningDb& db, const std::string& arch, const KeyResult& k, db::Provenance p) {
  p.timestamp = db::utc_timestamp_now();
  db.record<SingleFamily>(db::TuningKey{arch, k.dtype, k.n}, p, trials_of(k), winner_of(k));
}

}  // namespace amax::tune
