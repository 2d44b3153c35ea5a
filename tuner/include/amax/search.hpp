#pragma once
// The tuner's search strategy for one key (DESIGN.md section 5): which variants are tried (the
// space plus TransformerEngine's fixed configurations as baselines), screening, the choice of
// finalists and the final interleaved pass. It decides what to time next; how a time is taken is
// the runner's (runner.hpp), reached through a SampleSource so that the decisions can be tested
// on synthetic samples.
#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "amax/db/trial.hpp"
#include "amax/db/winner.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/measure.hpp"
#include "amax/search_space.hpp"

namespace amax::tune {

/// One variant's outcome for one key (single-tensor) or group (multi-tensor).
struct VariantResult {
  KernelConfig config;              ///< the single-tensor variant (unused for a multi-tensor one)
  std::optional<MultiConfig> multi;  ///< the multi-tensor variant, when this is one
  /// The canonical label of whichever variant this is.
  std::string label() const { return multi ? multi->label() : config.label(); }
  db::TrialStatus status = db::TrialStatus::ok;
  std::string reason;
  Stats stats;           ///< empty unless status ok; the final pass's (or pooled) stats of finalists
  ResourceUsage usage;
  bool finalist = false;  ///< re-timed in the final pass
  int launches = 0;       ///< launches per call at the key's size (LaunchShape::launches())
  double host_us = 0;     ///< the host's enqueue cost per call, median over its timed batches, us; 0 unknown
  Stats confirm;          ///< its stats in the confirmation measurement; samples 0 if not in it
  int tie_rank = -1;      ///< 0 the winner, 1.. the other members of its tie set by preference, -1 none
};

/// How the final choice was confirmed (select_winner()).
enum class Confirmation {
  none,    ///< nothing to confirm against (a single finalist)
  agreed,  ///< the second measurement ties the winner with its fastest entrant
  pooled,  ///< it did not: the choice was made again on the pooled samples of both measurements
};

/// One key's outcome.
struct KeyResult {
  DType dtype{};
  std::uint64_t n = 0;
  bool resumed = false;                  ///< already tuned for this setup: not re-measured
  std::optional<db::WinnerRow> stored;   ///< the stored winner of a resumed key
  std::vector<VariantResult> variants;
  int winner = -1;                       ///< index into variants, -1 if none
  std::vector<std::size_t> tie_set;      ///< the winner's tie set, preference order, winner first
  Confirmation confirmation = Confirmation::none;
  std::string confirmation_note;         ///< what the confirmation found, for logs and the report
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

/// The entries of `cands` worth timing at n elements of `dtype` on a device of `cu_count` CUs/SMs:
/// one per distinct launch. Variants whose configs differ only in the grid cap (a launch parameter)
/// run the same kernel, and where their caps give the same grid at this n (launch_shape) they do
/// the same work: only the first of such a class (in `cands`' order) is timed, except that a
/// TransformerEngine baseline (transformer_engine_baselines) stands for its class, since the
/// tuner's report and finalists name them. Returns indices into `cands`, ascending. At small n
/// most caps give the same grid (e.g. bf16 n=1000 on an H200: about one launch in five is distinct). Thread-safe.
std::vector<std::size_t> distinct_launches(const std::vector<KernelConfig>& cands, DType dtype, std::uint64_t n,
                                           std::uint32_t cu_count);

/// Where the search gets its times: per-call times (us) of batches of variant `i` of the key
/// being tuned. Implemented by the tuner over the runner; tests use synthetic sources.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  /// `batches` per-call times of variant i, each of one batch; `prepare`: probe its batch size
  /// and warm it up first. Errors: BackendError (the variant's launch failed).
  virtual std::vector<double> sample(std::size_t i, int batches, bool prepare) = 0;
  /// Screening's samples of variant i (prepared first): one batch, then `more` batches unless the
  /// first one's per-call time is above `stop_above`. The default takes them in two sample()
  /// calls; a source may enqueue the second batch before the first one's time is known (the
  /// samples are the same). Errors: as sample().
  virtual std::vector<double> screen_sample(std::size_t i, int more, double stop_above) {
    std::vector<double> times = sample(i, 1, true);
    if (times[0] <= stop_above) {
      const auto rest = sample(i, more, false);
      times.insert(times.end(), rest.begin(), rest.end());
    }
    return times;
  }
  /// Interleaved rounds over `which` (prepared first): result[j] holds rounds times of which[j].
  /// `second`: the confirmation measurement, in another order than the first (runner.hpp Order).
  virtual std::vector<std::vector<double>> rounds(const std::vector<std::size_t>& which, int rounds,
                                                  bool second) = 0;
  /// Called after a BackendError from sample(): throws if the device is unusable.
  virtual void recover() {}
  /// The host's enqueue cost per call of variant i, the median over every batch timed so far
  /// (sample() and rounds()), microseconds; 0 when unknown.
  virtual double host_us(std::size_t /*i*/) const { return 0; }
};

/// Screening: every ok variant gets one batch after its warm-up and, unless that batch is more
/// than protocol.early_stop x the best median so far, protocol.screen_batches - 1 more; its stats
/// are set. A variant whose launch fails becomes launch_failed with the driver's message.
void screen(std::vector<VariantResult>& variants, const TimingProtocol& protocol, SampleSource& source);

/// The finalists after screening: the protocol.finalists fastest ok variants (timed), the fastest
/// of each `kind` (a family's classes of variants, e.g. the strategy) and every ok variant i with
/// always(i) (indices into variants, ascending). Thread-safe if `kind` and `always` are.
std::set<std::size_t> finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                const std::function<int(const VariantResult&)>& kind,
                                const std::function<bool(std::size_t)>& always);

/// The single-tensor finalists: finalists() with the fastest of each strategy and the
/// TransformerEngine baselines that are ok.
std::set<std::size_t> finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                DType dtype);

/// The final pass: protocol.final_rounds interleaved rounds over the finalists; their stats are
/// replaced by these rounds and they are marked finalist. Returns each finalist's samples (same
/// order as `fin`).
std::vector<std::vector<double>> final_pass(std::vector<VariantResult>& variants, const std::set<std::size_t>& fin,
                                            const TimingProtocol& protocol, SampleSource& source);

/// The statistical tie rule (DESIGN.md section 5; docs/tuning.md "Reproducible winners"). Two variants
/// with per-call time samples a and b (one per batch) are tied when their medians differ by at
/// most
///     max(margin x min(median_a, median_b),  z x sqrt(se_a^2 + se_b^2)),
///     se_x = 0.93 x IQR_x / sqrt(samples_x),
/// se_x being the large-sample standard error of a median (1.2533 sigma / sqrt(n)) with sigma
/// estimated robustly as IQR / 1.349. With margin 1% and z 2: differences under 1% are never
/// treated as real (the regret target is 1.01x in geometric mean); above it, two variants of equal
/// true median are split with probability about 5% (normal samples; z = 2 is a two-sided 95%
/// test), and a variant slower by d is tied with probability about Phi(2 - d / se_diff), e.g.
/// 50% at d = 2 se_diff, 2.3% at d = 4 se_diff. Deterministic: the same samples give the same
/// answer. A bimodal variant has a large IQR, so it ties with more neighbours and loses to a
/// steadier one among them.
struct TieRule {
  double margin = 0.01;
  double z = 2.0;
  /// The largest difference of medians that is a tie, microseconds.
  double threshold_us(const Stats& a, const Stats& b) const;
  bool tied(const Stats& a, const Stats& b) const;
  /// "tie: |median difference| <= max(1% x faster median, 2 x combined median SE)".
  std::string describe() const;
};

/// Host costs closer than this are treated as equal by preferred(): they are compared in steps of
/// kHostCostStepUs (the spread of one variant's host cost between batches on the H200 is about
/// 0.1 us; a launch costs about 2 us).
inline constexpr double kHostCostStepUs = 0.25;

/// The order in which tied variants are preferred (the objective is GPU time; among variants tied
/// in GPU time, what the host pays decides): fewer launches per call first (one_pass and
/// self_reset 1, atomic 2 with its memset, two_stage 2 with more than one block), then the lower
/// host cost per call in steps of kHostCostStepUs (an unknown one, 0, last), then the smaller
/// relative spread (IQR / median), then the lower median, then the label. True when a is
/// preferred to b. Deterministic, and a strict weak order.
bool preferred(const VariantResult& a, const VariantResult& b);

/// The tie set among `which` (indices into variants, each with stats): every variant tied by
/// `rule` with the one of lowest median, in preferred() order (so the chosen variant first).
std::vector<std::size_t> tie_set(const std::vector<VariantResult>& variants, const std::vector<std::size_t>& which,
                                 const TieRule& rule = {});

/// At most this many variants take part in the confirmation: the winner, the rest of its tie set
/// in preference order, and the fastest finalist outside the tie set.
inline constexpr std::size_t kMaxConfirmation = 8;

/// Chooses the winner among the finalists `fin` (their stats from the final pass): the first of
/// their tie set under the protocol's tie rule (tie_margin, tie_z), then confirms it in a second,
/// independent interleaved measurement (protocol.confirm_rounds fresh rounds in another order;
/// none when 0) against the rest of its tie set and the
/// fastest finalist outside it. When the winner is tied with the fastest of that measurement the
/// choice stands (agreed); otherwise each entrant's samples of both measurements are pooled and
/// the tie set and the choice are made again on them (pooled: the entrants' stats become the
/// pooled ones, final_rounds + confirm_rounds samples). Sets winner, tie_set, confirmation, confirmation_note
/// and the variants' confirm and tie_rank. `final_samples[j]` are the final pass's samples of the
/// j-th element of fin.
void select_winner(KeyResult& key, const std::set<std::size_t>& fin,
                   const std::vector<std::vector<double>>& final_samples, const TimingProtocol& protocol,
                   SampleSource& source);

}  // namespace amax::tune
