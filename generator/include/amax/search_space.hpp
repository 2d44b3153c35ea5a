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
/// full: threads = each power of two from the wave size to the block limit; nvec = each power of
/// two up to 16 bytes; unroll 1, 2, 4, 8; max blocks 1, 2, 4, 8, 16, 32 per CU or uncapped.
/// pruned (the tuner's default): threads 128-1024, 16-byte vectors only (the widest load is the one
/// that reaches bandwidth on both vendors), unroll 1, 2, 4, 8; max blocks 2, 4, 8, 16 per CU or
/// uncapped; for self_reset only threads 256-1024 and max blocks 4, 8, 16 per CU or uncapped
/// (48 variants: it serves the launch-bound sizes). On the H200 this is 288 variants per dtype
/// from 60 compiled sources.
/// Thread-safe (pure).
std::vector<KernelConfig> enumerate_space(const ArchInfo& arch, DType dtype, SpaceKind kind);

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

/// The distinct compile-time configs (max_blocks dropped) of `configs`, first occurrence order.
std::vector<KernelConfig> distinct_kernels(const std::vector<KernelConfig>& configs);

/// TransformerEngine's fixed amax configuration: 512 threads, 32 bytes per thread per iteration
/// (one 16-byte vector, unroll 2), a grid capped at 65535 blocks; `strategy` atomic is its
/// original kernel, two_stage the ROCm variant with the same first stage.
KernelConfig transformer_engine_config(DType dtype, Strategy strategy);

}  // namespace amax
