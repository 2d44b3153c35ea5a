#pragma once
// Where a tune's wall-clock time goes (TuneReport::times): per phase of the run, per family (the
// single-tensor keys, the multi-tensor groups) and per kind of variant timed (the strategy of a
// single-tensor variant, the combine of a multi-tensor one), with what the timed batches of each
// cost on the GPU and on the host (measure.hpp TimingSpent). `amax-tune tune` prints it as one
// line and writes it to its JSON report under "times".
#include <array>
#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "amax/measure.hpp"

namespace amax::tune {

/// The phases of one family's tune, in the order each work item runs them.
enum class Phase : std::size_t {
  region,   ///< the lane: the rotated input region allocated and filled, the stream, gate, buffers
  verify,   ///< the full verification pass per dtype and the pass at each work item's own shape
  screen,   ///< screening (search.hpp screen): every variant's probe, warm-up and batches
  final,    ///< the finalists' interleaved rounds (search.hpp final_pass)
  confirm,  ///< the winner's confirmation rounds (search.hpp select_winner)
  ceiling,  ///< the streaming read of the work item's bytes
  record,   ///< the database transaction of the work item
};
inline constexpr std::array<std::string_view, 7> kPhaseNames{"region", "verify", "screen", "final",
                                                             "confirm", "ceiling", "record"};

/// One phase's wall-clock seconds and what the timed batches within it cost.
struct PhaseTime {
  double wall_s = 0;
  TimingSpent timed;
};

/// One family's part of a run: its work items tuned, tune_all's wall-clock seconds and its phases
/// (indexed by Phase; the rest of wall_s is the bookkeeping between them).
struct FamilyTimes {
  int items = 0;
  double wall_s = 0;
  std::array<PhaseTime, kPhaseNames.size()> phases{};
  PhaseTime& operator[](Phase p) { return phases[static_cast<std::size_t>(p)]; }
  const PhaseTime& operator[](Phase p) const { return phases[static_cast<std::size_t>(p)]; }
};

/// The variants of one kind timed over the run: how many (a variant counts once per work item)
/// and what their batches cost (probes and warm-ups included).
struct KindTime {
  int variants = 0;
  TimingSpent timed;
};

/// A whole run's breakdown. Seconds; the run's wall time and compile time are TuneReport's.
struct TuneTimes {
  double startup_s = 0;  ///< from the start of the run to the compiles: checks, device, database, planning
  double device_s = 0;   ///< of startup_s: finding and opening the device (driver initialisation)
  double load_s = 0;     ///< of TuneReport::compile_s: loading the built kernels onto the device
  /// Allocating and filling the run's input region, on a thread of its own while the kernels
  /// compile (beside compile_s; a family's region phase includes any wait for it).
  double fill_s = 0;
  /// Verifying built kernels (both passes, work item by work item) on this thread while the pool
  /// still compiles (beside compile_s; NVIDIA only), and how many work items were verified so.
  double verify_beside_s = 0;
  int verified_beside = 0;
  FamilyTimes keys, groups;
  /// By kind: the single-tensor strategy's name ("first_reset"), "multi.thread" or "multi.warp".
  std::map<std::string, KindTime> kinds;
};

/// Adds the wall-clock time from its construction to its destruction, and what the runner's timed
/// batches cost meanwhile (`runner_total`: a runner's running total, Runner::spent(); null: none),
/// to `into`. Not thread-safe.
class PhaseTimer {
 public:
  PhaseTimer(PhaseTime& into, const TimingSpent* runner_total)
      : into_(into), total_(runner_total), t0_(std::chrono::steady_clock::now()),
        before_(runner_total ? *runner_total : TimingSpent{}) {}
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  ~PhaseTimer() {
    into_.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    if (total_) into_.timed += total_->since(before_);
  }

 private:
  PhaseTime& into_;
  const TimingSpent* total_;
  std::chrono::steady_clock::time_point t0_;
  TimingSpent before_;
};

/// The breakdown as JSON: {"wall_s", "startup_s", "device_s", "compile_s", "load_s", "fill_s",
/// "verify_beside_s", "verified_beside", "keys",
/// "groups", "other_s", "kinds"}; a family is {"items", "wall_s", "other_s", "phases": {phase:
/// {"wall_s", "batches", "calls", "gpu_s", "enqueue_s", "timing_wall_s", "gate_timeouts"}}}; a
/// kind is {"variants", "batches", "calls", "gpu_s", "enqueue_s", "timing_wall_s",
/// "gate_timeouts"}. other_s: wall_s less the parts listed beside it. Thread-safe.
nlohmann::json to_json(const TuneTimes& times, double wall_s, double compile_s);

/// The breakdown as one line: "time: W s = startup S (device D) + compile C (load L, fill F beside
/// it) + keys K (N:
/// region R, verify V, ..., other O; batches B s, GPU G s, enqueue E s) + groups ... + other O; by
/// kind (batches s/GPU s): atomic B/G, ..." (seconds to 0.1 s; a family without work items left
/// out, kinds by name). Thread-safe.
std::string summary_line(const TuneTimes& times, double wall_s, double compile_s);

}  // namespace amax::tune
