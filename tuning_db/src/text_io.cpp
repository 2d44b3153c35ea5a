// TuningDb: JSON / CSV export, text dump and load.
#include <amax/db/tuning_db.hpp>

#include "tables.hpp"
#include "tuning_db_impl.hpp"
#include "util.hpp"
#include "validate.hpp"

#include <algorithm>
#include <array>
#include <istream>
#include <map>
#include <ostream>
#include <set>

#include <spdlog/spdlog.h>

namespace amax::db {

using detail::ojson;
using detail::quoted;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTextFormat = "amax-tune-db";
/// The text format's own version (the header's "format_version"; independent of the schema
/// version): 1 (no such field) ended with the last row; 2 ends with the end line
/// {"end":"amax-tune-db","rows":{TAG:COUNT,...}}, which load_text requires.
constexpr int kTextFormatVersion = 2;
/// The row types of a dump, in the order dump_text writes them (and counts them on the end line).
constexpr std::array<std::string_view, 6> kRowTags = {
    detail::WinnersTable::dump_tag,      detail::TrialsTable::dump_tag,      detail::GroupWinnersTable::dump_tag,
    detail::GroupTrialsTable::dump_tag, detail::QuantWinnersTable::dump_tag, detail::QuantTrialsTable::dump_tag};

void check_stream(const std::ostream& out, const fs::path& path, std::string_view what) {
  if (!out) {
    throw DbError(ErrorKind::Io, "tuning database " + quoted(path) + ": writing the " + std::string(what) + " failed",
                  path);
  }
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

template <class Table>
void write_csv(std::ostream& out, const std::vector<typename Table::Row>& rows) {
  const auto header = detail::column_names<Table>();
  for (std::size_t i = 0; i < header.size(); ++i) out << (i ? "," : "") << csv_cell(header[i]);
  out << '\n';
  for (const auto& row : rows) {
    const auto cells = detail::to_texts<Table>(row);
    for (std::size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << csv_cell(cells[i]);
    out << '\n';
  }
}

template <class Table>
std::string dump_line(const typename Table::Row& row) {
  ojson j = ojson::object();
  j["row"] = std::string(Table::dump_tag);
  detail::to_flat_json<Table>(row, j);
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace

namespace {

/// The oldest schema version that has every column of Table (its own and its fields' since_schema).
template <class Table>
int table_version() {
  int v = Table::since_schema;
  detail::for_each_column<Table>([&](const auto&, const auto& field) { v = std::max(v, field.since_schema); });
  return v;
}

/// The tables an export or dump writes beyond the single-tensor ones, in kRowTags order after them.
struct Written {
  bool group_winners = false, group_trials = false, quant_winners = false, quant_trials = false;
};

/// The schema version an export or dump declares: the oldest one that has every table and column
/// it may write. The single-tensor tables always count (they are the format's base); the other
/// families' tables when their rows are written. A database without group or quantize rows
/// therefore exports and dumps exactly what schema 3 did, and its dumps load in builds of schema 3.
int format_version(const Written& w) {
  int v = std::max(table_version<detail::WinnersTable>(), table_version<detail::TrialsTable>());
  if (w.group_winners) v = std::max(v, table_version<detail::GroupWinnersTable>());
  if (w.group_trials) v = std::max(v, table_version<detail::GroupTrialsTable>());
  if (w.quant_winners) v = std::max(v, table_version<detail::QuantWinnersTable>());
  if (w.quant_trials) v = std::max(v, table_version<detail::QuantTrialsTable>());
  return v;
}

template <class Table>
ojson json_array(const std::vector<typename Table::Row>& rows) {
  ojson arr = ojson::array();
  for (const auto& r : rows) arr.push_back(detail::to_nested_json<Table>(r));
  return arr;
}

/// Writes the winner line(s) and the trial lines of each key and identity, in canonical order.
template <class WinnersT, class TrialsT>
void dump_rows(std::ostream& out, std::vector<typename WinnersT::Row> ws, std::vector<typename TrialsT::Row> ts) {
  std::sort(ws.begin(), ws.end(), detail::canonical_less<typename WinnersT::Row>);
  std::sort(ts.begin(), ts.end(), detail::canonical_less<typename TrialsT::Row>);
  // Group by key and identity: the winner line first, then its trials.
  auto group_cmp = [](const auto& a, const auto& b) {
    if (int c = detail::compare_fields(a.key, b.key, detail::fields_of(a.key))) return c;
    return detail::compare_fields(a.provenance, b.provenance, provenance_fields, kIdentity);
  };
  std::size_t i = 0, j = 0;
  while (i < ws.size() || j < ts.size()) {
    if (j == ts.size() || (i < ws.size() && group_cmp(ws[i], ts[j]) <= 0)) {
      out << dump_line<WinnersT>(ws[i++]) << '\n';
    } else {
      out << dump_line<TrialsT>(ts[j++]) << '\n';
    }
  }
}

}  // namespace

void TuningDb::export_json(std::ostream& out, ExportTable table) const {
  const bool group_only = table == ExportTable::GroupWinners || table == ExportTable::GroupTrials;
  const bool quant_only = table == ExportTable::QuantWinners || table == ExportTable::QuantTrials;
  const bool winners = table == ExportTable::Winners || table == ExportTable::All ||
                       table == ExportTable::GroupWinners || table == ExportTable::QuantWinners;
  const bool trials = table == ExportTable::Trials || table == ExportTable::All || table == ExportTable::GroupTrials ||
                      table == ExportTable::QuantTrials;
  const Impl::Snapshot s = impl().snapshot(winners, trials);
  const bool all = !group_only && !quant_only;
  const Written w{winners && (group_only || (all && !s.group_winners.empty())),
                  trials && (group_only || (all && !s.group_trials.empty())),
                  winners && (quant_only || (all && !s.quant_winners.empty())),
                  trials && (quant_only || (all && !s.quant_trials.empty()))};
  ojson doc = ojson::object();
  doc["schema_version"] = format_version(w);
  if (winners && all) doc["winners"] = json_array<detail::WinnersTable>(s.winners);
  if (trials && all) doc["trials"] = json_array<detail::TrialsTable>(s.trials);
  if (w.group_winners) doc["group_winners"] = json_array<detail::GroupWinnersTable>(s.group_winners);
  if (w.group_trials) doc["group_trials"] = json_array<detail::GroupTrialsTable>(s.group_trials);
  if (w.quant_winners) doc["quant_winners"] = json_array<detail::QuantWinnersTable>(s.quant_winners);
  if (w.quant_trials) doc["quant_trials"] = json_array<detail::QuantTrialsTable>(s.quant_trials);
  out << doc.dump(2, ' ', false, ojson::error_handler_t::replace) << '\n';
  check_stream(out, impl().path, "JSON export");
}

void TuningDb::export_csv(std::ostream& out, ExportTable table) const {
  switch (table) {
    case ExportTable::Winners:
      write_csv<detail::WinnersTable>(out, winners<SingleFamily>());
      break;
    case ExportTable::Trials:
      write_csv<detail::TrialsTable>(out, all_trials<SingleFamily>());
      break;
    case ExportTable::GroupWinners:
      write_csv<detail::GroupWinnersTable>(out, winners<MultiFamily>());
      break;
    case ExportTable::GroupTrials:
      write_csv<detail::GroupTrialsTable>(out, all_trials<MultiFamily>());
      break;
    case ExportTable::QuantWinners:
      write_csv<detail::QuantWinnersTable>(out, winners<QuantizeFamily>());
      break;
    case ExportTable::QuantTrials:
      write_csv<detail::QuantTrialsTable>(out, all_trials<QuantizeFamily>());
      break;
    case ExportTable::All:
      throw DbError(ErrorKind::InvalidArgument,
                    "tuning database " + quoted(impl().path) +
                        ": export_csv writes one table per CSV; ask for ExportTable::Winners, ::Trials, "
                        "::GroupWinners, ::GroupTrials, ::QuantWinners or ::QuantTrials",
                    impl().path);
  }
  check_stream(out, impl().path, "CSV export");
}

void TuningDb::dump_text(std::ostream& out) const {
  Impl::Snapshot s = impl().snapshot();
  ojson header = ojson::object();
  header["format"] = std::string(kTextFormat);
  header["format_version"] = kTextFormatVersion;
  header["schema_version"] = format_version(
      {!s.group_winners.empty(), !s.group_trials.empty(), !s.quant_winners.empty(), !s.quant_trials.empty()});
  out << header.dump() << '\n';
  // The end line's counts, per row tag in the order the rows are written.
  ojson counts = ojson::object();
  const std::size_t sizes[] = {s.winners.size(),      s.trials.size(),        s.group_winners.size(),
                               s.group_trials.size(), s.quant_winners.size(), s.quant_trials.size()};
  // The quantize counts only where there are quantize rows: a dump without them ends as schema 5's
  // did, and loads in builds that know no quantize tag.
  const bool quant = sizes[4] + sizes[5] > 0;
  for (std::size_t i = 0; i < kRowTags.size(); ++i)
    if (i < 4 || quant) counts[std::string(kRowTags[i])] = sizes[i];
  dump_rows<detail::WinnersTable, detail::TrialsTable>(out, std::move(s.winners), std::move(s.trials));
  dump_rows<detail::GroupWinnersTable, detail::GroupTrialsTable>(out, std::move(s.group_winners),
                                                                  std::move(s.group_trials));
  dump_rows<detail::QuantWinnersTable, detail::QuantTrialsTable>(out, std::move(s.quant_winners),
                                                                  std::move(s.quant_trials));
  ojson end = ojson::object();
  end["end"] = std::string(kTextFormat);
  end["rows"] = std::move(counts);
  out << end.dump() << '\n';
  check_stream(out, impl().path, "text dump");
}

namespace {

struct TextParser {
  fs::path out_path;
  fs::path source;  // the dump's file name, if known: messages name it
  std::size_t line = 0;
  int version = 0;

  /// "text dump 'in.jsonl'" (or "text dump for 'out.db'" when the input has no name).
  std::string what() const { return source.empty() ? "text dump for " + quoted(out_path) : "text dump " + quoted(source); }

  [[noreturn]] void fail(const std::string& msg, ErrorKind kind = ErrorKind::InvalidArgument) const {
    throw DbError(kind, what() + ", line " + std::to_string(line) + ": " + msg, source.empty() ? out_path : source);
  }

  template <class Table>
  typename Table::Row parse_row(const ojson& j) const {
    typename Table::Row row{};
    std::set<std::string> known{"row"};
    detail::for_each_column<Table>([&](const auto& p, const auto& field) {
      using T = detail::value_t<decltype(field)>;
      const std::string name = detail::column_name(p, field);
      known.insert(name);
      const auto it = j.find(name);
      if (it == j.end()) {
        if (field.since_schema > version) return;  // older dump: keep the default
        fail("missing field '" + name + "' in a " + std::string(Table::dump_tag) + " row");
      }
      if (!detail::Codec<T>::from_json(*it, field.get(row.*(p.member)))) {
        fail("field '" + name + "' has the invalid value " + it->dump() + " (" + std::string(field.doc) + ")");
      }
    });
    for (const auto& item : j.items()) {
      if (!known.count(item.key())) fail("unknown field '" + item.key() + "'");
    }
    return row;
  }
};

}  // namespace

void TuningDb::load_text(std::istream& in, const fs::path& out_path, const fs::path& source) {
  if (out_path.empty()) throw DbError(ErrorKind::InvalidArgument, "load_text: the output path is empty");
  TextParser p{out_path, source};
  int text_version = 1;
  std::size_t end_line = 0;  // the end line's number, once read
  std::map<std::string, std::size_t> rows_read;  // per row tag
  std::vector<WinnerRow> ws;
  std::vector<TrialRow> ts;
  std::vector<GroupWinnerRow> gws;
  std::vector<GroupTrialRow> gts;
  std::vector<WinnerRow> qws;
  std::vector<TrialRow> qts;
  std::map<std::string, std::size_t> seen;  // unique key -> line
  std::map<std::string, std::pair<GroupKey, std::size_t>> slots;  // group slot -> its shape, line
  bool header = false;
  std::string text;
  // Parses a row of Table, checks it and its uniqueness, and appends it to rows.
  auto take = [&](auto table, const ojson& j, auto& rows) {
    using Table = decltype(table);
    typename Table::Row row = p.parse_row<Table>(j);
    if (const std::string err = detail::check_row(row); !err.empty()) p.fail(err);
    const std::string ukey = std::string(Table::dump_tag) + '\x1f' + detail::unique_key(row);
    if (auto [it, inserted] = seen.emplace(ukey, p.line); !inserted) {
      p.fail("duplicates line " + std::to_string(it->second) + " (same key, provenance identity" +
             (detail::per_label<Table> ? std::string(" and label)") : std::string(")")));
    }
    if constexpr (std::is_same_v<std::decay_t<decltype(row.key)>, GroupKey>) {
      const auto [it, inserted] = slots.emplace(detail::group_slot(row.key, row.provenance), std::make_pair(row.key, p.line));
      if (!inserted && !(it->second.first == row.key)) {
        p.fail("the group key " + to_string(row.key) + " lies in the bucket of " + to_string(it->second.first) +
               " (line " + std::to_string(it->second.second) +
               ") with the same provenance identity; a database keeps one shape per bucket and identity");
      }
    }
    rows.push_back(std::move(row));
  };
  while (std::getline(in, text)) {
    ++p.line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    ojson j;
    try {
      j = ojson::parse(text);
    } catch (const ojson::exception& e) {
      p.fail(std::string("not valid JSON: ") + e.what());
    }
    if (!j.is_object()) p.fail("expected a JSON object, got " + std::string(j.type_name()));
    if (!header) {
      const auto f = j.find("format");
      const auto v = j.find("schema_version");
      if (f == j.end() || *f != std::string(kTextFormat) || v == j.end() || !v->is_number_unsigned()) {
        p.fail("expected the header {\"format\":\"amax-tune-db\",\"schema_version\":N}, got " + text);
      }
      const auto ver = v->get<std::uint64_t>();
      if (ver < 1 || ver > static_cast<std::uint64_t>(kSchemaVersion)) {
        p.fail("the dump has schema version " + std::to_string(ver) + ", but this build of amax-tune "
               "understands versions 1 to " + std::to_string(kSchemaVersion),
               ver > 1 ? ErrorKind::FutureSchema : ErrorKind::InvalidArgument);
      }
      p.version = static_cast<int>(ver);
      if (const auto fv = j.find("format_version"); fv != j.end()) {
        if (!fv->is_number_unsigned() || fv->get<std::uint64_t>() < 1)
          p.fail("the header's format_version is " + fv->dump() + " (expected a positive integer)");
        if (fv->get<std::uint64_t>() > static_cast<std::uint64_t>(kTextFormatVersion))
          p.fail("the dump has text format version " + fv->dump() + ", but this build of amax-tune understands "
                 "versions 1 to " + std::to_string(kTextFormatVersion), ErrorKind::FutureSchema);
        text_version = static_cast<int>(fv->get<std::uint64_t>());
      }
      header = true;
      continue;
    }
    if (end_line) p.fail("a line after the end line (line " + std::to_string(end_line) + ")");
    if (const auto end = j.find("end"); end != j.end()) {
      // The end line: the count of every row tag must be what was read (a dump cut at a line
      // boundary, or with rows added or removed by hand, is refused).
      const auto counts = j.find("rows");
      if (*end != std::string(kTextFormat) || counts == j.end() || !counts->is_object() || j.size() != 2)
        p.fail("expected the end line {\"end\":\"amax-tune-db\",\"rows\":{...}}, got " + text);
      std::map<std::string, std::size_t> stated;
      for (const auto& item : counts->items()) {
        const std::string& k = item.key();
        if (std::find(kRowTags.begin(), kRowTags.end(), k) == kRowTags.end())
          p.fail("the end line counts an unknown row type \"" + k + "\"");
        if (!item.value().is_number_unsigned())
          p.fail("the end line's count of " + k + " rows is " + item.value().dump() + " (expected a count)");
        stated[k] = item.value().get<std::size_t>();
      }
      for (const std::string_view tag : kRowTags)
        if (const std::string k(tag); stated[k] != rows_read[k])
          p.fail("the end line states " + std::to_string(stated[k]) + " " + k + " rows, but the dump holds " +
                 std::to_string(rows_read[k]) + ": rows were lost or added; export the database again "
                 "(amax-tune export --format text)");
      end_line = p.line;
      continue;
    }
    const auto tag = j.find("row");
    if (tag == j.end() || !tag->is_string()) p.fail("missing \"row\": \"winner\" or \"trial\"");
    const std::string kind = tag->get<std::string>();
    ++rows_read[kind];
    bool known = false;  // the tag names a table; its rows need a dump of the table's schema or later
    auto take_if = [&](auto table, auto& rows) {
      using Table = decltype(table);
      if (known || kind != Table::dump_tag) return;
      known = true;
      if (!detail::has_table<Table>(p.version)) {
        p.fail("a " + kind + " row needs a dump of schema version " + std::to_string(Table::since_schema) +
               " or later (the header says " + std::to_string(p.version) + ")");
      }
      take(table, j, rows);
    };
    take_if(detail::WinnersTable{}, ws);
    take_if(detail::TrialsTable{}, ts);
    take_if(detail::GroupWinnersTable{}, gws);
    take_if(detail::GroupTrialsTable{}, gts);
    take_if(detail::QuantWinnersTable{}, qws);
    take_if(detail::QuantTrialsTable{}, qts);
    if (!known) {
      std::string expected;
      for (std::size_t i = 0; i < kRowTags.size(); ++i)
        expected += (i == 0 ? "" : i + 1 == kRowTags.size() ? " or " : ", ") + ("\"" + std::string(kRowTags[i]) + "\"");
      p.fail("unknown row type " + tag->dump() + " (expected " + expected + ")");
    }
  }
  if (in.bad()) throw DbError(ErrorKind::Io, "text dump for " + quoted(out_path) + ": reading the input failed", out_path);
  if (!header) {
    p.line = 1;
    p.fail("the input is empty: expected the header {\"format\":\"amax-tune-db\",\"schema_version\":N}");
  }
  if (!end_line) {
    std::size_t rows = 0;
    for (const auto& [tag, n] : rows_read) rows += n;
    if (text_version >= 2)
      p.fail("the end line {\"end\":\"amax-tune-db\",\"rows\":{...}} is missing after " + std::to_string(rows) +
             " rows: the dump is cut short (or its last line was removed); export it again (amax-tune export "
             "--format text)");
    spdlog::warn("{} is of text format version 1 (no end line stating its row counts): its {} rows are loaded, "
                 "but whether rows were lost cannot be checked; export the database again to add the end line",
                 p.what(), rows);
  }

  detail::build_beside(out_path, [&](TuningDb& db) {
    db.import_rows(ws, ts, gws, gts, qws, qts);
    db.use_rollback_journal();
  });
}

}  // namespace amax::db
