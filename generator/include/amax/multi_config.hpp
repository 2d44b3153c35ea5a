#pragma once
// The multi-tensor kernel family (DESIGN.md section 6, "Many tensors per launch"): one launch
// computes the amax of each of many tensors of one dtype. MultiConfig is one variant; its fields
// are listed once in MultiConfig::fields(), from which its label, label parsing and the rendered
// #defines derive. Every field is compiled in (there is no launch-time field: the grid is the
// number of chunks). Kernel source: templates/amax_multi_kernels.h.
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
#include "amax/search_space.hpp"

namespace amax {

/// How the blocks of a tensor cut into several chunks are combined into its amax, by the block of
/// the launch that arrives last (a tensor of one chunk is written by its block directly):
/// - warp: one wave per tensor, the waves of the block in parallel (many tensors of few chunks);
/// - block: the whole block per tensor, one tensor after another (few tensors of many chunks).
enum class Combine : std::uint8_t { warp = 0, block = 1 };
std::string_view to_string(Combine c) noexcept;
std::optional<Combine> parse_combine(std::string_view s) noexcept;

/// One multi-tensor variant. Label: `multi.t512.v8.u4.c32k.warp` (the family tag `multi`, then
/// every field in order).
struct MultiConfig {
  std::uint32_t threads = 512;    ///< threads per block, a multiple of the wave size
  std::uint32_t nvec = 4;         ///< elements per vector load; nvec * element bytes <= 16
  std::uint32_t unroll = 4;       ///< vector loads in flight per thread per iteration
  std::uint32_t chunk_kib = 32;   ///< KiB of input per block: a power of two in 4..4096
  Combine combine = Combine::warp;

  auto operator<=>(const MultiConfig&) const = default;

  /// Descriptor of one field: its name, label prefix and suffix, the kernels' preprocessor name
  /// and the member it reads.
  template <class M>
  struct Field {
    std::string_view name;
    std::string_view prefix;
    std::string_view suffix;
    std::string_view macro;
    M MultiConfig::*member;
  };
  /// The field list: the one place the variant's fields are enumerated.
  static constexpr auto fields() {
    return std::make_tuple(Field<std::uint32_t>{"threads", "t", "", "AMAX_THREADS", &MultiConfig::threads},
                           Field<std::uint32_t>{"nvec", "v", "", "AMAX_NVEC", &MultiConfig::nvec},
                           Field<std::uint32_t>{"unroll", "u", "", "AMAX_UNROLL", &MultiConfig::unroll},
                           Field<std::uint32_t>{"chunk_kib", "c", "k", "AMAX_CHUNK_KIB", &MultiConfig::chunk_kib},
                           Field<Combine>{"combine", "", "", "AMAX_COMBINE", &MultiConfig::combine});
  }

  /// The family tag, the first token of every label.
  static constexpr std::string_view kFamily = "multi";
  /// Canonical label, e.g. `multi.t512.v8.u4.c32k.warp`.
  std::string label() const;
  /// Parses a label. Errors: std::invalid_argument naming the label and the bad token.
  static MultiConfig parse(std::string_view label);
  /// True when `label` starts with the family tag (`multi.`): a multi-tensor label, not a
  /// single-tensor KernelConfig one.
  static bool is_multi_label(std::string_view label) noexcept;
  /// `#define AMAX_THREADS 512` etc.: one line per field, in field order.
  std::string defines() const;
  /// Reason this config cannot run on `arch` for `dtype` (empty when valid).
  std::optional<std::string> validate(const ArchInfo& arch, DType dtype) const;
  /// Elements of `dtype` per chunk (chunk_kib KiB).
  std::uint64_t chunk_elems(DType dtype) const noexcept { return std::uint64_t{chunk_kib} * 1024 / info(dtype).bytes; }
};

/// Entry point of `c` for `dtype` compiled for `max_tensors` descriptors per launch:
/// `amax_multi_t512_v8_u4_c32k_warp_bf16_k1600`.
std::string multi_kernel_name(const MultiConfig& c, DType dtype, std::uint32_t max_tensors);

/// Tensors per launch on `arch`: as many descriptors (20 bytes each: pointer, count with output
/// index, chunk start) as its kernel-parameter limit holds. NVIDIA sm_70 and newer: 32764 bytes
/// (CUDA 12.1 and newer, NVRTC and driver; what this project builds with) -> 1600 tensors; AMD
/// (HIP's limit on kernel arguments, 4 KiB) and NVIDIA before sm_70 (4 KiB) -> 192. Thread-safe.
std::uint32_t multi_max_tensors(const ArchInfo& arch) noexcept;
/// Descriptor capacities a variant is compiled for on `arch`, ascending: 192 (3.9 KB of kernel
/// parameters) and, where the arch allows more, multi_max_tensors(arch). A launch uses the
/// smallest that holds its tensors, so that a small group does not send 32 KB of parameters.
std::vector<std::uint32_t> multi_capacities(const ArchInfo& arch);
/// Largest element count of one tensor (the 40 bits of n in a descriptor): 2^40 - 1.
inline constexpr std::uint64_t kMultiMaxElements = (1ull << 40) - 1;
/// Largest number of tensors in one call (the 24 bits of the output index): 2^24 - 1.
inline constexpr std::uint64_t kMultiMaxTensors = (1ull << 24) - 1;

/// Byte layout of the kernel's parameter struct `amax_multi_args` for `max_tensors` descriptors
/// (templates/amax_multi_kernels.h): a 40-byte header, then the pointers, the counts and the
/// chunk starts (max_tensors + 1 of them), padded to 8 bytes.
struct MultiArgsLayout {
  std::size_t ptr_offset, n_offset, chunk_offset, bytes;
};
MultiArgsLayout multi_args_layout(std::uint32_t max_tensors) noexcept;

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

/// The multi-tensor space of `arch` and `dtype`, in a stable order (threads, nvec, unroll, chunk,
/// combine). pruned: threads 256, 512, 1024 (AMD: 256, 512); 16-byte vectors; unroll 1, 2, 4, 8; chunks 8-512 KiB
/// of at least one vector per thread; both combines. full: threads from the wave size, every nvec,
/// chunks 4-4096 KiB. Every config passes validate(). Thread-safe.
std::vector<MultiConfig> enumerate_multi_space(const ArchInfo& arch, DType dtype, SpaceKind kind);

/// The built-in multi-tensor default (the one place it is chosen): 512 threads, 16-byte vectors,
/// unroll 4 (32 KiB per block per pass); 32 KiB chunks while the largest tensor is at most 4 MiB,
/// else 256 KiB; the warp combine for more than 32 tensors, else the block combine.
MultiConfig builtin_multi_default(const ArchInfo& arch, DType dtype, const GroupShape& shape);

}  // namespace amax
