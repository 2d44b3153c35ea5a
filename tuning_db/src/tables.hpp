// Private: the stored tables and everything derived from their field lists -- the tables of each
// kernel family, SQL column definitions, SELECT lists, statement binding and row reading, JSON
// (flat and nested), CSV text, ordering. The value conversions are codec.hpp.
#pragma once

#include "codec.hpp"
#include "util.hpp"

#include <amax/db/error.hpp>
#include <amax/db/family.hpp>
#include <amax/db/field.hpp>
#include <amax/db/group.hpp>
#include <amax/db/key.hpp>
#include <amax/db/nearest.hpp>
#include <amax/db/provenance.hpp>
#include <amax/db/trial.hpp>
#include <amax/db/winner.hpp>

#include <SQLiteCpp/Column.h>
#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

/// Calls X(F) for every kernel family tag F: the explicit instantiations of TuningDb's family
/// templates and their private helpers (record.cpp, queries.cpp, validate.cpp). A new family
/// adds its tag here.
#define AMAX_DB_FOR_EACH_FAMILY(X) X(SingleFamily) X(MultiFamily) X(QuantizeFamily)

namespace amax::db::detail {

/// Schema version from which trials and winners (and the group tables, which start there) store
/// their provenance once, as an id into the table `provenance` (one row per distinct provenance),
/// instead of in their own prov_* columns.
inline constexpr int kProvenanceTableSchema = 4;

/// Whether the rows of a file at schema @p version reference their provenance by id.
constexpr bool provenance_by_id(int version) { return version >= kProvenanceTableSchema; }

/// The column of trials, winners, group_trials and group_winners (schema >= 4) naming the row's
/// provenance.
inline constexpr std::string_view kProvenanceId = "provenance_id";

/// One struct inside a stored row: its field list, the prefix of its columns, the member of the
/// row it lives in, whether JSON export nests it under its own name, and whether it is stored in
/// the provenance table (schema >= 4) rather than in the row's own columns. The columns of a row
/// as every reader sees them (SELECT lists, JSON, CSV, text dumps) are those of all parts, whatever
/// the layout.
template <class Row, class Sub, class Fields>
struct Part {
  std::string_view prefix;
  const Fields* fields;
  Sub Row::*member;
  std::string_view nest;    ///< non-empty: export_json nests these fields under this key
  bool referenced = false;  ///< provenance: kept in the provenance table from schema 4 on
};

template <class Row, class Sub, class Fields>
constexpr Part<Row, Sub, Fields> part(std::string_view prefix, const Fields& fields, Sub Row::*member,
                                      std::string_view nest = {}, bool referenced = false) {
  return {prefix, &fields, member, nest, referenced};
}

/// The parts of a stored row: its key, its payload (Trial or Winner), its provenance.
template <class Row, class Key, class KeyFields, class Payload, class PayloadFields>
constexpr auto row_parts(Key Row::*key, const KeyFields& key_list, Payload Row::*payload,
                         const PayloadFields& payload_list) {
  return std::tuple{part("", key_list, key), part("", payload_list, payload),
                    part("prov_", provenance_fields, &Row::provenance, "provenance", true)};
}

/// A stored table of kernel family F: rows {key, payload (Trial or Winner), provenance}, named
/// @p Name (one of DbFamily<F>'s table names), created at DbFamily<F>::since_schema; the text dump
/// tags its rows with the name in the singular ("winner", "group_trial").
template <class F, class RowT, auto Payload, const auto& PayloadFields, const std::string_view& Name>
struct RowTable {
  using Row = RowT;
  static constexpr int since_schema = DbFamily<F>::since_schema;
  static constexpr auto parts = row_parts(&Row::key, DbFamily<F>::key_fields, Payload, PayloadFields);
  static constexpr std::string_view name = Name, dump_tag = name.substr(0, name.size() - 1);
};

/// The trials and the winners of kernel family F.
template <class F>
using TrialsOf = RowTable<F, TrialRowOf<F>, &TrialRowOf<F>::trial, trial_fields, DbFamily<F>::trials_table>;
template <class F>
using WinnersOf = RowTable<F, WinnerRowOf<F>, &WinnerRowOf<F>::winner, winner_fields, DbFamily<F>::winners_table>;
using TrialsTable = TrialsOf<SingleFamily>;
using WinnersTable = WinnersOf<SingleFamily>;
using GroupTrialsTable = TrialsOf<MultiFamily>;
using GroupWinnersTable = WinnersOf<MultiFamily>;
using QuantTrialsTable = TrialsOf<QuantizeFamily>;
using QuantWinnersTable = WinnersOf<QuantizeFamily>;

/// Whether a file at schema @p version has Table.
template <class Table>
constexpr bool has_table(int version) {
  return version >= Table::since_schema;
}

/// Whether rows of Table carry one variant each (trials: the label is part of their identity).
template <class Table>
constexpr bool per_label = requires(const typename Table::Row& r) { r.trial; };

/// The field list of each stored struct.
constexpr const auto& fields_of(const TuningKey&) { return key_fields; }
constexpr const auto& fields_of(const GroupKey&) { return group_key_fields; }
constexpr const auto& fields_of(const Trial&) { return trial_fields; }
constexpr const auto& fields_of(const Winner&) { return winner_fields; }
constexpr const auto& fields_of(const Provenance&) { return provenance_fields; }

/// The payload of a row: its Trial or its Winner.
template <class Row>
const auto& payload(const Row& row) {
  if constexpr (requires { row.trial; }) {
    return row.trial;
  } else {
    return row.winner;
  }
}

/// Calls f(part, field) for every column of Table, in column order.
template <class Table, class F>
void for_each_column(F&& f) {
  std::apply(
      [&](const auto&... p) {
        (for_each_field(*p.fields, [&](const auto& field) { f(p, field); }), ...);
      },
      Table::parts);
}

template <class P, class Fd>
std::string column_name(const P& p, const Fd& field) {
  return std::string(p.prefix) + std::string(field.name);
}

template <class Fd>
using value_t = typename std::decay_t<Fd>::value_type;

template <class Fd>
using owner_t = typename std::decay_t<Fd>::owner_type;

/// The default of a field: the member's default initializer.
template <class Fd>
value_t<Fd> default_value(const Fd& field) {
  const owner_t<Fd> fresh{};
  return field.get(fresh);
}

/// "name TYPE NOT NULL DEFAULT x": the column definition of @p field named @p name.
template <class Fd>
std::string column_def(const std::string& name, const Fd& field) {
  using T = value_t<Fd>;
  return name + " " + std::string(Codec<T>::sql_type) + " NOT NULL DEFAULT " + Codec<T>::sql_literal(default_value(field));
}

/// The definitions of the columns Table stores itself at schema @p version that were introduced
/// at @p min_since or later (the provenance part only before schema 4; provenance_id is not
/// listed: see create_table in schema.cpp).
template <class Table>
std::vector<std::string> column_defs(int version, int min_since = 1) {
  std::vector<std::string> out;
  for_each_column<Table>([&](const auto& p, const auto& field) {
    if (p.referenced && provenance_by_id(version)) return;
    if (field.since_schema > version || field.since_schema < min_since) return;
    out.push_back(column_def(column_name(p, field), field));
  });
  return out;
}

/// Names of all columns of Table as readers see them (current schema; prov_* included).
template <class Table>
std::vector<std::string> column_names() {
  std::vector<std::string> out;
  for_each_column<Table>([&](const auto& p, const auto& field) { out.push_back(column_name(p, field)); });
  return out;
}

/// Names of the columns Table stores itself at the current schema, provenance_id last.
template <class Table>
std::vector<std::string> stored_column_names() {
  std::vector<std::string> out;
  for_each_column<Table>([&](const auto& p, const auto& field) {
    if (!p.referenced) out.push_back(column_name(p, field));
  });
  out.emplace_back(kProvenanceId);
  return out;
}

/// SELECT list for a file at schema @p file_version: columns the file lacks are read as their
/// default literal.
template <class Table>
std::string select_list(int file_version) {
  std::string out;
  for_each_column<Table>([&](const auto& p, const auto& field) {
    if (!out.empty()) out += ", ";
    if (field.since_schema <= file_version) {
      out += column_name(p, field);
    } else {
      using T = value_t<decltype(field)>;
      out += Codec<T>::sql_literal(default_value(field)) + " AS " + column_name(p, field);
    }
  });
  return out;
}

/// The FROM source of Table's rows in a file at schema @p file_version, exposing every column
/// select_list() names: before schema 4 the table itself; from schema 4 on a subquery joining it
/// with the provenance table, whose columns come out under their prov_* names, so that every
/// query (WHERE prov_compiler = ?, ORDER BY prov_device_name...) reads both layouts alike.
template <class Table>
std::string source(int file_version) {
  const std::string table(Table::name);
  if (!provenance_by_id(file_version)) return table;
  std::string cols = "r.id AS id";
  for_each_column<Table>([&](const auto& p, const auto& field) {
    if (field.since_schema > file_version) return;  // select_list() reads the default
    cols += p.referenced ? ", p." + std::string(field.name) + " AS " : ", r.";
    cols += column_name(p, field);
  });
  // LEFT JOIN: a row whose provenance_id names no provenance row (damage) reads as NULLs, which
  // read_row() reports as Corrupt instead of the row silently disappearing.
  return "(SELECT " + cols + " FROM " + table + " AS r LEFT JOIN provenance AS p ON p.id = r." +
         std::string(kProvenanceId) + ") AS " + table;
}

/// "?, ?, ..." with @p n parameters.
inline std::string placeholders(std::size_t n) {
  std::string q;
  for (std::size_t i = 0; i < n; ++i) q += i ? ", ?" : "?";
  return q;
}

/// "INSERT INTO table (c..., provenance_id) VALUES (?...)" for the current schema.
template <class Table>
std::string insert_sql() {
  const auto cols = stored_column_names<Table>();
  return "INSERT INTO " + std::string(Table::name) + " (" + join(cols, ", ") + ") VALUES (" + placeholders(cols.size()) + ")";
}

/// Binds the stored columns of @p row (current schema) to parameters first, first+1, ..., its
/// provenance as @p provenance_id last; returns the next index.
template <class Table>
int bind_row(SQLite::Statement& s, int first, const typename Table::Row& row, std::int64_t provenance_id) {
  int i = first;
  for_each_column<Table>([&](const auto& p, const auto& field) {
    if (p.referenced) return;
    using T = value_t<decltype(field)>;
    Codec<T>::bind(s, i++, field.get(row.*(p.member)));
  });
  s.bind(i++, provenance_id);
  return i;
}

/// Reads a row from the current result row of @p s (columns in select_list order).
/// @throws DbError(Corrupt) naming the table, column, row and value when a stored value cannot
/// be parsed (untrusted input).
template <class Table>
typename Table::Row read_row(const SQLite::Statement& s, const std::filesystem::path& path) {
  typename Table::Row row{};
  int i = 0;
  for_each_column<Table>([&](const auto& p, const auto& field) {
    using T = value_t<decltype(field)>;
    const SQLite::Column c = s.getColumn(i++);
    if (!Codec<T>::read(c, field.get(row.*(p.member)))) {
      throw DbError(ErrorKind::Corrupt,
                    "tuning database '" + path.string() + "': table " + std::string(Table::name) +
                        ", column " + column_name(p, field) + ": stored value '" +
                        (c.isNull() ? std::string("NULL") : c.getString()) + "' is not a valid " +
                        std::string(Codec<T>::sql_type) + " for this field (" + std::string(field.doc) + ")",
                    path);
    }
  });
  return row;
}

/// Flat JSON object {"col": value, ...} (text dump).
template <class Table>
void to_flat_json(const typename Table::Row& row, ojson& j) {
  for_each_column<Table>([&](const auto& p, const auto& field) {
    using T = value_t<decltype(field)>;
    j[column_name(p, field)] = Codec<T>::to_json(field.get(row.*(p.member)));
  });
}

/// Nested JSON object (export): parts with a nest name become sub-objects keyed by field name.
template <class Table>
ojson to_nested_json(const typename Table::Row& row) {
  ojson j = ojson::object();
  for_each_column<Table>([&](const auto& p, const auto& field) {
    using T = value_t<decltype(field)>;
    ojson v = Codec<T>::to_json(field.get(row.*(p.member)));
    if (p.nest.empty()) {
      j[std::string(field.name)] = std::move(v);
    } else {
      j[std::string(p.nest)][std::string(field.name)] = std::move(v);
    }
  });
  return j;
}

/// CSV cell texts of @p row, in column order.
template <class Table>
std::vector<std::string> to_texts(const typename Table::Row& row) {
  std::vector<std::string> out;
  for_each_column<Table>([&](const auto& p, const auto& field) {
    using T = value_t<decltype(field)>;
    out.push_back(Codec<T>::to_text(field.get(row.*(p.member))));
  });
  return out;
}

/// Three-way comparison of the fields of @p fields with any of @p roles (all if roles == 0).
template <class Owner, class Fields>
int compare_fields(const Owner& a, const Owner& b, const Fields& fields, unsigned roles = 0) {
  int r = 0;
  for_each_field(fields, [&](const auto& field) {
    if (r != 0 || (roles != 0 && (field.roles & roles) == 0)) return;
    using T = value_t<decltype(field)>;
    r = Codec<T>::compare(field.get(a), field.get(b));
  });
  return r;
}

/// "<prefix>a <sep> <prefix>b ..." for the fields of @p fields with any of @p roles (all if 0),
/// each followed by @p suffix: column lists, WHERE conditions.
template <class Fields>
std::string field_columns(const Fields& fields, unsigned roles = 0, std::string_view prefix = "",
                          std::string_view suffix = "", std::string_view sep = ", ") {
  std::string out;
  for_each_field(fields, [&](const auto& field) {
    if (roles != 0 && (field.roles & roles) == 0) return;
    if (!out.empty()) out += sep;
    out += std::string(prefix) + std::string(field.name) + std::string(suffix);
  });
  return out;
}

/// "a = ? AND b = ? ..." for the fields of @p fields with any of @p roles (all if 0).
template <class Fields>
std::string fields_where(const Fields& fields, unsigned roles = 0, std::string_view prefix = "") {
  return field_columns(fields, roles, prefix, " = ?", " AND ");
}

/// Binds the fields of @p fields with any of @p roles (all if 0) of @p o, starting at @p first;
/// returns the next index.
template <class Owner, class Fields>
int bind_fields(SQLite::Statement& s, int first, const Owner& o, const Fields& fields, unsigned roles = 0) {
  int i = first;
  for_each_field(fields, [&](const auto& field) {
    if (roles != 0 && (field.roles & roles) == 0) return;
    using T = value_t<decltype(field)>;
    Codec<T>::bind(s, i++, field.get(o));
  });
  return i;
}

/// "prov_device_name = ? AND prov_arch = ? ..." for the provenance fields with @p role (the
/// columns of source()).
inline std::string provenance_where(unsigned role) { return fields_where(provenance_fields, role, "prov_"); }

/// Binds the provenance fields with @p role from @p p, starting at @p first; returns next index.
inline int bind_provenance_where(SQLite::Statement& s, int first, const Provenance& p, unsigned role) {
  return bind_fields(s, first, p, provenance_fields, role);
}

/// "prov_a, prov_b" of provenance fields with @p role, for ORDER BY.
inline std::string provenance_columns(unsigned role) { return field_columns(provenance_fields, role, "prov_"); }

/// For a stored table (schema >= 4): "provenance_id IN (SELECT id FROM provenance WHERE
/// device_name = ? AND ...)", the rows whose provenance has the identity bound there
/// (bind_provenance_where with kIdentity).
inline std::string identity_ids_where() {
  return std::string(kProvenanceId) + " IN (SELECT id FROM provenance WHERE " +
         fields_where(provenance_fields, kIdentity) + ")";
}

/// Text of the fields of @p fields with any of @p roles (all if 0) of @p o, each ended by '\x1f'.
template <class Owner, class Fields>
std::string fields_text(const Owner& o, const Fields& fields, unsigned roles = 0) {
  std::string out;
  for_each_field(fields, [&](const auto& field) {
    if (roles != 0 && (field.roles & roles) == 0) return;
    using T = value_t<decltype(field)>;
    out += Codec<T>::to_text(field.get(o));
    out += '\x1f';
  });
  return out;
}

/// Text that is equal for two rows exactly when they collide on the unique index of their table
/// (key + provenance identity, + label for trials).
template <class Row>
std::string unique_key(const Row& row) {
  std::string out = fields_text(row.key, fields_of(row.key)) + fields_text(row.provenance, provenance_fields, kIdentity);
  if constexpr (requires { row.trial; }) out += row.trial.label;
  return out;
}

/// Text equal for two group keys with provenances exactly when the database keeps only one of
/// them: same arch, dtype, group_bucket() and provenance identity.
inline std::string group_slot(const GroupKey& key, const Provenance& provenance) {
  const GroupBucket b = group_bucket(key);
  return key.arch + '\x1f' + std::string(to_string(key.dtype)) + '\x1f' + std::to_string(b.tensors) + '\x1f' +
         std::to_string(b.total_bytes) + '\x1f' + std::to_string(b.largest_bytes) + '\x1f' +
         fields_text(provenance, provenance_fields, kIdentity);
}

/// Orders rows by key, provenance identity, (label), then every remaining field: the canonical
/// order of exports and text dumps.
template <class Row>
bool canonical_less(const Row& a, const Row& b) {
  if (int c = compare_fields(a.key, b.key, fields_of(a.key))) return c < 0;
  if (int c = compare_fields(a.provenance, b.provenance, provenance_fields, kIdentity)) return c < 0;
  if (int c = compare_fields(payload(a), payload(b), fields_of(payload(a)))) return c < 0;
  return compare_fields(a.provenance, b.provenance, provenance_fields) < 0;
}

}  // namespace amax::db::detail
