// amax-reliability-worker: the processes the reliability tests start, kill and restart.
//
//   write --db PATH --device NAME --first N --keys K [--trials T] [--no-wal] [--vfs NAME]
//         [--hash H] [--sleep-us U]
//     Behaves like the tuner's commit loop (tuner/src/tuner.cpp): opens PATH ReadWrite, skips the
//     keys that already have a winner for its provenance identity (finished_keys / has_winner,
//     i.e. a resumed run), then records the keys n = N .. N+K-1 one by one with record_key (T
//     trials each, 240 by default like a pruned-space key on the H200, one transaction per key).
//     Protocol on stdout, each line written with one write(2) right after the call returned:
//       "opened <journal_mode> finished=<keys already done>"
//       "committed <n>"                  (record_key(n) returned: the key is durable)
//       "done recorded=<r> skipped=<s>"
//     Any DbError: "error <kind>: <message>" on stderr, exit 2.
//
//   read --db PATH --iterations I [--stop-file F] [--min-iterations M] [--pause-us U]
//     Behaves like the runtime library's loader: every iteration builds amax::DispatchTables and
//     load()s the database as the user database (ReadOnly open, winners() of the arch), calls
//     choose() for a few sizes, then opens the file ReadOnly itself and runs winners() and
//     lookup_nearest(). Stops after I iterations, or (with --stop-file) once F exists and at
//     least M iterations ran; pauses U microseconds per iteration. Any warning, error or inconsistency (the number of winners going
//     down, a choice that fails validation) is printed on stderr and makes the exit code 3.
//     Prints "reads <iterations> winners=<last count> loads_with_entries=<k>" at the end.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "amax/dispatch.hpp"
#include "reliability_common.hpp"

namespace {

using namespace amax;
using namespace amax::reliability;

void say(const std::string& line) {
  const std::string s = line + "\n";
  // One write(2): the line reaches the pipe whole, or not at all if the process dies first.
  (void)!::write(STDOUT_FILENO, s.data(), s.size());
}

struct Args {
  std::map<std::string, std::string> kv;
  bool has(const std::string& k) const { return kv.count(k) != 0; }
  std::string get(const std::string& k, const std::string& def = {}) const {
    auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
  std::uint64_t num(const std::string& k, std::uint64_t def) const {
    auto it = kv.find(k);
    return it == kv.end() ? def : std::stoull(it->second);
  }
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument " + k);
    k = k.substr(2);
    if (k == "no-wal") {
      a.kv[k] = "1";
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument("--" + k + " needs a value");
    a.kv[k] = argv[++i];
  }
  return a;
}

int run_write(const Args& a) {
  const std::filesystem::path path = a.get("db");
  const std::string device = a.get("device", "NVIDIA H200");
  const std::uint64_t first = a.num("first", 1);
  const std::uint64_t keys = a.num("keys", 10);
  const std::size_t trials = a.num("trials", 240);
  const auto sleep_us = a.num("sleep-us", 0);
  db::OpenOptions opts;
  opts.wal = !a.has("no-wal");
  opts.vfs = a.get("vfs");
  const db::Provenance prov = provenance(device, a.get("hash", template_hash()));

  db::TuningDb tdb = db::TuningDb::open(path, db::OpenMode::ReadWrite, opts);
  const auto finished = tdb.finished_keys<SingleFamily>(kArch, DType::fp32, prov);
  say("opened " + tdb.journal_mode() + " finished=" + std::to_string(finished.size()));
  std::uint64_t recorded = 0, skipped = 0;
  for (std::uint64_t n = first; n < first + keys; ++n) {
    const db::TuningKey key = key_at(n);
    if (tdb.has_winner<SingleFamily>(key, prov)) {  // what Session::plan_keys does: a resumed run keeps it
      ++skipped;
      continue;
    }
    const KeyRecord r = make_key_record(device, n, trials);
    tdb.record<SingleFamily>(key, prov, r.trials, r.winner);
    say("committed " + std::to_string(n));
    ++recorded;
    if (sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
  }
  say("done recorded=" + std::to_string(recorded) + " skipped=" + std::to_string(skipped));
  return 0;
}

int run_read(const Args& a) {
  const std::string path = a.get("db");
  const std::uint64_t iterations = a.num("iterations", 10);
  const std::uint64_t min_iterations = a.num("min-iterations", 1);
  const std::string stop = a.get("stop-file");
  const auto pause_us = a.num("pause-us", 0);
  const ArchInfo arch = ArchInfo::parse(kArch);
  const db::Provenance id = provenance("NVIDIA H200");
  int failures = 0;
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "reader %d: %s\n", static_cast<int>(::getpid()), why.c_str());
    ++failures;
  };
  std::size_t last = 0, with_entries = 0;
  std::uint64_t it = 0;
  for (; failures == 0; ++it) {
    if (stop.empty() ? it >= iterations : (it >= min_iterations && std::filesystem::exists(stop))) break;
    DispatchTables tables(arch, id);
    const std::size_t kept = tables.load(Source::user_db, path);
    for (const auto& w : tables.warnings()) fail("DispatchTables warning: " + w);
    if (kept) ++with_entries;
    for (std::uint64_t n : {1ull, 1000ull, 1ull << 20, 1ull << 30}) {
      const Choice c = tables.choose(DType::fp32, n);
      if (auto why = c.config.validate(arch, DType::fp32)) fail("choice for n=" + std::to_string(n) + ": " + *why);
    }
    if (pause_us) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    if (!std::filesystem::exists(path)) continue;
    const db::TuningDb tdb = db::TuningDb::open(path, db::OpenMode::ReadOnly);
    const std::size_t now = tdb.winners<SingleFamily>(db::WinnerFilter{kArch, DType::fp32}).size();
    if (now < last) fail("winners went down from " + std::to_string(last) + " to " + std::to_string(now));
    if (now < kept) fail("DispatchTables kept " + std::to_string(kept) + " of " + std::to_string(now) + " winners");
    last = now;
    if (now && !tdb.lookup_nearest<SingleFamily>(kArch, DType::fp32, 4096)) fail("lookup_nearest found nothing");
  }
  say("reads " + std::to_string(it) + " winners=" + std::to_string(last) +
      " loads_with_entries=" + std::to_string(with_entries));
  return failures ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s write|read --db PATH ...\n", argv[0]);
    return 64;
  }
  const std::string cmd = argv[1];
  try {
    const Args a = parse(argc, argv);
    if (!a.has("db")) throw std::invalid_argument("--db is required");
    if (cmd == "write") return run_write(a);
    if (cmd == "read") return run_read(a);
    std::fprintf(stderr, "unknown command %s\n", cmd.c_str());
    return 64;
  } catch (const amax::db::DbError& e) {
    std::fprintf(stderr, "error %s: %s\n", std::string(to_string(e.kind())).c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 4;
  }
}
