#pragma once
// The tuner's search strategy for one key (DESIGN.md section 5): which variants are tried (the
// space plus TransformerEngine's fixed configurations as baselines), screening, the choice of
// finalists and the final interleaved pass. It decides what to time next; how a time is taken is
// the runner's (runner.hpp), reached through a SampleSource so that the decisions can be tested
// on synthetic samples.
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "amax/db/trial.hpp"
#include "amax/db/winner.hpp"
#include "amax/kernel_config.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/measure.hpp"
#include "amax/search_space.hpp"

namespace amax::tune {

/// One variant's outcome for one key.
struct VariantResult {
  KernelConfig config;
  db::TrialStatus status = db::TrialStatus::ok;
  std::string reason;
  Stats stats;           ///< empty unless status ok
  ResourceUsage usage;
  bool finalist = false;  ///< re-timed in the final pass
};

/// One key's outcome.
struct KeyResult {
  DType dtype{};
  std::uint64_t n = 0;
  bool resumed = false;                  ///< already tuned for this setup: not re-measured
  std::optional<db::WinnerRow> stored;   ///< the stored winner of a resumed key
  std::vector<VariantResult> variants;
  int winner = -1;                       ///< index into variants, -1 if none
  Stats ceiling;                         ///< the streaming-read kernel on the same bytes
  /// Fastest ok variant of `strategy` (or with the given label), nullptr if none.
  const VariantResult* best(Strategy strategy) const;
  const VariantResult* find(const std::string& label) const;
  std::uint64_t bytes() const { return n * info(dtype).bytes; }
};

/// TransformerEngine's fixed configurations for `dtype` (transformer_engine_config of atomic, then
/// two_stage): always verified and timed as baselines (they may win), reported against by the
/// tuner's table and JSON, and contenders of the bench. The one list of them. Thread-safe.
std::vector<KernelConfig> transformer_engine_baselines(DType dtype);

/// Every variant tuned for `dtype` on `arch`: the space of `kind`, then the baselines not already
/// in it. Thread-safe.
std::vector<KernelConfig> candidates(const ArchInfo& arch, DType dtype, SpaceKind kind);

/// Where the search gets its times: per-call times (us) of batches of variant `i` of the key
/// being tuned. Implemented by the tuner over the runner; tests use synthetic sources.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  /// `batches` per-call times of variant i, each of one batch; `prepare`: probe its batch size
  /// and warm it up first. Errors: BackendError (the variant's launch failed).
  virtual std::vector<double> sample(std::size_t i, int batches, bool prepare) = 0;
  /// Interleaved rounds over `which` (prepared first): result[j] holds rounds times of which[j].
  /// `second`: the confirmation measurement, in another order than the first (runner.hpp Order).
  virtual std::vector<std::vector<double>> rounds(const std::vector<std::size_t>& which, int rounds,
                                                  bool second) = 0;
  /// Called after a BackendError from sample(): throws if the device is unusable.
  virtual void recover() {}
};

/// Screening: every ok variant gets one batch after its warm-up and, unless that batch is more
/// than protocol.early_stop x the best median so far, protocol.screen_batches - 1 more; its stats
/// are set. A variant whose launch fails becomes launch_failed with the driver's message.
void screen(std::vector<VariantResult>& variants, const TimingProtocol& protocol, SampleSource& source);

/// The finalists after screening: the protocol.finalists fastest ok variants, the fastest of each
/// strategy and the TransformerEngine baselines that are ok (indices into variants, ascending).
std::set<std::size_t> finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                DType dtype);

/// The final pass: protocol.final_rounds interleaved rounds over the finalists; their stats are
/// replaced by these rounds and they are marked finalist. Returns each finalist's samples (same
/// order as `fin`).
std::vector<std::vector<double>> final_pass(std::vector<VariantResult>& variants, const std::set<std::size_t>& fin,
                                            const TimingProtocol& protocol, SampleSource& source);

}  // namespace amax::tune
