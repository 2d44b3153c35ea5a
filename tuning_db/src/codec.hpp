// Private: everything derived from the field lists -- SQL column definitions, SELECT lists,
// statement binding and row reading, JSON (flat and nested), CSV text, ordering, validation.
#pragma once

#include <amax/db/error.hpp>
#include <amax/db/field.hpp>
#include <amax/db/key.hpp>
#include <amax/db/provenance.hpp>
#include <amax/db/trial.hpp>
#include <amax/db/winner.hpp>

#include <SQLiteCpp/Column.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace amax::db::detail {

using ojson = nlohmann::ordered_json;

inline std::string double_text(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

inline std::string sql_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
  return out;
}

/// Per-type conversions. read()/from_json() return false for a value of the wrong type or out of
/// range; the caller reports it with its context (path, table, column, line).
template <class T>
struct Codec;

template <>
struct Codec<std::string> {
  static constexpr std::string_view sql_type = "TEXT";
  static void bind(SQLite::Statement& s, int i, const std::string& v) { s.bind(i, v); }
  static bool read(const SQLite::Column& c, std::string& out) {
    if (c.isNull()) return false;
    out = c.getString();
    return true;
  }
  static ojson to_json(const std::string& v) { return v; }
  static bool from_json(const ojson& j, std::string& out) {
    if (!j.is_string()) return false;
    out = j.get<std::string>();
    return true;
  }
  static std::string to_text(const std::string& v) { return v; }
  static std::string sql_literal(const std::string& v) { return sql_quote(v); }
  static int compare(const std::string& a, const std::string& b) { return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1); }
};

template <>
struct Codec<std::int64_t> {
  static constexpr std::string_view sql_type = "INTEGER";
  static void bind(SQLite::Statement& s, int i, std::int64_t v) { s.bind(i, v); }
  static bool read(const SQLite::Column& c, std::int64_t& out) {
    if (!c.isInteger()) return false;
    out = c.getInt64();
    return true;
  }
  static ojson to_json(std::int64_t v) { return v; }
  static bool from_json(const ojson& j, std::int64_t& out) {
    if (j.is_number_unsigned()) {
      const auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
      out = static_cast<std::int64_t>(u);
      return true;
    }
    if (!j.is_number_integer()) return false;
    out = j.get<std::int64_t>();
    return true;
  }
  static std::string to_text(std::int64_t v) { return std::to_string(v); }
  static std::string sql_literal(std::int64_t v) { return std::to_string(v); }
  static int compare(std::int64_t a, std::int64_t b) { return a < b ? -1 : (a == b ? 0 : 1); }
};

template <>
struct Codec<std::uint64_t> {  // element counts: 1 .. INT64_MAX in SQLite's signed integers
  static constexpr std::string_view sql_type = "INTEGER";
  static void bind(SQLite::Statement& s, int i, std::uint64_t v) {
    s.bind(i, static_cast<std::int64_t>(v));  // range checked by validation before any write
  }
  static bool read(const SQLite::Column& c, std::uint64_t& out) {
    if (!c.isInteger() || c.getInt64() < 0) return false;
    out = static_cast<std::uint64_t>(c.getInt64());
    return true;
  }
  static ojson to_json(std::uint64_t v) { return v; }
  static bool from_json(const ojson& j, std::uint64_t& out) {
    if (!j.is_number_unsigned()) return false;
    out = j.get<std::uint64_t>();
    return true;
  }
  static std::string to_text(std::uint64_t v) { return std::to_string(v); }
  static std::string sql_literal(std::uint64_t v) { return std::to_string(v); }
  static int compare(std::uint64_t a, std::uint64_t b) { return a < b ? -1 : (a == b ? 0 : 1); }
};

template <>
struct Codec<double> {
  static constexpr std::string_view sql_type = "REAL";
  static void bind(SQLite::Statement& s, int i, double v) { s.bind(i, v); }
  static bool read(const SQLite::Column& c, double& out) {
    if (!c.isFloat() && !c.isInteger()) return false;
    out = c.getDouble();
    return true;
  }
  static ojson to_json(double v) { return v; }
  static bool from_json(const ojson& j, double& out) {
    if (!j.is_number()) return false;
    out = j.get<double>();
    return true;
  }
  static std::string to_text(double v) { return double_text(v); }
  static std::string sql_literal(double v) {
    std::string s = double_text(v);
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
  }
  static int compare(double a, double b) { return a < b ? -1 : (a == b ? 0 : 1); }
};

/// Enums stored as their names.
template <class E, std::string_view (*Name)(E) noexcept, std::optional<E> (*Parse)(std::string_view) noexcept>
struct EnumCodec {
  static constexpr std::string_view sql_type = "TEXT";
  static void bind(SQLite::Statement& s, int i, E v) { s.bind(i, std::string(Name(v))); }
  static bool read(const SQLite::Column& c, E& out) {
    if (!c.isText()) return false;
    const auto parsed = Parse(c.getString());
    if (!parsed) return false;
    out = *parsed;
    return true;
  }
  static ojson to_json(E v) { return std::string(Name(v)); }
  static bool from_json(const ojson& j, E& out) {
    if (!j.is_string()) return false;
    const auto parsed = Parse(j.get<std::string>());
    if (!parsed) return false;
    out = *parsed;
    return true;
  }
  static std::string to_text(E v) { return std::string(Name(v)); }
  static std::string sql_literal(E v) { return sql_quote(Name(v)); }
  static int compare(E a, E b) { return Codec<std::string>::compare(std::string(Name(a)), std::string(Name(b))); }
};

template <>
struct Codec<DType> : EnumCodec<DType, &amax::to_string, &amax::dtype_from_name> {};
template <>
struct Codec<TrialStatus> : EnumCodec<TrialStatus, &to_string, &parse_trial_status> {};

/// One struct inside a stored row: its field list, the prefix of its SQL columns, the member of
/// the row it lives in, and whether JSON export nests it under its own name.
template <class Row, class Sub, class Fields>
struct Part {
  std::string_view prefix;
  const Fields* fields;
  Sub Row::*member;
  std::string_view nest;  ///< non-empty: export_json nests these fields under this key
};

template <class Row, class Sub, class Fields>
constexpr Part<Row, Sub, Fields> part(std::string_view prefix, const Fields& fields, Sub Row::*member,
                                      std::string_view nest = {}) {
  return {prefix, &fields, member, nest};
}

struct TrialsTable {
  using Row = TrialRow;
  static constexpr std::string_view name = "trials";
  static constexpr std::string_view dump_tag = "trial";
  static constexpr auto parts = std::tuple{
      part("", key_fields, &TrialRow::key), part("", trial_fields, &TrialRow::trial),
      part("prov_", provenance_fields, &TrialRow::provenance, "provenance")};
};

struct WinnersTable {
  using Row = WinnerRow;
  static constexpr std::string_view name = "winners";
  static constexpr std::string_view dump_tag = "winner";
  static constexpr auto parts = std::tuple{
      part("", key_fields, &WinnerRow::key), part("", winner_fields, &WinnerRow::winner),
      part("prov_", provenance_fields, &WinnerRow::provenance, "provenance")};
};

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

/// Columns of Table as "name TYPE NOT NULL[ DEFAULT x]" for fields present at schema @p version.
template <class Table>
std::vector<std::string> column_defs(int max_since, int min_since = 1) {
  std::vector<std::string> out;
  for_each_column<Table>([&](const auto& p, const auto& field) {
    if (field.since_schema > max_since || field.since_schema < min_since) return;
    using T = value_t<decltype(field)>;
    out.push_back(column_name(p, field) + " " + std::string(Codec<T>::sql_type) + " NOT NULL DEFAULT " +
                  Codec<T>::sql_literal(default_value(field)));
  });
  return out;
}

/// Names of all columns of Table (current schema).
template <class Table>
std::vector<std::string> column_names() {
  std::vector<std::string> out;
  for_each_column<Table>([&](const auto& p, const auto& field) { out.push_back(column_name(p, field)); });
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

inline std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

/// "INSERT [OR REPLACE] INTO table (c...) VALUES (?...)".
template <class Table>
std::string insert_sql(bool replace) {
  const auto cols = column_names<Table>();
  std::string q = replace ? "INSERT OR REPLACE INTO " : "INSERT INTO ";
  q += std::string(Table::name) + " (" + join(cols, ", ") + ") VALUES (";
  for (std::size_t i = 0; i < cols.size(); ++i) q += i ? ", ?" : "?";
  return q + ")";
}

/// Binds every column of @p row to parameters first, first+1, ...; returns the next index.
template <class Table>
int bind_row(SQLite::Statement& s, int first, const typename Table::Row& row) {
  int i = first;
  for_each_column<Table>([&](const auto& p, const auto& field) {
    using T = value_t<decltype(field)>;
    Codec<T>::bind(s, i++, field.get(row.*(p.member)));
  });
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

/// "prov_device_name = ? AND prov_arch = ? ..." for the provenance fields with @p role.
inline std::string provenance_where(unsigned role) {
  std::string out;
  for_each_field(provenance_fields, [&](const auto& field) {
    if ((field.roles & role) == 0) return;
    if (!out.empty()) out += " AND ";
    out += "prov_" + std::string(field.name) + " = ?";
  });
  return out;
}

/// Binds the provenance fields with @p role from @p p, starting at @p first; returns next index.
inline int bind_provenance_where(SQLite::Statement& s, int first, const Provenance& p, unsigned role) {
  int i = first;
  for_each_field(provenance_fields, [&](const auto& field) {
    if ((field.roles & role) == 0) return;
    using T = value_t<decltype(field)>;
    Codec<T>::bind(s, i++, field.get(p));
  });
  return i;
}

/// "prov_a, prov_b" of provenance fields with @p role, for ORDER BY.
inline std::string provenance_columns(unsigned role) {
  std::string out;
  for_each_field(provenance_fields, [&](const auto& field) {
    if ((field.roles & role) == 0) return;
    if (!out.empty()) out += ", ";
    out += "prov_" + std::string(field.name);
  });
  return out;
}

/// Text that is equal for two rows exactly when they collide on the unique index of their table
/// (key + provenance identity, + label for trials).
template <class Row>
std::string unique_key(const Row& row) {
  std::string out;
  auto add = [&](const auto& owner, const auto& fields, unsigned roles) {
    for_each_field(fields, [&](const auto& field) {
      if (roles != 0 && (field.roles & roles) == 0) return;
      using T = value_t<decltype(field)>;
      out += Codec<T>::to_text(field.get(owner));
      out += '\x1f';
    });
  };
  add(row.key, key_fields, 0);
  add(row.provenance, provenance_fields, kIdentity);
  if constexpr (std::is_same_v<Row, TrialRow>) out += row.trial.label;
  return out;
}

/// Orders rows by key, provenance identity, (label), then every remaining field: the canonical
/// order of exports and text dumps.
template <class Row>
bool canonical_less(const Row& a, const Row& b) {
  if (int c = compare_fields(a.key, b.key, key_fields)) return c < 0;
  if (int c = compare_fields(a.provenance, b.provenance, provenance_fields, kIdentity)) return c < 0;
  if constexpr (std::is_same_v<Row, TrialRow>) {
    if (int c = compare_fields(a.trial, b.trial, trial_fields)) return c < 0;
  } else {
    if (int c = compare_fields(a.winner, b.winner, winner_fields)) return c < 0;
  }
  return compare_fields(a.provenance, b.provenance, provenance_fields) < 0;
}

}  // namespace amax::db::detail
