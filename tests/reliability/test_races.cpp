// Races between the runtime's ReadOnly opens and writers, found while writing the mixed-load
// test, with the fixes in tuning_db/src/tuning_db.cpp:
//  1. A dispatcher opening the file while the first tuner creates it saw an SQLite file without
//     tables ("holds no amax-tune tables") and warned; fixed: a new database is created complete
//     under a temporary name and linked into place, so it appears whole or not at all.
//  2. A ReadOnly open that failed removed the -wal/-shm files it believed it had created, even when
//     a writer in another process had created them in the meantime and was using them: that
//     writer's commits went to an unlinked WAL and were lost (both creators of a file exited 0 and
//     the file held no tables). Fixed: the companions are removed only when no other process has
//     the -shm mapped (SQLite's own dead-man-switch lock) and the -wal is empty.
#include <sqlite3.h>

#include "reliability_common.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

int raw_exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) std::fprintf(stderr, "%s: %s\n", sql, err ? err : "?");
  sqlite3_free(err);
  return rc;
}

// A dispatcher that opens the file while the first tuners are creating it sees either no file or
// a complete database; every creator's commit is kept.
// Variant EmptyWalFile: the file already exists as an empty SQLite file in WAL mode (made by
// another SQLite client, or left by an older amax-tune), so the schema is created in place:
// readers may then be refused ("holds no amax-tune tables") while it is made, but their refusals
// must not cost the creators anything.
class CreationRaceTest : public TempDirTest, public ::testing::WithParamInterface<bool> {};

TEST_P(CreationRaceTest, ReadersNeverSeeAHalfCreatedDatabase) {
  const bool preexisting = GetParam();
  constexpr int kRounds = 25, kReaders = 3, kCreators = 2;
  const auto t0 = Clock::now();
  long opens = 0;
  int bad = 0;
  std::size_t lost = 0;
  long total_refusals = 0;
  for (int round = 0; round < kRounds; ++round) {
    const fs::path db = file("r" + std::to_string(round) + "/share/tuning.db");
    const fs::path stop = file("stop" + std::to_string(round));
    const fs::path counts = file("opens" + std::to_string(round));
    long refusals = 0;
    if (preexisting) {
      fs::create_directories(db.parent_path());
      sqlite3* raw = nullptr;
      ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
      ASSERT_EQ(raw_exec(raw, "PRAGMA journal_mode = WAL"), SQLITE_OK);
      sqlite3_close(raw);
    }
    std::vector<pid_t> pids;
    for (int i = 0; i < kReaders + kCreators; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        int rc = 0;
        try {
          if (i < kReaders) {  // a dispatcher polling for the file
            long n = 0, refused = 0;
            while (!fs::exists(stop)) {
              if (!fs::exists(db)) continue;
              try {
                const db::TuningDb t = db::TuningDb::open(db, db::OpenMode::ReadOnly);
                (void)t.winners<SingleFamily>();
                ++n;
              } catch (const db::DbError& e) {
                if (!preexisting || std::string(e.what()).find("holds no amax-tune tables") == std::string::npos)
                  throw;
                ++refused;
              }
            }
            std::ofstream(counts, std::ios::app) << n << " " << refused << "\n";
          } else {  // a tuner creating the file and committing one key
            db::TuningDb t = db::TuningDb::open(db);
            const KeyRecord r = make_key_record("NVIDIA H200", 4096 + i, 240);
            t.record<SingleFamily>(key_at(4096 + i), provenance("NVIDIA H200"), r.trials, r.winner);
          }
        } catch (const std::exception& e) {
          std::fprintf(stderr, "round %d process %d: %s\n", round, i, e.what());
          rc = 1;
        }
        ::_exit(rc);
      }
      pids.push_back(pid);
    }
    for (int i = kReaders; i < kReaders + kCreators; ++i) {
      int st = 0;
      ::waitpid(pids[i], &st, 0);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "creator " << i;
      bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    write_bytes(stop, "");
    for (int i = 0; i < kReaders; ++i) {
      int st = 0;
      ::waitpid(pids[i], &st, 0);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "reader " << i << " in round " << round;
      bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    std::ifstream in(counts);
    for (long n, r; in >> n >> r;) opens += n, refusals += r;
    total_refusals += refusals;
    try {
      const db::TuningDb t = db::TuningDb::open(db, db::OpenMode::ReadOnly);
      const std::size_t kept = t.winners<SingleFamily>().size();
      lost += kCreators - kept;
      EXPECT_EQ(kept, static_cast<std::size_t>(kCreators)) << "round " << round;
    } catch (const db::DbError& e) {
      ADD_FAILURE() << "round " << round << ": " << e.what();
      lost += kCreators;
    }
    const auto names = listing(db.parent_path());
    EXPECT_TRUE(std::all_of(names.begin(), names.end(), [](const std::string& n) {
      return n == "tuning.db" || n == "tuning.db-wal" || n == "tuning.db-shm";
    })) << "no temporary files are left: " << testing::PrintToString(names);
  }
  summary("creation race (%s): %d rounds of %d processes creating a database while %d processes poll it "
          "ReadOnly: %ld successful ReadOnly opens during creation, %ld refused as 'no amax-tune tables yet', "
          "failed processes %d, keys lost %zu; %.1f s",
          preexisting ? "empty WAL-mode SQLite file made into a database in place" : "missing file", kRounds,
          kCreators, kReaders, opens, total_refusals, bad, lost, seconds_since(t0));
  if (!preexisting) {
    EXPECT_EQ(total_refusals, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(File, CreationRaceTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "EmptyWalFile" : "Missing"; });

long raw_count(const fs::path& p, const char* sql) {
  sqlite3* db = nullptr;
  long n = -1;
  if (sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 10000);
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &q, nullptr) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
      n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
  }
  sqlite3_close(db);
  return n;
}

// An older runtime (this build) reading the database of a newer tuner (schema version 99) while
// that tuner works: every ReadOnly open is refused with FutureSchema, and the refusals never take
// the newer tuner's -wal/-shm away from under it (its commits are all kept).
class FutureWriterRaceTest : public TempDirTest {};

TEST_F(FutureWriterRaceTest, RefusedReadersNeverRemoveALiveWriterWal) {
  constexpr int kWriters = 2, kReaders = 3, kSessions = 150, kRowsPerSession = 3;
  const auto t0 = Clock::now();
  const fs::path db = file("tuning.db");
  {
    db::TuningDb t = db::TuningDb::open(db);  // WAL mode
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(raw_exec(raw, "UPDATE meta SET value = 99 WHERE key = 'schema_version';"
                            "CREATE TABLE newer_rows (writer INTEGER, i INTEGER)"), SQLITE_OK);
    sqlite3_close(raw);
  }
  const fs::path stop = file("stop");
  std::vector<pid_t> writers, readers;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    if (pid == 0) {  // the newer tuner: short sessions, each opening, committing a few rows, closing
      int rc = 0;
      for (int s = 0; s < kSessions && rc == 0; ++s) {
        sqlite3* raw = nullptr;
        if (sqlite3_open(db.c_str(), &raw) != SQLITE_OK) rc = 1;
        sqlite3_busy_timeout(raw, 20000);
        for (int r = 0; r < kRowsPerSession && rc == 0; ++r) {
          const std::string sql = "INSERT INTO newer_rows VALUES (" + std::to_string(w) + ", " +
                                  std::to_string(s * kRowsPerSession + r) + ")";
          if (raw_exec(raw, sql.c_str()) != SQLITE_OK) rc = 2;
        }
        if (sqlite3_close(raw) != SQLITE_OK) rc = 3;
      }
      ::_exit(rc);
    }
    writers.push_back(pid);
  }
  for (int r = 0; r < kReaders; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {  // this build's runtime: every open must be refused as FutureSchema
      long refused = 0;
      while (!fs::exists(stop)) {
        try {
          (void)db::TuningDb::open(db, db::OpenMode::ReadOnly);
          ::_exit(4);
        } catch (const db::DbError& e) {
          if (e.kind() != db::ErrorKind::FutureSchema) {
            std::fprintf(stderr, "reader: %s\n", e.what());
            ::_exit(5);
          }
          ++refused;
        }
      }
      std::ofstream(file("refused"), std::ios::app) << refused << "\n";
      ::_exit(0);
    }
    readers.push_back(pid);
  }
  int bad = 0;
  for (pid_t pid : writers) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  write_bytes(stop, "");
  for (pid_t pid : readers) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  EXPECT_EQ(bad, 0);
  long refused = 0;
  {
    std::ifstream in(file("refused"));
    for (long n; in >> n;) refused += n;
  }
  const long rows = raw_count(db, "SELECT count(*) FROM newer_rows");
  const long expected = static_cast<long>(kWriters) * kSessions * kRowsPerSession;
  EXPECT_EQ(rows, expected) << "rows committed by the newer tuner were lost";
  EXPECT_EQ(raw_count(db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check != 'ok'"), 0);
  summary("future-schema readers vs. a live newer writer: %d writer processes x %d sessions (open, %d "
          "commits, close) while %d reader processes were refused %ld times (FutureSchema); rows committed "
          "%ld, kept %ld, lost %ld; %.1f s",
          kWriters, kSessions, kRowsPerSession, kReaders, refused, expected, rows, expected - rows,
          seconds_since(t0));
}

}  // namespace
}  // namespace amax::reliability::test
