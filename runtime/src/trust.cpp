#include "amax/trust.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace amax::trust {
namespace fs = std::filesystem;

namespace {

bool trusted_owner(uid_t uid) noexcept { return uid == ::geteuid() || uid == 0; }
constexpr mode_t kOthersWrite = S_IWGRP | S_IWOTH;

std::string user_name(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{}, *res = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res && res->pw_name)
    return fmt::format("uid {} ({})", uid, res->pw_name);
  return fmt::format("uid {}", uid);
}

std::string you() { return user_name(::geteuid()); }

// "belongs to neither you (uid 1000 (alice)) nor root", or "does not belong to you (uid 0 (root))".
std::string not_yours() {
  return ::geteuid() == 0 ? fmt::format("does not belong to you ({})", you())
                          : fmt::format("belongs to neither you ({}) nor root", you());
}

// Why `st` (of `what` at `path`) fails the owner/mode rule, "" when it passes.
std::string owner_and_mode_reason(const struct stat& st, std::string_view what, const fs::path& path,
                                  std::string_view remedy_if_not_yours, std::string_view remedy_if_yours) {
  if (!trusted_owner(st.st_uid))
    return fmt::format("{} {} ({}) {}: another user controls what is in it; {}", what, path.string(),
                       describe_owner_and_mode(st), not_yours(), remedy_if_not_yours);
  if (st.st_mode & kOthersWrite)
    return fmt::format("{} {} ({}) can be written by {}: anyone who can write it can put code there; {}", what,
                       path.string(), describe_owner_and_mode(st),
                       (st.st_mode & S_IWOTH) ? "every user" : "its group", remedy_if_yours);
  return {};
}

int open_dir_nofollow(const fs::path& p) {
  return ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

}  // namespace

bool only_owner_can_write(const struct stat& st) noexcept {
  return trusted_owner(st.st_uid) && (st.st_mode & kOthersWrite) == 0;
}

std::string describe_owner_and_mode(const struct stat& st) {
  return fmt::format("owner {}, mode {:04o}", user_name(st.st_uid), st.st_mode & 07777);
}

std::string check_directory_fd(int dir_fd, const fs::path& path) {
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0) return fmt::format("cannot stat directory {}: {}", path.string(), std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", path.string());
  return owner_and_mode_reason(
      st, "directory", path, "use a directory of your own (mode 0700)",
      fmt::format("if it is yours and you trust what is in it, run `chmod go-w {}`; else use a private directory "
                  "(mode 0700)",
                  path.string()));
}

std::string check_file_fd(int fd, const fs::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fmt::format("cannot stat {}: {}", path.string(), std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fmt::format("{} is not a regular file ({}); remove it", path.string(), describe_owner_and_mode(st));
  return owner_and_mode_reason(
      st, "file", path, "remove it (as its owner or root)",
      fmt::format("if you wrote it and trust it, run `chmod go-w {}`; else remove it", path.string()));
}

std::string check_ancestors(const fs::path& dir) {
  for (fs::path p = dir.parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return fmt::format("cannot stat {}: {}", p.string(), std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) return fmt::format("{} (above {}) is not a directory", p.string(), dir.string());
    if (!trusted_owner(st.st_uid))
      return fmt::format("directory {} above {} ({}) {}, and its owner can replace what is below it; use a "
                         "directory whose parents only you or root can write",
                         p.string(), dir.string(), describe_owner_and_mode(st), not_yours());
    if ((st.st_mode & kOthersWrite) && !(st.st_mode & S_ISVTX))
      return fmt::format("directory {} above {} ({}) can be written by others and is not sticky: they can replace "
                         "what is below it; use a directory whose parents only you or root can write",
                         p.string(), dir.string(), describe_owner_and_mode(st));
    if (p == p.root_path()) break;
  }
  return {};
}

TrustedDir TrustedDir::open(const fs::path& dir) {
  TrustedDir d;
  d.path_ = dir;
  char resolved[PATH_MAX];
  if (!::realpath(dir.c_str(), resolved)) {
    d.missing_ = errno == ENOENT || errno == ENOTDIR;
    d.reason_ = fmt::format("cannot resolve directory {}: {}", dir.string(), std::strerror(errno));
    return d;
  }
  const fs::path real(resolved);
  const int fd = open_dir_nofollow(real);
  if (fd < 0) {
    d.missing_ = errno == ENOENT;
    d.reason_ = fmt::format("cannot open directory {}: {}", real.string(), std::strerror(errno));
    return d;
  }
  // The opened directory itself first (what is read is what fstat saw), then the ones above it.
  std::string why = check_directory_fd(fd, dir);
  if (why.empty()) why = check_ancestors(real);
  if (!why.empty()) {
    ::close(fd);
    d.reason_ = std::move(why);
    return d;
  }
  d.fd_ = fd;
  return d;
}

TrustedDir::TrustedDir(TrustedDir&& o) noexcept
    : fd_(o.fd_), missing_(o.missing_), reason_(std::move(o.reason_)), path_(std::move(o.path_)) {
  o.fd_ = -1;
}

TrustedDir& TrustedDir::operator=(TrustedDir&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
    missing_ = o.missing_;
    reason_ = std::move(o.reason_);
    path_ = std::move(o.path_);
  }
  return *this;
}

TrustedDir::~TrustedDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> TrustedDir::read(const std::string& name, std::string* why) const {
  std::string ignored;
  std::string& reason = why ? *why : ignored;
  reason.clear();
  const fs::path where = path_ / name;
  if (fd_ < 0) {
    reason = reason_;
    return std::nullopt;
  }
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return std::nullopt;
    struct stat st {};
    if (e == ELOOP && ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      reason = fmt::format("{} is a symbolic link ({}), which is never followed for GPU code; remove it",
                           where.string(), describe_owner_and_mode(st));
    } else {
      reason = fmt::format("cannot open {}: {}", where.string(), std::strerror(e));
    }
    return std::nullopt;
  }
  if (std::string bad = check_file_fd(fd, where); !bad.empty()) {
    ::close(fd);
    reason = std::move(bad);
    return std::nullopt;
  }
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t k = ::read(fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      reason = fmt::format("cannot read {}: {}", where.string(), std::strerror(errno));
      ::close(fd);
      return std::nullopt;
    }
    if (k == 0) break;
    bytes.append(buf, static_cast<std::size_t>(k));
  }
  ::close(fd);
  return bytes;
}

std::optional<std::string> read_trusted_file(const fs::path& file, std::string* why) {
  const TrustedDir d = TrustedDir::open(file.has_parent_path() ? file.parent_path() : fs::path("."));
  if (!d.ok()) {
    if (why) *why = d.missing() ? std::string() : d.reason();
    return std::nullopt;
  }
  return d.read(file.filename().string(), why);
}

bool create_private_directories(const fs::path& dir, std::error_code& ec) {
  ec.clear();
  if (dir.empty()) return true;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    ec = std::make_error_code(std::errc::not_a_directory);
    return false;
  }
  const fs::path parent = dir.parent_path();
  if (!parent.empty() && parent != dir && !create_private_directories(parent, ec)) return false;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    ec = std::error_code(errno, std::generic_category());
    return false;
  }
  return true;
}

std::string database_writable_by_others(const fs::path& file) {
  char resolved[PATH_MAX];
  if (!::realpath(file.c_str(), resolved)) return {};  // no such file: nothing to read
  const fs::path real(resolved);
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) return {};
  if (!only_owner_can_write(st))
    return fmt::format("the file {} has {}", real.string(), describe_owner_and_mode(st));
  const fs::path dir = real.parent_path();
  if (::stat(dir.c_str(), &st) == 0 && !only_owner_can_write(st))
    return fmt::format("its directory {} has {}", dir.string(), describe_owner_and_mode(st));
  return {};
}

std::string database_warning(std::string_view what, const fs::path& file) {
  const std::string why = database_writable_by_others(file);
  if (why.empty()) return {};
  return fmt::format(
      "{} {} can be changed by users other than you ({}) and root: {}. Its rows are still used (each is validated "
      "and can only choose among the generated variants, so the result stays exact), but another user can make "
      "this process use a slower variant. To trust it, make the file and its directory yours (or root's) and not "
      "writable by group or others (`chmod go-w`), or point $AMAX_TUNE_DB / $AMAX_TUNE_SYSTEM_DB at such a copy",
      what, file.string(), you(), why);
}

}  // namespace amax::trust
