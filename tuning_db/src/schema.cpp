#include "schema.hpp"

#include "codec.hpp"

#include <SQLiteCpp/Statement.h>

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

template <class Table>
std::string identity_index(std::string_view index_name, bool with_label, int version) {
  std::vector<std::string> cols{"arch", "dtype", "n"};
  for_each_field(provenance_fields, [&](const auto& field) {
    if (field.has(kIdentity) && field.since_schema <= version) cols.push_back("prov_" + std::string(field.name));
  });
  if (with_label) cols.push_back("label");
  return "CREATE UNIQUE INDEX " + std::string(index_name) + " ON " + std::string(Table::name) + " (" +
         join(cols, ", ") + ")";
}

template <class Table>
std::string create_table(int version) {
  auto cols = column_defs<Table>(version);
  cols.insert(cols.begin(), "id INTEGER PRIMARY KEY");
  return "CREATE TABLE " + std::string(Table::name) + " (\n  " + join(cols, ",\n  ") + "\n)";
}

std::vector<std::string> v1_statements() {
  return {
      "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value NOT NULL)",
      "INSERT INTO meta (key, value) VALUES ('application', 'amax-tune tuning database')",
      create_table<TrialsTable>(1),
      identity_index<TrialsTable>("trials_identity", true, 1),
      create_table<WinnersTable>(1),
      identity_index<WinnersTable>("winners_identity", false, 1),
  };
}

/// Columns added at version @p k (fields with since_schema == k).
std::vector<std::string> added_columns(int k) {
  std::vector<std::string> out;
  for (const auto& def : column_defs<TrialsTable>(k, k)) out.push_back("ALTER TABLE trials ADD COLUMN " + def);
  for (const auto& def : column_defs<WinnersTable>(k, k)) out.push_back("ALTER TABLE winners ADD COLUMN " + def);
  return out;
}

/// Hand-written statements of version k beyond added columns (none so far). A new kIdentity
/// field would need the identity indexes dropped and recreated here.
std::vector<std::string> extra_statements(int /*k*/) { return {}; }

std::vector<std::string> migration_statements(int to) {
  std::vector<std::string> out = to == 1 ? v1_statements() : added_columns(to);
  for (auto& s : extra_statements(to)) out.push_back(std::move(s));
  return out;
}

}  // namespace

void apply_migration(SQLite::Database& db, int to) {
  for (const auto& sql : migration_statements(to)) db.exec(sql);
  SQLite::Statement v(db, "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)");
  v.bind(1, to);
  v.exec();
  db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
}

std::vector<std::string> schema_statements(int version) {
  std::vector<std::string> out;
  for (int k = 1; k <= version; ++k) {
    for (auto& s : migration_statements(k)) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace amax::db::detail
