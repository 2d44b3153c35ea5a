#pragma once
// `amax-tune bench-multi`: many tensors per call (DESIGN.md section 6) measured side by side with the
// bench's protocol (tuner's runner: device events, batches of back-to-back calls, median of
// interleaved rounds, every cold call the next 512-byte-aligned address over the largest group plus
// 5x the L2). A group is `tensors` tensors of `n` elements of one dtype, laid out one after another
// from the call's input address.
// Contenders: amax_multi_compute (eager: the list packed on every call, as a caller pays it); the same
// call captured once per input slice in a CUDA graph and replayed (the GPU time without the host's
// packing and launch calls); amax_multi_and_scale (e4m3); one amax_compute per tensor; TE's
// three-launch amax -> scale step per tensor (zero kernel, amax kernel, compute_scale_from_amax);
// the streaming read of the group's total bytes (the ceiling) and an empty launch. torch's
// _foreach_norm is measured from Python (python/bench/bench_torch.py).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "amax/bench.hpp"
#include "amax/workload.hpp"

namespace amax::bench {

/// One group shape: `tensors` x `n` elements of `dtype` (the tuner's GroupSpec). Text form `500x4096:fp32`.
using MultiGroupSpec = tune::GroupSpec;
/// The default groups: the targets (500 x 4096 fp32, 4096 x 16 Ki bf16), a small one
/// (64 x 4096 fp32) and groups of 64 MB and more (512 x 64 Ki, 64 x 1 Mi, 128 x 1 Mi, 8 x 16 Mi bf16).
std::vector<MultiGroupSpec> default_multi_groups();

inline constexpr const char* kMulti = "amax-tune multi";
inline constexpr const char* kMultiGraph = "amax-tune multi (CUDA graph)";
inline constexpr const char* kMultiScale = "amax-tune multi amax+scale";
inline constexpr const char* kPerTensor = "amax-tune per tensor";
inline constexpr const char* kTeStepPerTensor = "TE amax+scale per tensor (3 launches)";
/// The contenders of every group, in the order they are timed and listed.
inline constexpr const char* kMultiContenders[] = {kMulti, kMultiGraph, kMultiScale, kPerTensor, kTeStepPerTensor,
                                                   kStreamRead, kEmptyLaunch};

/// What `bench-multi` measures: its groups, and the options both benches take.
struct MultiBenchOptions : BenchCommonOptions {
  std::vector<MultiGroupSpec> groups = default_multi_groups();
};

/// One measurement of `bench-multi`: contender is one of kMultiContenders.
struct MultiRow : Measurement {
  MultiGroupSpec group;
};

/// One target of the multi-tensor issue and how it fared.
using MultiTarget = TargetCheck;

/// A run of `bench-multi`.
struct MultiBenchReport : Report<MultiRow> {
  /// The row of `contender` for group `g`, nullptr when absent.
  const MultiRow* find(const MultiGroupSpec& g, std::string_view contender) const;
};

/// Runs the bench: before timing a group, amax_multi_compute, amax_multi_and_scale and the per-tensor
/// calls run once on the first slice and every tensor's bits (amax; scale and scale_inv for the
/// fused call, by the CPU rule) must equal the CPU reference's (else std::runtime_error naming the
/// contender, group, tensor and both bit patterns). Writes out_dir/bench_multi.csv.
/// Errors: std::runtime_error (no device, a wrong result), BackendError.
MultiBenchReport run_bench_multi(const MultiBenchOptions& options);

/// The targets on `rows` (the eager amax_multi_compute, kMulti): 500 x 4096 fp32 <= 25 us;
/// 4096 x 16 Ki bf16 <= 60 us; groups of 64 MB (10^6 bytes) or more at >= 85% of the streaming read
/// of their bytes (the worst decides). A target whose group is not in `rows` is left out.
/// torch's foreach is listed as measured from Python.
std::vector<MultiTarget> check_multi_targets(const std::vector<MultiRow>& rows);

}  // namespace amax::bench
