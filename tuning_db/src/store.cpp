#include "store.hpp"

#include <amax/db/nearest.hpp>

#include <vector>

namespace amax::db::detail {

ProvenanceIds::ProvenanceIds(SQLite::Database& db)
    : db_(db),
      find_(db, "SELECT id FROM provenance WHERE " + fields_where(provenance_fields)),
      insert_(db, "INSERT INTO provenance (" + field_columns(provenance_fields) + ") VALUES (" +
                      placeholders(std::tuple_size_v<decltype(provenance_fields)>) + ")") {}

std::int64_t ProvenanceIds::id_of(const Provenance& p) {
  const std::string text = fields_text(p, provenance_fields);
  if (const auto it = cache_.find(text); it != cache_.end()) return it->second;
  find_.reset();
  bind_fields(find_, 1, p, provenance_fields);
  std::int64_t id = 0;
  if (find_.executeStep()) {
    id = find_.getColumn(0).getInt64();
  } else {
    insert_.reset();
    bind_fields(insert_, 1, p, provenance_fields);
    insert_.exec();
    id = db_.getLastInsertRowid();
  }
  find_.reset();
  cache_.emplace(text, id);
  return id;
}

int delete_unused_provenance(SQLite::Database& db) {
  const std::string id(kProvenanceId);
  return db.exec("DELETE FROM provenance WHERE id NOT IN (SELECT " + id + " FROM " + std::string(TrialsTable::name) +
                 " UNION ALL SELECT " + id + " FROM " + std::string(WinnersTable::name) + " UNION ALL SELECT " + id +
                 " FROM " + std::string(GroupTrialsTable::name) + " UNION ALL SELECT " + id + " FROM " +
                 std::string(GroupWinnersTable::name) + ")");
}

int delete_group_bucket(SQLite::Database& db, const GroupKey& key, const Provenance& p, bool keep_shape) {
  const GroupBucket bucket = group_bucket(key);
  int deleted = 0;
  for (std::string_view table : {GroupTrialsTable::name, GroupWinnersTable::name}) {
    SQLite::Statement q(db, "SELECT id, tensors, total_bytes, largest_bytes FROM " + std::string(table) +
                                " WHERE arch = ? AND dtype = ? AND " + identity_ids_where());
    q.bind(1, key.arch);
    q.bind(2, std::string(to_string(key.dtype)));
    bind_provenance_where(q, 3, p, kIdentity);
    std::vector<std::int64_t> ids;
    while (q.executeStep()) {
      GroupKey stored{key.arch, key.dtype, 0, 0, 0};
      if (!Codec<std::uint64_t>::read(q.getColumn(1), stored.tensors) ||
          !Codec<std::uint64_t>::read(q.getColumn(2), stored.total_bytes) ||
          !Codec<std::uint64_t>::read(q.getColumn(3), stored.largest_bytes)) {
        continue;  // negative counts: never written by us; the readers report them
      }
      if (group_bucket(stored) == bucket && !(keep_shape && stored == key)) ids.push_back(q.getColumn(0).getInt64());
    }
    SQLite::Statement del(db, "DELETE FROM " + std::string(table) + " WHERE id = ?");
    for (std::int64_t id : ids) {
      del.reset();
      del.bind(1, id);
      deleted += del.exec();
    }
  }
  return deleted;
}

}  // namespace amax::db::detail
