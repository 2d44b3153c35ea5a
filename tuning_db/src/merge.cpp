#include <amax/db/merge.hpp>

#include <amax/db/nearest.hpp>
#include <amax/db/tuning_db.hpp>

#include "codec.hpp"
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

/// The unit of merging: a single-tensor key itself; for a group key its arch, dtype and bucket.
TuningKey unit_of(const TuningKey& key) { return key; }
std::tuple<std::string, std::string, GroupBucket> unit_of(const GroupKey& key) {
  return {key.arch, std::string(to_string(key.dtype)), group_bucket(key)};
}

/// Where a trial without a winner may go: per unit and identity one key (for single keys that is
/// the key itself; for group keys the first shape seen in the bucket).
std::string slot_of(const TrialRow& t) { return detail::unique_key(WinnerRow{t.key, {}, t.provenance}); }
std::string slot_of(const GroupTrialRow& t) { return detail::group_slot(t.key, t.provenance); }

/// The merge of one kind of rows (single-tensor or group): the rows to write and the contested
/// units; a conflict (different devices, not allowed) is counted and the first one described.
template <class WRow, class TRow>
struct TableMerge {
  using Key = std::decay_t<decltype(std::declval<WRow>().key)>;
  std::vector<WRow> winners;
  std::vector<TRow> trials;
  std::vector<BasicMergeDecision<Key, WRow>> contested;
  std::size_t conflicts = 0;
  std::string first_conflict;
  std::size_t from_a = 0, from_b = 0;  // winners kept from each input
};

template <class WRow, class TRow>
TableMerge<WRow, TRow> merge_rows(const std::vector<WRow>& wa, const std::vector<WRow>& wb, const std::vector<TRow>& ta,
                                  const std::vector<TRow>& tb, const fs::path& a_path, const fs::path& b_path,
                                  const MergePolicy& policy) {
  using Key = typename TableMerge<WRow, TRow>::Key;
  TableMerge<WRow, TRow> m;
  std::map<decltype(unit_of(std::declval<Key>())), std::vector<Candidate<WRow>>> by_unit;
  for (const auto& w : wa) by_unit[unit_of(w.key)].push_back({&w, 'a'});
  for (const auto& w : wb) by_unit[unit_of(w.key)].push_back({&w, 'b'});

  auto src_path = [&](char src) { return src == 'a' ? a_path : b_path; };
  std::vector<Candidate<WRow>> kept;
  for (auto& [unit, cands] : by_unit) {
    std::sort(cands.begin(), cands.end(), faster<WRow>);
    const Candidate<WRow>& best = cands.front();
    kept.push_back(best);
    ++(best.src == 'a' ? m.from_a : m.from_b);
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
    typename decltype(m.contested)::value_type d;
    d.key = best.row->key;
    d.kept = *best.row;
    d.kept_from = best.src;
    d.dropped = *cands[1].row;
    d.different_devices = other_device != nullptr;
    for (auto name : differing_fields(best.row->provenance, cands[1].row->provenance)) d.differing_fields.emplace_back(name);
    m.contested.push_back(std::move(d));
  }
  std::sort(m.contested.begin(), m.contested.end(), [](const auto& x, const auto& y) { return x.key < y.key; });

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

  std::vector<WinnerRow> wa, wb;
  std::vector<TrialRow> ta, tb;
  std::vector<GroupWinnerRow> gwa, gwb;
  std::vector<GroupTrialRow> gta, gtb;
  {
    const TuningDb a = TuningDb::open(a_path, OpenMode::ReadOnly);
    wa = a.winners();
    ta = a.all_trials();
    gwa = a.group_winners();
    gta = a.all_group_trials();
  }
  {
    const TuningDb b = TuningDb::open(b_path, OpenMode::ReadOnly);
    wb = b.winners();
    tb = b.all_trials();
    gwb = b.group_winners();
    gtb = b.all_group_trials();
  }

  auto single = merge_rows(wa, wb, ta, tb, a_path, b_path, policy);
  auto group = merge_rows(gwa, gwb, gta, gtb, a_path, b_path, policy);
  if (const std::size_t conflicts = single.conflicts + group.conflicts; conflicts > 0) {
    invalid((single.conflicts ? single.first_conflict : group.first_conflict) +
            (conflicts > 1 ? " (and " + std::to_string(conflicts - 1) + " more key(s))" : "") +
            "; rows from different devices are never mixed silently: give --allow-different-devices to keep "
            "the faster winner anyway");
  }

  const fs::path tmp = detail::temp_beside(out_path);
  try {
    {
      OpenOptions opts;
      opts.wal = false;
      TuningDb out = TuningDb::open(tmp, OpenMode::ReadWrite, opts);
      out.import_rows(single.winners, single.trials, group.winners, group.trials);
    }
    detail::remove_companions(out_path);
    fs::rename(tmp, out_path, ec);
    if (ec) {
      throw DbError(ErrorKind::Io, "cannot move " + quoted(tmp) + " to " + quoted(out_path) + ": " + ec.message(),
                    out_path);
    }
  } catch (...) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    detail::remove_companions(tmp);
    throw;
  }
  MergeReport report;
  report.winners_written = single.winners.size();
  report.trials_written = single.trials.size();
  report.winners_from_a = single.from_a;
  report.winners_from_b = single.from_b;
  report.contested = std::move(single.contested);
  report.group_winners_written = group.winners.size();
  report.group_trials_written = group.trials.size();
  report.group_winners_from_a = group.from_a;
  report.group_winners_from_b = group.from_b;
  report.group_contested = std::move(group.contested);
  return report;
}

}  // namespace amax::db
