// Issue 7, item 6: the compiled-kernel cache (amax::BinaryCache) survives many processes writing
// and reading many keys at once, processes killed in the middle of a store, and entries damaged
// on disk meanwhile (truncated, a flipped byte, emptied, garbage appended): no crash, a load
// returns the right binary or a miss (never wrong bytes), damaged entries are rebuilt.
#include <fcntl.h>

#include <atomic>
#include <thread>

#include "amax/binary_cache.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

constexpr int kKeys = 64;

BinaryKey key_of(int i) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", 0x9e3779b97f4a7c15ull * static_cast<unsigned long long>(i + 1));
  return BinaryKey{hash, "sm_90", "nvrtc 13.0"};
}

/// What compiling key i produces: 1..64 KiB of deterministic bytes and a log.
CachedBinary binary_of(int i) {
  CachedBinary b;
  const std::size_t size = 1024 * (1 + static_cast<std::size_t>(i * 37) % 64);
  std::mt19937 g(static_cast<unsigned>(i));
  b.binary.resize(size);
  for (char& c : b.binary) c = static_cast<char>(g());
  b.log = "ptxas info: Used " + std::to_string(16 + i % 48) + " registers for kernel " + std::to_string(i);
  return b;
}

struct Counts {
  long hits = 0, misses = 0, stores = 0, wrong = 0, failed_stores = 0;
};

class BinaryCacheTest : public TempDirTest {};

TEST_F(BinaryCacheTest, ConcurrentWritersKilledWritersAndDamageNeverServeWrongBytes) {
  const std::uint64_t seed = scenario_seed();
  const auto t0 = Clock::now();
  const fs::path dir = file("cache/amax-tune/kernels");  // created by the first store
  constexpr int kWorkers = 8, kKilled = 4, kRounds = 3;
  constexpr int kOpsPerWorker = 400;
  const fs::path results = file("results");
  long damages = 0, detected = 0, kills = 0;
  Counts total;

  for (int round = 0; round < kRounds; ++round) {
    std::vector<pid_t> workers, doomed;
    // Workers: load a random key; on a hit check the bytes, on a miss "compile" and store.
    auto spawn = [&](int id, bool endless) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        LogCapture log;  // count the damage warnings instead of printing them
        const BinaryCache cache(dir);
        std::mt19937_64 g(seed + static_cast<std::uint64_t>(round * 1000 + id));
        Counts c;
        for (int op = 0; endless || op < kOpsPerWorker; ++op) {
          const int i = static_cast<int>(g() % kKeys);
          if (auto got = cache.load(key_of(i))) {
            const CachedBinary want = binary_of(i);
            ++c.hits;
            if (got->binary != want.binary || got->log != want.log) ++c.wrong;
          } else {
            ++c.misses;
            if (cache.store(key_of(i), binary_of(i))) ++c.stores;
            else ++c.failed_stores;
          }
        }
        std::ofstream(results, std::ios::app) << c.hits << " " << c.misses << " " << c.stores << " " << c.wrong
                                              << " " << c.failed_stores << " " << log.count("damaged kernel cache entry")
                                              << "\n";
        std::fflush(nullptr);
        ::_exit(0);
      }
      return pid;
    };
    for (int w = 0; w < kWorkers; ++w) workers.push_back(spawn(w, false));
    for (int w = 0; w < kKilled; ++w) doomed.push_back(spawn(100 + w, true));  // killed mid-way below

    // The vandal (this process): damages random entries in place while the workers run.
    std::mt19937_64 g(seed ^ 0xdeadbeef);
    std::atomic<bool> workers_done{false};
    std::thread vandal([&] {
      while (!workers_done) {
        std::this_thread::sleep_for(std::chrono::microseconds(300 + g() % 700));
        std::vector<fs::path> entries;  // a random existing entry
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir, ec))
          if (e.path().extension() == ".bin") entries.push_back(e.path());
        if (entries.empty()) continue;
        const fs::path p = entries[g() % entries.size()];
        const int fd = ::open(p.c_str(), O_RDWR);
        if (fd < 0) continue;
        const off_t size = ::lseek(fd, 0, SEEK_END);
        switch (g() % 4) {
          case 0:  // truncated
            if (size > 1) (void)!::ftruncate(fd, static_cast<off_t>(g() % static_cast<std::uint64_t>(size)));
            break;
          case 1: {  // a flipped byte
            if (size <= 0) break;
            const off_t at = static_cast<off_t>(g() % static_cast<std::uint64_t>(size));
            char c = 0;
            if (::pread(fd, &c, 1, at) == 1) {
              c = static_cast<char>(c ^ (1 + g() % 255));
              (void)!::pwrite(fd, &c, 1, at);
            }
            break;
          }
          case 2:  // emptied
            (void)!::ftruncate(fd, 0);
            break;
          default: {  // garbage appended
            const std::string junk(1 + g() % 64, static_cast<char>(g()));
            (void)!::pwrite(fd, junk.data(), junk.size(), size);
          }
        }
        ::close(fd);
        ++damages;
      }
    });
    // Kill the endless workers at random moments (possibly between writing a temporary file and
    // renaming it into place).
    for (pid_t pid : doomed) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + g() % 200));
      ::kill(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
      EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
      ++kills;
    }
    for (pid_t pid : workers) {
      int st = 0;
      ::waitpid(pid, &st, 0);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "a cache worker crashed (status " << st << ")";
    }
    workers_done = true;
    vandal.join();
  }
  {
    std::ifstream in(results);
    Counts c;
    long d = 0;
    while (in >> c.hits >> c.misses >> c.stores >> c.wrong >> c.failed_stores >> d) {
      total.hits += c.hits;
      total.misses += c.misses;
      total.stores += c.stores;
      total.wrong += c.wrong;
      total.failed_stores += c.failed_stores;
      detected += d;
    }
  }
  EXPECT_EQ(total.wrong, 0) << "a load returned bytes that are not the binary of its key";
  EXPECT_EQ(total.failed_stores, 0);

  // Afterwards every key loads correctly or is a miss that one store repairs.
  LogCapture log;
  const BinaryCache cache(dir);
  int rebuilt = 0;
  for (int i = 0; i < kKeys; ++i) {
    if (auto got = cache.load(key_of(i))) {
      EXPECT_EQ(got->binary, binary_of(i).binary) << i;
      continue;
    }
    ++rebuilt;
    ASSERT_TRUE(cache.store(key_of(i), binary_of(i)));
    const auto again = cache.load(key_of(i));
    ASSERT_TRUE(again.has_value()) << i;
    EXPECT_EQ(again->binary, binary_of(i).binary) << i;
  }
  detected += log.count("damaged kernel cache entry");
  long leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++leftovers;
  summary("kernel cache: %d rounds of %d processes x %d loads/stores over %d keys plus %d processes SIGKILLed "
          "mid-way (%ld kills), while %ld entries were damaged in place (truncated, a flipped byte, emptied, "
          "garbage appended): %ld hits, %ld misses (%ld stores), %ld damaged entries detected and rebuilt, wrong "
          "bytes served %ld, crashes 0; afterwards all %d keys load correctly (%d rebuilt by one store each); "
          "%ld temporary files left by the killed processes; %.1f s, seed %llu",
          kRounds, kWorkers, kOpsPerWorker, kKeys, kKilled, kills, damages, total.hits, total.misses, total.stores,
          detected, total.wrong, kKeys, rebuilt, leftovers, seconds_since(t0), static_cast<unsigned long long>(seed));
}

}  // namespace
}  // namespace amax::reliability::test
