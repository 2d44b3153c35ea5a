// TuningDb: writes -- recording the results of one key of a kernel family, importing rows.
#include <amax/db/tuning_db.hpp>

#include "store.hpp"
#include "tables.hpp"
#include "tuning_db_impl.hpp"
#include "util.hpp"
#include "validate.hpp"

#include <SQLiteCpp/Transaction.h>

#include <map>
#include <type_traits>

namespace amax::db {

using detail::quoted;

namespace {

/// Deletes what a record of @p key of family F replaces: the rows of the same key and provenance
/// identity (a group key: of every shape of its bucket). Returns how many rows.
template <class F>
int delete_replaced(SQLite::Database& db, const KeyOf<F>& key, const Provenance& provenance) {
  if constexpr (std::is_same_v<KeyOf<F>, GroupKey>) {
    return detail::delete_group_bucket(db, key, provenance, false);
  } else {
    return detail::delete_same_identity<detail::TrialsOf<F>>(db, {key, {}, provenance}) +
           detail::delete_same_identity<detail::WinnersOf<F>>(db, {key, {}, provenance});
  }
}

}  // namespace

/// In one transaction: deletes what the new rows replace, inserts the trials and the winner with
/// the provenance's id, and deletes the provenance rows left unreferenced.
template <class F>
void TuningDb::record(const KeyOf<F>& key, const Provenance& provenance, std::span<const Trial> trials,
                      const std::optional<Winner>& winner) {
  Impl& im = impl();
  im.require_writable(DbFamily<F>::record_call);
  detail::validate_record(im.path, key, provenance, trials, winner);
  im.run("recording " + to_string(key), [&] {
    SQLite::Transaction t(*im.db, SQLite::TransactionBehavior::IMMEDIATE);
    const int deleted = delete_replaced<F>(*im.db, key, provenance);
    detail::ProvenanceIds ids(*im.db);
    detail::RowWriter<detail::TrialsOf<F>> trial_writer(*im.db, ids);
    for (const Trial& trial : trials) trial_writer.insert({key, trial, provenance});
    if (winner) detail::RowWriter<detail::WinnersOf<F>>(*im.db, ids).insert({key, *winner, provenance});
    if (deleted > 0) detail::delete_unused_provenance(*im.db);
    t.commit();
  });
}

#define AMAX_DB_INSTANTIATE_RECORD(F)                                                          \
  template void TuningDb::record<F>(const KeyOf<F>&, const Provenance&, std::span<const Trial>, \
                                    const std::optional<Winner>&);
AMAX_DB_FOR_EACH_FAMILY(AMAX_DB_INSTANTIATE_RECORD)

void TuningDb::import_rows(std::span<const WinnerRow> winners, std::span<const TrialRow> trials,
                           std::span<const GroupWinnerRow> group_winners, std::span<const GroupTrialRow> group_trials,
                           std::span<const WinnerRow> quant_winners, std::span<const TrialRow> quant_trials) {
  Impl& im = impl();
  im.require_writable("import_rows");
  auto fail = [&](const std::string& what, std::size_t i, const std::string& msg) {
    throw DbError(ErrorKind::InvalidArgument,
                  "tuning database " + quoted(im.path) + ": cannot import " + what + " row " +
                      std::to_string(i) + ": " + msg,
                  im.path);
  };
  auto check = [&](const auto& rows, const std::string& what) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (const std::string e = detail::check_row(rows[i]); !e.empty()) fail(what, i, e);
    }
  };
  check(winners, "winner");
  check(trials, "trial");
  check(group_winners, "group winner");
  check(group_trials, "group trial");
  check(quant_winners, "quantize winner");
  check(quant_trials, "quantize trial");
  // One shape per arch, dtype, bucket and identity among the group rows themselves.
  struct Shape {
    const GroupKey* key;
    const Provenance* provenance;
    std::string row;  // "group winner row 3", for messages
  };
  std::map<std::string, Shape> shapes;  // detail::group_slot -> the first shape seen there
  auto claim = [&](const auto& rows, const std::string& what) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Shape shape{&rows[i].key, &rows[i].provenance, what + " row " + std::to_string(i)};
      const auto [it, inserted] = shapes.emplace(detail::group_slot(rows[i].key, rows[i].provenance), shape);
      if (!inserted && !(*it->second.key == rows[i].key)) {
        fail(what, i, "its key " + to_string(rows[i].key) + " lies in the bucket of " + to_string(*it->second.key) +
                          " (" + it->second.row + ") with the same provenance identity; a database keeps one shape "
                          "per bucket and identity");
      }
    }
  };
  claim(group_winners, "group winner");
  claim(group_trials, "group trial");
  im.run("importing rows", [&] {
    SQLite::Transaction t(*im.db, SQLite::TransactionBehavior::IMMEDIATE);
    detail::ProvenanceIds ids(*im.db);
    int deleted = 0;
    for (const auto& entry : shapes) {
      deleted += detail::delete_group_bucket(*im.db, *entry.second.key, *entry.second.provenance, true);
    }
    auto write = [&](auto table, const auto& rows) {
      using Table = decltype(table);
      detail::RowWriter<Table> writer(*im.db, ids);
      for (const auto& r : rows) deleted += writer.replace(r);
    };
    write(detail::WinnersTable{}, winners);
    write(detail::TrialsTable{}, trials);
    write(detail::GroupWinnersTable{}, group_winners);
    write(detail::GroupTrialsTable{}, group_trials);
    write(detail::QuantWinnersTable{}, quant_winners);
    write(detail::QuantTrialsTable{}, quant_trials);
    if (deleted > 0) detail::delete_unused_provenance(*im.db);
    t.commit();
  });
}

}  // namespace amax::db
