// Issue 7, item 4: the shipped system database in a read-only directory owned by another user
// opens read-only and serves its entries; a user database whose directory cannot be written
// (read-only HOME in a container) or whose WAL cannot work (a network filesystem) degrades to a
// mode that works instead of failing.
//
// The unprivileged readers are forked children that drop to uid 65534 (nobody, the owner of the
// system directory) or 4242 (another user) with setuid, as the tuning_db tests do; when the tests
// do not run as root they skip (permission bits do not bind root).
#include <map>
#include <set>
#include <thread>

#include "amax/dispatch.hpp"
#include "reliability_common.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

const ArchInfo kSm90 = ArchInfo::parse(kArch);
const db::Provenance kIdentity = provenance("NVIDIA H200");

void make_db(const fs::path& p, int keys, bool rollback) {
  db::TuningDb t = db::TuningDb::open(p);
  for (int i = 0; i < keys; ++i) {
    const std::uint64_t n = 1ull << (10 + 2 * i);
    const KeyRecord r = make_key_record("NVIDIA H200", n, 240);
    t.record<SingleFamily>(key_at(n), provenance("NVIDIA H200"), r.trials, r.winner);
  }
  if (rollback) t.use_rollback_journal();
}

void chown_tree(const fs::path& p, uid_t uid, gid_t gid) {
  ASSERT_EQ(::chown(p.c_str(), uid, gid), 0) << p;
  if (fs::is_directory(p))
    for (const auto& e : fs::directory_iterator(p)) chown_tree(e.path(), uid, gid);
}

constexpr uid_t kNobody = 65534;
constexpr uid_t kOther = 4242;

/// In a child running as @p uid: loads @p path as the system database like the runtime library,
/// expects @p entries entries, no warning (or, with @p others_can_write, exactly the one warning
/// that another user can change the file: issue 17), a system-database choice, and that a
/// ReadWrite open is refused. Returns the child's exit code (0 = all good, 10 = cannot drop
/// privileges).
int read_as(uid_t uid, const fs::path& path, std::size_t entries, bool others_can_write = false,
            Source which = Source::system_db) {
  return run_in_child([&]() -> int {
    if (uid != 0 && !drop_privileges(uid, uid)) return 10;
    DispatchTables t(kSm90, kIdentity);
    LogCapture quiet;
    const std::size_t kept = t.load(which, path.string());
    if (kept != entries) {
      std::fprintf(stderr, "uid %d: kept %zu of %zu entries\n", static_cast<int>(uid), kept, entries);
      return 11;
    }
    const bool warned_writable = t.warnings().size() == 1 &&
                                 t.warnings()[0].find("can be changed by users other than you") != std::string::npos &&
                                 t.warnings()[0].find("owner uid 65534") != std::string::npos;
    if (others_can_write ? !warned_writable : !t.warnings().empty()) {
      std::fprintf(stderr, "uid %d: %zu warnings: %s\n", static_cast<int>(uid), t.warnings().size(),
                   t.warnings().empty() ? "" : t.warnings()[0].c_str());
      return 12;
    }
    if (t.choose(DType::fp32, 1ull << 20).source != which) return 13;
    const db::TuningDb ro = db::TuningDb::open(path, db::OpenMode::ReadOnly);
    if (ro.winners<SingleFamily>().size() != entries) return 14;
    if (uid != 0) {
      try {
        (void)db::TuningDb::open(path, db::OpenMode::ReadWrite);
        return 15;
      } catch (const db::DbError& e) {
        if (e.kind() != db::ErrorKind::ReadOnly) {
          std::fprintf(stderr, "uid %d: ReadWrite gave %s\n", static_cast<int>(uid), e.what());
          return 16;
        }
      }
    }
    return 0;
  });
}

class ReadOnlyTest : public TempDirTest, public ::testing::WithParamInterface<bool> {};

TEST_P(ReadOnlyTest, SystemDatabaseInAnotherUsersReadOnlyDirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown the directory and to drop to other users";
  const bool wal = GetParam();  // false: as shipped (rollback journal); true: a copied WAL-mode file
  const auto t0 = Clock::now();
  const fs::path sys = file("usr/share/amax-tune");
  const fs::path p = sys / "system.db";
  make_db(p, 4, !wal);
  chown_tree(sys, kNobody, kNobody);
  fs::permissions(p, static_cast<fs::perms>(0444));
  fs::permissions(sys, static_cast<fs::perms>(0555));
  const std::string before = read_bytes(p);
  const auto names = listing(sys);
  ASSERT_EQ(names, std::vector<std::string>{"system.db"});

  constexpr int kReads = 10;
  std::map<std::string, int> ok;
  // nobody owns the file: for everyone else it is another user's file (read, with one warning).
  auto round = [&](const char* who, uid_t uid) {
    for (int i = 0; i < kReads; ++i) {
      const int rc = read_as(uid, p, 4, uid != kNobody);
      if (rc == 10) GTEST_SKIP() << "cannot drop privileges";
      EXPECT_EQ(rc, 0) << who << " read #" << i;
      ok[who] += rc == 0;
    }
  };
  round("nobody (the owner)", kNobody);
  round("uid 4242 (another user)", kOther);
  round("root", 0);  // may create -wal/-shm beside a WAL-mode file: root can write anywhere
  const auto after_root = listing(sys);
  round("nobody after root", kNobody);
  round("uid 4242 after root", kOther);
  EXPECT_EQ(read_bytes(p), before);
  if (!wal) {
    EXPECT_EQ(listing(sys), names) << "nothing is created beside a shipped (rollback-journal) file";
  }
  summary("system database (%s) in a 0555 directory owned by nobody: %d + %d loads as nobody, %d + %d as another "
          "user (uid 4242), %d as root, all served its 4 entries (no warning for its owner, one that another user can "
          "change it for the others), ReadWrite refused (ReadOnly) for "
          "the unprivileged users; file unchanged; files beside it afterwards: %s; %.1f s",
          wal ? "a copied WAL-mode file" : "rollback journal, as shipped", ok["nobody (the owner)"],
          ok["nobody after root"], ok["uid 4242 (another user)"], ok["uid 4242 after root"], ok["root"],
          testing::PrintToString(listing(sys)).c_str(), seconds_since(t0));
}

INSTANTIATE_TEST_SUITE_P(File, ReadOnlyTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "WalCopy" : "Shipped"; });

// A user database in a HOME that cannot be written: the runtime reads it (no warning needed,
// nothing to degrade); a tuner is refused at open with a clear ReadOnly error (not at its first
// commit), or, with OpenOptions::memory_fallback, keeps working in memory with one warning.
class ReadOnlyHomeTest : public TempDirTest {};

TEST_F(ReadOnlyHomeTest, RuntimeReadsAndTunerDegradesToMemory) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the home to another user";
  const auto t0 = Clock::now();
  const fs::path home = file("home/user");
  const fs::path share = home / ".local/share/amax-tune";
  int cases = 0;
  for (const bool wal : {true, false}) {
    SCOPED_TRACE(wal ? "WAL-mode user database" : "rollback-journal user database");
    fs::remove_all(file("home"));
    const fs::path p = share / "tuning.db";
    make_db(p, 5, !wal);
    chown_tree(file("home"), kOther, kOther);
    fs::permissions(share, static_cast<fs::perms>(0555));  // the file itself stays writable (0644)
    const std::string before = read_bytes(p);
    const auto names = listing(share);
    const int rc = run_in_child([&]() -> int {
      if (!drop_privileges(kOther, kOther)) return 10;
      DispatchTables t(kSm90, kIdentity);
      if (t.load(Source::user_db, p.string()) != 5 || !t.warnings().empty()) return 11;
      if (t.choose(DType::fp32, 4096).source != Source::user_db) return 12;
      try {  // the tuner's open: refused at open, naming the directory
        (void)db::TuningDb::open(p);
        return 13;
      } catch (const db::DbError& e) {
        if (e.kind() != db::ErrorKind::ReadOnly || std::string(e.what()).find("is not writable") == std::string::npos) {
          std::fprintf(stderr, "%s\n", e.what());
          return 14;
        }
      }
      LogCapture log;
      db::OpenOptions o;
      o.memory_fallback = true;
      db::TuningDb m = db::TuningDb::open(p, db::OpenMode::ReadWrite, o);
      if (!m.in_memory() || m.journal_mode() != "memory") return 15;
      if (m.finished_keys<SingleFamily>(kArch, DType::fp32, provenance("NVIDIA H200")).size() != 5) return 16;  // resumes
      const KeyRecord r = make_key_record("NVIDIA H200", 77777, 240);
      m.record<SingleFamily>(key_at(77777), provenance("NVIDIA H200"), r.trials, r.winner);
      if (m.winners<SingleFamily>().size() != 6 || m.integrity_check() != std::vector<std::string>{"ok"}) return 17;
      if (log.count("warning: ") != 1 || log.count(p.string()) < 1 || log.count("in memory only") != 1) {
        std::fprintf(stderr, "log: %s\n", log.text().c_str());
        return 18;
      }
      return 0;
    });
    if (rc == 10) GTEST_SKIP() << "cannot drop privileges";
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(read_bytes(p), before);
    EXPECT_EQ(listing(share), names);
    ++cases;
  }

  // A damaged user database in a read-only HOME is reported as damaged (not as read-only), with
  // or without memory_fallback: damage is never papered over with an empty in-memory database.
  {
    fs::remove_all(file("home"));
    fs::create_directories(share);
    const fs::path p = share / "tuning.db";
    std::string garbage(64 * 1024, '\0');
    std::mt19937_64 g(7);
    for (char& c : garbage) c = static_cast<char>(g());
    write_bytes(p, garbage);
    chown_tree(file("home"), kOther, kOther);
    fs::permissions(share, static_cast<fs::perms>(0555));
    const int rc = run_in_child([&]() -> int {
      if (!drop_privileges(kOther, kOther)) return 10;
      for (const bool fallback : {false, true}) {
        db::OpenOptions o;
        o.memory_fallback = fallback;
        try {
          (void)db::TuningDb::open(p, db::OpenMode::ReadWrite, o);
          return 11;
        } catch (const db::DbError& e) {
          if (e.kind() != db::ErrorKind::Corrupt) {
            std::fprintf(stderr, "%s\n", e.what());
            return 12;
          }
        }
      }
      return 0;
    });
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(read_bytes(p), garbage);
    ++cases;
  }

  // HOME under a regular file (the directory cannot even be created): the runtime sees no user
  // database (no warning); the tuner gets Io naming the obstacle, or memory with one warning.
  const fs::path blocker = file("blocker");
  write_bytes(blocker, "a regular file where a directory should be\n");
  const fs::path p = blocker / "home/.local/share/amax-tune/tuning.db";
  {
    DispatchTables t(kSm90, kIdentity);
    EXPECT_EQ(t.load(Source::user_db, p.string()), 0u);
    EXPECT_TRUE(t.warnings().empty());
  }
  try {
    (void)db::TuningDb::open(p);
    ADD_FAILURE() << "opened a database under a regular file";
  } catch (const db::DbError& e) {
    EXPECT_NE(std::string(e.what()).find(blocker.string()), std::string::npos) << e.what();
  }
  {
    LogCapture log;
    db::OpenOptions o;
    o.memory_fallback = true;
    db::TuningDb m = db::TuningDb::open(p, db::OpenMode::ReadWrite, o);
    EXPECT_TRUE(m.in_memory());
    const KeyRecord r = make_key_record("NVIDIA H200", 1024, 240);
    m.record<SingleFamily>(key_at(1024), provenance("NVIDIA H200"), r.trials, r.winner);
    EXPECT_EQ(m.winners<SingleFamily>().size(), 1u);
    EXPECT_EQ(log.count("warning: "), 1) << log.text();
    ++cases;
  }
  summary("read-only HOME: %d cases (WAL-mode and rollback-journal user database in a 0555 directory, opened by "
          "its unprivileged owner; a damaged one there; HOME under a regular file): the runtime served the user "
          "database with no warning; the tuner's ReadWrite open was refused at open (ReadOnly/Io naming the "
          "directory; Corrupt for the damaged file, also with memory_fallback), and with memory_fallback it "
          "worked in memory (resumed 5 keys, recorded a new one) with exactly 1 warning; the files were "
          "unchanged; %.1f s",
          cases, seconds_since(t0));
}

// A filesystem without shared memory for WAL (network filesystems): with the unix-dotfile VFS
// (dot-file locking, no shared memory) every writer falls back to the rollback journal with one
// warning and concurrent writers still serialize correctly; the runtime (default VFS) reads the
// result.
class NoWalTest : public TempDirTest {};

TEST_F(NoWalTest, DotfileWritersFallBackToTheRollbackJournalWithOneWarningEach) {
  const auto t0 = Clock::now();
  constexpr int kWriters = 4;
  constexpr int kKeys = 15;
  const fs::path p = file("nfs/tuning.db");
  std::vector<std::unique_ptr<Child>> kids;
  for (int i = 0; i < kWriters; ++i) {
    kids.push_back(std::make_unique<Child>(
        std::vector<std::string>{worker_exe(), "write", "--db", p.string(), "--vfs", "unix-dotfile", "--first",
                                 std::to_string(1000 * (i + 1)), "--keys", std::to_string(kKeys)},
        file("err" + std::to_string(i))));
  }
  int warnings = 0;
  for (auto& k : kids) {
    EXPECT_EQ(k->finish(), 0) << k->stderr_text();
    // spdlog's default logger writes to stdout: the warning is one of the lines
    std::string out = k->stderr_text();
    for (const auto& l : k->lines()) out += l + "\n";
    EXPECT_NE(out.find("opened delete "), std::string::npos) << out;
    int n = 0;
    for (auto pos = out.find("[warning]"); pos != std::string::npos; pos = out.find("[warning]", pos + 1)) ++n;
    EXPECT_EQ(n, 1) << out;
    EXPECT_NE(out.find("WAL journal is not available"), std::string::npos) << out;
    warnings += n;
  }
  LogCapture quiet;
  db::OpenOptions o;
  o.vfs = "unix-dotfile";
  {
    const db::TuningDb t = db::TuningDb::open(p, db::OpenMode::ReadOnly, o);
    EXPECT_EQ(t.integrity_check(), std::vector<std::string>{"ok"});
    EXPECT_EQ(t.winners<SingleFamily>().size(), static_cast<std::size_t>(kWriters * kKeys));
  }
  DispatchTables d(kSm90, kIdentity);
  EXPECT_EQ(d.load(Source::user_db, p.string()), static_cast<std::size_t>(kWriters * kKeys));
  EXPECT_TRUE(d.warnings().empty());
  EXPECT_EQ(listing(p.parent_path()), std::vector<std::string>{"tuning.db"});
  summary("no WAL (unix-dotfile VFS, as on a network filesystem): %d writer processes x %d keys at once fell back "
          "to the rollback journal with %d warnings in all (1 each), all %d keys stored, integrity_check ok, the "
          "runtime read them with no warning; %.1f s",
          kWriters, kKeys, warnings, kWriters * kKeys, seconds_since(t0));
}

// The known limit of dot-file locking: a writer killed while holding the lock leaves the lock
// directory "<db>.lock" behind, and every later open waits lock_timeout and fails with Locked.
// The error says what to remove; once it is removed, the database opens, the hot journal of the
// killed transaction is rolled back and every committed key is there.
TEST_F(NoWalTest, DotfileLockLeftByAKilledWriterIsExplainedAndRecoverable) {
  const auto t0 = Clock::now();
  const fs::path p = file("nfs/tuning.db");
  const fs::path lock = fs::path(p.string() + ".lock");
  std::mt19937_64 rng(scenario_seed());
  std::set<std::uint64_t> committed;
  {  // a first run that finishes: 20 keys
    Child c({worker_exe(), "write", "--db", p.string(), "--vfs", "unix-dotfile", "--first", "100000", "--keys", "20"},
            file("err"));
    ASSERT_EQ(c.finish(), 0) << c.stderr_text();
    for (const auto& l : c.lines())
      if (l.rfind("committed ", 0) == 0) committed.insert(std::stoull(l.substr(10)));
  }
  int attempts = 0;
  while (!fs::exists(lock) && attempts < 40) {
    ++attempts;
    Child c({worker_exe(), "write", "--db", p.string(), "--vfs", "unix-dotfile", "--first", "1", "--keys", "1000"},
            file("err"));
    std::this_thread::sleep_for(std::chrono::microseconds(30000 + rng() % 30000));
    c.kill(SIGKILL);
    c.finish();
    for (const auto& l : c.lines())
      if (l.rfind("committed ", 0) == 0) committed.insert(std::stoull(l.substr(10)));
  }
  ASSERT_TRUE(fs::exists(lock)) << "no kill landed while the lock was held in " << attempts << " attempts";
  LogCapture quiet;  // the fallback warning of this process's own opens
  db::OpenOptions o;
  o.vfs = "unix-dotfile";
  o.lock_timeout = std::chrono::milliseconds(300);
  try {
    (void)db::TuningDb::open(p, db::OpenMode::ReadWrite, o);
    ADD_FAILURE() << "opened despite the stale lock";
  } catch (const db::DbError& e) {
    EXPECT_EQ(e.kind(), db::ErrorKind::Locked) << e.what();
    EXPECT_NE(std::string(e.what()).find(lock.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("remove that directory"), std::string::npos) << e.what();
  }
  fs::remove_all(lock);
  const db::TuningDb t = db::TuningDb::open(p, db::OpenMode::ReadWrite, o);
  EXPECT_EQ(t.integrity_check(), std::vector<std::string>{"ok"});
  std::set<std::uint64_t> present;
  for (const auto& w : t.winners<SingleFamily>()) present.insert(w.key.n);
  for (std::uint64_t n : committed) EXPECT_TRUE(present.count(n)) << n;
  summary("unix-dotfile lock left by a SIGKILLed writer (after %d kill attempts): the next open failed with Locked "
          "after its 300 ms bound, naming the lock directory to remove; after removing it the database opened, "
          "integrity_check ok, all %zu committed keys present; %.1f s",
          attempts, committed.size(), seconds_since(t0));
}

}  // namespace
}  // namespace amax::reliability::test
