// Private: the write rules of TuningKey, Provenance, Trial and Winner (see their docs).
#pragma once

#include <amax/db/group.hpp>
#include <amax/db/key.hpp>
#include <amax/db/provenance.hpp>
#include <amax/db/trial.hpp>
#include <amax/db/winner.hpp>

#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace amax::db::detail {

/// Each returns an empty string when the value is acceptable, else a message naming the field
/// and the value (without path; the caller adds context).
std::string check_key(const TuningKey& key);
std::string check_key(const GroupKey& key);
std::string check_provenance(const Provenance& p);
std::string check_trial(const Trial& t);
std::string check_winner(const Winner& w);

/// The first problem of a stored row (a winner or trial row of either family): its key, its
/// provenance, its trial or winner (empty if none).
template <class Row>
std::string check_row(const Row& row);

/// Checks a whole TuningDb::record() call: key, provenance, every trial (unique labels), the
/// winner (and that it names an ok trial when trials are given).
/// @throws DbError(InvalidArgument) with @p path and the key in the message.
template <class Key>
void validate_record(const std::filesystem::path& path, const Key& key, const Provenance& provenance,
                     std::span<const Trial> trials, const std::optional<Winner>& winner);

}  // namespace amax::db::detail
