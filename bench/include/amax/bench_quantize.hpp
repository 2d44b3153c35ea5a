#pragma once
// `amax-tune bench --quantize`: FP8 current scaling's quantize (DESIGN.md section 9) measured side by
// side with the bench's protocol (GPU time behind the gate and host-inclusive, median of interleaved
// rounds; cold: every call reads the next 512-byte-aligned input over the largest input plus 5x the
// L2; the FP8 output is one buffer every call writes), every contender's FP8 bytes, and its amax,
// scale and scale_inv where it writes them, first checked bit for bit against the CPU reference
// (amax/fp8_cast.hpp, TransformerEngine's rule) on the first input slice.
// Contenders: TransformerEngine's current-scaling sequence (kTeQuantize: zero kernel, amax kernel,
// compute_scale_from_amax kernel, its FP8 cast kernel; te_contenders.hpp); amax_quantize, the runtime
// call (its dispatched variant named per size); and, as fixed variants, amax-tune's two-launch path
// (amax_and_scale, then the quantize family's cast kernel reading the scale on the device) and its
// one-launch kernels (keep: tiles in registers across a grid barrier; reread: the input read again
// after it), cooperative launches of kernels rendered from templates/amax_quantize_kernels.h; and
// the floor: the same cast kernel with a scale computed beforehand (one read of the input, one
// write of the bytes, no amax). torch's eager quantize is measured from Python
// (python/bench/bench_quantize.py).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "amax/bench.hpp"
#include "amax/quantize_config.hpp"
#include "amax/scale_rule.hpp"

namespace amax::bench {

/// amax_quantize through the C++ API (Context::quantize): the tuned dispatch, what a user runs; the
/// targets judge it where it is measured.
inline constexpr const char* kQuantApi = "amax-tune quantize";
inline constexpr const char* kQuantTwoLaunch = "amax-tune two-launch";
inline constexpr const char* kQuantKeep = "amax-tune one-launch (keep)";
inline constexpr const char* kQuantReread = "amax-tune one-launch (reread)";
inline constexpr const char* kQuantFloor = "floor (cast, known scale)";
/// amax-tune's fixed-variant contenders: without kQuantApi rows the targets judge the fastest of
/// them at each size.
inline constexpr const char* kQuantAmaxTune[] = {kQuantTwoLaunch, kQuantKeep, kQuantReread};

/// What `bench --quantize` measures: dtypes x formats (TE's cast contender has e4m3 and e5m2) x sizes
/// in the chosen regimes, and the options both benches take.
struct QuantizeBenchOptions : BenchCommonOptions {
  std::vector<DType> dtypes{DType::bf16, DType::fp16, DType::fp32};
  std::vector<Fp8Format> formats{Fp8Format::e4m3};
  std::vector<std::uint64_t> sizes;  ///< elements; default 2^10 .. 2^30 by powers of two
  bool cold = true, warm = false;
};

/// The variants amax-tune's contenders run for `dtype` (16-byte loads): the cast kernel of the
/// two-launch path and of the floor, and the keep and reread one-launch kernels. Pure.
struct QuantizeVariants {
  QuantizeConfig cast, keep, reread;
};
QuantizeVariants quantize_bench_variants(DType dtype);

/// One measurement of `bench --quantize`: contender is kTeQuantize, kQuantApi, one of kQuantAmaxTune
/// or kQuantFloor; detail names the variant(s) and the grid.
struct QuantizeRow : Measurement {
  DType dtype{};
  Fp8Format format{};
  bool warm = false;
  std::uint64_t n = 0;
  std::uint64_t input_bytes() const { return n * info(dtype).bytes; }
};

/// A run of `bench --quantize`.
struct QuantizeBenchReport : Report<QuantizeRow> {};

/// Runs the bench and writes out_dir/bench_quantize.csv (write_quantize_csv). Errors:
/// std::runtime_error (no device; TE's cast needs NVIDIA sm_89+; a contender whose amax, scale,
/// scale_inv or an FP8 byte differs from the CPU reference, naming it, the dtype, n and both
/// values), BackendError, CompileError.
QuantizeBenchReport run_bench_quantize(const QuantizeBenchOptions& options);

/// The quantize targets (DESIGN.md section 7) in GPU time on the cold bf16 -> e4m3 rows of `rows` ("amax-tune" is
/// kQuantApi where a size has its row, else the fastest of kQuantAmaxTune; input sizes in bytes, KiB/MiB = 2^10/2^20):
/// >= 1.6x kTeQuantize in geometric mean over 256 KiB - 32 MiB; never slower than kTeQuantize; within kQuantFloor + 1.0
/// us up to 16 MiB. A target without rows to judge it is left out; torch and torchao are listed as measured from
/// Python. Thread-safe.
std::vector<TargetCheck> check_quantize_targets(const std::vector<QuantizeRow>& rows);

/// Writes `rows` as CSV with the header
/// device,arch,regime,dtype,format,n,input_bytes,contender,variant,median_us,spread_us,samples,
/// speedup_vs_te,gap_to_floor_us,host_inclusive_us,host_us
/// (GPU times in us; speedup_vs_te: the key's kTeQuantize time / this time; gap_to_floor_us: this
/// time - the key's kQuantFloor time; both empty where the key lacks that row). Errors:
/// std::runtime_error when the file cannot be written.
void write_quantize_csv(const std::vector<QuantizeRow>& rows, const DeviceInfo& device,
                        const std::filesystem::path& path);

/// The Markdown report of a run: the device and protocol, the contenders, the targets (met or
/// missed) and one table per (regime, dtype, format): per size each contender's GPU time, the
/// amax-tune contenders' speedup over TE, the judged one's (as check_quantize_targets) gap to the
/// floor, host-inclusive times and the variants. `command`: the command line it names. Thread-safe.
std::string quantize_report_markdown(const QuantizeBenchReport& report, std::string_view command);

}  // namespace amax::bench
