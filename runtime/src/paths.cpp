#include "amax/paths.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace amax {

std::filesystem::path default_user_db_path() {
  if (const char* p = std::getenv("AMAX_TUNE_DB"); p && *p) return p;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::filesystem::path(x) / "amax-tune" / "tuning.db";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".local" / "share" / "amax-tune" / "tuning.db";
  return "amax-tune.db";
}

std::filesystem::path default_system_db_path() {
  if (const char* p = std::getenv("AMAX_TUNE_SYSTEM_DB"); p && *p) return p;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_system_db_path), &info) && info.dli_fname) {
    // AMAX_SYSTEM_DB_FROM_LIBDIR: the installed database relative to the library directory.
    const auto candidate =
        std::filesystem::path(info.dli_fname).parent_path() / AMAX_SYSTEM_DB_FROM_LIBDIR;
    std::error_code ec;
    if (std::filesystem::exists(candidate, ec)) return candidate.lexically_normal();
  }
  return AMAX_SYSTEM_DB_INSTALLED;
}

}  // namespace amax
