// Issue 7, item 2: a tuner killed with SIGKILL at random points keeps every key it had committed;
// the database opens cleanly afterwards and the run resumes.
//
// Each round starts amax-reliability-worker (the tuner's commit loop: one record_key of 240
// trials per key) on one database file, in half of the rounds together with three other writer
// processes (other devices, the same keys), and SIGKILLs every one of them at an independent
// random point: a third within 20 ms of their start (exec, open, creating the file and its schema
// in round 0, the resume scan), the others 0-3 ms after their k-th commit (k random in 1..12),
// i.e. inside or between the following transactions (a key takes about 2 ms to commit). After
// each round the test checks, with its own connection: the file opens ReadWrite, PRAGMA
// integrity_check is "ok", every key a writer printed as committed is there with all its trials
// and the right winner, no key is partial (trials without winner, or fewer trials), and the next
// writer's resume count is exact. At the end every writer runs to completion (resuming) and the
// file holds every key of every device.
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "reliability_common.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

struct Writer {
  std::string device;
  std::uint64_t trials;
  std::uint64_t keys;  // n = kFirst .. kFirst + keys - 1
};

constexpr std::uint64_t kFirst = 1024;

struct Journal {
  const char* name;
  bool wal;
  int rounds;
};

void PrintTo(const Journal& x, std::ostream* os) { *os << x.name; }

class KillTest : public TempDirTest, public ::testing::WithParamInterface<Journal> {};

/// (device, n) -> number of trials, from the file itself (raw SQLite, independent of TuningDb).
std::map<std::pair<std::string, std::uint64_t>, long> trial_counts(const fs::path& p) {
  std::map<std::pair<std::string, std::uint64_t>, long> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "raw open " << p << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return out;
  }
  sqlite3_stmt* q = nullptr;
  // Schema 4: the provenance is a row of its own, referenced by provenance_id.
  if (sqlite3_prepare_v2(db,
                         "SELECT p.device_name, t.n, count(*) FROM trials AS t JOIN provenance AS p "
                         "ON p.id = t.provenance_id GROUP BY 1, 2",
                         -1, &q, nullptr) == SQLITE_OK) {
    while (sqlite3_step(q) == SQLITE_ROW)
      out[{reinterpret_cast<const char*>(sqlite3_column_text(q, 0)),
           static_cast<std::uint64_t>(sqlite3_column_int64(q, 1))}] = sqlite3_column_int64(q, 2);
  } else {
    ADD_FAILURE() << "raw query: " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return out;
}

std::vector<std::string> writer_argv(const fs::path& db, const Writer& w, bool wal) {
  std::vector<std::string> a{worker_exe(), "write",  "--db",     db.string(), "--device", w.device, "--first",
                             std::to_string(kFirst), "--keys", std::to_string(w.keys), "--trials",
                             std::to_string(w.trials)};
  if (!wal) a.emplace_back("--no-wal");
  return a;
}

struct Parsed {
  std::set<std::uint64_t> committed;
  long finished_at_open = -1;  // "opened ... finished=F"
  bool done = false;
  std::uint64_t recorded = 0, skipped = 0;
};

Parsed parse_output(const std::vector<std::string>& lines) {
  Parsed p;
  for (const auto& l : lines) {
    if (l.rfind("committed ", 0) == 0) p.committed.insert(std::stoull(l.substr(10)));
    if (l.rfind("opened ", 0) == 0) p.finished_at_open = std::stol(l.substr(l.find("finished=") + 9));
    if (l.rfind("done ", 0) == 0) {
      p.done = true;
      std::sscanf(l.c_str(), "done recorded=%lu skipped=%lu", &p.recorded, &p.skipped);
    }
  }
  return p;
}

TEST_P(KillTest, KilledWritersLoseNothingTheyCommittedAndResume) {
  const Journal j = GetParam();
  const fs::path db = file("home/.local/share/amax-tune/tuning.db");  // created by the first writer
  // The first writer runs in every round, the others in every second one.
  const std::vector<Writer> writers{{"NVIDIA H200", 240, 300}, {"NVIDIA H100 80GB HBM3", 240, 120},
                                    {"NVIDIA H200 NVL", 240, 120}, {"NVIDIA GH200", 240, 120}};
  std::size_t all_keys = 0;
  for (const auto& w : writers) all_keys += w.keys;
  const std::uint64_t seed = scenario_seed();
  std::mt19937_64 rng(seed);
  const auto t0 = Clock::now();

  std::map<std::string, std::set<std::uint64_t>> reported;  // printed "committed" by any run
  std::map<std::string, std::set<std::uint64_t>> present;   // in the file after the last round
  int kills = 0, finished_before_kill = 0, crowded_rounds = 0, hot_journals = 0;
  int killed_opening = 0, killed_before_first = 0, killed_in_loop = 0, killed_on_cap = 0;
  std::size_t committed_in_rounds = 0;
  std::size_t lost = 0, partial = 0;

  auto verify = [&](const std::string& when) {
    SCOPED_TRACE(when);
    std::error_code ec;
    if (!fs::exists(db, ec)) return;  // killed before it created the file
    {
      db::OpenOptions o;
      o.wal = j.wal;
      db::TuningDb t = db::TuningDb::open(db, db::OpenMode::ReadWrite, o);  // as a restarted tuner
      ASSERT_EQ(t.integrity_check(), std::vector<std::string>{"ok"});
      for (auto& [dev, keys] : present) keys.clear();
      for (const auto& w : t.winners<SingleFamily>()) {
        const auto it = std::find_if(writers.begin(), writers.end(), [&](const Writer& x) {
          return x.device == w.provenance.device_name;
        });
        ASSERT_NE(it, writers.end()) << w.provenance.device_name;
        const KeyRecord expect = make_key_record(it->device, w.key.n, it->trials);
        EXPECT_EQ(w.winner, expect.winner) << it->device << " n=" << w.key.n;
        present[it->device].insert(w.key.n);
      }
    }
    const auto counts = trial_counts(db);
    for (const auto& [k, c] : counts) {
      const auto& [dev, n] = k;
      const auto it = std::find_if(writers.begin(), writers.end(), [&](const Writer& x) { return x.device == dev; });
      const bool ok = it != writers.end() && c == static_cast<long>(it->trials) && present[dev].count(n);
      if (!ok) ++partial;
      EXPECT_TRUE(ok) << "partial key " << dev << " n=" << n << ": " << c << " trials";
    }
    for (const auto& w : writers) {
      for (std::uint64_t n : present[w.device])
        if (!counts.count({w.device, n})) ++partial, ADD_FAILURE() << "winner without trials " << w.device << n;
      for (std::uint64_t n : reported[w.device]) {
        if (!present[w.device].count(n)) {
          ++lost;
          ADD_FAILURE() << w.device << " reported n=" << n << " committed, but it is not in the database";
        }
      }
    }
  };

  for (int round = 0; round < j.rounds && !HasFailure(); ++round) {
    const bool crowded = round % 2 == 1;  // three more writer processes on the same file
    crowded_rounds += crowded;
    std::vector<std::unique_ptr<Child>> kids;
    // When to kill each writer, drawn independently: a third at a random time within 20 ms of its
    // start (exec, open, creating the file and its schema, the resume scan); the others once it
    // has committed a random number (1-12) of keys, after a further random 0-3 ms, so that the
    // kill lands inside or between the following transactions whatever the machine's speed.
    struct Plan {
      bool early;
      Clock::duration delay;
      std::size_t after_commits;
      Clock::time_point due{};
      bool killed = false;
    };
    std::vector<Plan> plan;
    const std::size_t count = crowded ? writers.size() : 1;
    const auto start = Clock::now();
    for (std::size_t w = 0; w < count; ++w) {
      kids.push_back(std::make_unique<Child>(writer_argv(db, writers[w], j.wal),
                                             file("stderr-" + std::to_string(round) + "-" + std::to_string(w))));
      const bool early = std::uniform_int_distribution<int>(0, 2)(rng) == 0;
      plan.push_back(Plan{early,
                          std::chrono::microseconds(early ? std::uniform_int_distribution<int>(0, 20000)(rng)
                                                          : std::uniform_int_distribution<int>(0, 3000)(rng)),
                          std::uniform_int_distribution<std::size_t>(1, 12)(rng)});
      if (early) plan.back().due = start + plan.back().delay;
    }
    for (std::size_t left = count; left > 0;) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      const auto now = Clock::now();
      for (std::size_t w = 0; w < count; ++w) {
        Plan& pl = plan[w];
        if (pl.killed) continue;
        if (!pl.early && pl.due == Clock::time_point{}) {
          kids[w]->drain();
          std::size_t commits = 0;
          for (const auto& l : kids[w]->lines()) commits += l.rfind("committed ", 0) == 0;
          const bool over = !kids[w]->lines().empty() && kids[w]->lines().back().rfind("done ", 0) == 0;
          if (commits >= pl.after_commits || over) pl.due = now + pl.delay;
        }
        // A writer that waits long for the lock (the rollback journal with four writers) is
        // killed after 1.5 s wherever it is.
        const bool capped = now - start > std::chrono::milliseconds(1500);
        if ((pl.due != Clock::time_point{} && now >= pl.due) || capped) {
          kids[w]->kill(SIGKILL);
          pl.killed = true;
          ++kills;
          killed_on_cap += capped && !(pl.due != Clock::time_point{} && now >= pl.due);
          --left;
        }
      }
    }
    for (std::size_t w = 0; w < count; ++w) {
      const int rc = kids[w]->finish();
      const std::string err = kids[w]->stderr_text();
      const Parsed p = parse_output(kids[w]->lines());
      if (rc == 0) ++finished_before_kill;
      EXPECT_TRUE(rc == 128 + SIGKILL || rc == 0) << writers[w].device << " exited " << rc << ": " << err;
      EXPECT_EQ(err, "") << writers[w].device;
      if (p.finished_at_open >= 0) {
        EXPECT_EQ(p.finished_at_open, static_cast<long>(present[writers[w].device].size()))
            << "resume count of " << writers[w].device << " in round " << round;
      }
      reported[writers[w].device].insert(p.committed.begin(), p.committed.end());
      committed_in_rounds += p.committed.size();
      if (rc != 0) {
        if (p.finished_at_open < 0) ++killed_opening;
        else if (p.committed.empty()) ++killed_before_first;
        else ++killed_in_loop;
      }
      if (std::getenv("AMAX_RELIABILITY_VERBOSE"))
        std::printf("round %d writer %zu: %s, rc %d, %zu lines, %zu committed\n", round, w,
                    plan[w].early ? "killed early" : "killed after commits", rc, kids[w]->lines().size(),
                    p.committed.size());
    }
    if (!j.wal && fs::exists(fs::path(db.string() + "-journal")) && fs::file_size(db.string() + "-journal") > 0)
      ++hot_journals;  // a writer died inside a transaction; the next opener rolls it back
    verify("after round " + std::to_string(round));
  }

  // Resume: every writer runs to completion, skipping exactly the keys it had finished.
  std::size_t resumed_keys = 0;
  for (const auto& w : writers) {
    const std::size_t before = present[w.device].size();
    Child c(writer_argv(db, w, j.wal), file("stderr-final-" + w.device));
    const int rc = c.finish();
    ASSERT_EQ(rc, 0) << c.stderr_text();
    const Parsed p = parse_output(c.lines());
    EXPECT_TRUE(p.done);
    EXPECT_EQ(p.finished_at_open, static_cast<long>(before));
    EXPECT_EQ(p.skipped, before);
    EXPECT_EQ(p.recorded, w.keys - before);
    resumed_keys += before;
    reported[w.device].insert(p.committed.begin(), p.committed.end());
  }
  verify("after the resumed runs");
  std::size_t total = 0;
  for (const auto& w : writers) {
    EXPECT_EQ(present[w.device].size(), w.keys) << w.device;
    total += present[w.device].size();
  }
  std::size_t committed = 0;
  for (const auto& [d, s] : reported) committed += s.size();
  summary("SIGKILL, %s: %d rounds (%d with 4 writer processes on the file), %d kills at random times "
          "(%d while starting/opening, %d after opening before the first commit, %d inside the commit loop, %d "
          "after the writer had finished, %d on the 1.5 s cap)%s; %zu keys reported committed before a kill (240 trials each), lost "
          "%zu, partial keys %zu; integrity_check ok after every round; the resumed runs skipped exactly the %zu "
          "finished keys and completed %zu/%zu keys (%zu reported in all); %.1f s, seed %llu",
          j.name, j.rounds, crowded_rounds, kills, killed_opening, killed_before_first, killed_in_loop,
          finished_before_kill, killed_on_cap,
          j.wal ? "" : (", " + std::to_string(hot_journals) + " rounds left a hot journal").c_str(),
          committed_in_rounds, lost, partial, resumed_keys, total, all_keys, committed,
          seconds_since(t0), static_cast<unsigned long long>(seed));
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(partial, 0u);
}

INSTANTIATE_TEST_SUITE_P(Journal, KillTest,
                         ::testing::Values(Journal{"WAL", true, 20}, Journal{"rollback-journal", false, 12}),
                         [](const ::testing::TestParamInfo<Journal>& i) { return i.param.wal ? "Wal" : "Rollback"; });

}  // namespace
}  // namespace amax::reliability::test
