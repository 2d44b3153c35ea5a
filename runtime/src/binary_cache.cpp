#include "amax/binary_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "amax/hash.hpp"
#include "amax/log.hpp"
#include "amax/trust.hpp"

namespace amax {
namespace {

constexpr char kMagic[8] = {'A', 'M', 'A', 'X', 'B', 'I', 'N', '2'};

void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

bool get_u64(std::string_view& in, std::uint64_t& v) {
  if (in.size() < 8) return false;
  std::memcpy(&v, in.data(), 8);
  in.remove_prefix(8);
  return true;
}
bool get_blob(std::string_view& in, std::string_view& blob) {
  std::uint64_t n = 0;
  if (!get_u64(in, n) || n > in.size()) return false;
  blob = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

std::string serialize(const BinaryKey& key, const CachedBinary& e) {
  std::string out(kMagic, sizeof kMagic);
  const std::string id = key.id();
  for (std::string_view blob : {std::string_view(id), std::string_view(e.log),
                                std::string_view(e.binary.data(), e.binary.size())}) {
    put_u64(out, blob.size());
    out.append(blob);
  }
  put_u64(out, fnv1a64(out));
  return out;
}

// Why the bytes are not a valid entry for `key` (empty when they are).
std::string parse(std::string_view bytes, const BinaryKey& key, CachedBinary& out) {
  if (bytes.size() < sizeof kMagic + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return "bad magic or truncated header";
  std::uint64_t stored = 0;
  std::string_view tail = bytes.substr(bytes.size() - 8);
  get_u64(tail, stored);
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  if (fnv1a64(body) != stored) return "checksum mismatch (truncated or modified)";
  std::string_view in = body.substr(sizeof kMagic), id, log, bin;
  if (!get_blob(in, id) || !get_blob(in, log) || !get_blob(in, bin) || !in.empty())
    return "inconsistent lengths";
  if (id != key.id()) return "entry belongs to another key";
  out.log.assign(log);
  out.binary.assign(bin.begin(), bin.end());
  return {};
}

}  // namespace

std::string BinaryKey::id() const { return source_hash + "|" + arch + "|" + compiler_version; }

BinaryCache::BinaryCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path BinaryCache::default_dir() {
  if (const char* d = std::getenv("AMAX_TUNE_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "amax-tune" / "kernels";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "amax-tune" / "kernels";
  return {};
}

std::filesystem::path BinaryCache::path_of(const BinaryKey& key) const {
  return dir_ / (to_hex(fnv1a64(key.id())) + ".bin");
}

std::filesystem::path BinaryCache::temporary_path(const BinaryKey& key, unsigned attempt) const {
  return dir_ / (path_of(key).filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                 std::to_string(attempt));
}

namespace {

// The one warning per process and cache directory for GPU code refused by the trust rule.
void warn_untrusted(const std::filesystem::path& dir, const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> warned;
  {
    std::lock_guard lock(mu);
    if (!warned.insert(dir.string()).second) return;
  }
  log().warn("kernel cache {} is not trusted: {}. No GPU code is loaded from what fails this check; those kernels "
             "are compiled instead (to keep a cache, point AMAX_TUNE_CACHE_DIR or kernel_cache_dir at a directory "
             "only you can write, e.g. under ~/.cache)",
             dir.string(), why);
}

// Removes temporaries that writers killed between write and rename left behind: any
// "<entry>.tmp.<pid>.<n>" older than ten minutes (a live writer renames within milliseconds).
void remove_stale_temporaries(const trust::TrustedDir& dir) {
  const int fd = ::dup(dir.fd());
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return;
  }
  const auto cutoff = std::chrono::system_clock::now() - std::chrono::minutes(10);
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    struct stat st {};
    if (name.find(".bin.tmp.") == std::string::npos ||
        ::fstatat(dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
      continue;
    const auto mtime = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                                        std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    if (mtime < cutoff) stale.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : stale) ::unlinkat(dir.fd(), name.c_str(), 0);
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t k = ::write(fd, bytes.data(), bytes.size());
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(k));
  }
  return true;
}

}  // namespace

std::optional<CachedBinary> BinaryCache::load(const BinaryKey& key) const {
  if (!enabled()) return std::nullopt;
  const trust::TrustedDir dir = trust::TrustedDir::open(dir_);
  if (!dir.ok()) {
    if (!dir.missing()) warn_untrusted(dir_, dir.reason());
    return std::nullopt;
  }
  const auto path = path_of(key);
  const std::string name = path.filename().string();
  std::string refused;
  const std::optional<std::string> bytes = dir.read(name, &refused);
  if (!bytes) {
    if (!refused.empty()) warn_untrusted(dir_, refused);
    return std::nullopt;
  }
  CachedBinary out;
  if (std::string why = parse(*bytes, key, out); !why.empty()) {
    log().warn("damaged kernel cache entry {} ({}); rebuilding it", path.string(), why);
    ::unlinkat(dir.fd(), name.c_str(), 0);
    return std::nullopt;
  }
  return out;
}

bool BinaryCache::store(const BinaryKey& key, const CachedBinary& entry) const {
  if (!enabled()) return false;
  static std::atomic<bool> warned{false};
  auto cannot_write = [&](const std::string& what) {
    if (!warned.exchange(true)) log().warn("cannot write the kernel cache in {} ({}); compiling without it",
                                           dir_.string(), what);
    return false;
  };
  std::error_code ec;
  if (!trust::create_private_directories(dir_, ec)) return cannot_write(ec.message());  // safe when processes race
  const trust::TrustedDir dir = trust::TrustedDir::open(dir_);
  if (!dir.ok()) {
    if (dir.missing()) return cannot_write(dir.reason());
    warn_untrusted(dir_, dir.reason());
    return false;
  }
  remove_stale_temporaries(dir);
  const auto path = path_of(key);
  const std::string name = path.filename().string();
  // A temporary of this process's own, never an existing file or a symbolic link planted at its
  // name: O_EXCL | O_NOFOLLOW. An own regular file there (another thread's, or one left by a
  // killed process that had this pid) moves on to the next name.
  int fd = -1;
  std::string tmp;
  for (unsigned attempt = 0; fd < 0 && attempt < 64; ++attempt) {
    tmp = temporary_path(key, attempt).filename().string();
    fd = ::openat(dir.fd(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) break;
    if (errno != EEXIST) return cannot_write(fmt::format("{}: {}", (dir_ / tmp).string(), std::strerror(errno)));
    struct stat st {};
    if (::fstatat(dir.fd(), tmp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid())) {
      warn_untrusted(dir_, fmt::format("{} ({}{}) was planted where this process creates its temporary file; not "
                                       "writing through it (remove it: only you or root can have put it there)",
                                       (dir_ / tmp).string(), S_ISLNK(st.st_mode) ? "a symbolic link, " : "",
                                       trust::describe_owner_and_mode(st)));
      return false;
    }
  }
  if (fd < 0) return cannot_write("no free name for a temporary file");
  const bool written = write_all(fd, serialize(key, entry));
  ::close(fd);
  if (!written) {
    ::unlinkat(dir.fd(), tmp.c_str(), 0);
    return cannot_write(fmt::format("writing {}: {}", (dir_ / tmp).string(), std::strerror(errno)));
  }
  // Never replace another user's file (the directory is ours, so only root can have put one here).
  struct stat st {};
  if (::fstatat(dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != ::geteuid()) {
    ::unlinkat(dir.fd(), tmp.c_str(), 0);
    warn_untrusted(dir_, fmt::format("{} ({}) is another user's file; not replacing it (remove it to let this "
                                     "cache store the entry)",
                                     path.string(), trust::describe_owner_and_mode(st)));
    return false;
  }
  if (::renameat(dir.fd(), tmp.c_str(), dir.fd(), name.c_str()) != 0) {
    const int e = errno;
    ::unlinkat(dir.fd(), tmp.c_str(), 0);
    if (!warned.exchange(true))
      log().warn("cannot write the kernel cache entry {}: {}", path.string(), std::strerror(e));
    return false;
  }
  return true;
}

}  // namespace amax
