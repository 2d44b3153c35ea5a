#pragma once
// Measurement on the GPU: the timing protocol (DESIGN.md section 5), its statistics, the rotated
// input region and the timed batches. Used by the tuner and by `amax-tune bench` (through
// runner.hpp).
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/device_buffer.hpp"
#include "amax/kernel_cache.hpp"

namespace amax::tune {

/// How times are taken. Defaults are the tuner's; every field is recorded in the DB's
/// timing_protocol column through describe().
///
/// GPU time (gated, the default) and host-inclusive time are different quantities (DESIGN.md
/// section 5): a batch enqueued while the GPU already runs it measures the host's launch rate once
/// calls are short (an empty kernel: 1.30 us of GPU time, 3.6-4.7 us per call back to back from the
/// host on the H200). Gated, each batch is enqueued behind a Gate that the host opens
/// once the whole batch is queued, so the events around it see the GPU's time per call.
struct TimingProtocol {
  bool gated = true;               ///< true: GPU time behind a Gate; false: host-inclusive back to back
  double gate_timeout_ms = 1000;   ///< a closed gate gives up after this long (the batch is then retried)
  double batch_target_us = 200;  ///< a batch of back-to-back calls lasts at least this long (per-call time x calls)
  int max_batch = 200;           ///< at most this many calls per batch (tiny sizes)
  int warmup_batches = 1;        ///< untimed batches first (module load, clocks, TLB)
  int screen_batches = 3;        ///< batches per variant in the screening pass
  int final_rounds = 15;         ///< interleaved rounds (one batch per finalist each) of the final pass
  int finalists = 6;             ///< fastest screened variants re-timed in the final pass
  double early_stop = 1.5;       ///< screening stops a variant after one batch slower than this x best
  double tie_margin = 0.01;      ///< tie rule (search.hpp TieRule): medians within this fraction tie
  double tie_z = 2.0;            ///< tie rule: ... or within this many standard errors of their difference
  int confirm_rounds = 15;       ///< interleaved rounds of the confirmation measurement; 0 = none
  bool warm_cache = false;       ///< true: the same input every call (warm L2); false: the cold walk
  /// The tuner's protocol, stored in every row's provenance (a change makes rows stale):
  /// "device events; batches >= 200 us (<= 200 calls); warmup 1; screen 3 (stop at 1.5x best); ..."
  std::string describe() const;
  /// The bench's protocol: the same batches and warm-up, then `rounds` interleaved rounds of
  /// every contender. Thread-safe.
  std::string describe_interleaved(int rounds) const;
};

/// Whether a row's provenance.timing_protocol (TimingProtocol::describe()) records GPU time
/// behind a gate, as the tuner measures from schema 5 on; false for host-inclusive rows of older
/// versions, which `amax-tune --stale-only` re-tunes. Thread-safe.
bool measured_in_gpu_time(const std::string& timing_protocol) noexcept;

/// Effective bandwidth of reading `bytes` in `us` microseconds, GB/s (1e9 B/s); 0 when `us` is
/// not positive. The one formula behind every GB/s the tuner, the database rows and the bench
/// report.
double gbps(std::uint64_t bytes, double us) noexcept;

/// Robust statistics of per-call times of several batches, microseconds.
struct Stats {
  double median_us = 0;
  double spread_us = 0;  ///< interquartile range p75 - p25 of the batch times
  int samples = 0;       ///< batches
  static Stats of(std::vector<double> per_call_us);
};

/// Where the cold walk puts each input: a multiple of this many bytes from the region's start.
inline constexpr std::uint64_t kInputAlignment = 512;

/// The cold walk over a region of `region_bytes` (InputRegion::next): the byte offset of the next
/// input of `bytes` bytes, where the previous one ended at `cursor` (0 at the start), and `cursor`
/// advanced to its end. Each input starts at the first kInputAlignment multiple at or after the
/// previous input's end, or back at 0 where it would reach past the region: consecutive calls read
/// consecutive, never overlapping addresses, every call a new one until the walk wraps.
/// `bytes` must not exceed `region_bytes`. Thread-safe (no shared state).
std::uint64_t next_input_offset(std::uint64_t& cursor, std::uint64_t bytes, std::uint64_t region_bytes) noexcept;

/// Device memory the measurements read: a region of random data whose every 16-bit half has the
/// exponent's top bit clear, so every element of every dtype is finite with |x| < 2 (never zero
/// everywhere, never NaN/Inf). Cold timing walks through it (next_input_offset) so that no call
/// finds its input in a cache (the region is rotation_region_bytes); verification plants values
/// it knows at its start. Not thread-safe: one user at a time.
class InputRegion {
 public:
  /// Allocates and fills rotation_region_bytes(backend.device(), max_input_bytes).
  /// Errors: BackendError (out of memory).
  InputRegion(Backend& backend, std::uint64_t max_input_bytes);
  InputRegion(const InputRegion&) = delete;
  InputRegion& operator=(const InputRegion&) = delete;
  /// The input of the next call of `bytes` bytes: cold, the next address of the walk over the
  /// region (next_input_offset: sequential, kInputAlignment-aligned, a new address every call until
  /// it wraps to the start); with `warm`, or when `bytes` is not smaller than the region, always
  /// the region's start.
  const void* next(std::uint64_t bytes, bool warm);
  /// Starts the walk again at the region's start: from here the cold inputs of one size repeat
  /// after exactly slices(bytes) calls (bench-multi prepares one list per input it will see).
  void restart() noexcept { cursor_ = 0; }
  /// The distinct inputs of `bytes` bytes a walk from the start visits before it wraps.
  std::uint64_t slices(std::uint64_t bytes) const noexcept;
  void* base() const noexcept { return buf_.get(); }
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  std::uint64_t bytes_ = 0;
  DeviceBuffer buf_;
  std::uint64_t cursor_ = 0;
};

/// A timing gate that never opened (measure.hpp Gate): the batch behind it could not be timed.
class GateTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// nvbench's blocking kernel: holds a stream while the host enqueues a batch behind it, so that
/// the batch then runs back to back on the GPU and events around it measure GPU time, not the
/// host's launch rate. close() enqueues templates/bench_kernels.h's amax_gate, a one-thread kernel
/// that polls a word of mapped pinned host memory; release() sets that word from the host (a plain
/// store, no API call). A gate left closed longer than `timeout_ms` gives up by itself and marks
/// itself timed out, so a stream is never held for ever (timed_out() tells, once the work behind it
/// has completed). It has kGateSlots independent slots, so that one batch can be enqueued behind
/// slot 1 while the batch behind slot 0 runs (run_batches); the calls without a slot use slot 0.
/// Not thread-safe: one stream, one batch per slot at a time. The backend must outlive it.
class Gate {
 public:
  static constexpr int kGateSlots = 2;
  /// `kernel`: the loaded amax_gate (ReferenceKernels::gate). Errors: BackendError (no pinned
  /// memory).
  Gate(Backend& backend, FunctionHandle kernel, double timeout_ms = 1000);
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  /// Enqueues slot `slot`'s gate, closed, on `stream`: work enqueued after it waits for
  /// release(slot) or the timeout. The slot's previous gate must have completed. Errors:
  /// BackendError.
  void close(StreamHandle stream, int slot = 0);
  /// Opens slot `slot`'s last closed gate. Never throws.
  void release(int slot = 0) noexcept;
  /// Whether slot `slot`'s last closed gate gave up before release(). Meaningful once work
  /// enqueued after it has completed (for example after an event behind it was waited for).
  bool timed_out(int slot = 0) const noexcept;
  double timeout_ms() const noexcept { return timeout_ms_; }

 private:
  Backend& b_;
  FunctionHandle kernel_;
  double timeout_ms_;
  MappedHostBuffer words_;  // per slot s: [2s]: 1 = released; [2s + 1]: 1 = timed out
};

/// What timed batches cost, summed over batches (the tune's time breakdown, tune_times.hpp TuneTimes):
/// `batches` whose time was taken and their `calls`; `gpu_s` the GPU time between their events;
/// `enqueue_s` the host's time enqueueing them; `wall_s` the wall-clock time of the whole
/// measurement (enqueue, waiting for the GPU, batches retried after a gate timed out);
/// `gate_timeouts` the batches dropped because their gate timed out. Seconds.
struct TimingSpent {
  long batches = 0;
  long calls = 0;
  double gpu_s = 0;
  double enqueue_s = 0;
  double wall_s = 0;
  int gate_timeouts = 0;
  TimingSpent& operator+=(const TimingSpent& o);
  /// The part of this total spent since `earlier` (a copy of the same total taken before).
  TimingSpent since(const TimingSpent& earlier) const;
};

/// Per-call times of timed batches, one entry per batch, microseconds.
struct BatchTimes {
  /// Events around the batch divided by its calls: GPU time when gated, else host-inclusive time.
  std::vector<double> us;
  /// The host's enqueue cost per call: the CPU clock around the loop that enqueues the batch,
  /// divided by its calls (while a gate holds the stream, so that no launch waits for the GPU).
  std::vector<double> host_us;
  TimingSpent spent;  ///< what the batches cost (the timed-out ones' wall time included)
};

/// The launches a stream holds queued, about 1000 on NVIDIA: two batches in flight at once
/// (run_batches) must fit in it together, gate and events included, or the host would block in a
/// launch while it enqueues the second one (and measure that wait as its enqueue cost).
inline constexpr int kLaunchQueueDepth = 1000;

/// One batch of run_batches(): `calls` back-to-back calls of `*call` (which enqueues one operation
/// on the stream reading the input it is given), each on the next input of `bytes` bytes
/// (InputRegion::next with `warm`). `launches`: the launches one call enqueues, 0 when unknown (the
/// batch is then never in flight beside another). `timed`: false for a warm-up, whose time is
/// never used (a warm-up whose gate timed out is not timed again). `call` must outlive the run.
struct BatchSpec {
  const std::function<void(const void* in)>* call = nullptr;
  std::uint64_t bytes = 0;
  bool warm = false;
  int calls = 1;
  int launches = 0;
  bool timed = true;
};

/// Whether `next` may be enqueued behind its gate while `running` is in flight: both have a known
/// launch count and together (calls x launches, plus a gate and two events each) they fit in
/// kLaunchQueueDepth. Thread-safe.
bool may_overlap(const BatchSpec& running, const BatchSpec& next) noexcept;

/// One batch's outcome (run_batches). `us`: GPU time per call (events around the batch divided by
/// its calls) when gated, else host-inclusive time; `host_us` the host's enqueue time per call;
/// `calls` those of the attempt whose time was taken (fewer than asked for after a gate timed out);
/// `timed` false where no time was taken (a warm-up whose gate timed out). `spent`: its share of
/// the run's cost (the wall time from the previous batch's result to its own, retries included).
struct BatchResult {
  double us = 0;
  double host_us = 0;
  int calls = 0;
  bool timed = false;
  TimingSpent spent;
};

/// Runs `specs` in order on `stream`. With `gate` (GPU time) each batch is enqueued behind its own
/// gate slot, its start event, its calls, its stop event, and only then is the gate released; the
/// host enqueues the next batch behind the other slot while the GPU runs this one (where
/// may_overlap() allows, else after waiting for it) and reads the events of a batch once the next
/// is enqueued. Each batch's time is thus still the events around a batch held behind a gate until
/// fully enqueued; only the host's waiting moves. A timed batch whose gate timed out (the host
/// took longer than the gate's timeout to enqueue it) gives no time: once the others are done it
/// is timed again alone with half as many calls, at most three more times, and then GateTimeout is
/// thrown (at once for a batch of one call). Without `gate` (host-inclusive time) each batch is
/// enqueued back to back and waited for before the next. `stop`, where given, is asked after each
/// batch that gave a time (its index, its result): true ends the run there; a batch already
/// enqueued behind it still runs but gives no time (timed false), and later ones are not enqueued.
/// Errors: BackendError, GateTimeout; whatever a call throws (after its gate is released).
std::vector<BatchResult> run_batches(Backend& backend, StreamHandle stream, InputRegion& inputs,
                                     const std::vector<BatchSpec>& specs, Gate* gate,
                                     const std::function<bool(std::size_t, const BatchResult&)>& stop = {});

/// Times `call` (which enqueues one operation on `stream` reading `in`) with device events:
/// `batches` batches of `batch` back-to-back calls, each on the next input (InputRegion::next). With `gate`
/// each batch is enqueued behind it (GPU time); a batch whose gate timed out (the host took longer
/// than the gate's timeout to enqueue it) is timed again with half as many calls, at most three
/// times, and then GateTimeout is thrown (at once for a batch of one call): a time is never taken
/// from a batch whose gate was released late. Without `gate`: back to back from the host (host-inclusive time).
/// One batch at a time (run_batches with the launch count unknown). Errors: BackendError, GateTimeout.
BatchTimes time_batches(Backend& backend, StreamHandle stream, InputRegion& inputs, std::uint64_t bytes, bool warm,
                        int batch, int batches, const std::function<void(const void* in)>& call, Gate* gate = nullptr);

/// The bytes a cold-cache rotation region spans for inputs of up to `max_input_bytes`: that plus
/// 5x the last-level cache (last_level_cache_bytes: the L2 on NVIDIA, the 256 MiB Infinity Cache
/// on gfx942/gfx950, whose reported L2 is 4 MB), rounded up to 1 MiB, plus 1 MiB of slack.
/// Whatever sizes are asked for, consecutive calls then read inputs the cache no longer holds.
std::uint64_t rotation_region_bytes(const DeviceInfo& device, std::uint64_t max_input_bytes);

/// The largest element count of `dtype` that measurements can take on `device`: its memory less
/// 5x the last-level cache (the rotation region) and 1 GiB of slack for workspaces and the runtime.
std::uint64_t max_input_elements(const DeviceInfo& device, DType dtype);

/// Why `n` elements of `dtype` cannot be measured on `device` (n > max_input_elements: the input,
/// 5x L2 of rotation and 1 GiB of slack must fit), as a message naming the size and the device;
/// empty when it fits. The tuner and the bench throw it as their own error type.
std::string fit_error(const DeviceInfo& device, DType dtype, std::uint64_t n);

/// Calls per batch so that a batch of calls of `per_call_us` lasts protocol.batch_target_us.
int batch_size(const TimingProtocol& protocol, double per_call_us);

}  // namespace amax::tune
