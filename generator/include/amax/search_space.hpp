#pragma once
// The variant space for one (arch, dtype): the full space and the pruned default the tuner
// searches, both enumerable, plus the fixed configurations of TransformerEngine that benchmarks
// and summaries compare against.
#include <vector>

#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"

namespace amax {

/// Which part of the space to enumerate.
enum class SpaceKind { pruned, full };

/// Every valid config of the space for `arch` and `dtype`, in a stable order (strategy, threads,
/// nvec, unroll, max_blocks). Every returned config passes KernelConfig::validate.
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

/// The distinct compile-time configs (max_blocks dropped) of `configs`, first occurrence order.
std::vector<KernelConfig> distinct_kernels(const std::vector<KernelConfig>& configs);

/// TransformerEngine's fixed amax configuration: 512 threads, 32 bytes per thread per iteration
/// (one 16-byte vector, unroll 2), a grid capped at 65535 blocks; `strategy` atomic is its
/// original kernel, two_stage the ROCm variant with the same first stage.
KernelConfig transformer_engine_config(DType dtype, Strategy strategy);

}  // namespace amax
