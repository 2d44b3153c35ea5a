#pragma once
// `amax-tune bench`: every contender measured side by side in one process with one timing
// protocol (the tuner's: device events, batches of back-to-back calls, median of interleaved
// rounds, inputs rotated over more than 4x the L2 in the cold regime).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/measure.hpp"

namespace amax::bench {

/// What to measure.
struct BenchOptions {
  std::vector<DType> dtypes{DType::fp32, DType::fp16, DType::bf16};
  std::vector<std::uint64_t> sizes;     ///< elements; default 2^10 .. 2^30 by powers of two
  bool cold = true, warm = true;        ///< regimes
  std::string user_db;                  ///< the tuned dispatch's user DB ("" = library default)
  std::string system_db;                ///< its system DB ("" = library default)
  int device = 0;
  int rounds = 15;                      ///< interleaved timed batches per contender
  std::filesystem::path out_dir = "amax-tune-bench";  ///< bench.csv, bench.svg, bench.md
  bool progress = true;
};

/// One measurement.
struct Row {
  DType dtype{};
  bool warm = false;
  std::uint64_t n = 0;
  std::string contender;  ///< "amax-tune", "TE atomic", "TE two_stage", "CUB", "stream read", "empty launch"
  tune::Stats stats;
  std::string detail;     ///< the variant label (amax-tune, TE) or empty
  double gbps() const;    ///< bytes of the input / median, GB/s
};

/// One target of DESIGN.md section 6 and how it fared.
struct TargetCheck {
  std::string target;    ///< what DESIGN.md asks
  std::string measured;  ///< the number measured here
  bool met = false;
  bool measured_ok = true;  ///< false when it could not be measured here (e.g. torch)
};

struct BenchReport {
  DeviceInfo device;
  std::string protocol;
  std::vector<Row> rows;
  std::vector<TargetCheck> targets;
  double wall_s = 0;
};

/// Runs the bench and writes out_dir/bench.csv, bench.svg (GB/s against size, log axes, one line
/// per contender, one panel per dtype and regime) and bench.md (tables + targets).
/// Errors: std::runtime_error (no device), BackendError, CompileError.
BenchReport run_bench(const BenchOptions& options);

/// The targets of DESIGN.md section 6 evaluated on the cold-regime rows of `rows`.
std::vector<TargetCheck> check_targets(const std::vector<Row>& rows);

/// Writes the SVG plot of `rows`. Thread-safe.
void write_svg(const std::vector<Row>& rows, const DeviceInfo& device, const std::filesystem::path& path);

}  // namespace amax::bench
