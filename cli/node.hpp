#pragma once
// The node tune of the command line (cli/cmd_node.cpp): `amax-tune --device all|N,M,...`.
#include <filesystem>
#include <string>
#include <vector>

#include "commands.hpp"

namespace amax::cli {

/// Parses --device: "N" (one ordinal), "N,M,..." or "all" (0 .. present-1). UsageError naming the
/// bad item: not a number, negative, listed twice (allowed only with AMAX_TUNE_NODE_ALLOW_REPEAT
/// set, for tests on a machine with one GPU), or "all" with no GPU present. Ordinals are not
/// checked against `present` here (the worker of a missing one fails naming it).
std::vector<int> parse_device_list(const std::string& text, int present);

/// What a node tune needs: the GPUs, the database the results are merged into, the compile
/// threads per worker (0: hardware threads / GPUs) and the tune options passed on to every worker
/// unchanged (--dtypes, --sizes, --arch, --time-budget, --retune, --stale-only, --full, --warm).
struct NodeTuneRequest {
  std::vector<int> devices;
  std::filesystem::path db;
  unsigned jobs = 0;
  std::vector<std::string> forwarded;
};

/// Runs one `amax-tune tune --device N` worker per listed GPU at once (each into
/// <db>.node/gpuN.db, its log in gpuN.log, its summary in gpuN.json), prints per key whether the
/// GPUs' winners agree (tune::node_agreement), merges the per-GPU databases and what <db> held into
/// <db> (db::merge: one winner per key for GPUs of one SKU; GPUs of different SKUs are reported and
/// left unmerged) and writes <db>.node/report.json (every GPU's winner, the spread, the note).
/// Returns kExitOk, or kExitFailed when a worker or the merge failed (the other results are kept).
int run_node_tune(const NodeTuneRequest& r);

}  // namespace amax::cli
