// Issue 7, item 1: many processes at once on one database file, tuners (writers) and
// dispatchers (readers, as the runtime library loads a database) together, starting while the
// database's directory does not exist yet: all finish without an error, SQLITE_BUSY never
// surfaces (it is retried with a bounded wait), PRAGMA integrity_check passes afterwards and every
// key is there.
//
// Writers: amax-reliability-worker write (record_key of 240 trials per key, 20 keys each, their own
// key range). Readers: amax-reliability-worker read (DispatchTables::load of the file as the user
// database + choose(), then a ReadOnly TuningDb with winners() and lookup_nearest(), in a loop
// until every writer has finished); a reader fails on any warning, any DbError (Locked included),
// a choice that does not validate, or a winner count that goes down.
#include <sqlite3.h>

#include <set>
#include <thread>

#include "reliability_common.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

struct Load {
  const char* name;
  bool wal;
  int rounds;
  int writers;
  int readers;
};

void PrintTo(const Load& x, std::ostream* os) { *os << x.name; }

class MixedLoadTest : public TempDirTest, public ::testing::WithParamInterface<Load> {};

constexpr std::uint64_t kKeysPerWriter = 20;

TEST_P(MixedLoadTest, WritersAndReadersOnOneFileFinishWithoutErrors) {
  const Load L = GetParam();
  const auto t0 = Clock::now();
  std::size_t reads = 0, loads_with_entries = 0, keys = 0, failures = 0;
  for (int round = 0; round < L.rounds && !HasFailure(); ++round) {
    const fs::path db = file("r" + std::to_string(round) + "/home/.local/share/amax-tune/tuning.db");
    const fs::path stop = file("stop-" + std::to_string(round));
    std::vector<std::unique_ptr<Child>> writers, readers;
    // Readers first: they start before the directory and the file exist.
    for (int i = 0; i < L.readers; ++i) {
      readers.push_back(std::make_unique<Child>(
          std::vector<std::string>{worker_exe(), "read", "--db", db.string(), "--stop-file", stop.string(),
                                   "--min-iterations", "5", "--pause-us", "1000"},
          file("reader-" + std::to_string(round) + "-" + std::to_string(i))));
    }
    for (int i = 0; i < L.writers; ++i) {
      std::vector<std::string> a{worker_exe(), "write", "--db", db.string(), "--device", "NVIDIA H200",
                                 "--first", std::to_string(1000 * (i + 1)), "--keys", std::to_string(kKeysPerWriter)};
      if (!L.wal) a.emplace_back("--no-wal");
      writers.push_back(std::make_unique<Child>(a, file("writer-" + std::to_string(round) + "-" + std::to_string(i))));
    }
    for (auto& w : writers) {
      const int rc = w->finish();
      const std::string err = w->stderr_text();
      failures += rc != 0 || !err.empty();
      EXPECT_EQ(rc, 0) << "writer: " << err;
      EXPECT_EQ(err, "");
      EXPECT_EQ(w->lines().back(), "done recorded=" + std::to_string(kKeysPerWriter) + " skipped=0");
    }
    write_bytes(stop, "");
    for (auto& r : readers) {
      const int rc = r->finish();
      const std::string err = r->stderr_text();
      failures += rc != 0 || !err.empty();
      EXPECT_EQ(rc, 0) << "reader: " << err;
      EXPECT_EQ(err, "");
      ASSERT_FALSE(r->lines().empty());
      unsigned long n = 0, w = 0, k = 0;
      ASSERT_EQ(std::sscanf(r->lines().back().c_str(), "reads %lu winners=%lu loads_with_entries=%lu", &n, &w, &k), 3)
          << r->lines().back();
      reads += n;
      loads_with_entries += k;
    }
    db::OpenOptions o;
    o.wal = L.wal;
    const db::TuningDb t = db::TuningDb::open(db, db::OpenMode::ReadWrite, o);
    EXPECT_EQ(t.journal_mode(), L.wal ? "wal" : "delete");
    EXPECT_EQ(t.integrity_check(), std::vector<std::string>{"ok"});
    const auto ws = t.winners<SingleFamily>();
    EXPECT_EQ(ws.size(), L.writers * kKeysPerWriter);
    keys += ws.size();
    EXPECT_EQ(t.all_trials<SingleFamily>().size(), L.writers * kKeysPerWriter * 240);
  }
  summary("mixed load, %s: %d rounds of %d processes started together on a missing directory (%d tuner "
          "processes x %llu keys of 240 trials, %d dispatcher processes reading in a loop until the tuners "
          "finished): %zu keys written, %zu dispatcher reads (%zu saw entries), errors %zu (SQLITE_BUSY "
          "surfaced 0 times), integrity_check ok; %.1f s",
          L.name, L.rounds, L.writers + L.readers, L.writers, static_cast<unsigned long long>(kKeysPerWriter),
          L.readers, keys, reads, loads_with_entries, failures, seconds_since(t0));
}

INSTANTIATE_TEST_SUITE_P(Journal, MixedLoadTest,
                         ::testing::Values(Load{"WAL", true, 3, 8, 10}, Load{"rollback journal", false, 2, 8, 10}),
                         [](const ::testing::TestParamInfo<Load>& i) { return i.param.wal ? "Wal" : "Rollback"; });

}  // namespace
}  // namespace amax::reliability::test
