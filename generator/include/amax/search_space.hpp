#pragma once
// The variant space for one (arch, dtype): the full space and the pruned default the tuner
// searches, both enumerable, plus the fixed configurations of TransformerEngine that benchmarks
// and summaries compare against.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"

namespace amax {

/// Which part of the space to enumerate.
enum class SpaceKind { pruned, full };

/// Every valid config of the space for `arch` and `dtype`, in a stable order (strategy, threads,
/// nvec, unroll, max_blocks). Every returned config passes KernelConfig::validate; recorded
/// exclusions (below) are left out.
///
/// full: every strategy the arch runs (strategy_unsupported_reason); threads = each power of two
/// from the wave size to the block limit; nvec = each power of two up to 16 bytes; unroll 1, 2, 4,
/// 8; max blocks 1, 2, 4, 8, 16, 32 per CU or uncapped.
/// pruned (the tuner's default): threads 128-1024, 16-byte vectors only (the widest load is the one
/// that reaches bandwidth on both vendors), unroll 1, 2, 4, 8; max blocks 2, 4, 8, 16 per CU or
/// uncapped; narrowed per strategy by its row of kStrategies (in_pruned, pruned_min_threads,
/// pruned_max_unroll, pruned_caps). The counts per arch: SearchSpace.PrunedSpaceSizes and
/// docs/tuning.md.
/// Thread-safe (pure).
std::vector<KernelConfig> enumerate_space(const ArchInfo& arch, DType dtype, SpaceKind kind);

/// The largest grid, in blocks per CU, of the self_reset variant that fused_variant runs for an atomic table
/// choice: self_reset of one shape slows with its grid cap at large sizes, and where atomic won a key
/// the fastest self_reset trial was a 4-per-CU one, just behind the atomic winner (two default tunes
/// on the H200: docs/results/2026-12-03/fused-self-reset-grid.txt).
inline constexpr std::uint32_t kFusedSelfResetBlocksPerCu = 4;

/// The least unroll of the self_reset variant that fused_variant runs for an atomic table choice
/// without a per-CU grid cap (uncapped or absolute: the shape of one tile per block that wins at the
/// largest sizes). Capped at kFusedSelfResetBlocksPerCu it becomes a grid-stride loop, which keeps
/// the read rate with more loads in flight per thread (on the H200 unroll 8 took about 3% less than
/// the winner's unroll 4 at 2^28-2^30 fp32 elements: docs/results/2026-12-03-exact-tiles.md).
inline constexpr std::uint32_t kFusedSelfResetUnroll = 8;

/// The variant amax_and_scale runs on `arch` for `dtype` where amax_compute's table (a tuned winner or the
/// built-in default) chooses `amax_only`: the same variant with the scale epilogue, except that `atomic`
/// becomes `self_reset` of the same threads, nvec and unroll (an uncapped or absolute atomic: unroll at
/// least kFusedSelfResetUnroll), its grid cap lowered to
/// kFusedSelfResetBlocksPerCu blocks per CU where it allows more (an uncapped or absolute cap included), when
/// that self_reset variant is in the pruned space of (arch, dtype) (so that the JIT tests compile it and
/// check its resources; elsewhere atomic is kept); `first_reset` and `first_reset_warp`, which have no scale epilogue
/// (KernelConfig::validate), become that self_reset variant always, its grid cap raised to
/// kFusedSelfResetBlocksPerCu where a smaller one is not in the pruned self_reset space. With the epilogue, atomic already counts its blocks on the
/// stream slot to find the last one (the template's atomic branch); self_reset is that kernel with each
/// block's atomic max going into the slot's accumulator instead of the memset-zeroed output, so the mapping
/// drops the memset launch (atomic: 2 launches, self_reset: 1); the rest of the kernel's work is the same
/// (one atomic max and one arrival count per block). Why: the tables hold amax-only winners, and where one is
/// atomic the memset is the largest cost the epilogue adds (on the H200 the fused call run as self_reset
/// took less than the amax-only atomic winner at bf16 2^21); at large sizes the same-grid self_reset cost
/// up to 2.7 us more than the amax-only call, hence the grid cap (docs/results/2026-12-02.md). Forced
/// variants (AMAX_TUNE_FORCE_LABEL, AMAX_TUNE_FORCE_STRATEGY, NVTE_USE_ATOMIC_AMAX) are not mapped: the
/// caller runs them as forced. Thread-safe.
KernelConfig fused_variant(const KernelConfig& amax_only, const ArchInfo& arch, DType dtype);

/// A kernel that leaves an AMD arch's space because it spills or cannot hold one block per CU
/// there, as the whole-space compile test (tests/jit, WholePrunedSpace...) measured it.
/// target: a processor ("gfx942": every target ID of it) or a full target ID ("gfx942:xnack+").
struct RecordedExclusion {
  std::string_view target;
  DType dtype;
  std::string_view kernel_label;  ///< KernelConfig::kernel_label(): every grid cap of it leaves
  std::string_view reason;        ///< what the code object showed, e.g. "spills 4 registers"
  std::string_view measured_with; ///< "hipRTC 6.4.43484 (comgr 3.0, LLVM 21)"
};

/// The entry of `table` that takes `c` out of the space of `arch` and `dtype`, as
/// "excluded on TARGET: REASON (measured with ...)", or nullopt. Pure, thread-safe.
std::optional<std::string> exclusion_in(std::span<const RecordedExclusion> table, const ArchInfo& arch,
                                        DType dtype, const KernelConfig& c);
/// exclusion_in() over the built-in table (generator/src/amd_exclusions.cpp).
std::optional<std::string> recorded_exclusion(const ArchInfo& arch, DType dtype, const KernelConfig& c);

/// The configs of the space that recorded exclusions took out, with the reason of each, in the
/// order of enumerate_space. `amax-tune emit --list` prints them.
std::vector<std::pair<KernelConfig, std::string>> space_exclusions(const ArchInfo& arch, DType dtype,
                                                                   SpaceKind kind);

/// What `kind`'s space leaves out on `arch` for a reason of the arch or of the space rather than
/// per variant, one sentence each (a strategy out of the pruned space by its row's in_pruned, or
/// one the arch does not run). `amax-tune emit --list` prints them. Pure, thread-safe.
std::vector<std::string> space_notes(const ArchInfo& arch, SpaceKind kind);

/// The distinct compile-time configs (max_blocks dropped) of `configs`, first occurrence order.
std::vector<KernelConfig> distinct_kernels(const std::vector<KernelConfig>& configs);

/// TransformerEngine's fixed amax configuration: 512 threads, 32 bytes per thread per iteration
/// (one 16-byte vector, unroll 2), a grid capped at 65535 blocks; `strategy` atomic is its
/// original kernel, two_stage the ROCm variant with the same first stage.
KernelConfig transformer_engine_config(DType dtype, Strategy strategy);

/// The built-in default per arch family, used when no table has an entry (the one place this
/// choice is made). NVIDIA: up to 2^21 elements one_pass, 512 threads, 16-byte loads, unroll 2,
/// uncapped (one launch; one_pass won every size up to 2^21 on the H200); above, atomic, 512
/// threads, unroll 4, uncapped (the H200 winners from 2^22 up). AMD, every size: ROCm
/// TransformerEngine's shipped kernel, `two_stage.t512.v<16 bytes>.u2.b65535`
/// (transformer_engine_config(dtype, two_stage)), until a tuned database exists.
KernelConfig builtin_default(const ArchInfo& arch, DType dtype, std::uint64_t n);

/// The variant that replaces `chosen` for a call on n elements when chosen fails to compile (the
/// compile fallback): builtin_default with chosen's epilogue, but never one that needs more
/// workspace than chosen on a device of `cu_count` CUs/SMs (a workspace-free choice falls back to
/// the default's shape with the atomic strategy, which needs none), so that the workspace a call
/// reports is what its chosen variant needs. Pure, thread-safe.
KernelConfig compile_fallback(const KernelConfig& chosen, const ArchInfo& arch, DType dtype, std::uint64_t n,
                              std::uint32_t cu_count);

/// Where builtin_default(arch, ...) comes from, in words with its source (for amax_explain and
/// `amax-tune show`).
std::string builtin_default_source(const ArchInfo& arch);

}  // namespace amax
