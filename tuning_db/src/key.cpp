#include <amax/db/error.hpp>
#include <amax/db/key.hpp>

namespace amax::db {

DType dtype_from_string(std::string_view text) {
  if (auto d = dtype_from_name(text)) return *d;
  std::string expected;
  for (const auto& d : all_dtypes()) expected += (expected.empty() ? "" : ", ") + std::string(d.name);
  throw DbError(ErrorKind::InvalidArgument, "unknown dtype '" + std::string(text) + "' (expected " + expected + ")");
}

std::string to_string(const TuningKey& key) {
  return key.arch + "/" + std::string(to_string(key.dtype)) + "/n=" + std::to_string(key.n);
}

}  // namespace amax::db
