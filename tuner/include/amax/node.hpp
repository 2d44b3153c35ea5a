#pragma once
// A node tune (`amax-tune --device all`): every listed GPU of one machine tuned at once,
// one worker process per GPU, then per key whether the GPUs agree. This header holds the decision
// (pure: no device, no files), the command line (cli/cmd_node.cpp) runs the workers and merges.
#include <cstdint>
#include <string>
#include <vector>

#include "amax/dtype.hpp"
#include "amax/measure.hpp"
#include "amax/search.hpp"

namespace amax::tune {

/// One GPU's winner of one key: its label and its timing statistics (microseconds per call; the
/// IQR and the number of batches feed the tie rule). Plain value type.
struct NodeWinner {
  int device = 0;      ///< device ordinal
  std::string label;   ///< canonical variant label; empty when that GPU has no result for the key
  Stats stats;
};

/// The agreement of one key across the node's GPUs. Plain value type.
struct NodeKey {
  DType dtype = DType::fp32;
  std::uint64_t n = 0;                ///< elements
  std::vector<NodeWinner> winners;    ///< one per GPU, in the order the GPUs were listed
  bool agree = false;                 ///< every GPU's winner is tied (TieRule) with the fastest one
  bool same_label = false;            ///< every GPU chose the same variant
  double spread = 0;                  ///< slowest winner median / fastest winner median (>= 1; 0 when no result)
  int fastest = -1;                   ///< index into winners of the fastest; -1 when none has a result
  std::string note;                   ///< "same winner", "tied winners (labels differ)", "gpu 3: 1.12x the fastest, not tied", "no result from gpu 2"
};

/// Decides agreement for each key (fills agree, same_label, spread, fastest, note). A GPU without
/// a result for a key makes that key disagree. The rule is the tuner's TieRule (docs/tuning.md,
/// "Reproducible winners"): what separates two variants on one GPU separates two GPUs here.
std::vector<NodeKey> node_agreement(std::vector<NodeKey> keys, const TieRule& rule = {});

}  // namespace amax::tune
