#include "validate.hpp"

#include "tables.hpp"
#include "util.hpp"

#include <amax/db/error.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <type_traits>

namespace amax::db::detail {
namespace {

/// Generic rules from the field list: strings valid UTF-8, doubles finite and >= 0.
template <class Owner, class Fields>
std::string check_fields(const Owner& o, const Fields& fields, std::string_view what) {
  std::string err;
  for_each_field(fields, [&](const auto& field) {
    if (!err.empty()) return;
    using T = value_t<decltype(field)>;
    const T& v = field.get(o);
    if constexpr (std::is_same_v<T, std::string>) {
      std::size_t bad = 0;
      if (!valid_utf8(v, &bad)) {
        err = std::string(what) + "." + std::string(field.name) +
              " is not valid UTF-8 (bad byte at offset " + std::to_string(bad) +
              "); sanitize it before recording";
      }
    } else if constexpr (std::is_same_v<T, double>) {
      if (!std::isfinite(v) || v < 0.0) {
        err = std::string(what) + "." + std::string(field.name) + " = " + double_text(v) +
              " must be finite and >= 0 (" + std::string(field.doc) + ")";
      }
    }
  });
  return err;
}

}  // namespace

std::string check_key(const TuningKey& key) {
  if (key.arch.empty()) return "key.arch is empty (expected a target ID such as sm_90 or gfx942)";
  if (key.n == 0) return "key.n = 0: a tuning key needs at least one element";
  if (key.n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return "key.n = " + std::to_string(key.n) + " exceeds 2^63-1, the largest count SQLite stores";
  }
  if (!parse_dtype(to_string(key.dtype))) {
    return "key.dtype has the invalid value " + std::to_string(static_cast<int>(key.dtype));
  }
  return check_fields(key, key_fields, "key");
}

std::string check_key(const GroupKey& key) {
  if (key.arch.empty()) return "key.arch is empty (expected a target ID such as sm_90 or gfx942)";
  if (!parse_dtype(to_string(key.dtype))) {
    return "key.dtype has the invalid value " + std::to_string(static_cast<int>(key.dtype));
  }
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::string err;
  for_each_field(group_key_fields, [&](const auto& field) {
    if constexpr (std::is_same_v<value_t<decltype(field)>, std::uint64_t>) {
      if (err.empty() && field.get(key) > kMax) {
        err = "key." + std::string(field.name) + " = " + std::to_string(field.get(key)) +
              " exceeds 2^63-1, the largest count SQLite stores";
      }
    }
  });
  if (!err.empty()) return err;
  if (key.tensors == 0) return "key.tensors = 0: a group needs at least one tensor";
  if (key.largest_bytes == 0) return "key.largest_bytes = 0: the largest tensor needs at least one byte";
  if (key.largest_bytes > key.total_bytes) {
    return "key.largest_bytes = " + std::to_string(key.largest_bytes) + " exceeds key.total_bytes = " +
           std::to_string(key.total_bytes);
  }
  __extension__ using u128 = unsigned __int128;
  if (u128{key.total_bytes} > u128{key.tensors} * key.largest_bytes) {
    return "key.total_bytes = " + std::to_string(key.total_bytes) + " exceeds key.tensors * key.largest_bytes = " +
           std::to_string(key.tensors) + " * " + std::to_string(key.largest_bytes);
  }
  return check_fields(key, group_key_fields, "key");
}

std::string check_provenance(const Provenance& p) {
  return check_fields(p, provenance_fields, "provenance");
}

std::string check_trial(const Trial& t) {
  const std::string who = "trial '" + t.label + "'";
  if (t.label.empty()) return "a trial has an empty label";
  if (!parse_trial_status(to_string(t.status))) {
    return who + " has the invalid status value " + std::to_string(static_cast<int>(t.status));
  }
  if (auto e = check_fields(t, trial_fields, who); !e.empty()) return e;
  if (t.status == TrialStatus::ok && !t.reason.empty()) {
    return who + " has status ok but a reason ('" + t.reason + "'); reason must be empty for ok";
  }
  if (t.status != TrialStatus::ok && t.reason.empty()) {
    return who + " has status " + std::string(to_string(t.status)) + " but an empty reason";
  }
  if (t.status == TrialStatus::ok && !(t.median_us > 0.0)) {
    return who + " has status ok but median_us = " + double_text(t.median_us) + " (must be > 0)";
  }
  if (t.samples < 0) return who + " has samples = " + std::to_string(t.samples) + " (must be >= 0)";
  if (t.launches < -1) return who + " has launches = " + std::to_string(t.launches) + " (must be >= 0, or -1 unknown)";
  return {};
}

std::string check_winner(const Winner& w) {
  if (w.label.empty()) return "the winner has an empty label";
  const std::string who = "winner '" + w.label + "'";
  if (auto e = check_fields(w, winner_fields, who); !e.empty()) return e;
  if (!(w.median_us > 0.0)) return who + " has median_us = " + double_text(w.median_us) + " (must be > 0)";
  return {};
}

namespace {

std::string check_payload(const Trial& t) { return check_trial(t); }
std::string check_payload(const Winner& w) { return check_winner(w); }

}  // namespace

template <class Row>
std::string check_row(const Row& row) {
  for (std::string e : {check_key(row.key), check_provenance(row.provenance), check_payload(payload(row))}) {
    if (!e.empty()) return e;
  }
  return {};
}

template <class Key>
void validate_record(const std::filesystem::path& path, const Key& key, const Provenance& provenance,
                     std::span<const Trial> trials, const std::optional<Winner>& winner) {
  auto fail = [&](const std::string& msg) {
    throw DbError(ErrorKind::InvalidArgument,
                  "tuning database " + quoted(path) + ": cannot record " +
                      (key.arch.empty() ? std::string("key") : to_string(key)) + ": " + msg,
                  path);
  };
  if (auto e = check_key(key); !e.empty()) fail(e);
  if (auto e = check_provenance(provenance); !e.empty()) fail(e);
  std::set<std::string_view> labels;
  for (const Trial& t : trials) {
    if (auto e = check_trial(t); !e.empty()) fail(e);
    if (!labels.insert(t.label).second) fail("the label '" + t.label + "' appears twice among the trials");
  }
  if (winner) {
    if (auto e = check_winner(*winner); !e.empty()) fail(e);
    if (!trials.empty()) {
      bool found = false;
      for (const Trial& t : trials) found |= (t.label == winner->label && t.status == TrialStatus::ok);
      if (!found) fail("the winner '" + winner->label + "' is not among the trials with status ok");
    }
  }
}

#define AMAX_DB_INSTANTIATE_VALIDATE(F)                                                                        \
  template std::string check_row(const WinnerRowOf<F>&);                                                       \
  template std::string check_row(const TrialRowOf<F>&);                                                        \
  template void validate_record(const std::filesystem::path&, const KeyOf<F>&, const Provenance&,              \
                                std::span<const Trial>, const std::optional<Winner>&);
// Over the row types: the quantize family's rows are the single-tensor family's.
AMAX_DB_INSTANTIATE_VALIDATE(SingleFamily)
AMAX_DB_INSTANTIATE_VALIDATE(MultiFamily)

}  // namespace amax::db::detail
