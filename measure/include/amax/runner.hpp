#pragma once
// The timing runner (DESIGN.md section 5): how one call is measured, for the tuner and the bench
// alike. A call is probed for its batch size, warmed up, then timed in batches of back-to-back
// calls between device events, each call on the next input of the cold walk; under the default
// (gated) protocol every batch is held behind a Gate until it is fully enqueued, so the times are
// GPU time, and the host's enqueue cost per call is recorded beside them.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/launch.hpp"
#include "amax/measure.hpp"

namespace amax::tune {

/// One thing to time: `call` enqueues one operation on the runner's stream reading the device
/// pointer it is given; `batch` is its calls per batch, 0 until the runner probed it; `host_us`
/// collects the host's enqueue cost per call of every batch the runner timed (warm-up excluded);
/// `spent` what every batch the runner ran of it cost (the probe and warm-up included).
struct Timed {
  std::function<void(const void* in)> call;
  int batch = 0;
  std::vector<double> host_us;
  /// false: not timed behind the gate (measure_both leaves its GPU time empty), for a call that
  /// enqueues more launches than a stream holds while the gate holds it (kMaxGatedLaunches).
  bool gated = true;
  /// The launches one call enqueues; 0 when unknown: its batches are then never enqueued while
  /// another batch runs (measure.hpp run_batches, may_overlap).
  int launches = 0;
  TimingSpent spent;
};

/// The most launches one call may enqueue to be timed behind the gate. A held stream queues
/// launches until its launch queue is full; then the host blocks until the gate times out (seen
/// on the H200 with lists of hundreds of tensors enqueued one amax per tensor). The queue's
/// depth is not documented; 256 is well inside what a batch of the tuner's calls enqueues.
inline constexpr int kMaxGatedLaunches = 256;

/// Device memory a variant's timed calls write: its output word, a workspace of at least the
/// launch shape's workspace_bytes and a one_pass counter word that is 0.
struct LaunchBuffers {
  float* out = nullptr;
  void* workspace = nullptr;
  std::uint32_t* counter = nullptr;
};

/// The Timed call of a loaded variant: launch_amax of n elements (NaN propagated) with `shape` on
/// `stream`. The backend, kernel and buffers must outlive it.
Timed variant_timed(Backend& backend, const LoadedKernel& kernel, const LaunchShape& shape, std::uint64_t n,
                    LaunchBuffers buffers, StreamHandle stream);

/// The order of the entries within each round of Runner::interleaved(): start at entry `offset`
/// (modulo the count), then ascending, or descending when `reverse` (so that each entry follows a
/// different neighbour than in the default order).
struct InterleaveOrder {
  std::size_t offset = 0;
  bool reverse = false;
};

/// Measures calls on one stream over one input region with one protocol, through run_batches:
/// behind the gate the host enqueues a batch while the previous one runs, and a warm-up that
/// prepare() asks for runs at the front of the runner's next batches (so that the GPU runs it
/// while the host enqueues them). Not thread-safe (one stream, one walk over the inputs); the
/// backend, stream, region and gate must outlive it, and a Timed prepared with a warm-up until the
/// runner's next prepare(), measure() or interleaved().
class Runner {
 public:
  /// `gate` holds each batch when protocol.gated (GPU time); it may be null only for an ungated
  /// (host-inclusive) protocol. Errors: std::invalid_argument for a gated protocol without a gate.
  Runner(Backend& backend, StreamHandle stream, InputRegion& inputs, TimingProtocol protocol, Gate* gate);

  /// Finds t.batch when it is 0 (two one-call batches; the second's per-call time decides, through
  /// batch_size()), then, when `warm_up`, queues protocol.warmup_batches untimed batches that run
  /// first in the runner's next batches, unless the probe just ran at least as many calls (batches
  /// of one or two calls: the probe is their warm-up). `bytes`: the input size of one call.
  /// Errors: BackendError.
  void prepare(Timed& t, std::uint64_t bytes, bool warm_up = true);

  /// Per-call time of each of `batches` batches of t.batch calls, microseconds (prepare() first):
  /// GPU time when gated. Appends each batch's host cost per call to t.host_us.
  /// Errors: BackendError, GateTimeout.
  std::vector<double> measure(Timed& t, std::uint64_t bytes, int batches);

  /// Screening's measurement: like measure() of 1 + `more` batches, except that the batches after
  /// the first are left out when the first one's per-call time is above `stop_above` (the second
  /// is enqueued before the first one's time is known: it then runs, untimed and not returned).
  /// The first batch is always returned first; a first batch whose gate timed out (timed again
  /// alone later) never stops the others. Errors: BackendError, GateTimeout.
  std::vector<double> measure_unless(Timed& t, std::uint64_t bytes, int more, double stop_above);

  /// Prepares every entry (in order), then runs `rounds` rounds, each timing one batch of every
  /// entry in `order`, so that drift affects all alike. Returns each entry's per-call times
  /// (microseconds), one per round, in round order. Errors: BackendError.
  std::vector<std::vector<double>> interleaved(std::vector<Timed>& entries, std::uint64_t bytes, int rounds,
                                               InterleaveOrder order = {});

  /// Waits for the runner's stream; a warm-up prepare() queued is dropped (not run). Errors:
  /// BackendError (for example a lost context).
  void synchronize() {
    warmups_.clear();
    b_.synchronize(stream_);
  }

  /// What every batch this runner ran cost so far (probes and warm-ups included).
  const TimingSpent& spent() const noexcept { return spent_; }

 private:
  // One batch of `calls` calls of t, for run().
  BatchSpec spec(const Timed& t, std::uint64_t bytes, int calls, bool timed = true) const {
    return {&t.call, bytes, protocol_.warm_cache, calls, t.launches, timed};
  }
  // run_batches of the queued warm-ups, then `batches`, on this runner's stream, inputs and gate;
  // each batch's cost added to its Timed's spent and to spent_. Returns the results of `batches`.
  // `stop`: run_batches' question, with indices into `batches` (never asked about a warm-up).
  std::vector<BatchResult> run(const std::vector<std::pair<Timed*, BatchSpec>>& batches,
                               const std::function<bool(std::size_t, const BatchResult&)>& stop = {});

  Backend& b_;
  StreamHandle stream_;
  InputRegion& inputs_;
  TimingProtocol protocol_;
  Gate* gate_;
  TimingSpent spent_;
  std::vector<std::pair<Timed*, BatchSpec>> warmups_;  // queued by prepare(), run first by run()
};

/// One entry's times in both views (DESIGN.md section 5), for the benches.
struct BothTimes {
  Stats gpu;             ///< GPU time per call: interleaved rounds behind the gate
  Stats host_inclusive;  ///< per call back to back from the host: the same rounds without the gate
  double host_us = 0;    ///< the host's enqueue cost per call (median over the gated rounds)
};

/// Measures `entries` in both views with `protocol` (its gated flag is ignored; warm_cache set to
/// `warm`): `rounds` interleaved rounds behind `gate` (the entries with Timed::gated; the others'
/// gpu stats stay empty, samples 0, and host_us 0), then `rounds` interleaved rounds without it,
/// each entry prepared (batch size, warm-up) per view. Result i belongs to entries[i].
/// Errors: BackendError, GateTimeout.
std::vector<BothTimes> measure_both(Backend& backend, StreamHandle stream, InputRegion& inputs, Gate& gate,
                                    TimingProtocol protocol, bool warm, const std::vector<Timed>& entries,
                                    std::uint64_t bytes, int rounds);

}  // namespace amax::tune
