#pragma once
// The multi-tensor kernel family (DESIGN.md section 6, "Many tensors per launch"): one launch
// computes the amax (and, fused, scale and scale_inv) of each of many tensors of one dtype.
// MultiConfig is one variant; its fields are listed once in MultiConfig::fields(), from which its
// label, label parsing, the rendered #defines and the compile-time/launch-time split derive (the
// grid cap is the one launch-time field). Kernel source: templates/amax_multi_kernels.h.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/search_space.hpp"

namespace amax {

/// How the segments of a tensor cut between blocks are combined into its amax, by the block of
/// the launch that arrives last (a tensor inside one block's range is written by that block):
/// - thread: one thread per spanning tensor, the block's threads in parallel (many tensors of few
///   segments each);
/// - warp: one wave per spanning tensor, its lanes reading the segment maxima in parallel (few
///   tensors of many segments each).
enum class Combine : std::uint8_t { thread = 0, warp = 1 };

/// Static facts about one Combine.
using CombineInfo = EnumInfo<Combine>;
/// Every combine, in enum order: labels, parsing, the rendered defines and the space derive from it.
inline constexpr CombineInfo kCombines[] = {
    {Combine::thread, "thread", "AMAX_COMBINE_THREAD"},
    {Combine::warp, "warp", "AMAX_COMBINE_WARP"},
};
static_assert(detail::table_in_enum_order(kCombines),
              "kCombines must list every Combine in enum order");
constexpr const CombineInfo& info(Combine c) noexcept { return kCombines[static_cast<std::size_t>(c)]; }
constexpr const auto& enum_table(Combine) noexcept { return kCombines; }
std::string_view to_string(Combine c) noexcept;
std::optional<Combine> parse_combine(std::string_view s) noexcept;

/// One multi-tensor variant. Label: `multi.t512.v8.u4.c32k.b4cu.thread` (the family tag `multi`,
/// then every field in order; `.scale` at the end for the fused epilogue). The chunk size, the grid
/// cap and the combine are launch parameters: variants that differ only in them share one compiled
/// kernel.
struct MultiConfig {
  std::uint32_t threads = 512;    ///< threads per block, a multiple of the wave size
  std::uint32_t nvec = 4;         ///< elements per vector load; nvec * element bytes <= 16
  std::uint32_t unroll = 4;       ///< vector loads in flight per thread per iteration
  /// KiB per chunk, the unit blocks are given: a power of two in 4..4096. A launch parameter, not
  /// compiled in (the kernel reads its log2 from the flags word of its arguments).
  std::uint32_t chunk_kib = 32;
  /// Grid cap: each block reduces ceil(chunks / cap) consecutive chunks (`buncapped`: one chunk
  /// per block). A launch parameter, not compiled in.
  BlockCap max_blocks{};
  /// How a tensor cut between blocks is combined. A launch parameter, not compiled in (a bit of the
  /// flags word of the kernel's arguments).
  Combine combine = Combine::thread;
  Epilogue epilogue = Epilogue::amax;  ///< amax alone, or amax + scale + scale_inv per tensor

  auto operator<=>(const MultiConfig&) const = default;

  /// Descriptor of one field (variant_field.hpp).
  template <class M>
  using Field = VariantField<MultiConfig, M>;
  /// The field list: the one place the variant's fields are enumerated. Labels, parsing, the
  /// rendered #defines and the compile-time/launch-time split derive from it (label_codec.hpp).
  static constexpr auto fields() {
    return std::make_tuple(Field<std::uint32_t>{"threads", "t", "", "AMAX_THREADS", &MultiConfig::threads},
                           Field<std::uint32_t>{"nvec", "v", "", "AMAX_NVEC", &MultiConfig::nvec},
                           Field<std::uint32_t>{"unroll", "u", "", "AMAX_UNROLL", &MultiConfig::unroll},
                           Field<std::uint32_t>{"chunk_kib", "c", "k", "", &MultiConfig::chunk_kib},
                           Field<BlockCap>{"max_blocks", "b", "", "", &MultiConfig::max_blocks},
                           Field<Combine>{"combine", "", "", "", &MultiConfig::combine},
                           Field<Epilogue>{"epilogue", "", "", "AMAX_EPILOGUE", &MultiConfig::epilogue, true});
  }

  /// The family tag, the first token of every label.
  static constexpr std::string_view kFamily = "multi";
  /// Canonical label, e.g. `multi.t512.v8.u4.c32k.b4cu.thread` or `...thread.scale`.
  std::string label() const;
  /// The compile-time part of the label (the chunk size, grid cap and combine left out), e.g.
  /// `multi.t512.v8.u4` or `multi.t512.v8.u4.scale`: configs with equal kernel_label() share one
  /// compiled binary.
  std::string kernel_label() const;
  /// This config with the launch-time fields at their default (equal kernel_label() <=> equal part).
  MultiConfig compile_time_part() const;
  /// Parses a label. Errors: std::invalid_argument naming the label and the bad token.
  static MultiConfig parse(std::string_view label);
  /// True when `label` starts with the family tag (`multi.`): a multi-tensor label, not a
  /// single-tensor KernelConfig one.
  static bool is_multi_label(std::string_view label) noexcept;
  /// `#define AMAX_THREADS 512` etc.: one line per compile-time field, in field order.
  std::string compile_time_defines() const;
  /// Reason this config cannot run on `arch` for `dtype` (empty when valid).
  std::optional<std::string> validate(const ArchInfo& arch, DType dtype) const;
  /// Elements of `dtype` per chunk (chunk_kib KiB).
  std::uint64_t chunk_elems(DType dtype) const noexcept { return std::uint64_t{chunk_kib} * 1024 / info(dtype).bytes; }
};
static_assert(aggregate_arity<MultiConfig>() == std::tuple_size_v<decltype(MultiConfig::fields())>,
              "every MultiConfig member must be listed in MultiConfig::fields()");

/// Entry point of `c` for `dtype` compiled for `max_tensors` descriptors per launch:
/// `amax_multi_t512_v8_u4_bf16_k1600` (the kernel label, '.' -> '_').
std::string multi_kernel_name(const MultiConfig& c, DType dtype, std::uint32_t max_tensors);

/// Tensors per launch on `arch`: as many descriptors (20 bytes each: pointer, count with output
/// index, chunk start) as its kernel-parameter limit holds. NVIDIA sm_70 and newer: 32764 bytes
/// (CUDA 12.1 and newer, NVRTC and driver; what this project builds with) -> 1600 tensors; AMD
/// (HIP's limit on kernel arguments, 4 KiB) and NVIDIA before sm_70 (4 KiB) -> 192. Thread-safe.
std::uint32_t multi_max_tensors(const ArchInfo& arch) noexcept;
/// Descriptor capacities a variant is compiled for on `arch`, ascending: 192 (3.9 KB of kernel
/// parameters) and, where the arch allows more, 512 (10.3 KB) and multi_max_tensors(arch) (32 KB
/// for 1600). A launch uses the smallest that holds its tensors, so that a group does not send more
/// parameter bytes than it needs: on an H200 a launch cost 3.65 us with 16 bytes of parameters,
/// 3.93 us with 10 KB, 4.56 us at 16 KB and 6.35 us at 32 KB (scripts/probes/launch_params.cu,
/// docs/results/2026-12-02/probes-h200.txt).
std::vector<std::uint32_t> multi_capacities(const ArchInfo& arch);
/// The capacity a list of `tensors` tensors of one dtype is launched with on `arch`: the smallest
/// of multi_capacities(arch) that holds them, else the largest (several launches). Thread-safe.
std::uint32_t multi_capacity_for(const ArchInfo& arch, std::uint64_t tensors);
/// Largest element count of one tensor (the 40 bits of n in a descriptor): 2^40 - 1.
inline constexpr std::uint64_t kMultiMaxElements = (1ull << 40) - 1;
/// Largest number of tensors in one call (the 24 bits of the output index): 2^24 - 1.
inline constexpr std::uint64_t kMultiMaxTensors = (1ull << 24) - 1;

/// Bytes of the header of `amax_multi_args` (templates/amax_multi_kernels.h): count, spanning,
/// flags, chunks per block; the output, workspace and counter pointers; the scale epilogue's two
/// output pointers, max, epsilon and rule flags, and a reserved word.
inline constexpr std::size_t kMultiArgsHeaderBytes = 72;
/// The flags word of `amax_multi_args`: bit 0 the NaN mode (AMAX_FLAG_IGNORE_NAN), bit
/// kMultiCombineBit the combine's value (Combine), 8 bits from kMultiChunkShiftBit log2 of the
/// elements per chunk. Rendered into every source as AMAX_MULTI_COMBINE_BIT and
/// AMAX_MULTI_CHUNK_SHIFT_BIT; pack_multi_args (runtime) writes the word.
inline constexpr unsigned kMultiCombineBit = 1;
inline constexpr unsigned kMultiChunkShiftBit = 8;
/// Byte layout of the kernel's parameter struct `amax_multi_args` for `max_tensors` descriptors
/// (templates/amax_multi_kernels.h): the header, then the pointers, the counts and the chunk starts
/// (max_tensors + 1 of them), padded to 8 bytes.
struct MultiArgsLayout {
  std::size_t ptr_offset, n_offset, chunk_offset, bytes;
};
MultiArgsLayout multi_args_layout(std::uint32_t max_tensors) noexcept;

/// Blocks per SM the multi-tensor kernel's launch bounds promise (NVIDIA): min_blocks_per_sm's
/// rule for the loads in flight, but never a register cap below 48 per thread (65536 / (threads x
/// 48) blocks at most), what the walk over tensors and the combines need without spilling.
std::uint32_t multi_min_blocks_per_sm(const MultiConfig& config, DType dtype);

/// The source of `config` for `dtype` on `arch` with `max_tensors` descriptors per launch (one of
/// multi_capacities(arch)): the defines, the vendor prelude, amax_kernels.h's helpers and
/// amax_multi_kernels.h. Self-contained, includes no file. Thread-safe.
std::string render_multi_source(const MultiConfig& config, DType dtype, const ArchInfo& arch, std::uint32_t max_tensors);

/// 16 hex digits: FNV-1a 64 over the templates multi-tensor variants are rendered from (the
/// preludes, amax_kernels.h, amax_multi_kernels.h). Recorded with multi-tensor tuning rows.
const std::string& multi_template_hash();

/// A group of tensors as the tuning database keys it: tensor count, total bytes, largest tensor.
struct GroupShape {
  std::uint64_t tensors = 0;
  std::uint64_t total_bytes = 0;
  std::uint64_t largest_bytes = 0;
  auto operator<=>(const GroupShape&) const = default;
};

/// The multi-tensor space of `arch` and `dtype` (amax epilogue), in a stable order (threads, nvec,
/// unroll, chunk, grid cap, combine). pruned: threads 256, 512, 1024 (AMD: 256, 512); 16-byte
/// vectors; unroll 2, 4, 8; chunks 16-256 KiB of at least one vector per thread; grid caps 2, 4, 8
/// blocks per CU and uncapped; both combines. full: threads from the wave size, every nvec, unroll
/// 1-8, chunks 4-4096 KiB, caps 1-16 per CU and uncapped. Every config passes validate(). Thread-safe.
std::vector<MultiConfig> enumerate_multi_space(const ArchInfo& arch, DType dtype, SpaceKind kind);

/// The built-in multi-tensor default (the one place it is chosen): 512 threads, 16-byte vectors,
/// unroll 4 (32 KiB per block per pass), 32 KiB chunks, at most 4 blocks per CU (one wave of blocks
/// at full occupancy); the thread combine for more than 32 tensors (many spanning tensors of few
/// segments), else the warp combine (few tensors, each cut into many segments). Amax epilogue.
MultiConfig builtin_multi_default(const ArchInfo& arch, DType dtype, const GroupShape& shape);

/// Consecutive chunks each block of a launch of `chunks` chunks reduces under `c`'s grid cap on a
/// device of `cu_count` CUs/SMs: ceil(chunks / cap), at least 1. The grid is then
/// ceil(chunks / chunks_per_block). Thread-safe.
std::uint32_t multi_chunks_per_block(const MultiConfig& c, std::uint64_t chunks, std::uint32_t cu_count) noexcept;

}  // namespace amax
