// amax-tune --device all|LIST: a node tune. One worker process per listed GPU (this binary with
// `tune --device N`), each into its own database under <db>.node/; then the agreement report
// (per key: do the GPUs' winners tie under the tuner's tie rule?) and, for GPUs of one SKU, the
// per-GPU databases merged into <db> (the fastest winner per key; the spread across GPUs is in
// <db>.node/report.json). Nothing already in <db> is lost: it is one of the merge's inputs.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (its own header since fmt 11)
#include <nlohmann/json.hpp>

#include "amax/backend.hpp"
#include "amax/db/merge.hpp"
#include "amax/node.hpp"
#include "node.hpp"

extern char** environ;

namespace amax::cli {

std::vector<int> parse_device_list(const std::string& text, int present) {
  std::vector<int> out;
  if (text == "all") {
    if (present <= 0)  // no device is a failed run (exit 1), as everywhere
      throw std::runtime_error("--device all: no GPU found (" + no_device_reason(Vendor::nvidia) + ")");
    for (int i = 0; i < present; ++i) out.push_back(i);
    return out;
  }
  const bool allow_repeat = std::getenv("AMAX_TUNE_NODE_ALLOW_REPEAT") != nullptr;  // tests on one GPU only
  std::set<int> seen;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    int v = -1;
    std::size_t used = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (!item.empty() && used == item.size() && v < 0)
      throw UsageError(fmt::format("--device must be a device ordinal >= 0, got {}", item));
    if (item.empty() || used != item.size())
      throw UsageError(fmt::format("--device must be a device ordinal >= 0, a list N,M,... or all, got '{}'", item));
    if (!seen.insert(v).second && !allow_repeat) throw UsageError(fmt::format("--device: device {} is listed twice", v));
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

namespace {

struct Worker {
  int device = 0;
  std::string tag;  // "gpu3" (or "gpu0-1" for a repeated ordinal, tests only)
  std::filesystem::path db, json, log;
  pid_t pid = -1;
  int exit_code = -1;
  double seconds = 0;
};

pid_t spawn(const std::vector<std::string>& args, const std::filesystem::path& log) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot start a worker ({}): {}", args[0], std::strerror(rc)));
  return pid;
}

// The winners of one worker's --json summary, by (dtype, n).
std::map<std::pair<std::string, std::uint64_t>, tune::NodeWinner> read_winners(const Worker& w) {
  std::map<std::pair<std::string, std::uint64_t>, tune::NodeWinner> out;
  std::ifstream f(w.json);
  if (!f) return out;
  nlohmann::json j;
  try {
    f >> j;
  } catch (const std::exception&) {
    return out;
  }
  for (const auto& k : j.value("keys", nlohmann::json::array())) {
    if (!k.contains("winner")) continue;
    const auto& v = k["winner"];
    tune::NodeWinner nw;
    nw.device = w.device;
    nw.label = v.value("label", "");
    nw.stats.median_us = v.value("median_us", 0.0);
    nw.stats.spread_us = v.value("spread_us", 0.0);
    nw.stats.samples = v.value("samples", 0);
    out[{k.value("dtype", ""), k.value("n", std::uint64_t{0})}] = nw;
  }
  return out;
}

}  // namespace

int run_node_tune(const NodeTuneRequest& r) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(r.db.string() + ".node");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  // Each worker gets a share of the compile threads.
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned jobs = r.jobs ? r.jobs : std::max(1u, hw / static_cast<unsigned>(r.devices.size()));
  std::vector<Worker> workers;
  std::map<int, int> repeats;
  for (int d : r.devices) {
    Worker w;
    w.device = d;
    const int k = repeats[d]++;
    w.tag = k ? fmt::format("gpu{}-{}", d, k) : fmt::format("gpu{}", d);
    w.db = dir / (w.tag + ".db");
    w.json = dir / (w.tag + ".json");
    w.log = dir / (w.tag + ".log");
    workers.push_back(std::move(w));
  }
  std::cerr << fmt::format("amax-tune: node tune of {} GPUs ({}), one worker each, {} compile jobs per worker; "
                           "per-GPU databases and logs in {}\n",
                           workers.size(), fmt::join(r.devices, ", "), jobs, dir.string());
  const auto t0 = std::chrono::steady_clock::now();
  for (Worker& w : workers) {
    std::vector<std::string> args{"amax-tune", "tune", "--device", std::to_string(w.device), "--db", w.db.string(),
                                  "--json", w.json.string(), "-q", "-j", std::to_string(jobs)};
    for (const auto& a : r.forwarded) args.push_back(a);
    fs::remove(w.json, ec);
    w.pid = spawn(args, w.log);
    std::cerr << fmt::format("  {}: worker {} started, log {}\n", w.tag, w.pid, w.log.string());
  }
  // Wait for all, with a line every 30 s naming those still running.
  std::size_t running = workers.size();
  auto last_note = t0;
  while (running) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    const auto now = std::chrono::steady_clock::now();
    if (pid > 0) {
      for (Worker& w : workers)
        if (w.pid == pid) {
          w.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          w.seconds = std::chrono::duration<double>(now - t0).count();
          --running;
          std::cerr << fmt::format("  {}: finished in {:.1f} s, exit {}{}\n", w.tag, w.seconds, w.exit_code,
                                   w.exit_code ? " (see " + w.log.string() + ")" : "");
        }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (now - last_note > std::chrono::seconds(30)) {
      std::vector<std::string> names;
      for (const Worker& w : workers)
        if (w.exit_code < 0) names.push_back(w.tag);
      std::cerr << fmt::format("  still tuning after {:.0f} s: {}\n", std::chrono::duration<double>(now - t0).count(),
                               fmt::join(names, ", "));
      last_note = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }

  // Agreement, key by key, in the first worker's key order.
  std::vector<std::map<std::pair<std::string, std::uint64_t>, tune::NodeWinner>> results;
  std::vector<std::pair<std::string, std::uint64_t>> order;
  std::set<std::pair<std::string, std::uint64_t>> seen;
  for (const Worker& w : workers) {
    results.push_back(read_winners(w));
    for (const auto& [k, v] : results.back())
      if (seen.insert(k).second) order.push_back(k);
  }
  std::vector<tune::NodeKey> keys;
  for (const auto& k : order) {
    tune::NodeKey nk;
    nk.dtype = parse_dtype(k.first).value_or(DType::fp32);
    nk.n = k.second;
    for (std::size_t i = 0; i < workers.size(); ++i) {
      auto it = results[i].find(k);
      nk.winners.push_back(it != results[i].end() ? it->second : tune::NodeWinner{workers[i].device, "", {}});
    }
    keys.push_back(std::move(nk));
  }
  const tune::TieRule rule;
  keys = tune::node_agreement(std::move(keys), rule);
  std::size_t agreeing = 0;
  std::cout << fmt::format("\nnode agreement ({} GPUs; {})\n", workers.size(), rule.describe());
  std::cout << fmt::format("{:<5} {:>11} {:>6} {:>7}  {:<32} {}\n", "dtype", "n", "agree", "spread", "fastest winner",
                           "note");
  nlohmann::json report{{"devices", r.devices}, {"tie_rule", rule.describe()}, {"keys", nlohmann::json::array()}};
  for (const auto& k : keys) {
    agreeing += k.agree;
    const std::string fastest =
        k.fastest >= 0 ? fmt::format("gpu {} {} {:.2f} us", k.winners[k.fastest].device, k.winners[k.fastest].label,
                                     k.winners[k.fastest].stats.median_us)
                       : "-";
    std::cout << fmt::format("{:<5} {:>11} {:>6} {:>6.3f}x  {:<32} {}\n", to_string(k.dtype), k.n,
                             k.agree ? "yes" : "NO", k.spread, fastest, k.note);
    nlohmann::json e{{"dtype", to_string(k.dtype)}, {"n", k.n},         {"agree", k.agree},
                     {"same_label", k.same_label}, {"spread", k.spread}, {"note", k.note},
                     {"winners", nlohmann::json::array()}};
    for (const auto& w : k.winners)
      e["winners"].push_back({{"device", w.device}, {"label", w.label}, {"median_us", w.stats.median_us},
                              {"spread_us", w.stats.spread_us}, {"samples", w.stats.samples}});
    report["keys"].push_back(std::move(e));
  }
  std::cout << fmt::format("{} of {} keys agree\n", agreeing, keys.size());

  // Merge the per-GPU databases (and what <db> held) into <db>: one entry per key per SKU.
  std::vector<fs::path> inputs;
  if (fs::exists(r.db)) inputs.push_back(r.db);
  int failed = 0;
  for (const Worker& w : workers) {
    if (w.exit_code == 0 && fs::exists(w.db))
      inputs.push_back(w.db);
    else
      ++failed;
  }
  std::string merged = "not merged: no worker succeeded";
  if (inputs.size() >= 2 || (inputs.size() == 1 && inputs[0] != r.db)) {
    try {
      fs::path acc = inputs[0];
      for (std::size_t i = 1; i < inputs.size(); ++i) {
        const fs::path out = dir / fmt::format("merge{}.db", i);
        fs::remove(out, ec);
        db::merge(acc, inputs[i], out, db::MergePolicy{});
        if (acc.parent_path() == dir && acc.filename().string().rfind("merge", 0) == 0) fs::remove(acc, ec);
        acc = out;
      }
      const fs::path tmp = r.db.string() + ".node-tmp";
      fs::copy_file(acc, tmp, fs::copy_options::overwrite_existing);
      fs::rename(tmp, r.db);
      if (acc.parent_path() == dir && acc.filename().string().rfind("merge", 0) == 0) fs::remove(acc, ec);
      merged = fmt::format("merged into {} ({} inputs)", r.db.string(), inputs.size());
    } catch (const std::exception& e) {
      merged = fmt::format("not merged ({}); the per-GPU databases are in {}", e.what(), dir.string());
      ++failed;
    }
  }
  report["merged"] = merged;
  report["workers"] = nlohmann::json::array();
  for (const Worker& w : workers)
    report["workers"].push_back({{"device", w.device}, {"db", w.db.string()}, {"log", w.log.string()},
                                 {"exit_code", w.exit_code}, {"seconds", w.seconds}});
  {
    std::ofstream f(dir / "report.json");
    f << report.dump(2) << "\n";
  }
  std::cout << fmt::format("{}; report {}\n", merged, (dir / "report.json").string());
  return failed ? kExitFailed : kExitOk;
}

}  // namespace amax::cli
