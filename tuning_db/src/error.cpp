#include <amax/db/error.hpp>

#include <utility>

namespace amax::db {

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::Corrupt: return "corrupt";
    case ErrorKind::FutureSchema: return "future_schema";
    case ErrorKind::Locked: return "locked";
    case ErrorKind::Io: return "io";
    case ErrorKind::ReadOnly: return "read_only";
    case ErrorKind::InvalidArgument: return "invalid_argument";
    case ErrorKind::Other: return "other";
  }
  return "unknown";
}

DbError::DbError(ErrorKind kind, const std::string& message, std::filesystem::path path,
                 int sqlite_code)
    : std::runtime_error(message), kind_(kind), path_(std::move(path)), sqlite_code_(sqlite_code) {}

}  // namespace amax::db
