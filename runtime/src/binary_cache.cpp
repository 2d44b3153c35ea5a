#include "amax/binary_cache.hpp"

#include "amax/log.hpp"
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "amax/hash.hpp"

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

std::optional<CachedBinary> BinaryCache::load(const BinaryKey& key) const {
  if (!enabled()) return std::nullopt;
  const auto path = path_of(key);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  CachedBinary out;
  if (std::string why = parse(bytes, key, out); !why.empty()) {
    log().warn("damaged kernel cache entry {} ({}); rebuilding it", path.string(), why);
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return std::nullopt;
  }
  return out;
}

namespace {
// Removes temporaries that writers killed between write and rename left behind: any
// "<entry>.tmp.<pid>.<n>" older than ten minutes (a live writer renames within milliseconds).
void remove_stale_temporaries(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto cutoff = std::filesystem::file_time_type::clock::now() - std::chrono::minutes(10);
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code e2;
    if (name.find(".bin.tmp.") != std::string::npos && it->last_write_time(e2) < cutoff && !e2)
      std::filesystem::remove(it->path(), e2);
  }
}
}  // namespace

bool BinaryCache::store(const BinaryKey& key, const CachedBinary& entry) const {
  if (!enabled()) return false;
  remove_stale_temporaries(dir_);
  static std::atomic<bool> warned{false};
  const auto path = path_of(key);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);  // safe when several processes race
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const auto tmp = dir_ / (path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                           std::to_string(rng()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    const std::string bytes = serialize(key, entry);
    if (!f || !f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) || !f.flush()) {
      if (!warned.exchange(true))
        log().warn("cannot write the kernel cache in {}; compiling without it",
                     dir_.string());
      f.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    if (!warned.exchange(true))
      log().warn("cannot write the kernel cache entry {}: {}", path.string(), ec.message());
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace amax
