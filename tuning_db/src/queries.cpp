// TuningDb: reads -- the family templates (finished keys, winners, trials, the nearest winner,
// stale keys) and the snapshot of every table that exports and dumps read.
#include <amax/db/tuning_db.hpp>

#include "tables.hpp"
#include "tuning_db_impl.hpp"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <algorithm>

namespace amax::db {

namespace {

std::string identity_order() { return detail::provenance_columns(kIdentity); }

/// "ORDER BY" of the canonical listing of Table: key, provenance identity, (label), id.
template <class Table>
std::string listing_order() {
  std::string order = detail::field_columns(*std::get<0>(Table::parts).fields) + ", " + identity_order();
  if constexpr (detail::per_label<Table>) order += ", label";
  return order + ", id";
}

/// The rows of Table (in the file's layout) matching @p where (empty: all), parameters bound by
/// @p bind, in the order @p order; none when the file's schema predates the table. Call inside
/// Impl::run(); may throw SQLite::Exception, DbError(Corrupt) for a value it cannot parse.
template <class Table, class Bind>
std::vector<typename Table::Row> select_rows(const TuningDb::Impl& im, const std::string& where, const std::string& order,
                                             Bind&& bind) {
  if (!detail::has_table<Table>(im.version)) return {};
  SQLite::Statement q(*im.db, "SELECT " + detail::select_list<Table>(im.version) + " FROM " +
                                  detail::source<Table>(im.version) + (where.empty() ? "" : " WHERE " + where) +
                                  " ORDER BY " + order);
  bind(q);
  std::vector<typename Table::Row> out;
  while (q.executeStep()) out.push_back(detail::read_row<Table>(q, im.path));
  return out;
}

/// The rows of Table matching a WinnerFilter, in listing order.
template <class Table>
std::vector<typename Table::Row> select_filtered(const TuningDb::Impl& im, const WinnerFilter& filter) {
  std::vector<std::string> conds;
  if (filter.arch) conds.push_back("arch = ?");
  if (filter.dtype) conds.push_back("dtype = ?");
  return select_rows<Table>(im, detail::join(conds, " AND "), listing_order<Table>(), [&](SQLite::Statement& q) {
    int i = 1;
    if (filter.arch) q.bind(i++, *filter.arch);
    if (filter.dtype) q.bind(i++, std::string(to_string(*filter.dtype)));
  });
}

/// The keys of @p arch and @p dtype of WinnersT whose provenance has @p provenance's identity,
/// in key order (only the key columns are read; a key that cannot be read was never written by
/// this library and is skipped).
template <class WinnersT>
auto finished(const TuningDb::Impl& im, std::string_view arch, DType dtype, const Provenance& provenance,
              std::string_view what) {
  using Key = std::decay_t<decltype(std::declval<typename WinnersT::Row>().key)>;
  const auto& fields = *std::get<0>(WinnersT::parts).fields;
  return im.run(what, [&] {
    std::vector<Key> out;
    if (!detail::has_table<WinnersT>(im.version)) return out;
    SQLite::Statement q(*im.db, "SELECT DISTINCT " + detail::field_columns(fields) + " FROM " +
                                    detail::source<WinnersT>(im.version) + " WHERE arch = ? AND dtype = ? AND " +
                                    detail::provenance_where(kIdentity) + " ORDER BY " + detail::field_columns(fields));
    q.bind(1, std::string(arch));
    q.bind(2, std::string(to_string(dtype)));
    detail::bind_provenance_where(q, 3, provenance, kIdentity);
    while (q.executeStep()) {
      Key k{};
      int i = 0;
      bool ok = true;
      for_each_field(fields, [&](const auto& field) {
        ok = ok && detail::Codec<detail::value_t<decltype(field)>>::read(q.getColumn(i++), field.get(k));
      });
      if (ok) out.push_back(std::move(k));
    }
    return out;
  });
}

/// Every winner of WinnersT for @p arch and @p dtype, fresh ones only when @p current is given,
/// the last recorded first (the nearest rules keep the first of equally good rows).
template <class WinnersT>
std::vector<typename WinnersT::Row> candidates(const TuningDb::Impl& im, std::string_view arch, DType dtype,
                                               const Provenance* current) {
  std::string cond = "arch = ? AND dtype = ?";
  if (current) cond += " AND " + detail::provenance_where(kStale);
  return select_rows<WinnersT>(im, cond, "id DESC",
                               [&](SQLite::Statement& q) {
                                 q.bind(1, std::string(arch));
                                 q.bind(2, std::string(to_string(dtype)));
                                 if (current) detail::bind_provenance_where(q, 3, *current, kStale);
                               });
}

/// The winner of family F that serves @p query best by the family's nearest rule (DbFamily<F>),
/// among fresh ones only when @p current is given.
template <class F>
std::optional<WinnerRowOf<F>> lookup(const TuningDb::Impl& im, std::string_view arch, DType dtype,
                                     const QueryOf<F>& query, const Provenance* current) {
  using Fam = DbFamily<F>;
  return im.run("looking up the nearest " + std::string(Fam::rows) + "winner", [&]() -> std::optional<WinnerRowOf<F>> {
    auto rows = candidates<detail::WinnersOf<F>>(im, arch, dtype, current);
    const std::size_t best = Fam::nearest(query, rows.size(), [&](std::size_t i) {
      return Fam::candidate(rows[i].key, current && same_device(rows[i].provenance, *current),
                            rows[i].provenance.timestamp);
    });
    if (best == rows.size()) return std::nullopt;
    return std::move(rows[best]);
  });
}

/// The winners of WinnersT measured on @p current's device, in listing order.
template <class WinnersT>
std::vector<typename WinnersT::Row> device_winners(const TuningDb::Impl& im, const Provenance& current) {
  return im.run("listing stale keys", [&] {
    return select_rows<WinnersT>(im, detail::provenance_where(kDevice), listing_order<WinnersT>(),
                                 [&](SQLite::Statement& q) { detail::bind_provenance_where(q, 1, current, kDevice); });
  });
}

/// From @p rows, sorted so that the rows of one unit (a key; a group bucket) are adjacent, with
/// @p same_unit telling: the units none of whose rows is fresh against @p current, each as Out{the
/// unit's first row's key, the kStale fields that differ in any of its rows}.
template <class Out, class Row, class SameUnit>
std::vector<Out> stale_units(const std::vector<Row>& rows, const Provenance& current, SameUnit&& same_unit) {
  std::vector<Out> out;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    bool fresh = false;
    std::vector<bool> changed(std::tuple_size_v<decltype(provenance_fields)>, false);
    for (; j < rows.size() && same_unit(rows[j], rows[i]); ++j) {
      const auto diff = stale_fields(rows[j].provenance, current);
      fresh |= diff.empty();
      std::size_t idx = 0;
      for_each_field(provenance_fields, [&](const auto& field) {
        if (std::find(diff.begin(), diff.end(), field.name) != diff.end()) changed[idx] = true;
        ++idx;
      });
    }
    if (!fresh) {
      Out sk{rows[i].key, {}};
      std::size_t idx = 0;
      for_each_field(provenance_fields, [&](const auto& field) {
        if (changed[idx++]) sk.changed.emplace_back(field.name);
      });
      out.push_back(std::move(sk));
    }
    i = j;
  }
  return out;
}

}  // namespace

template <class F>
std::vector<KeyOf<F>> TuningDb::finished_keys(std::string_view arch, DType dtype, const Provenance& provenance) const {
  return finished<detail::WinnersOf<F>>(impl(), arch, dtype, provenance, "listing finished keys");
}

template <class F>
bool TuningDb::has_winner(const KeyOf<F>& key, const Provenance& provenance) const {
  // Among the finished keys of its arch and dtype, one serving the same unit (the messages name
  // what each family did before: a single key was looked up, a bucket found among the keys).
  const std::string_view what = DbFamily<F>::rows.empty() ? "looking up a winner" : "listing finished keys";
  const auto unit = DbFamily<F>::unit(key);
  using WinnersT = detail::WinnersOf<F>;
  for (const auto& k : finished<WinnersT>(impl(), key.arch, key.dtype, provenance, what)) {
    if (DbFamily<F>::unit(k) == unit) return true;
  }
  return false;
}

template <class F>
std::vector<WinnerRowOf<F>> TuningDb::winners(const WinnerFilter& filter) const {
  Impl& im = impl();
  return im.run("reading " + std::string(DbFamily<F>::rows) + "winners",
                [&] { return select_filtered<detail::WinnersOf<F>>(im, filter); });
}

template <class F>
std::vector<TrialRowOf<F>> TuningDb::trials(const KeyOf<F>& key) const {
  using TrialsT = detail::TrialsOf<F>;
  Impl& im = impl();
  const auto& fields = detail::fields_of(key);
  return im.run("reading trials", [&] {
    return select_rows<TrialsT>(im, detail::fields_where(fields), identity_order() + ", label, id",
                                [&](SQLite::Statement& q) { detail::bind_fields(q, 1, key, fields); });
  });
}

template <class F>
std::vector<TrialRowOf<F>> TuningDb::all_trials() const {
  Impl& im = impl();
  return im.run("reading " + std::string(DbFamily<F>::rows) + "trials",
                [&] { return select_filtered<detail::TrialsOf<F>>(im, {}); });
}

template <class F>
std::optional<WinnerRowOf<F>> TuningDb::lookup_nearest(std::string_view arch, DType dtype,
                                                       const QueryOf<F>& query) const {
  return lookup<F>(impl(), arch, dtype, query, nullptr);
}

template <class F>
std::optional<WinnerRowOf<F>> TuningDb::lookup_nearest(std::string_view arch, DType dtype, const QueryOf<F>& query,
                                                       const Provenance& current) const {
  return lookup<F>(impl(), arch, dtype, query, &current);
}

template <class F>
std::vector<StaleKeyOf<F>> TuningDb::stale_keys(const Provenance& current) const {
  auto rows = device_winners<detail::WinnersOf<F>>(impl(), current);
  // The unit of a winner (a key; a group bucket): sort its rows together (stable: keys in order
  // within it; the rows of a single key are already in order).
  auto unit_less = [](const auto& a, const auto& b) { return DbFamily<F>::unit(a.key) < DbFamily<F>::unit(b.key); };
  auto same_unit = [](const auto& a, const auto& b) { return DbFamily<F>::unit(a.key) == DbFamily<F>::unit(b.key); };
  std::stable_sort(rows.begin(), rows.end(), unit_less);
  auto out = stale_units<StaleKeyOf<F>>(rows, current, same_unit);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

#define AMAX_DB_INSTANTIATE_QUERIES(F)                                                                         \
  template std::vector<KeyOf<F>> TuningDb::finished_keys<F>(std::string_view, DType, const Provenance&) const; \
  template bool TuningDb::has_winner<F>(const KeyOf<F>&, const Provenance&) const;                            \
  template std::vector<WinnerRowOf<F>> TuningDb::winners<F>(const WinnerFilter&) const;                       \
  template std::vector<TrialRowOf<F>> TuningDb::trials<F>(const KeyOf<F>&) const;                             \
  template std::vector<TrialRowOf<F>> TuningDb::all_trials<F>() const;                                        \
  template std::optional<WinnerRowOf<F>> TuningDb::lookup_nearest<F>(std::string_view, DType,                 \
                                                                     const QueryOf<F>&) const;                \
  template std::optional<WinnerRowOf<F>> TuningDb::lookup_nearest<F>(std::string_view, DType,                 \
                                                                     const QueryOf<F>&, const Provenance&)    \
      const;                                                                                                  \
  template std::vector<StaleKeyOf<F>> TuningDb::stale_keys<F>(const Provenance&) const;
AMAX_DB_FOR_EACH_FAMILY(AMAX_DB_INSTANTIATE_QUERIES)

TuningDb::Impl::Snapshot TuningDb::Impl::snapshot(bool with_winners, bool with_trials) const {
  return run("reading a snapshot", [&] {
    SQLite::Transaction t(*db);  // one read transaction: every table of the same moment
    Snapshot s;
    if (with_winners) {
      s.winners = select_filtered<detail::WinnersTable>(*this, {});
      s.group_winners = select_filtered<detail::GroupWinnersTable>(*this, {});
      s.quant_winners = select_filtered<detail::QuantWinnersTable>(*this, {});
    }
    if (with_trials) {
      s.trials = select_filtered<detail::TrialsTable>(*this, {});
      s.group_trials = select_filtered<detail::GroupTrialsTable>(*this, {});
      s.quant_trials = select_filtered<detail::QuantTrialsTable>(*this, {});
    }
    t.commit();
    return s;
  });
}

}  // namespace amax::db
