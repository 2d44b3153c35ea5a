// Building a tuning database from a text dump: the row checks and the import shared by
// `amax-tune import` and amax-tune-import (import_main.cpp).
#include "dump_import.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "amax/arch.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"

namespace amax::cli {

// Every row of a text dump names a real variant: its arch parses and its label is valid for that
// arch and dtype (the database layer treats both as opaque text): a KernelConfig for single-tensor
// rows, a MultiConfig ("multi.*") for the multi-tensor rows "group_winner" / "group_trial".
// std::runtime_error naming the file and line (a bad input file is a failed run, exit 1).
void validate_dump_rows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty() || no == 1) continue;  // line 1: the format header, checked by load_text
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      continue;  // malformed JSON: load_text reports it with the line number
    }
    if (!row.is_object() || !row.contains("label") || !row.contains("arch") || !row.contains("dtype")) continue;
    const auto where = fmt::format("{} line {}", path, no);
    try {
      const ArchInfo arch = ArchInfo::parse(row["arch"].get<std::string>());
      const auto dtype = parse_dtype(row["dtype"].get<std::string>());
      if (!dtype) continue;  // load_text names a bad dtype
      const std::string label = row["label"].get<std::string>();
      const bool group = row.contains("row") && row["row"].is_string() && row["row"].get<std::string>().starts_with("group_");
      if (group != MultiConfig::is_multi_label(label))
        throw std::runtime_error(fmt::format("{}: a {} row needs a {} variant, not '{}'", where, group ? "multi-tensor" : "single-tensor",
                                     group ? "multi-tensor (multi.*)" : "single-tensor", label));
      const auto why = group ? MultiConfig::parse(label).validate(arch, *dtype) : KernelConfig::parse(label).validate(arch, *dtype);
      if (why) throw std::runtime_error(fmt::format("{}: variant not valid: {}", where, *why));
      if (group)
        for (const char* f : {"largest_bytes", "total_bytes"})
          if (row.contains(f) && row[f].is_number_unsigned() && row[f].get<std::uint64_t>() % info(*dtype).bytes)
            throw std::runtime_error(fmt::format("{}: {} = {} is not a whole number of {}-byte {} elements", where, f,
                                         row[f].get<std::uint64_t>(), info(*dtype).bytes, to_string(*dtype)));
      // The tuner records amax-only variants; the runtime adds the epilogue a call asks for.
      const bool fused = group ? MultiConfig::parse(label).epilogue != Epilogue::amax
                               : KernelConfig::parse(label).epilogue != Epilogue::amax;
      if (fused)
        throw std::runtime_error(fmt::format("{}: '{}' is a fused (.scale) variant; databases hold amax-only variants (the "
                                     "runtime adds the scale epilogue to the entry it chooses)", where, label));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
    }
  }
}

void import_dump(const std::filesystem::path& text, const std::filesystem::path& out, std::ostream& log) {
  std::ifstream in(text);
  if (!in)  // a file that cannot be read is a failed run (exit 1), as a missing database is
    throw std::runtime_error(fmt::format("cannot read the text dump {}: {}", text.string(), std::strerror(errno)));
  validate_dump_rows(text.string());
  db::TuningDb::load_text(in, out, text);
  auto db = db::TuningDb::open(out, db::OpenMode::ReadOnly);
  log << fmt::format("imported {} winners and {} multi-tensor group winners into {}\n",
                     db.winners<SingleFamily>().size(), db.winners<MultiFamily>().size(), out.string());
}

}  // namespace amax::cli
