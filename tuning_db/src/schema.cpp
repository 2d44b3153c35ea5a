#include "schema.hpp"

#include "tables.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include <algorithm>

namespace amax::db::detail {

FileState inspect(SQLite::Database& db) {
  FileState st;
  st.application_id = db.execAndGet("PRAGMA application_id").getInt();
  SQLite::Statement q(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
  while (q.executeStep()) st.tables.push_back(q.getColumn(0).getString());
  st.has_meta = std::find(st.tables.begin(), st.tables.end(), "meta") != st.tables.end();
  if (st.has_meta) {
    SQLite::Statement v(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (v.executeStep()) {
      const SQLite::Column c = v.getColumn(0);
      st.version_text = c.isNull() ? "NULL" : c.getString();
      st.version_valid = c.isInteger() && c.getInt64() >= 1 && c.getInt64() <= 1'000'000;
      st.version = st.version_valid ? c.getInt() : 0;
    } else {
      st.version_valid = false;
      st.version_text = "(missing)";
    }
  }
  return st;
}

namespace {

/// The tables of rows, in creation order.
using RowTables = std::tuple<TrialsTable, WinnersTable, GroupTrialsTable, GroupWinnersTable, QuantTrialsTable,
                             QuantWinnersTable>;

template <class F>
void for_each_table(F&& f) {
  std::apply([&](auto... table) { (f(table), ...); }, RowTables{});
}

/// The unique index "<table>_identity" of Table at schema @p version: the key's columns, the
/// provenance (its identity columns before schema 4, provenance_id after), and the label for
/// trials. From schema 4 the index no longer spans the identity (rows of other timestamps or
/// drivers have other provenance ids); record<F> and import_rows delete the rows of the same
/// identity before they insert.
template <class Table>
std::string identity_index(int version) {
  std::string cols = field_columns(*std::get<0>(Table::parts).fields);
  if (provenance_by_id(version)) {
    cols += ", " + std::string(kProvenanceId);
  } else {
    for_each_field(provenance_fields, [&](const auto& field) {
      if (field.has(kIdentity) && field.since_schema <= version) cols += ", prov_" + std::string(field.name);
    });
  }
  if constexpr (per_label<Table>) cols += ", label";
  return "CREATE UNIQUE INDEX " + std::string(Table::name) + "_identity ON " + std::string(Table::name) + " (" + cols + ")";
}

/// CREATE TABLE @p name (default: Table's) with Table's columns at schema @p version.
template <class Table>
std::string create_table(int version, std::string name = std::string(Table::name)) {
  auto cols = column_defs<Table>(version);
  cols.insert(cols.begin(), "id INTEGER PRIMARY KEY");
  if (provenance_by_id(version)) cols.push_back(std::string(kProvenanceId) + " INTEGER NOT NULL REFERENCES provenance (id)");
  return "CREATE TABLE " + name + " (\n  " + join(cols, ",\n  ") + "\n)";
}

/// Names of the provenance table's columns at schema @p version, with @p prefix.
std::string provenance_names(int version, std::string_view prefix = "") {
  std::vector<std::string> cols;
  for_each_field(provenance_fields, [&](const auto& field) {
    if (field.since_schema <= version) cols.push_back(std::string(prefix) + std::string(field.name));
  });
  return join(cols, ", ");
}

/// The provenance table: one row per distinct provenance, unique over all its fields.
std::vector<std::string> provenance_table(int version) {
  std::vector<std::string> cols{"id INTEGER PRIMARY KEY"};
  for_each_field(provenance_fields, [&](const auto& field) {
    if (field.since_schema <= version) cols.push_back(column_def(std::string(field.name), field));
  });
  return {"CREATE TABLE provenance (\n  " + join(cols, ",\n  ") + "\n)",
          "CREATE UNIQUE INDEX provenance_unique ON provenance (" + provenance_names(version) + ")"};
}

std::vector<std::string> v1_statements() {
  return {
      "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value NOT NULL)",
      "INSERT INTO meta (key, value) VALUES ('application', 'amax-tune tuning database')",
      create_table<TrialsTable>(1),
      identity_index<TrialsTable>(1),
      create_table<WinnersTable>(1),
      identity_index<WinnersTable>(1),
  };
}

/// Schema 4, one transaction: the provenance table filled with the distinct prov_* tuples of
/// trials and winners; both tables rebuilt (SQLite cannot drop columns that an index uses) with
/// provenance_id instead of the prov_* columns, keeping every row, its id and its values; the
/// (empty) group tables.
std::vector<std::string> v4_statements() {
  constexpr int v = kProvenanceTableSchema, before = v - 1;
  std::vector<std::string> out = provenance_table(v);
  const std::string prov_cols = provenance_names(before), prov_old = provenance_names(before, "prov_");
  for (std::string_view t : {TrialsTable::name, WinnersTable::name}) {
    out.push_back("INSERT OR IGNORE INTO provenance (" + prov_cols + ") SELECT " + prov_old + " FROM " +
                  std::string(t) + " ORDER BY id");
  }
  std::string join_on;
  for_each_field(provenance_fields, [&](const auto& field) {
    if (field.since_schema > before) return;
    join_on += std::string(join_on.empty() ? "" : " AND ") + "p." + std::string(field.name) + " = r.prov_" +
               std::string(field.name);
  });
  auto rebuild = [&](auto table) {
    using Table = decltype(table);
    const std::string name(Table::name), tmp = name + "_v" + std::to_string(v);
    std::vector<std::string> kept;  // the columns the table keeps, as they are at version 3
    for_each_column<Table>([&](const auto& p, const auto& field) {
      if (!p.referenced && field.since_schema <= before) kept.push_back(column_name(p, field));
    });
    out.push_back(create_table<Table>(v, tmp));
    out.push_back("INSERT INTO " + tmp + " (id, " + join(kept, ", ") + ", " + std::string(kProvenanceId) +
                  ") SELECT r.id, r." + join(kept, ", r.") + ", p.id FROM " + name + " AS r JOIN provenance AS p ON " +
                  join_on + " ORDER BY r.id");
    out.push_back("DROP TABLE " + name);
    out.push_back("ALTER TABLE " + tmp + " RENAME TO " + name);
    out.push_back(identity_index<Table>(v));
  };
  rebuild(TrialsTable{});
  rebuild(WinnersTable{});
  for_each_table([&](auto table) {
    using Table = decltype(table);
    if constexpr (Table::since_schema == v) {
      out.push_back(create_table<Table>(v));
      out.push_back(identity_index<Table>(v));
    }
  });
  return out;
}

/// Columns added at version @p k (fields with since_schema == k) to the tables older than k, and
/// (from schema 5 on) to the provenance table, whose unique index then spans them too; the tables
/// that start at k (after schema 4: a family's tables, empty).
std::vector<std::string> added_columns(int k) {
  std::vector<std::string> out;
  for_each_table([&](auto table) {
    using Table = decltype(table);
    if (Table::since_schema != k) return;
    out.push_back(create_table<Table>(k));
    out.push_back(identity_index<Table>(k));
  });
  for_each_table([&](auto table) {
    using Table = decltype(table);
    if (!has_table<Table>(k - 1)) return;
    for (const auto& def : column_defs<Table>(k, k)) {
      out.push_back("ALTER TABLE " + std::string(Table::name) + " ADD COLUMN " + def);
    }
  });
  if (provenance_by_id(k - 1)) {
    bool added = false;
    for_each_field(provenance_fields, [&](const auto& field) {
      if (field.since_schema != k) return;
      out.push_back("ALTER TABLE provenance ADD COLUMN " + column_def(std::string(field.name), field));
      added = true;
    });
    if (added) {
      out.push_back("DROP INDEX provenance_unique");
      out.push_back("CREATE UNIQUE INDEX provenance_unique ON provenance (" + provenance_names(k) + ")");
    }
  }
  return out;
}

std::vector<std::string> migration_statements(int to) {
  return to == 1 ? v1_statements() : to == kProvenanceTableSchema ? v4_statements() : added_columns(to);
}

std::int64_t count_rows(SQLite::Database& db, std::string_view table) {
  return db.execAndGet("SELECT count(*) FROM " + std::string(table)).getInt64();
}

}  // namespace

void apply_migration(SQLite::Database& db, int to) {
  std::int64_t before[2] = {0, 0};
  if (to == kProvenanceTableSchema) before[0] = count_rows(db, TrialsTable::name), before[1] = count_rows(db, WinnersTable::name);
  for (const auto& sql : migration_statements(to)) db.exec(sql);
  if (to == kProvenanceTableSchema) {  // every row found its provenance (the join would drop one that did not)
    const std::int64_t after[2] = {count_rows(db, TrialsTable::name), count_rows(db, WinnersTable::name)};
    if (after[0] != before[0] || after[1] != before[1]) {
      throw SQLite::Exception("migrating to schema 4 would keep " + std::to_string(after[0]) + " of " +
                                  std::to_string(before[0]) + " trials and " + std::to_string(after[1]) + " of " +
                                  std::to_string(before[1]) + " winners; the file was left unchanged",
                              SQLITE_CORRUPT);
    }
  }
  SQLite::Statement v(db, "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)");
  v.bind(1, to);
  v.exec();
  db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
}

}  // namespace amax::db::detail
