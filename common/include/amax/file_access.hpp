#pragma once
// Why a path cannot be written, in words a user can act on: the file or directory, this process's
// uid, and the owner and mode of what refuses (POSIX). Header-only, as is the rest of amax_common.
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

namespace amax {

/// "owned by alice (uid 1000), mode 0444 (r--r--r--)" for an existing file or directory (the uid
/// alone where it has no name); "cannot stat it: <reason>" when stat fails. Thread-safe except
/// for getpwuid's static buffer (call it from one thread at a time, as the command line does).
inline std::string owner_and_mode(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return "cannot stat it: " + std::string(std::strerror(errno));
  std::string owner = "uid " + std::to_string(st.st_uid);
  if (const passwd* pw = ::getpwuid(st.st_uid)) owner = std::string(pw->pw_name) + " (" + owner + ")";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  std::string rwx;
  for (int shift = 6; shift >= 0; shift -= 3) {
    rwx += (st.st_mode >> shift) & 4 ? 'r' : '-';
    rwx += (st.st_mode >> shift) & 2 ? 'w' : '-';
    rwx += (st.st_mode >> shift) & 1 ? 'x' : '-';
  }
  return "owned by " + owner + ", mode " + mode + " (" + rwx + ")";
}

/// Why this process may not access @p p as @p how (access(2) bits, e.g. W_OK | X_OK for a
/// directory to create files in; checked with the effective ids): "" when it may, or when the
/// check fails for another reason than permission (left to the operation itself to report);
/// otherwise "<what> '<p>' is not writable by this user (uid U): owned by ..., mode ..." (or "it
/// is on a read-only filesystem"). @p what names the path's role ("the file", "its directory").
inline std::string access_problem(const std::filesystem::path& p, int how, std::string_view what) {
  if (::faccessat(AT_FDCWD, p.c_str(), how, AT_EACCESS) == 0) return {};
  const int err = errno;
  if (err != EACCES && err != EROFS && err != EPERM) return {};
  return std::string(what) + " '" + p.string() + "' is not writable by this user (uid " +
         std::to_string(::geteuid()) + "): " +
         (err == EROFS ? std::string("it is on a read-only filesystem") : owner_and_mode(p));
}

}  // namespace amax
