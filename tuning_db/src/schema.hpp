// Private: schema creation and migrations, derived from the field lists.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace amax::db::detail {

/// PRAGMA application_id of amax-tune tuning databases: 'AMAX'.
inline constexpr std::int32_t kApplicationId = 0x414D4158;

/// What a file holds, read without writing anything.
struct FileState {
  std::int32_t application_id = 0;
  std::vector<std::string> tables;  ///< user tables, sorted
  bool has_meta = false;
  int version = 0;                  ///< meta.schema_version; 0 for a fresh (empty) file
  bool version_valid = true;        ///< false when meta exists but schema_version is missing/bad
  std::string version_text;         ///< the raw stored value, for messages
};

/// Reads application_id, the table list and meta.schema_version.
FileState inspect(SQLite::Database& db);

/// Applies the migration to version @p to and stores schema_version = to. 1 creates meta, trials
/// and winners; 4 moves the provenance into its own table (trials and winners rebuilt with a
/// provenance_id) and creates group_trials and group_winners; every other k adds the columns whose
/// fields have since_schema == k. Call inside a write
/// transaction, in order. @throws SQLite::Exception (SQLITE_CORRUPT when the migration to 4 would
/// lose a row).
void apply_migration(SQLite::Database& db, int to);

}  // namespace amax::db::detail
