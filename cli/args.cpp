// The command line's shared argument helpers (commands.hpp): dtype and size lists, the default
// database path, output-file safety.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "amax/file_access.hpp"
#include "amax/paths.hpp"
#include "commands.hpp"

namespace amax::cli {

std::filesystem::path default_db_path() { return default_user_db_path(); }

std::vector<DType> parse_dtypes(const std::string& s) {
  std::vector<DType> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(start, end - start);
    auto d = parse_dtype(item);
    if (!d) throw UsageError("unknown dtype '" + item + "' in --dtypes '" + s + "' (expected fp32, fp16, bf16)");
    out.push_back(*d);
    start = end + 1;
  }
  return out;
}

void refuse_same_file(const std::filesystem::path& out, const std::filesystem::path& in, const char* what) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(out, in, ec))
    throw UsageError("the output " + out.string() + " is " + what + " (" + in.string() +
                     "): choose another output file");
}

std::string output_file_problem(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return "it is a directory";
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::exists(dir, ec)) return "its directory '" + dir.string() + "' does not exist";
  if (!std::filesystem::is_directory(dir, ec)) return "'" + dir.string() + "' is not a directory";
  return access_problem(dir, W_OK | X_OK, "its directory");
}

void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  const auto tmp = std::filesystem::path(path.string() + ".tmp-" + std::to_string(::getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw std::runtime_error("cannot write " + path.string() + ": cannot create " + tmp.string() + " (" +
                               std::strerror(errno) + ")");
    try {
      write(f);
      f.flush();
      if (!f) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
    } catch (...) {
      f.close();
      std::filesystem::remove(tmp);
      throw;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw std::runtime_error("cannot write " + path.string() + ": " + ec.message());
  }
}

std::vector<std::uint64_t> parse_sizes(const std::string& text) {
  auto bad = [&](const std::string& item, const std::string& why) {
    return std::invalid_argument("invalid size '" + item + "' in --sizes '" + text + "': " + why +
                                 " (examples: 1048576, 2^20, 1M, 4k, 2^10..2^30)");
  };
  auto number = [&](std::string s, const std::string& item) -> std::uint64_t {
    if (s.starts_with("2^")) {
      int p = 0;
      auto [ptr, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), p);
      if (ec != std::errc{} || ptr != s.data() + s.size() || p < 0 || p > 62) throw bad(item, "exponent must be 0..62");
      return 1ull << p;
    }
    std::uint64_t mult = 1;
    if (!s.empty()) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s.back())));
      if (c == 'k') mult = 1ull << 10;
      if (c == 'm') mult = 1ull << 20;
      if (c == 'g') mult = 1ull << 30;
      if (mult != 1) s.pop_back();
    }
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) throw bad(item, "not a number");
    if (v > (1ull << 62) / mult) throw bad(item, "too large");
    return v * mult;
  };
  std::vector<std::uint64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) throw bad(item, "empty item");
    if (const auto dots = item.find(".."); dots != std::string::npos) {
      const std::uint64_t a = number(item.substr(0, dots), item), b = number(item.substr(dots + 2), item);
      if (a == 0 || a > b || (a & (a - 1)) != 0) throw bad(item, "a range needs a power of two A <= B");
      for (std::uint64_t v = a; v <= b; v *= 2) out.push_back(v);
    } else {
      const std::uint64_t v = number(item, item);
      if (v == 0) throw bad(item, "sizes must be at least 1");
      out.push_back(v);
    }
    if (end == text.size()) break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace amax::cli
