#include "amax/node.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (its own header since fmt 11)

namespace amax::tune {

std::vector<NodeKey> node_agreement(std::vector<NodeKey> keys, const TieRule& rule) {
  for (NodeKey& k : keys) {
    k.agree = false;
    k.same_label = false;
    k.spread = 0;
    k.fastest = -1;
    std::vector<std::string> missing;
    for (std::size_t i = 0; i < k.winners.size(); ++i) {
      const NodeWinner& w = k.winners[i];
      if (w.label.empty() || !(w.stats.median_us > 0)) {
        missing.push_back(std::to_string(w.device));
        continue;
      }
      if (k.fastest < 0 || w.stats.median_us < k.winners[k.fastest].stats.median_us) k.fastest = static_cast<int>(i);
    }
    if (k.fastest < 0) {
      k.note = k.winners.empty() ? "no GPU listed" : "no result from any GPU";
      continue;
    }
    const NodeWinner& best = k.winners[k.fastest];
    double slowest = best.stats.median_us;
    std::vector<std::string> untied;
    bool same = missing.empty();
    for (const NodeWinner& w : k.winners) {
      if (w.label.empty() || !(w.stats.median_us > 0)) continue;
      slowest = std::max(slowest, w.stats.median_us);
      same = same && w.label == best.label;
      if (!rule.tied(w.stats, best.stats))
        untied.push_back(fmt::format("gpu {}: {:.2f}x the fastest (gpu {}), not tied", w.device,
                                     w.stats.median_us / best.stats.median_us, best.device));
    }
    k.spread = slowest / best.stats.median_us;
    k.same_label = same;
    k.agree = missing.empty() && untied.empty();
    if (!missing.empty()) {
      k.note = fmt::format("no result from gpu {}", fmt::join(missing, ", "));
    } else if (!untied.empty()) {
      k.note = fmt::format("{}", fmt::join(untied, "; "));
    } else {
      k.note = same ? "same winner" : "tied winners (labels differ)";
    }
  }
  return keys;
}

}  // namespace amax::tune
