// amax-db: small command-line front end of amax_tuning_db, used by the build to turn the text
// database kept in the repository into an SQLite file, and by people to inspect databases.
//
//   amax-db load <dump.jsonl> <out.db>          text dump -> SQLite (rollback journal, shippable)
//   amax-db dump <db> [<out.jsonl>]             SQLite -> text dump (stdout by default)
//   amax-db json <db> [--trials]                JSON export of the winners (and trials)
//   amax-db csv <db> [winners|trials]           CSV export of one table
//   amax-db merge <a.db> <b.db> <out.db> [--allow-different-devices] [--overwrite]
//   amax-db check <db>                          open read-only and run PRAGMA integrity_check
//
// Exit status: 0 success, 1 database error (message on stderr), 2 usage error.
#include <amax/db/db.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  amax-db load <dump.jsonl> <out.db>\n"
    "  amax-db dump <db> [<out.jsonl>]\n"
    "  amax-db json <db> [--trials]\n"
    "  amax-db csv <db> [winners|trials]\n"
    "  amax-db merge <a.db> <b.db> <out.db> [--allow-different-devices] [--overwrite]\n"
    "  amax-db check <db>\n";

int usage(const std::string& why) {
  std::cerr << "amax-db: " << why << "\n" << kUsage;
  return 2;
}

int run(const std::vector<std::string>& args) {
  using namespace amax::db;
  if (args.empty()) return usage("no command");
  const std::string& cmd = args[0];
  const std::size_t n = args.size() - 1;
  if (cmd == "load") {
    if (n != 2) return usage("load takes <dump.jsonl> <out.db>");
    std::ifstream in(args[1], std::ios::binary);
    if (!in) {
      std::cerr << "amax-db: cannot read '" << args[1] << "'\n";
      return 1;
    }
    TuningDb::load_text(in, args[2]);
    return 0;
  }
  if (cmd == "dump") {
    if (n < 1 || n > 2) return usage("dump takes <db> [<out.jsonl>]");
    const TuningDb db = TuningDb::open(args[1], OpenMode::ReadOnly);
    if (n == 1) {
      db.dump_text(std::cout);
      return std::cout ? 0 : 1;
    }
    std::ofstream out(args[2], std::ios::binary | std::ios::trunc);
    db.dump_text(out);
    return 0;
  }
  if (cmd == "json") {
    if (n < 1 || n > 2 || (n == 2 && args[2] != "--trials")) return usage("json takes <db> [--trials]");
    TuningDb::open(args[1], OpenMode::ReadOnly).export_json(std::cout, n == 2 ? ExportTable::All : ExportTable::Winners);
    return 0;
  }
  if (cmd == "csv") {
    if (n < 1 || n > 2 || (n == 2 && args[2] != "winners" && args[2] != "trials")) {
      return usage("csv takes <db> [winners|trials]");
    }
    TuningDb::open(args[1], OpenMode::ReadOnly)
        .export_csv(std::cout, n == 2 && args[2] == "trials" ? ExportTable::Trials : ExportTable::Winners);
    return 0;
  }
  if (cmd == "merge") {
    if (n < 3) return usage("merge takes <a.db> <b.db> <out.db> [options]");
    MergePolicy policy;
    for (std::size_t i = 4; i < args.size(); ++i) {
      if (args[i] == "--allow-different-devices") {
        policy.allow_different_devices = true;
      } else if (args[i] == "--overwrite") {
        policy.overwrite_output = true;
      } else {
        return usage("unknown merge option '" + args[i] + "'");
      }
    }
    const MergeReport r = merge(args[1], args[2], args[3], policy);
    std::cout << "merged " << r.winners_written << " winners and " << r.trials_written << " trials into "
              << args[3] << "\n";
    for (const MergeDecision& d : r.contested) {
      std::cout << "  " << to_string(d.key) << ": kept " << d.kept.winner.label << " (" << d.kept.winner.median_us
                << " us, from " << d.kept_from << ") over " << d.dropped.winner.label << " ("
                << d.dropped.winner.median_us << " us)" << (d.different_devices ? " [different devices]" : "")
                << "\n";
    }
    return 0;
  }
  if (cmd == "check") {
    if (n != 1) return usage("check takes <db>");
    const TuningDb db = TuningDb::open(args[1], OpenMode::ReadOnly);
    const auto rows = db.integrity_check();
    for (const auto& r : rows) std::cout << r << "\n";
    std::cout << "schema version " << db.schema_version() << ", " << db.winners().size() << " winners, "
              << db.all_trials().size() << " trials\n";
    return rows == std::vector<std::string>{"ok"} ? 0 : 1;
  }
  return usage("unknown command '" + cmd + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const amax::db::DbError& e) {
    std::cerr << "amax-db: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "amax-db: unexpected error: " << e.what() << "\n";
    return 1;
  }
}
