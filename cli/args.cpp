// The command line's shared argument helpers (commands.hpp): dtype and size lists, the default
// database path, output-file safety.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "amax/file_access.hpp"
#include "amax/multi_config.hpp"
#include "amax/paths.hpp"
#include "commands.hpp"

namespace amax::cli {

std::filesystem::path db_path_or_default(const std::string& given) {
  return given.empty() ? default_user_db_path() : std::filesystem::path(given);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, end - start);
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    items.push_back(first == std::string::npos ? std::string() : item.substr(first, last - first + 1));
    if (end == text.size()) break;
    start = end + 1;
  }
  return items;
}

ArchInfo parse_user_arch(const std::string& arch) {
  try {
    return ArchInfo::parse_known(arch);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

std::vector<DType> parse_dtypes(const std::string& s) {
  std::vector<DType> out;
  for (const std::string& item : split_list(s)) {
    auto d = parse_dtype(item);
    if (!d) throw UsageError("unknown dtype '" + item + "' in --dtypes '" + s + "' (expected fp32, fp16, bf16)");
    out.push_back(*d);
  }
  return out;
}

std::vector<Strategy> parse_strategies(const std::string& s) {
  std::vector<Strategy> out;
  for (const std::string& item : split_list(s)) {
    auto st = parse_strategy(item);
    if (!st)
      throw UsageError("unknown strategy '" + item + "' in --strategies '" + s + "' (expected " +
                       strategy_names() + ")");
    if (std::find(out.begin(), out.end(), *st) == out.end()) out.push_back(*st);
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

std::string output_dir_problem(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec)) return "'" + dir.string() + "' is not a directory";
    return access_problem(dir, W_OK | X_OK, "the directory");
  }
  std::filesystem::path up = std::filesystem::absolute(dir, ec).parent_path();
  while (!std::filesystem::exists(up, ec) && up.has_parent_path() && up.parent_path() != up) up = up.parent_path();
  if (!std::filesystem::is_directory(up, ec)) return "'" + up.string() + "' is not a directory";
  return access_problem(up, W_OK | X_OK, "its nearest existing directory");
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

std::uint64_t parse_count(std::string s) {
  if (s.starts_with("2^")) {
    int p = 0;
    auto [ptr, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), p);
    if (ec != std::errc{} || ptr != s.data() + s.size() || p < 0 || p > 62)
      throw std::invalid_argument("exponent must be 0..62");
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
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) throw std::invalid_argument("not a number");
  if (v > (1ull << 62) / mult) throw std::invalid_argument("too large");
  return v * mult;
}

std::vector<std::uint64_t> parse_sizes(const std::string& text) {
  auto bad = [&](const std::string& item, const std::string& why) {
    return UsageError("invalid size '" + item + "' in --sizes '" + text + "': " + why +
                      " (examples: 1048576, 2^20, 1M, 4k, 2^10..2^30)");
  };
  std::vector<std::uint64_t> out;
  for (const std::string& item : split_list(text)) {
    if (item.empty()) throw bad(item, "empty item");
    try {
      if (const auto dots = item.find(".."); dots != std::string::npos) {
        const std::uint64_t a = parse_count(item.substr(0, dots)), b = parse_count(item.substr(dots + 2));
        if (a == 0 || a > b || (a & (a - 1)) != 0) throw bad(item, "a range needs a power of two A <= B");
        for (std::uint64_t v = a; v <= b; v *= 2) out.push_back(v);
      } else {
        const std::uint64_t v = parse_count(item);
        if (v == 0) throw bad(item, "sizes must be at least 1");
        out.push_back(v);
      }
    } catch (const std::invalid_argument& e) {  // parse_count's reason
      throw bad(item, e.what());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<tune::GroupSpec> parse_multi_groups(const std::string& text) {
  if (text.empty()) throw UsageError("--groups is empty (expected TENSORSxN:DTYPE,..., e.g. 500x4096:fp32)");
  std::vector<tune::GroupSpec> out;
  for (const std::string& item : split_list(text)) {
    auto bad = [&](const std::string& why) {
      return UsageError("invalid group '" + item + "' in --groups '" + text + "': " + why +
                        " (expected TENSORSxN:DTYPE, e.g. 500x4096:fp32)");
    };
    const std::size_t x = item.find('x'), colon = item.find(':');
    if (x == std::string::npos || colon == std::string::npos || colon < x) throw bad("not TENSORSxN:DTYPE");
    tune::GroupSpec g;
    const auto d = parse_dtype(item.substr(colon + 1));
    if (!d) throw bad("unknown dtype '" + item.substr(colon + 1) + "'");
    g.dtype = *d;
    // One count each (as --sizes counts: 4096, 16k, 2^20), named as what they are in the group.
    auto count = [&](const std::string& s, const char* what) {
      try {
        return parse_count(s);
      } catch (const std::invalid_argument& e) {
        throw bad(std::string(what) + " '" + s + "': " + e.what());
      }
    };
    g.tensors = count(item.substr(0, x), "tensor count");
    g.n = count(item.substr(x + 1, colon - x - 1), "element count");
    if (g.tensors == 0 || g.n == 0) throw bad("counts must be at least 1");
    // The limits of one call (amax_tune.h): 2^24 - 1 tensors, 2^40 - 1 elements each.
    if (g.tensors > kMultiMaxTensors)
      throw bad(fmt::format("{} tensors exceed the limit of {} (2^24 - 1) per call", g.tensors, kMultiMaxTensors));
    if (g.n > kMultiMaxElements)
      throw bad(fmt::format("{} elements per tensor exceed the limit of 2^40 - 1", g.n));
    __extension__ using u128 = unsigned __int128;
    if (u128{g.tensors} * g.n * info(g.dtype).bytes > u128{1} << 62)
      throw bad(fmt::format("{} x {} elements of {} is more than 2^62 bytes", g.tensors, g.n, to_string(g.dtype)));
    out.push_back(g);
  }
  return out;
}

}  // namespace amax::cli
