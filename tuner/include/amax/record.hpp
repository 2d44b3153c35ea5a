#pragma once
// Recording a tuned key (DESIGN.md section 5): every trial and the winner, with the run's
// provenance, committed in one transaction per key.
#include <optional>
#include <string>
#include <vector>

#include "amax/db/tuning_db.hpp"
#include "amax/search.hpp"

namespace amax::tune {

/// The database trial of every variant of `key`, in the key's order: label, status, reason,
/// registers, spills and tie rank always; median, spread, samples, GB/s and the confirmation median
/// for ok variants that were timed.
std::vector<db::Trial> trials_of(const KeyResult& key);

/// The key's winner as stored (label, median, GB/s); nullopt when no variant passed.
std::optional<db::Winner> winner_of(const KeyResult& key);

/// Commits the key's trials and winner for `arch` with `provenance` stamped now (one transaction).
/// Errors: db::DbError.
void record_key(db::TuningDb& db, const std::string& arch, const KeyResult& key, db::Provenance provenance);

}  // namespace amax::tune
