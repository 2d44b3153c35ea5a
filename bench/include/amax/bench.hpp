#pragma once
// `amax-tune bench`: every contender measured side by side in one process with one timing
// protocol (the tuner's: device events, batches of back-to-back calls, median of interleaved
// rounds; in the cold regime every call reads the next 512-byte-aligned address after the previous
// call's input, walking over the largest input plus 5x the L2: measure.hpp InputRegion::next), each
// contender's result first checked bit for bit against the CPU reference on the same inputs.
// Contenders: amax-tune (the tuned dispatch through the public API), TransformerEngine's three
// launch sequences (te_contenders.hpp), CUB (NVIDIA builds with nvcc), the streaming read (the
// bandwidth ceiling) and an empty launch (the latency floor); and TE's three-launch amax -> scale
// step (kTeScaleStep) against amax-tune's fused amax_and_scale (kAmaxTuneScale). torch is measured from
// Python only (python/bench/bench_torch.py), not here.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/measure.hpp"

namespace amax::bench {

/// The options both benches take (BenchOptions, MultiBenchOptions).
struct BenchCommonOptions {
  std::string user_db;                  ///< the tuned dispatch's user DB ("" = library default)
  std::string system_db;                ///< its system DB ("" = library default)
  int device = 0;
  int rounds = 15;                      ///< interleaved timed batches per contender
  std::filesystem::path out_dir = "amax-tune-bench";  ///< where the CSV (and the bench's report, plots) go
  bool progress = true;                 ///< progress lines on stderr
};

/// What to measure.
struct BenchOptions : BenchCommonOptions {
  std::vector<DType> dtypes{DType::fp32, DType::fp16, DType::bf16};
  std::vector<std::uint64_t> sizes;     ///< elements; default 2^10 .. 2^30 by powers of two
  bool cold = true, warm = true;        ///< regimes
};

/// Contender names as they appear in rows, the CSV and the tables.
inline constexpr const char* kAmaxTune = "amax-tune";
inline constexpr const char* kStreamRead = "stream read";
inline constexpr const char* kEmptyLaunch = "empty launch";
inline constexpr const char* kCub = "CUB";
/// TE's three-launch amax -> scale step of FP8 current scaling (zero kernel, amax kernel,
/// compute_scale_from_amax kernel; e4m3, epsilon 0): the baseline of the fused amax + scale of
/// DESIGN.md section 6. Not an amax-only contender: the speedup plot and the targets leave it out.
inline constexpr const char* kTeScaleStep = "TE amax+scale (3 launches)";
/// amax-tune's amax_and_scale (e4m3, epsilon 0): amax, scale and scale_inv in the reduction's
/// launch; compared with kTeScaleStep only (the fused-scale targets, DESIGN.md section 7).
inline constexpr const char* kAmaxTuneScale = "amax-tune amax+scale";

/// What one contender measured on one workload (the rows of both benches).
struct Measurement {
  std::string contender;  ///< the contender's name (kAmaxTune, ..., or bench_multi.hpp's)
  tune::Stats stats;      ///< GPU time per call (batches behind the timing gate): what targets judge
  std::string detail;     ///< the variant label (amax-tune), what the contender runs, or empty
  tune::Stats host_inclusive;  ///< per call back to back from the host, without the gate
  /// The host's enqueue cost per call, us (CPU clock around the enqueue of the gated batches; for
  /// the eager multi-tensor calls this includes validating and packing a list not served prepared).
  double host_us = 0;
};

/// One measurement of `amax-tune bench`: contender is kAmaxTune, contender_name(TeSequence),
/// kTeScaleStep, kAmaxTuneScale, kCub, kStreamRead or kEmptyLaunch.
struct Row : Measurement {
  DType dtype{};
  bool warm = false;
  std::uint64_t n = 0;
  double gbps() const;    ///< bytes of the input / GPU median, GB/s
};

/// One target of DESIGN.md section 7 (or of the multi-tensor issue) and how it fared.
struct TargetCheck {
  std::string target;    ///< what DESIGN.md asks
  std::string measured;  ///< the number measured here
  bool met = false;
  bool measured_ok = true;  ///< false when it could not be measured here (e.g. torch)
};

/// A whole bench run: the device, the timing protocol in words, the rows in timing order, the
/// targets and the wall time in seconds.
template <class R>
struct Report {
  DeviceInfo device;
  std::string protocol;
  std::vector<R> rows;
  std::vector<TargetCheck> targets;
  double wall_s = 0;
};

/// A run of `amax-tune bench`.
struct BenchReport : Report<Row> {};

/// Runs the bench and writes out_dir/bench.csv (write_csv). Before timing a (dtype, n), every
/// contender that produces a result runs once on the first input slice and its fp32 bits must
/// equal the CPU reference's (the inputs are finite, so TE's NaN-skipping max agrees).
/// Errors: std::runtime_error (no device; a contender's result differs from the reference, naming
/// the contender, dtype, n and both bit patterns), BackendError, CompileError.
BenchReport run_bench(const BenchOptions& options);

/// The targets of DESIGN.md section 7 evaluated in GPU time on the cold-regime rows of `rows`
/// (sizes in bytes of the input, KiB/MiB = 2^10/2^20): >= 256 MiB at >= 99% of the streaming read;
/// 256 KiB - 16 MiB at >= 1.15x TE's fastest sequence at each size (geometric mean, every dtype);
/// 4-256 MiB within 1.10x and 256 KiB - 4 MiB within 1.25x of the streaming read; below 256 KiB
/// at most the streaming read + 1.0 us; no size where a TE contender or CUB is faster; the fused
/// amax + scale within 0.2 us of amax alone; torch (not measured here). Targets without rows to
/// judge them are left out, except torch. Thread-safe.
std::vector<TargetCheck> check_targets(const std::vector<Row>& rows);

/// Writes `rows` as CSV with the header
/// device,arch,regime,dtype,n,bytes,contender,variant,median_us,spread_us,samples,gbps,pct_of_stream_read,
/// host_inclusive_us,host_us
/// (text fields quoted; median_us, spread_us and gbps in GPU time; pct_of_stream_read: the same key's
/// streaming-read GPU time / this GPU time x 100, empty when the key has no streaming read;
/// host_inclusive_us: the median back to back from the host; host_us: the enqueue cost per call). Errors: std::runtime_error when the file cannot be
/// written.
void write_csv(const std::vector<Row>& rows, const DeviceInfo& device, const std::filesystem::path& path);

/// Renders the plots of a bench.csv into `out_dir` with the plot script (amax-tune-plot: next to
/// the running executable when installed, else the source tree's scripts/amax-tune-plot) and the
/// first of `python3` on PATH and /usr/bin/python3 that has matplotlib. Returns the files written,
/// or an empty list and, in `why`, what is missing and the command to run by hand. Never throws.
std::vector<std::filesystem::path> render_plots(const std::filesystem::path& csv, const std::filesystem::path& out_dir,
                                                std::string& why);

}  // namespace amax::bench
