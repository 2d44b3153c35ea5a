#pragma once
// Building a tuning database from a text dump (`amax-tune import`, and the build's
// amax-tune-import, which makes the shipped system.db without the rest of the command line).
#include <filesystem>
#include <ostream>
#include <string>

namespace amax::cli {

/// Checks that every row of a text dump names a real variant (see dump_import.cpp).
/// std::runtime_error naming the file and line.
void validate_dump_rows(const std::string& path);

/// validate_dump_rows, then the database `out` (replaced if present) from the dump `text`
/// (db::TuningDb::load_text, naming `text` in its messages), then one line on `log`: "imported N
/// winners and M multi-tensor group winners into OUT". Errors: std::runtime_error naming the file
/// and line, db::DbError. Not thread-safe for one `out`.
void import_dump(const std::filesystem::path& text, const std::filesystem::path& out, std::ostream& log);

}  // namespace amax::cli
