#pragma once
// Measurement on the GPU: the timing protocol (DESIGN.md section 5) and bit-exact verification
// of many variants at once. Used by the tuner and by `amax-tune bench`.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/kernels.hpp"

namespace amax::tune {

/// How times are taken. Defaults are the tuner's; every field is recorded in the DB's
/// timing_protocol column through describe().
struct TimingProtocol {
  double batch_target_us = 200;  ///< a batch of back-to-back calls lasts at least this long
  int max_batch = 200;           ///< at most this many calls per batch (tiny sizes)
  int warmup_batches = 1;        ///< untimed batches first (module load, clocks, TLB)
  int screen_batches = 3;        ///< batches per variant in the screening pass
  int final_rounds = 15;         ///< interleaved rounds (one batch per finalist each) of the final pass
  int finalists = 6;             ///< fastest screened variants re-timed in the final pass
  double early_stop = 1.5;       ///< screening stops a variant after one batch slower than this x best
  bool warm_cache = false;       ///< true: the same input every call (warm L2); false: rotate
  /// "events; batches>=200us (<=200 calls); warmup 1; screen 3; final 15 rounds x 6; rotate 5xL2"
  std::string describe() const;
};

/// Robust statistics of per-call times of several batches, microseconds.
struct Stats {
  double median_us = 0;
  double spread_us = 0;  ///< interquartile range p75 - p25 of the batch times
  int samples = 0;       ///< batches
  static Stats of(std::vector<double> per_call_us);
};

/// Device memory the measurements read: a region of random data whose every 16-bit half has the
/// exponent's top bit clear, so every element of every dtype is finite with |x| < 2 (never zero
/// everywhere, never NaN/Inf). Timing rotates through slices of it so that no call finds its
/// input in the L2 (the region is the largest input plus 5x the L2); verification plants values
/// it knows into slice 0. Not thread-safe: one user at a time.
class InputRegion {
 public:
  /// Allocates and fills max_input_bytes + 5 x l2 bytes (rounded up to 1 MiB) plus slack.
  /// Errors: BackendError (out of memory).
  InputRegion(Backend& backend, std::uint64_t max_input_bytes);
  ~InputRegion();
  InputRegion(const InputRegion&) = delete;
  InputRegion& operator=(const InputRegion&) = delete;
  /// The next slice of `bytes` in rotation (element aligned at `align` bytes); with `warm` always
  /// the first.
  const void* next(std::uint64_t bytes, bool warm);
  void* base() const noexcept { return base_; }
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  Backend& b_;
  void* base_ = nullptr;
  std::uint64_t bytes_ = 0;
  std::uint64_t cursor_ = 0;
};

/// Times `call` (which enqueues one operation on `stream` reading `in`) with device events:
/// `batches` batches of `batch` back-to-back calls, each on the next rotated input. Returns the
/// per-call time of each batch, microseconds. Errors: BackendError.
std::vector<double> time_batches(Backend& backend, StreamHandle stream, InputRegion& inputs, std::uint64_t bytes,
                                 bool warm, int batch, int batches,
                                 const std::function<void(const void* in)>& call);

/// The largest element count of `dtype` that measurements can take on `device`: its memory less
/// 5x the L2 (the rotation region) and 1 GiB of slack for workspaces and the runtime.
std::uint64_t max_input_elements(const DeviceInfo& device, DType dtype);

/// Calls per batch so that a batch of calls of `per_call_us` lasts protocol.batch_target_us.
int batch_size(const TimingProtocol& protocol, double per_call_us);

/// Launches many variants on the same input and returns each result's bits.
/// Outputs are pre-filled with a garbage pattern that differs per call, workspace holds
/// arbitrary bytes; one synchronisation per call of run().
class Verifier {
 public:
  Verifier(Backend& backend, StreamHandle stream, std::size_t max_variants, std::uint64_t max_workspace_bytes);
  ~Verifier();
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;
  /// Result bits of every kernel on `n` elements at device pointer `in`. A launch that fails
  /// throws BackendError naming the call. Also checks that the one_pass counter is 0 after.
  std::vector<std::uint32_t> run(const std::vector<const LoadedKernel*>& kernels,
                                 const std::vector<KernelConfig>& configs, const void* in, std::uint64_t n,
                                 NanMode mode);
  std::uint32_t* counter() const noexcept { return counter_; }

 private:
  Backend& b_;
  StreamHandle stream_;
  std::size_t max_variants_;
  std::uint64_t max_workspace_;
  float* outputs_ = nullptr;
  void* workspace_ = nullptr;
  std::uint32_t* counter_ = nullptr;
  std::uint32_t calls_ = 0;
};

}  // namespace amax::tune
