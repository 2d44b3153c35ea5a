// TuningDb: JSON / CSV export, text dump and load.
#include <amax/db/tuning_db.hpp>

#include "codec.hpp"
#include "tuning_db_impl.hpp"
#include "util.hpp"
#include "validate.hpp"

#include <algorithm>
#include <istream>
#include <map>
#include <ostream>
#include <set>

namespace amax::db {

using detail::ojson;
using detail::quoted;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTextFormat = "amax-tune-db";

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

void TuningDb::export_json(std::ostream& out, ExportTable table) const {
  const auto [ws, ts] = impl().snapshot(table != ExportTable::Trials, table != ExportTable::Winners);
  ojson doc = ojson::object();
  doc["schema_version"] = kSchemaVersion;
  if (table != ExportTable::Trials) {
    ojson arr = ojson::array();
    for (const auto& w : ws) arr.push_back(detail::to_nested_json<detail::WinnersTable>(w));
    doc["winners"] = std::move(arr);
  }
  if (table != ExportTable::Winners) {
    ojson arr = ojson::array();
    for (const auto& t : ts) arr.push_back(detail::to_nested_json<detail::TrialsTable>(t));
    doc["trials"] = std::move(arr);
  }
  out << doc.dump(2, ' ', false, ojson::error_handler_t::replace) << '\n';
  check_stream(out, impl().path, "JSON export");
}

void TuningDb::export_csv(std::ostream& out, ExportTable table) const {
  switch (table) {
    case ExportTable::Winners:
      write_csv<detail::WinnersTable>(out, winners());
      break;
    case ExportTable::Trials:
      write_csv<detail::TrialsTable>(out, all_trials());
      break;
    case ExportTable::All:
      throw DbError(ErrorKind::InvalidArgument,
                    "tuning database " + quoted(impl().path) +
                        ": export_csv writes one table per CSV; ask for ExportTable::Winners or ::Trials",
                    impl().path);
  }
  check_stream(out, impl().path, "CSV export");
}

void TuningDb::dump_text(std::ostream& out) const {
  auto [ws, ts] = impl().snapshot();
  std::sort(ws.begin(), ws.end(), detail::canonical_less<WinnerRow>);
  std::sort(ts.begin(), ts.end(), detail::canonical_less<TrialRow>);
  ojson header = ojson::object();
  header["format"] = std::string(kTextFormat);
  header["schema_version"] = kSchemaVersion;
  out << header.dump() << '\n';
  // Group by key and identity: the winner line first, then its trials.
  auto group_cmp = [](const auto& a, const auto& b) {
    if (int c = detail::compare_fields(a.key, b.key, key_fields)) return c;
    return detail::compare_fields(a.provenance, b.provenance, provenance_fields, kIdentity);
  };
  std::size_t i = 0, j = 0;
  while (i < ws.size() || j < ts.size()) {
    if (j == ts.size() || (i < ws.size() && group_cmp(ws[i], ts[j]) <= 0)) {
      out << dump_line<detail::WinnersTable>(ws[i++]) << '\n';
    } else {
      out << dump_line<detail::TrialsTable>(ts[j++]) << '\n';
    }
  }
  check_stream(out, impl().path, "text dump");
}

namespace {

struct TextParser {
  fs::path out_path;
  std::size_t line = 0;
  int version = 0;

  [[noreturn]] void fail(const std::string& msg, ErrorKind kind = ErrorKind::InvalidArgument) const {
    throw DbError(kind,
                  "text dump for " + quoted(out_path) + ", line " + std::to_string(line) + ": " + msg,
                  out_path);
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

void TuningDb::load_text(std::istream& in, const fs::path& out_path) {
  if (out_path.empty()) throw DbError(ErrorKind::InvalidArgument, "load_text: the output path is empty");
  TextParser p{out_path};
  std::vector<WinnerRow> ws;
  std::vector<TrialRow> ts;
  std::map<std::string, std::size_t> seen;  // unique key -> line
  bool header = false;
  std::string text;
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
      header = true;
      continue;
    }
    const auto tag = j.find("row");
    if (tag == j.end() || !tag->is_string()) p.fail("missing \"row\": \"winner\" or \"trial\"");
    std::string err, ukey;
    const std::string kind = tag->get<std::string>();
    if (kind == detail::WinnersTable::dump_tag) {
      WinnerRow w = p.parse_row<detail::WinnersTable>(j);
      for (const std::string& e : {detail::check_key(w.key), detail::check_provenance(w.provenance),
                                   detail::check_winner(w.winner)}) {
        if (err.empty()) err = e;
      }
      ukey = "w\x1f" + detail::unique_key(w);
      ws.push_back(std::move(w));
    } else if (kind == detail::TrialsTable::dump_tag) {
      TrialRow t = p.parse_row<detail::TrialsTable>(j);
      for (const std::string& e : {detail::check_key(t.key), detail::check_provenance(t.provenance),
                                   detail::check_trial(t.trial)}) {
        if (err.empty()) err = e;
      }
      ukey = "t\x1f" + detail::unique_key(t);
      ts.push_back(std::move(t));
    } else {
      p.fail("unknown row type " + tag->dump() + " (expected \"winner\" or \"trial\")");
    }
    if (!err.empty()) p.fail(err);
    if (auto [it, inserted] = seen.emplace(ukey, p.line); !inserted) {
      p.fail("duplicates line " + std::to_string(it->second) + " (same key, provenance identity" +
             (ukey[0] == 't' ? std::string(" and label)") : std::string(")")));
    }
  }
  if (in.bad()) throw DbError(ErrorKind::Io, "text dump for " + quoted(out_path) + ": reading the input failed", out_path);
  if (!header) {
    p.line = 1;
    p.fail("the input is empty: expected the header {\"format\":\"amax-tune-db\",\"schema_version\":N}");
  }

  const fs::path tmp = detail::temp_beside(out_path);
  try {
    {
      OpenOptions opts;
      opts.wal = false;
      TuningDb db = open(tmp, OpenMode::ReadWrite, opts);
      db.import_rows(ws, ts);
      db.use_rollback_journal();
    }
    detail::remove_companions(out_path);
    std::error_code ec;
    fs::rename(tmp, out_path, ec);
    if (ec) {
      throw DbError(ErrorKind::Io, "cannot move " + quoted(tmp) + " to " + quoted(out_path) + ": " + ec.message(),
                    out_path);
    }
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    detail::remove_companions(tmp);
    throw;
  }
}

}  // namespace amax::db
