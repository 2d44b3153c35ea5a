// Private: the conversions of one stored value (a field's type) to and from SQL, JSON and text.
// The tables and everything derived from their field lists are tables.hpp.
#pragma once

#include <amax/db/trial.hpp>
#include <amax/dtype.hpp>

#include <SQLiteCpp/Column.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

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

/// -1, 0 or 1 as @p a is less than, equal to or greater than @p b.
template <class T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : (a == b ? 0 : 1);
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
  static int compare(const std::string& a, const std::string& b) { return three_way(a, b); }
};

/// Integers: std::int64_t as is; std::uint64_t (counts) 0 .. INT64_MAX in SQLite's signed integers.
template <class T>
struct IntCodec {
  static constexpr std::string_view sql_type = "INTEGER";
  static void bind(SQLite::Statement& s, int i, T v) {
    s.bind(i, static_cast<std::int64_t>(v));  // an unsigned range is checked by validation before any write
  }
  static bool read(const SQLite::Column& c, T& out) {
    if (!c.isInteger() || (std::is_unsigned_v<T> && c.getInt64() < 0)) return false;
    out = static_cast<T>(c.getInt64());
    return true;
  }
  static ojson to_json(T v) { return v; }
  static bool from_json(const ojson& j, T& out) {
    if (j.is_number_unsigned()) {
      const auto u = j.get<std::uint64_t>();
      if (std::is_signed_v<T> && u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
      out = static_cast<T>(u);
      return true;
    }
    if (std::is_unsigned_v<T> || !j.is_number_integer()) return false;
    out = static_cast<T>(j.get<std::int64_t>());
    return true;
  }
  static std::string to_text(T v) { return std::to_string(v); }
  static std::string sql_literal(T v) { return std::to_string(v); }
  static int compare(T a, T b) { return three_way(a, b); }
};

template <>
struct Codec<std::int64_t> : IntCodec<std::int64_t> {};
template <>
struct Codec<std::uint64_t> : IntCodec<std::uint64_t> {};

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
  static int compare(double a, double b) { return three_way(a, b); }
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

}  // namespace amax::db::detail
