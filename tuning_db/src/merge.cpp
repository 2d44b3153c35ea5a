#include <amax/db/merge.hpp>

#include <amax/db/tuning_db.hpp>

#include "codec.hpp"
#include "util.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

namespace amax::db {

using detail::quoted;
namespace fs = std::filesystem;

namespace {

struct Candidate {
  const WinnerRow* row;
  char src;  // 'a' or 'b'
};

bool faster(const Candidate& x, const Candidate& y) {
  if (x.row->winner.median_us != y.row->winner.median_us) return x.row->winner.median_us < y.row->winner.median_us;
  if (x.src != y.src) return x.src < y.src;
  if (x.row->provenance.timestamp != y.row->provenance.timestamp) {
    return x.row->provenance.timestamp > y.row->provenance.timestamp;
  }
  return detail::canonical_less(*x.row, *y.row);
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
    invalid("the output exists (set MergePolicy::overwrite_output to replace it)");
  }

  std::vector<WinnerRow> wa, wb;
  std::vector<TrialRow> ta, tb;
  {
    const TuningDb a = TuningDb::open(a_path, OpenMode::ReadOnly);
    wa = a.winners();
    ta = a.all_trials();
  }
  {
    const TuningDb b = TuningDb::open(b_path, OpenMode::ReadOnly);
    wb = b.winners();
    tb = b.all_trials();
  }

  std::map<TuningKey, std::vector<Candidate>> by_key;
  for (const auto& w : wa) by_key[w.key].push_back({&w, 'a'});
  for (const auto& w : wb) by_key[w.key].push_back({&w, 'b'});

  auto src_path = [&](char src) { return src == 'a' ? a_path : b_path; };
  MergeReport report;
  std::vector<WinnerRow> out_winners;
  std::vector<const Candidate*> kept;
  std::size_t conflicts = 0;
  std::string first_conflict;
  for (auto& [key, cands] : by_key) {
    std::sort(cands.begin(), cands.end(), faster);
    const Candidate& best = cands.front();
    kept.push_back(&best);
    out_winners.push_back(*best.row);
    if (cands.size() == 1) continue;
    const Candidate* other_device = nullptr;
    for (std::size_t i = 1; i < cands.size() && !other_device; ++i) {
      if (!same_device(cands[i].row->provenance, best.row->provenance)) other_device = &cands[i];
    }
    if (other_device && !policy.allow_different_devices) {
      if (conflicts++ == 0) {
        first_conflict = "key " + to_string(key) + " has winners measured on different devices: " +
                         describe_device(best.row->provenance) + " from " + quoted(src_path(best.src)) + " and " +
                         describe_device(other_device->row->provenance) + " from " +
                         quoted(src_path(other_device->src));
      }
      continue;
    }
    MergeDecision d;
    d.key = key;
    d.kept = *best.row;
    d.kept_from = best.src;
    d.dropped = *cands[1].row;
    d.different_devices = other_device != nullptr;
    for (auto name : differing_fields(best.row->provenance, cands[1].row->provenance)) d.differing_fields.emplace_back(name);
    if (other_device) {
      spdlog::warn("merge: key {}: kept the winner from {} ({}, {} us) over one from a different device {} ({} us), "
                   "as allowed by MergePolicy::allow_different_devices",
                   to_string(key), describe_device(best.row->provenance), src_path(best.src).string(),
                   best.row->winner.median_us, describe_device(other_device->row->provenance),
                   other_device->row->winner.median_us);
    }
    report.contested.push_back(std::move(d));
  }
  if (conflicts > 0) {
    invalid(first_conflict + (conflicts > 1 ? " (and " + std::to_string(conflicts - 1) + " more key(s))" : "") +
            "; rows from different devices are never mixed silently: set "
            "MergePolicy::allow_different_devices to keep the faster winner anyway");
  }

  // Trials: those of each kept winner (same key and provenance, same input); for keys without
  // any winner, the trials of both inputs (a's first).
  std::vector<TrialRow> out_trials;
  for (const Candidate* c : kept) {
    const auto& pool = c->src == 'a' ? ta : tb;
    for (const auto& t : pool) {
      if (t.key == c->row->key && t.provenance == c->row->provenance) out_trials.push_back(t);
    }
  }
  std::set<std::string> taken;
  for (const auto* pool : {&ta, &tb}) {
    for (const auto& t : *pool) {
      if (by_key.count(t.key)) continue;
      if (taken.insert(detail::unique_key(t)).second) out_trials.push_back(t);
    }
  }

  const fs::path tmp = detail::temp_beside(out_path);
  try {
    {
      OpenOptions opts;
      opts.wal = false;
      TuningDb out = TuningDb::open(tmp, OpenMode::ReadWrite, opts);
      out.import_rows(out_winners, out_trials);
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
  report.winners_written = out_winners.size();
  report.trials_written = out_trials.size();
  return report;
}

}  // namespace amax::db
