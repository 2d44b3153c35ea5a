#include <amax/db/merge.hpp>

#include <amax/db/nearest.hpp>
#include <amax/db/tuning_db.hpp>

#include "tables.hpp"
#include "tuning_db_impl.hpp"
#include "util.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace amax::db {

using detail::quoted;
namespace fs = std::filesystem;

namespace {

template <class Row>
struct Candidate {
  const Row* row;
  char src;  // 'a' or 'b'
};

template <class Row>
bool faster(const Candidate<Row>& x, const Candidate<Row>& y) {
  if (x.row->winner.median_us != y.row->winner.median_us) return x.row->winner.median_us < y.row->winner.median_us;
  if (x.src != y.src) return x.src < y.src;
  if (x.row->provenance.timestamp != y.row->provenance.timestamp) {
    return x.row->provenance.timestamp > y.row->provenance.timestamp;
  }
  return detail::canonical_less(*x.row, *y.row);
}

/// Where a trial without a winner may go: per unit and identity one key (for single keys that is
/// the key itself; for group keys the first shape seen in the bucket).
std::string slot_of(const TrialRow& t) { return detail::unique_key(WinnerRow{t.key, {}, t.provenance}); }
std::string slot_of(const GroupTrialRow& t) { return detail::group_slot(t.key, t.provenance); }

/// The merge of one kernel family's rows: the rows to write and the report (the unit of merging
/// is DbFamily<F>::unit: a key; a group key's arch, dtype and bucket); a conflict (different
/// devices, not allowed) is counted and the first one described.
template <class F>
struct TableMerge {
  std::vector<WinnerRowOf<F>> winners;
  std::vector<TrialRowOf<F>> trials;
  FamilyMergeReport<F> report;
  std::size_t conflicts = 0;
  std::string first_conflict;
};

template <class F, class WRow = WinnerRowOf<F>, class TRow = TrialRowOf<F>>
TableMerge<F> merge_rows(const std::vector<WRow>& wa, const std::vector<WRow>& wb, const std::vector<TRow>& ta,
                         const std::vector<TRow>& tb, const fs::path& a_path, const fs::path& b_path,
                         const MergePolicy& policy) {
  using Key = KeyOf<F>;
  const auto unit_of = [](const Key& key) { return DbFamily<F>::unit(key); };
  TableMerge<F> m;
  std::map<std::decay_t<decltype(unit_of(std::declval<Key>()))>, std::vector<Candidate<WRow>>> by_unit;
  for (const auto& w : wa) by_unit[unit_of(w.key)].push_back({&w, 'a'});
  for (const auto& w : wb) by_unit[unit_of(w.key)].push_back({&w, 'b'});

  auto src_path = [&](char src) { return src == 'a' ? a_path : b_path; };
  std::vector<Candidate<WRow>> kept;
  for (auto& [unit, cands] : by_unit) {
    std::sort(cands.begin(), cands.end(), faster<WRow>);
    const Candidate<WRow>& best = cands.front();
    kept.push_back(best);
    ++(best.src == 'a' ? m.report.winners_from_a : m.report.winners_from_b);
    m.winners.push_back(*best.row);
    if (cands.size() == 1) continue;
    const Candidate<WRow>* other_device = nullptr;
    for (std::size_t i = 1; i < cands.size() && !other_device; ++i) {
      if (!same_device(cands[i].row->provenance, best.row->provenance)) other_device = &cands[i];
    }
    if (other_device && !policy.allow_different_devices) {
      if (m.conflicts++ == 0) {
        m.first_conflict = "key " + to_string(best.row->key) + " has winners measured on different devices: " +
                           describe_device(best.row->provenance) + " from " + quoted(src_path(best.src)) + " and " +
                           describe_device(other_device->row->provenance) + " from " +
                           quoted(src_path(other_device->src));
      }
      continue;
    }
    MergeDecision<F> d;
    d.key = best.row->key;
    d.kept = *best.row;
    d.kept_from = best.src;
    d.dropped = *cands[1].row;
    d.different_devices = other_device != nullptr;
    for (auto name : differing_fields(best.row->provenance, cands[1].row->provenance)) d.differing_fields.emplace_back(name);
    m.report.contested.push_back(std::move(d));
  }
  std::sort(m.report.contested.begin(), m.report.contested.end(),
            [](const auto& x, const auto& y) { return x.key < y.key; });

  // Trials: those of each kept winner (same key and provenance, same input); for units without
  // any winner, the trials of both inputs (a's first), one key per unit and identity.
  for (const auto& c : kept) {
    const auto& pool = c.src == 'a' ? ta : tb;
    for (const auto& t : pool) {
      if (t.key == c.row->key && t.provenance == c.row->provenance) m.trials.push_back(t);
    }
  }
  std::set<std::string> taken;
  std::map<std::string, Key> slot_key;
  for (const auto* pool : {&ta, &tb}) {
    for (const auto& t : *pool) {
      if (by_unit.count(unit_of(t.key))) continue;
      if (!(slot_key.emplace(slot_of(t), t.key).first->second == t.key)) continue;
      if (taken.insert(detail::unique_key(t)).second) m.trials.push_back(t);
    }
  }
  m.report.winners_written = m.winners.size();
  m.report.trials_written = m.trials.size();
  return m;
}

bool same_path(const fs::path& x, const fs::path& y) {
  std::error_code ec;
  if (fs::equivalent(x, y, ec)) return true;
  return fs::weakly_canonical(x, ec) == fs::weakly_canonical(y, ec) && !ec;
}

}  // namespace

MergeReport merge(const fs::path& a_path, const fs::path& b_path, const fs::path& out_path, const MergePolicy& policy) {
  auto invalid = [&](const std::string& msg) {
    throw DbError(ErrorKind::InvalidArgument,
                  "cannot merge " + quoted(a_path) + " and " + quoted(b_path) + " into " + quoted(out_path) + ": " + msg,
                  out_path);
  };
  if (out_path.empty()) invalid("the output path is empty");
  if (same_path(out_path, a_path) || same_path(out_path, b_path)) invalid("the output is one of the inputs");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out_path, ec)) && !policy.overwrite_output) {
    invalid("the output exists (give --overwrite to replace it)");
  }

  auto read = [](const fs::path& path) {
    const TuningDb db = TuningDb::open(path, OpenMode::ReadOnly);
    return std::tuple{db.winners<SingleFamily>(),   db.all_trials<SingleFamily>(),   db.winners<MultiFamily>(),
                      db.all_trials<MultiFamily>(),   db.winners<QuantizeFamily>(),   db.all_trials<QuantizeFamily>()};
  };
  const auto [wa, ta, gwa, gta, qwa, qta] = read(a_path);
  const auto [wb, tb, gwb, gtb, qwb, qtb] = read(b_path);
  auto single = merge_rows<SingleFamily>(wa, wb, ta, tb, a_path, b_path, policy);
  auto group = merge_rows<MultiFamily>(gwa, gwb, gta, gtb, a_path, b_path, policy);
  auto quant = merge_rows<QuantizeFamily>(qwa, qwb, qta, qtb, a_path, b_path, policy);
  if (const std::size_t conflicts = single.conflicts + group.conflicts + quant.conflicts; conflicts > 0) {
    invalid((single.conflicts ? single.first_conflict
             : group.conflicts ? group.first_conflict
                               : "quantize " + quant.first_conflict) +
            (conflicts > 1 ? " (and " + std::to_string(conflicts - 1) + " more key(s))" : "") +
            "; rows from different devices are never mixed silently: give --allow-different-devices to keep "
            "the faster winner anyway");
  }

  detail::build_beside(out_path, [&](TuningDb& out) {
    out.import_rows(single.winners, single.trials, group.winners, group.trials, quant.winners, quant.trials);
  });
  return MergeReport{std::move(single.report), std::move(group.report), std::move(quant.report)};
}

}  // namespace amax::db
