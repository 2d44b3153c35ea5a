// Many writers at once: processes (fork) and threads; lock timeouts.
#include "raw_sqlite.hpp"
#include "test_util.hpp"

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace amax::db::test {
namespace {

class ConcurrencyTest : public TempDirTest {};

/// Starts @p n children that block until release() and then run body(i); wait() returns the
/// exit codes.
class ChildGroup {
 public:
  template <class F>
  ChildGroup(int n, F body) {
    if (::pipe(gate_) != 0) throw std::runtime_error("pipe");
    for (int i = 0; i < n; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(gate_[1]);
        char c;
        while (::read(gate_[0], &c, 1) > 0) {
        }  // EOF when the parent closes the write end: everybody starts together
        int rc = 99;
        try {
          rc = body(i);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "child %d: %s\n", i, e.what());
        }
        std::fflush(stderr);
        ::_exit(rc);
      }
      pids_.push_back(pid);
    }
    ::close(gate_[0]);
  }
  void release() { ::close(gate_[1]); }
  std::vector<int> wait() {
    std::vector<int> rcs;
    for (pid_t pid : pids_) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      rcs.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    return rcs;
  }

 private:
  int gate_[2]{};
  std::vector<pid_t> pids_;
};

constexpr int kProcesses = 16;
constexpr int kKeysPerProcess = 8;
constexpr int kTrialsPerKey = 12;

class WritersTest : public TempDirTest, public ::testing::WithParamInterface<bool> {};

TEST_P(WritersTest, SixteenProcessesWriteDistinctKeysToOneFreshFile) {
  const fs::path p = file("shared/tuning.db");  // neither the directory nor the file exists yet
  OpenOptions opts;
  opts.wal = GetParam();
  ChildGroup group(kProcesses, [&](int i) -> int {
    TuningDb db = TuningDb::open(p, OpenMode::ReadWrite, opts);
    if (db.journal_mode() != (opts.wal ? "wal" : "delete")) return 3;
    for (int k = 0; k < kKeysPerProcess; ++k) {
      std::vector<Trial> trials;
      for (int t = 0; t < kTrialsPerKey; ++t) trials.push_back(ok_trial("v" + std::to_string(t), 1.0 + t));
      db.record<SingleFamily>(key(static_cast<std::uint64_t>(i * 1000 + k + 1)), h200(), trials, Winner{"v0", 1.0, 1.0});
    }
    return 0;
  });
  group.release();
  const auto rcs = group.wait();
  EXPECT_EQ(rcs, std::vector<int>(kProcesses, 0));

  const TuningDb db = TuningDb::open(p, OpenMode::ReadWrite, opts);
  EXPECT_EQ(db.integrity_check(), std::vector<std::string>{"ok"});
  EXPECT_EQ(db.schema_version(), TuningDb::kSchemaVersion);
  const auto ws = db.winners<SingleFamily>();
  ASSERT_EQ(ws.size(), static_cast<std::size_t>(kProcesses * kKeysPerProcess));
  std::set<std::uint64_t> ns;
  for (const auto& w : ws) ns.insert(w.key.n);
  for (int i = 0; i < kProcesses; ++i) {
    for (int k = 0; k < kKeysPerProcess; ++k) {
      EXPECT_TRUE(ns.count(static_cast<std::uint64_t>(i * 1000 + k + 1))) << i << "/" << k;
    }
  }
  EXPECT_EQ(db.all_trials<SingleFamily>().size(), static_cast<std::size_t>(kProcesses * kKeysPerProcess * kTrialsPerKey));
  EXPECT_EQ(raw_query(p, "SELECT count(*) FROM meta WHERE key = 'schema_version'"), std::vector<std::string>{"1"});
}

INSTANTIATE_TEST_SUITE_P(Journal, WritersTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Wal" : "Rollback"; });

TEST_F(ConcurrencyTest, SixteenProcessesOpenASchema3FileAtOnceAndItMigratesOnce) {
  const fs::path p = file("v3.db");
  fs::copy_file(fs::path(AMAX_DB_TEST_DATA) / "schema_v3.db", p);
  ChildGroup group(kProcesses, [&](int i) -> int {
    TuningDb db = TuningDb::open(p);
    if (db.schema_version() != TuningDb::kSchemaVersion) return 3;
    if (db.winners<SingleFamily>().size() < 11u) return 4;  // the migrated rows are all there
    record_simple(db, key(static_cast<std::uint64_t>(i + 1)), h200(), "x", 1.0);
    record_group_simple(db, gkey(std::uint64_t{1} << i, std::uint64_t{1} << (i + 10), 1024), h200(), "m", 1.0);
    return 0;
  });
  group.release();
  EXPECT_EQ(group.wait(), std::vector<int>(kProcesses, 0));
  const TuningDb db = TuningDb::open(p);
  EXPECT_EQ(db.integrity_check(), std::vector<std::string>{"ok"});
  EXPECT_EQ(db.winners<SingleFamily>().size(), 11u + kProcesses);
  EXPECT_EQ(db.winners<MultiFamily>().size(), static_cast<std::size_t>(kProcesses));
  EXPECT_EQ(raw_query(p, "SELECT count(*) FROM provenance"), std::vector<std::string>{"10"});  // 9 migrated + h200()
}

TEST_F(ConcurrencyTest, ConcurrentReTunesOfOneKeyLeaveOnlyTheProvenanceInUse) {
  const fs::path p = file("retune.db");
  { (void)TuningDb::open(p); }
  ChildGroup group(8, [&](int i) -> int {
    TuningDb db = TuningDb::open(p);
    for (int r = 0; r < 10; ++r) {
      Provenance prov = h200();
      prov.timestamp = "2026-12-0" + std::to_string(1 + r % 9) + "T00:00:" + std::to_string(10 + i) + "Z";
      record_simple(db, key(4096), prov, "x" + std::to_string(i), 1.0 + i);
      record_group_simple(db, gkey(4096, 128u << 20, 32u << 10), prov, "m" + std::to_string(i), 1.0 + i);
    }
    return 0;
  });
  group.release();
  EXPECT_EQ(group.wait(), std::vector<int>(8, 0));
  const TuningDb db = TuningDb::open(p);
  ASSERT_EQ(db.winners<SingleFamily>().size(), 1u);
  ASSERT_EQ(db.winners<MultiFamily>().size(), 1u);
  EXPECT_EQ(db.all_trials<SingleFamily>().size(), 1u);
  EXPECT_EQ(db.all_trials<MultiFamily>().size(), 1u);
  // Every provenance row is referenced: the last single-key writer's and the last group writer's.
  const std::size_t used = db.winners<SingleFamily>()[0].provenance == db.winners<MultiFamily>()[0].provenance ? 1 : 2;
  EXPECT_EQ(raw_query(p, "SELECT count(*) FROM provenance"), std::vector<std::string>{std::to_string(used)});
}

TEST_F(ConcurrencyTest, ReaderProcessesDuringWrites) {
  const fs::path p = file("rw.db");
  { record_simple(*std::make_unique<TuningDb>(TuningDb::open(p)), key(1), h200(), "seed", 1.0); }
  ChildGroup group(12, [&](int i) -> int {
    if (i < 8) {  // writers
      TuningDb db = TuningDb::open(p);
      for (int k = 0; k < 10; ++k) record_simple(db, key(static_cast<std::uint64_t>(100 * (i + 1) + k)), h200(), "w", 1.0);
      return 0;
    }
    const TuningDb db = TuningDb::open(p, OpenMode::ReadOnly);  // readers
    std::size_t last = 0;
    for (int r = 0; r < 50; ++r) {
      const std::size_t now = db.winners<SingleFamily>().size();
      if (now < last || now < 1) return 4;  // committed rows never disappear
      last = now;
      if (!db.lookup_nearest<SingleFamily>("sm_90", DType::fp32, 1)) return 5;
    }
    return 0;
  });
  group.release();
  EXPECT_EQ(group.wait(), std::vector<int>(12, 0));
  EXPECT_EQ(TuningDb::open(p).winners<SingleFamily>().size(), 81u);
}

TEST_F(ConcurrencyTest, SixteenProcessesCreateTheSameNestedDirectory) {
  const fs::path nested = file("a/b/c/d/e/f/g");
  ChildGroup group(kProcesses, [&](int i) -> int {
    TuningDb db = TuningDb::open(nested / ("db" + std::to_string(i) + ".sqlite"));
    record_simple(db, key(1), h200(), "x", 1.0);
    return 0;
  });
  group.release();
  EXPECT_EQ(group.wait(), std::vector<int>(kProcesses, 0));
  ASSERT_TRUE(fs::is_directory(nested));
  EXPECT_EQ(listing(nested).size(), static_cast<std::size_t>(kProcesses));
}

TEST_F(ConcurrencyTest, ThreadsWithSharedAndSeparateConnections) {
  const fs::path p = file("threads.db");
  TuningDb shared = TuningDb::open(p);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      try {
        std::optional<TuningDb> own;
        if (t % 2 == 1) own.emplace(TuningDb::open(p));
        TuningDb& db = own ? *own : shared;
        for (int k = 0; k < 10; ++k) {
          record_simple(db, key(static_cast<std::uint64_t>(t * 100 + k + 1)), h200(), "x", 1.0);
          (void)db.lookup_nearest<SingleFamily>("sm_90", DType::fp32, 1000);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "thread %d: %s\n", t, e.what());
        ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(shared.winners<SingleFamily>().size(), 80u);
  EXPECT_EQ(shared.integrity_check(), std::vector<std::string>{"ok"});
}

TEST_F(ConcurrencyTest, LockHeldLongerThanTheBoundGivesLocked) {
  const fs::path p = file("locked.db");
  OpenOptions opts;
  opts.lock_timeout = std::chrono::milliseconds(300);
  TuningDb db = TuningDb::open(p, OpenMode::ReadWrite, opts);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = expect_db_error(ErrorKind::Locked, [&] { record_simple(db, key(1), h200(), "x", 1.0); });
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_NE(msg.find("300 ms"), std::string::npos) << msg;
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::seconds(5));
  // Readers are not blocked by the writer in WAL mode.
  EXPECT_TRUE(db.winners<SingleFamily>().empty());
  ASSERT_EQ(sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  record_simple(db, key(1), h200(), "x", 1.0);
  EXPECT_EQ(db.winners<SingleFamily>().size(), 1u);
}

TEST_F(ConcurrencyTest, WriterWaitsForABriefLockInsteadOfFailing) {
  const fs::path p = file("brief.db");
  TuningDb db = TuningDb::open(p);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // longer than one busy-timeout slice
    sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
  });
  record_simple(db, key(1), h200(), "x", 1.0);
  releaser.join();
  sqlite3_close(raw);
  EXPECT_EQ(db.winners<SingleFamily>().size(), 1u);
}

}  // namespace
}  // namespace amax::db::test
