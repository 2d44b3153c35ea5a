// Private: writing rows in the current layout (schema 4): provenance stored once and referenced
// by id, the replacement rules of TuningDb::record<F> / import_rows, and the removal of
// provenance rows nothing references any more. Call everything inside a write transaction.
#pragma once

#include "tables.hpp"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <map>
#include <string>

namespace amax::db::detail {

/// The ids of provenance rows within one write transaction: finds the row equal to a Provenance
/// in every field, or inserts it. Not thread-safe (one per transaction).
class ProvenanceIds {
 public:
  explicit ProvenanceIds(SQLite::Database& db);
  /// The id of the provenance row equal to @p p, inserted if there is none.
  std::int64_t id_of(const Provenance& p);

 private:
  SQLite::Database& db_;
  SQLite::Statement find_, insert_;
  std::map<std::string, std::int64_t> cache_;  // fields_text of all fields -> id
};

/// Deletes the provenance rows that no trial, winner, group trial or group winner references.
/// Returns how many.
int delete_unused_provenance(SQLite::Database& db);

/// "DELETE FROM table WHERE <key> AND provenance_id IN (<identity>)[ AND label = ?]": the rows of
/// Table a row replaces (same key and provenance identity, and for trials with @p with_label the
/// same label). Parameters bound by bind_same_identity().
template <class Table>
std::string same_identity_delete_sql(bool with_label) {
  std::string sql = "DELETE FROM " + std::string(Table::name) + " WHERE " +
                    fields_where(*std::get<0>(Table::parts).fields) + " AND " + identity_ids_where();
  if (per_label<Table> && with_label) sql += " AND label = ?";
  return sql;
}

template <class Table>
void bind_same_identity(SQLite::Statement& del, const typename Table::Row& row, bool with_label) {
  const int i = bind_provenance_where(del, bind_fields(del, 1, row.key, fields_of(row.key)), row.provenance, kIdentity);
  if constexpr (per_label<Table>) {
    if (with_label) del.bind(i, row.trial.label);
  }
}

/// Deletes the rows of Table for @p row's key whose provenance has @p row's identity (the label
/// does not matter): what a record of that key replaces. Returns how many.
template <class Table>
int delete_same_identity(SQLite::Database& db, const typename Table::Row& row) {
  SQLite::Statement del(db, same_identity_delete_sql<Table>(false));
  bind_same_identity<Table>(del, row, false);
  return del.exec();
}

/// Deletes the group rows (winners and trials) of @p key's arch and dtype whose provenance has the
/// identity of @p p and whose shape lies in group_bucket(@p key), except, with @p keep_shape, those
/// of exactly @p key's shape: the database keeps one shape per arch, dtype, bucket and identity.
/// Returns how many.
int delete_group_bucket(SQLite::Database& db, const GroupKey& key, const Provenance& p, bool keep_shape);

/// Inserts rows of Table, each with the id of its provenance (prepared statements, for many rows).
template <class Table>
class RowWriter {
 public:
  RowWriter(SQLite::Database& db, ProvenanceIds& ids)
      : insert_(db, insert_sql<Table>()), delete_(db, same_identity_delete_sql<Table>(true)), ids_(ids) {}
  void insert(const typename Table::Row& row) {
    insert_.reset();
    bind_row<Table>(insert_, 1, row, ids_.id_of(row.provenance));
    insert_.exec();
  }
  /// Deletes the row @p row replaces (same key and identity, and label for trials), then inserts
  /// it. Returns how many rows were deleted.
  int replace(const typename Table::Row& row) {
    delete_.reset();
    bind_same_identity<Table>(delete_, row, true);
    const int deleted = delete_.exec();
    insert(row);
    return deleted;
  }

 private:
  SQLite::Statement insert_, delete_;
  ProvenanceIds& ids_;
};

}  // namespace amax::db::detail
