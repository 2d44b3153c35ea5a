#include "util.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>

namespace amax::db::detail {

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

bool is_busy(int sqlite_code) noexcept {
  const int primary = sqlite_code & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

std::string corrupt_advice() {
  return "; the file was left unchanged: move it aside, or tune with --rebuild (which moves it aside) to "
         "start a fresh database";
}

DbError translate(const SQLite::Exception& e, const std::filesystem::path& path,
                  std::string_view what) {
  const int ext = e.getExtendedErrorCode() > 0 ? e.getExtendedErrorCode() : e.getErrorCode();
  const int primary = e.getErrorCode() & 0xff;
  std::string msg = "tuning database " + quoted(path) + ": " + std::string(what) + " failed: " +
                    e.what() + " (SQLite code " + std::to_string(ext) + ")";
  ErrorKind kind = ErrorKind::Other;
  switch (primary) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      kind = ErrorKind::Corrupt;
      msg += corrupt_advice();
      break;
    case SQLITE_READONLY:
      kind = ErrorKind::ReadOnly;
      msg += "; the file or its directory is not writable";
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      kind = ErrorKind::Locked;
      break;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_FULL:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      kind = ErrorKind::Io;
      break;
    default:
      break;
  }
  return DbError(kind, msg, path, ext);
}

bool backoff_sleep(std::chrono::steady_clock::time_point deadline, int attempt) {
  using namespace std::chrono;
  const auto now = steady_clock::now();
  if (now >= deadline) return false;
  // 0.5 ms, 1 ms, 2 ms, ... capped at 100 ms; jitter in [50%, 100%] so that the processes that
  // collided do not wake together again.
  const int shift = attempt < 8 ? attempt : 8;
  auto step = microseconds(500) * (1 << shift);
  if (step > milliseconds(100)) step = milliseconds(100);
  thread_local std::minstd_rand rng(static_cast<unsigned>(::getpid()) * 2654435761u +
                                    static_cast<unsigned>(now.time_since_epoch().count()));
  const auto jittered = microseconds(step.count() / 2 + static_cast<long>(rng() % (step.count() / 2 + 1)));
  const auto left = duration_cast<microseconds>(deadline - now);
  std::this_thread::sleep_for(jittered < left ? jittered : left);
  return true;
}

void throw_locked(const std::filesystem::path& path, std::string_view what,
                  std::chrono::milliseconds timeout, int attempts, const SQLite::Exception& last) {
  throw DbError(ErrorKind::Locked,
                "tuning database " + quoted(path) + ": " + std::string(what) +
                    " gave up after waiting " + std::to_string(timeout.count()) + " ms (" +
                    std::to_string(attempts) + " attempts) for a lock held by another connection: " +
                    last.what(),
                path, last.getExtendedErrorCode() > 0 ? last.getExtendedErrorCode() : last.getErrorCode());
}

void ensure_directories(const std::filesystem::path& dir, const std::filesystem::path& db_path) {
  if (dir.empty()) return;
  std::filesystem::path cur;
  for (const auto& part : dir) {
    cur /= part;
    if (part == cur.root_path() || part.empty() || part == "." || part == "..") continue;
    if (::mkdir(cur.c_str(), 0777) == 0) continue;
    const int err = errno;
    struct stat st {};
    if (err == EEXIST || err == EISDIR || err == EACCES || err == EROFS || err == EPERM) {
      // Someone else made it (or it existed): fine if it is a directory we can traverse.
      if (::stat(cur.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) continue;
        throw DbError(ErrorKind::Io,
                      "cannot create the directory for tuning database " + quoted(db_path) +
                          ": " + quoted(cur) + " exists and is not a directory",
                      db_path);
      }
    }
    const ErrorKind kind = (err == EACCES || err == EROFS || err == EPERM) ? ErrorKind::ReadOnly
                                                                          : ErrorKind::Io;
    throw DbError(kind,
                  "cannot create the directory " + quoted(cur) + " for tuning database " +
                      quoted(db_path) + ": " + std::strerror(err),
                  db_path);
  }
}

std::filesystem::path sibling(const std::filesystem::path& p, std::string_view suffix) {
  std::filesystem::path s = p;
  s += std::string(suffix);
  return s;
}

void remove_companions(const std::filesystem::path& p) {
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    std::error_code ec;
    std::filesystem::remove(sibling(p, suffix), ec);
  }
}

std::string file_uri(const std::filesystem::path& p, std::string_view query) {
  const std::string abs = std::filesystem::absolute(p).lexically_normal().string();
  std::string uri = "file:";
  static constexpr char hex[] = "0123456789ABCDEF";
  for (const unsigned char c : abs) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '/' || c == '-' || c == '_' || c == '.' || c == '~';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    }
  }
  if (!query.empty()) {
    uri += '?';
    uri += query;
  }
  return uri;
}

std::string utc_stamp(const char* format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

bool valid_utf8(std::string_view s, std::size_t* bad_offset) noexcept {
  std::size_t i = 0;
  const std::size_t n = s.size();
  auto fail = [&] {
    if (bad_offset) *bad_offset = i;
    return false;
  };
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return fail();
    }
    if (i + len > n) return fail();
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return fail();
      cp = (cp << 6) | (cc & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
                          (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fail();
    i += len;
  }
  return true;
}

std::filesystem::path temp_beside(const std::filesystem::path& p) {
  static std::atomic<unsigned> counter{0};
  return sibling(p, ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

namespace {

std::mutex& uses_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, int>& uses() {
  static std::map<std::string, int> m;
  return m;
}
std::string use_key(const std::filesystem::path& p) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(p, ec);
  return (ec ? p : abs).lexically_normal().string();
}

}  // namespace

FileUse::FileUse(const std::filesystem::path& p) : key_(use_key(p)) {
  std::lock_guard<std::mutex> lock(uses_mutex());
  ++uses()[key_];
}

FileUse& FileUse::operator=(FileUse&& o) noexcept {
  if (this != &o) {
    FileUse dropped(std::move(*this));
    key_ = std::move(o.key_);
    o.key_.clear();
  }
  return *this;
}

FileUse::~FileUse() {
  if (key_.empty()) return;
  std::lock_guard<std::mutex> lock(uses_mutex());
  auto it = uses().find(key_);
  if (it != uses().end() && --it->second <= 0) uses().erase(it);
}

int FileUse::count(const std::filesystem::path& p) {
  std::lock_guard<std::mutex> lock(uses_mutex());
  auto it = uses().find(use_key(p));
  return it == uses().end() ? 0 : it->second;
}

void remove_unused_wal_files(const std::filesystem::path& db_path) noexcept {
  try {
    // Another TuningDb of this process may hold SQLite locks on the file: POSIX locks do not
    // conflict within a process, and closing any descriptor of the file would drop them.
    if (FileUse::count(db_path) > 1) return;
    const std::filesystem::path wal = sibling(db_path, "-wal");
    const std::filesystem::path shm = sibling(db_path, "-shm");
    std::error_code ec;
    if (!std::filesystem::exists(wal, ec) || std::filesystem::file_size(wal, ec) != 0 || ec) return;
    const int fd = ::open(db_path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;  // e.g. a read-only file: leave the companions to its next writer
    // SQLite's POSIX locking: PENDING_BYTE 0x40000000, RESERVED_BYTE +1, SHARED_FIRST +2, 510
    // bytes. A write lock on the shared range fails while any connection has the file open in
    // WAL mode, and keeps newcomers out (they get SQLITE_BUSY and retry) until it is released.
    struct flock lk {};
    lk.l_type = F_WRLCK;
    lk.l_whence = SEEK_SET;
    lk.l_start = 0x40000000 + 2;
    lk.l_len = 510;
    if (::fcntl(fd, F_SETLK, &lk) == 0) {
      if (std::filesystem::file_size(wal, ec) == 0 && !ec) {
        std::filesystem::remove(wal, ec);
        std::filesystem::remove(shm, ec);
      }
    }
    ::close(fd);  // releases the lock
  } catch (...) {
  }
}

}  // namespace amax::db::detail
