// amax-tune tuning database: what the database keeps per kernel family, DbFamily<F>: the key, the
// stored rows, the stale-key report, the tables and the nearest rule of each family. TuningDb's
// record and query functions are templates over the family tag and read what differs here.
#pragma once

#include <amax/db/group.hpp>
#include <amax/db/key.hpp>
#include <amax/db/nearest.hpp>
#include <amax/db/trial.hpp>
#include <amax/db/winner.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace amax {
// The kernel family tags of the generator (amax/family.hpp); the database needs only their names.
struct SingleFamily;
struct MultiFamily;
struct QuantizeFamily;
}  // namespace amax

namespace amax::db {

/// A key whose winners for the current device are all stale, and why (TuningDb::stale_keys). For
/// a group key, the first stale stored shape of its bucket. Plain value type.
template <class Key>
struct StaleKey {
  Key key;
  std::vector<std::string> changed;  ///< kStale field names that differ (see stale_fields())
  friend bool operator==(const StaleKey&, const StaleKey&) = default;
};

/// The database facts of kernel family F (a tag of amax/family.hpp); one specialisation per family.
template <class F>
struct DbFamily;

/// One tensor per launch: results per (arch, dtype, n).
template <>
struct DbFamily<SingleFamily> {
  using Key = TuningKey;
  using WinnerRow = db::WinnerRow;
  using TrialRow = db::TrialRow;
  /// What lookup_nearest serves: an element count (0 counts as 1).
  using Query = std::uint64_t;
  /// The tables of its winners and trials, their first schema version and their key columns.
  static constexpr std::string_view winners_table = "winners", trials_table = "trials";
  static constexpr int since_schema = 1;
  static constexpr const auto& key_fields = db::key_fields;
  /// Messages: the rows' qualifier ("reading winners") and the name of the record call.
  static constexpr std::string_view rows = "", record_call = "record_key";
  /// What one winner serves (has_winner, stale_keys): its key.
  static const Key& unit(const Key& key) { return key; }
  /// The nearest-size rule (nearest.hpp: serves_better) over tuned rows.
  static SizeCandidate candidate(const Key& key, bool same_device, std::string_view timestamp) {
    return {key.n, same_device, timestamp};
  }
  template <class At>
  static std::size_t nearest(Query q, std::size_t count, At&& at) { return nearest_size(q, count, at); }
};

/// Many tensors per launch: results per (arch, dtype, group shape), one shape kept per bucket
/// (group_bucket() in nearest.hpp) and provenance identity.
template <>
struct DbFamily<MultiFamily> {
  using Key = GroupKey;
  using WinnerRow = GroupWinnerRow;
  using TrialRow = GroupTrialRow;
  /// What lookup_nearest serves: the bucket of a group shape (group_bucket()).
  using Query = GroupBucket;
  static constexpr std::string_view winners_table = "group_winners", trials_table = "group_trials";
  static constexpr int since_schema = 4;
  static constexpr const auto& key_fields = db::group_key_fields;
  static constexpr std::string_view rows = "group ", record_call = "record_group_key";
  /// What one winner serves: the arch, dtype and bucket of its shape.
  static std::tuple<std::string, std::string, GroupBucket> unit(const Key& key) {
    return {key.arch, std::string(to_string(key.dtype)), group_bucket(key)};
  }
  /// The nearest-group rule (nearest.hpp: serves_group_better) over tuned rows.
  static GroupCandidate candidate(const Key& key, bool same_device, std::string_view timestamp) {
    return {group_bucket(key), same_device, timestamp};
  }
  template <class At>
  static std::size_t nearest(const Query& q, std::size_t count, At&& at) { return nearest_group(q, count, at); }
};

/// FP8 quantize of one tensor: results per (arch, dtype, n), keyed, served and replaced as the
/// single-tensor family's (the same key, rows and nearest rule) in tables of their own. The FP8
/// format is not part of the key: the tuner measures the arch's tuned_fp8_format and the choice
/// serves every format (the format changes only the cast's constants).
template <>
struct DbFamily<QuantizeFamily> : DbFamily<SingleFamily> {
  static constexpr std::string_view winners_table = "quant_winners", trials_table = "quant_trials";
  static constexpr int since_schema = 6;
  static constexpr std::string_view rows = "quantize ", record_call = "record_quantize_key";
};

// The types of family F.
template <class F> using KeyOf = typename DbFamily<F>::Key;
template <class F> using WinnerRowOf = typename DbFamily<F>::WinnerRow;
template <class F> using TrialRowOf = typename DbFamily<F>::TrialRow;
template <class F> using StaleKeyOf = StaleKey<KeyOf<F>>;
template <class F> using QueryOf = typename DbFamily<F>::Query;

}  // namespace amax::db
