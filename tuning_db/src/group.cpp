#include <amax/db/group.hpp>

namespace amax::db {

namespace {
std::string bytes_text(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}
}  // namespace

std::string to_string(const GroupKey& key) {
  return key.arch + "/" + std::string(to_string(key.dtype)) + "/" + std::to_string(key.tensors) +
         (key.tensors == 1 ? " tensor, " : " tensors, ") + bytes_text(key.total_bytes) + ", largest " +
         bytes_text(key.largest_bytes);
}

}  // namespace amax::db
