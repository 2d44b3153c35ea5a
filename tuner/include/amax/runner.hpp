#pragma once
// The timing runner (DESIGN.md section 5): how one call is measured, for the tuner and the bench
// alike. A call is probed for its batch size, warmed up, then timed in batches of back-to-back
// calls between device events, each call on the next rotated input slice.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/launch.hpp"
#include "amax/measure.hpp"

namespace amax::tune {

/// One thing to time: `call` enqueues one operation on the runner's stream reading the device
/// pointer it is given; `batch` is its calls per batch, 0 until the runner probed it.
struct Timed {
  std::function<void(const void* in)> call;
  int batch = 0;
};

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

/// Measures calls on one stream over one input region with one protocol. Not thread-safe (one
/// stream, one rotation cursor); the backend, stream and region must outlive it.
class Runner {
 public:
  Runner(Backend& backend, StreamHandle stream, InputRegion& inputs, TimingProtocol protocol)
      : b_(backend), stream_(stream), inputs_(inputs), protocol_(protocol) {}

  /// Finds t.batch when it is 0 (two one-call batches; the second's per-call time decides, through
  /// batch_size()), then runs protocol.warmup_batches untimed batches when `warm_up`.
  /// `bytes`: the input size of one call. Errors: BackendError.
  void prepare(Timed& t, std::uint64_t bytes, bool warm_up = true);

  /// Per-call time of each of `batches` batches of t.batch calls, microseconds (prepare() first).
  /// Errors: BackendError.
  std::vector<double> measure(const Timed& t, std::uint64_t bytes, int batches);

  /// Prepares every entry (in order), then runs `rounds` rounds, each timing one batch of every
  /// entry in `order`, so that drift affects all alike. Returns each entry's per-call times
  /// (microseconds), one per round, in round order. Errors: BackendError.
  std::vector<std::vector<double>> interleaved(std::vector<Timed>& entries, std::uint64_t bytes, int rounds,
                                               InterleaveOrder order = {});

  const TimingProtocol& protocol() const noexcept { return protocol_; }
  /// The protocol as recorded with every measurement (TimingProtocol::describe()).
  std::string describe() const { return protocol_.describe(); }

 private:
  Backend& b_;
  StreamHandle stream_;
  InputRegion& inputs_;
  TimingProtocol protocol_;
};

}  // namespace amax::tune
