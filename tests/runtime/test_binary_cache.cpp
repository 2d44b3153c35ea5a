#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "amax/binary_cache.hpp"

using namespace amax;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir() {
  static std::mt19937_64 rng{std::random_device{}()};
  auto d = fs::temp_directory_path() / ("amax-cache-test-" + std::to_string(rng()));
  fs::remove_all(d);
  return d;
}
const BinaryKey kKey{"0123456789abcdef", "sm_90", "nvrtc 13.0"};
CachedBinary entry(std::size_t n = 5000) {
  CachedBinary e;
  e.log = "ptxas info    : Used 32 registers";
  for (std::size_t i = 0; i < n; ++i) e.binary.push_back(static_cast<char>(i * 7));
  return e;
}
std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_all(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }
}  // namespace

TEST(BinaryCache, RoundTrip) {
  BinaryCache c(fresh_dir());
  EXPECT_FALSE(c.load(kKey));
  ASSERT_TRUE(c.store(kKey, entry()));
  auto got = c.load(kKey);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->binary, entry().binary);
  EXPECT_EQ(got->log, entry().log);
  BinaryKey other = kKey;
  other.compiler_version = "nvrtc 13.1";
  EXPECT_FALSE(c.load(other));
  other = kKey;
  other.arch = "sm_100";
  EXPECT_FALSE(c.load(other));
}

TEST(BinaryCache, TargetIdsWithOtherFeaturesAreOtherEntries) {
  // A code object built for xnack- is never loaded into an xnack+ process, nor the reverse.
  BinaryCache c(fresh_dir());
  const BinaryKey minus{"0123456789abcdef", "gfx942:sramecc+:xnack-", "hiprtc 6.4.43484"};
  BinaryKey plus = minus, any = minus;
  plus.arch = "gfx942:sramecc+:xnack+";
  any.arch = "gfx942";
  ASSERT_TRUE(c.store(minus, entry(100)));
  EXPECT_FALSE(c.load(plus));
  EXPECT_FALSE(c.load(any));
  ASSERT_TRUE(c.store(plus, entry(200)));
  EXPECT_EQ(c.load(minus)->binary.size(), 100u);
  EXPECT_EQ(c.load(plus)->binary.size(), 200u);
}

TEST(BinaryCache, DamagedEntriesAreDetectedRemovedAndRebuilt) {
  BinaryCache c(fresh_dir());
  ASSERT_TRUE(c.store(kKey, entry()));
  const auto path = c.path_of(kKey);
  const std::string good = read_all(path);
  std::mt19937_64 rng{std::random_device{}()};
  const std::vector<std::pair<std::string, std::string>> damage = {
      {"truncated", good.substr(0, good.size() / 2)},
      {"truncated by one byte", good.substr(0, good.size() - 1)},
      {"empty", ""},
      {"zero-filled", std::string(good.size(), '\0')},
      {"flipped byte", [&] { std::string s = good; s[rng() % s.size()] ^= 0x20; return s; }()},
      {"flipped last byte", [&] { std::string s = good; s.back() ^= 1; return s; }()},
      {"appended", good + "x"},
  };
  for (const auto& [what, bytes] : damage) {
    write_all(path, bytes);
    EXPECT_FALSE(c.load(kKey)) << what;
    EXPECT_FALSE(fs::exists(path)) << what << ": damaged entry not removed";
    ASSERT_TRUE(c.store(kKey, entry()));  // rebuilt
    ASSERT_TRUE(c.load(kKey)) << what;
  }
}

TEST(BinaryCache, ConcurrentWritersLeaveOneWholeEntry) {
  const auto dir = fresh_dir();
  std::vector<pid_t> kids;
  for (int i = 0; i < 16; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      BinaryCache c(dir);  // every child also creates the directory
      bool ok = true;
      for (int k = 0; k < 20; ++k) ok = c.store(kKey, entry(200000)) && ok;
      for (int k = 0; k < 20; ++k) ok = c.load(kKey).has_value() && ok;  // never a torn read
      _exit(ok ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t p : kids) {
    int st = 0;
    waitpid(p, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  auto got = BinaryCache(dir).load(kKey);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->binary, entry(200000).binary);
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().extension(), ".bin") << "leftover temporary " << e.path();
}

TEST(BinaryCache, UnwritableDirectoryDegradesWithoutThrowing) {
  const auto dir = fresh_dir();
  fs::create_directories(dir);
  write_all(dir / "file", "not a directory");
  BinaryCache c(dir / "file" / "kernels");  // cannot be created, even as root
  EXPECT_FALSE(c.store(kKey, entry()));
  EXPECT_FALSE(c.load(kKey));
  BinaryCache off{fs::path{}};
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.store(kKey, entry()));
}

TEST(BinaryCache, TemporariesOfKilledWritersAreCleanedUp) {
  const auto dir = fresh_dir();
  BinaryCache c(dir);
  ASSERT_TRUE(c.store(kKey, entry()));
  const auto old_tmp = dir / "0123456789abcdef.bin.tmp.4242.77";
  const auto new_tmp = dir / "0123456789abcdef.bin.tmp.4243.78";
  write_all(old_tmp, "half an entry");
  write_all(new_tmp, "a writer still at work");
  fs::last_write_time(old_tmp, fs::file_time_type::clock::now() - std::chrono::minutes(11));
  BinaryKey other = kKey;
  other.source_hash = "fedcba9876543210";
  ASSERT_TRUE(c.store(other, entry()));
  EXPECT_FALSE(fs::exists(old_tmp)) << "a stale temporary survived";
  EXPECT_TRUE(fs::exists(new_tmp)) << "a fresh temporary (a live writer's) was removed";
  EXPECT_TRUE(c.load(kKey));
}
