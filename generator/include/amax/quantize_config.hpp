#pragma once
// The quantize kernel family (DESIGN.md section 9): FP8 current scaling's cast, and the one-launch
// amax + scale + cast. QuantizeConfig is one variant; its fields are listed once in
// QuantizeConfig::fields(), from which its label, label parsing, the rendered #defines and the
// compile-time/launch-time split derive (the grid cap is the one launch-time field). Kernel
// source: templates/amax_quantize_kernels.h (after amax_kernels.h, whose helpers it uses).
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "amax/aggregate_arity.hpp"
#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/scale_rule.hpp"
#include "amax/search_space.hpp"

namespace amax {

/// Which quantize kernel (templates/amax_quantize_kernels.h):
/// - cast: the second launch of the two-launch path (after the fused amax + scale), reading the
///   scale from device memory;
/// - keep: one cooperative launch, amax and cast around a grid-wide barrier, each thread's first
///   `keep` vectors held in registers across it (one read of the input where they cover it);
/// - reread: the same with nothing held: the input is read again after the barrier (from the L2 /
///   last-level cache where it fits).
enum class QuantizeKind : std::uint8_t { cast = 0, keep = 1, reread = 2 };

/// Static facts about one QuantizeKind.
using QuantizeKindInfo = EnumInfo<QuantizeKind>;
/// Every kind, in enum order: labels, parsing and the rendered defines derive from it.
inline constexpr QuantizeKindInfo kQuantizeKinds[] = {
    {QuantizeKind::cast, "cast", "AMAX_QUANTIZE_CAST"},
    {QuantizeKind::keep, "keep", "AMAX_QUANTIZE_KEEP"},
    {QuantizeKind::reread, "reread", "AMAX_QUANTIZE_REREAD"},
};
static_assert(detail::table_in_enum_order(kQuantizeKinds), "kQuantizeKinds must list every QuantizeKind in enum order");
constexpr const QuantizeKindInfo& info(QuantizeKind k) noexcept { return kQuantizeKinds[static_cast<std::size_t>(k)]; }
constexpr const auto& enum_table(QuantizeKind) noexcept { return kQuantizeKinds; }
std::string_view to_string(QuantizeKind k) noexcept;
std::optional<QuantizeKind> parse_quantize_kind(std::string_view s) noexcept;

/// One quantize variant. Label: `quant.keep.t512.v8.u4.k4.buncapped` (the family tag `quant`, then
/// every field in order). The FP8 format is not a field: like the dtype it is part of what a
/// variant is compiled for (quantize_kernel_name, render_quantize_source).
struct QuantizeConfig {
  QuantizeKind kind = QuantizeKind::keep;
  std::uint32_t threads = 512;  ///< threads per block, a multiple of the wave size
  std::uint32_t nvec = 4;       ///< elements per vector load; nvec * element bytes <= 16
  std::uint32_t unroll = 4;     ///< vector loads in flight per thread per iteration
  /// Vectors per thread held in registers across the grid barrier: 1..16 for keep, 0 otherwise.
  std::uint32_t keep = 4;
  /// Grid cap (cast: at most this many blocks; keep, reread: also at most the blocks the device
  /// holds at once, as a cooperative launch requires). A launch parameter, not compiled in.
  BlockCap max_blocks{};

  auto operator<=>(const QuantizeConfig&) const = default;

  /// Descriptor of one field (variant_field.hpp).
  template <class M>
  using Field = VariantField<QuantizeConfig, M>;
  /// The field list: the one place the variant's fields are enumerated (label_codec.hpp).
  static constexpr auto fields() {
    return std::make_tuple(Field<QuantizeKind>{"kind", "", "", "AMAX_QUANTIZE", &QuantizeConfig::kind},
                           Field<std::uint32_t>{"threads", "t", "", "AMAX_THREADS", &QuantizeConfig::threads},
                           Field<std::uint32_t>{"nvec", "v", "", "AMAX_NVEC", &QuantizeConfig::nvec},
                           Field<std::uint32_t>{"unroll", "u", "", "AMAX_UNROLL", &QuantizeConfig::unroll},
                           Field<std::uint32_t>{"keep", "k", "", "AMAX_QUANT_KEEP", &QuantizeConfig::keep},
                           Field<BlockCap>{"max_blocks", "b", "", "", &QuantizeConfig::max_blocks});
  }

  /// The family tag, the first token of every label.
  static constexpr std::string_view kFamily = "quant";
  /// Canonical label, e.g. `quant.keep.t512.v8.u4.k4.buncapped`.
  std::string label() const;
  /// The compile-time part of the label (the grid cap left out), e.g. `quant.keep.t512.v8.u4.k4`:
  /// configs with equal kernel_label() share one compiled binary (per dtype and format).
  std::string kernel_label() const;
  /// This config with the launch-time fields at their default.
  QuantizeConfig compile_time_part() const;
  /// Parses a label. Errors: std::invalid_argument naming the label and the bad token.
  static QuantizeConfig parse(std::string_view label);
  /// True when `label` starts with the family tag (`quant.`).
  static bool is_quantize_label(std::string_view label) noexcept;
  /// `#define AMAX_QUANTIZE AMAX_QUANTIZE_KEEP` etc.: one line per compile-time field, in field order.
  std::string compile_time_defines() const;
  /// Reason this config cannot run on `arch` for `dtype` (empty when valid), naming the label and
  /// the field.
  std::optional<std::string> validate(const ArchInfo& arch, DType dtype) const;
  /// True for the kinds launched once, cooperatively, with a grid barrier (keep, reread).
  bool one_launch() const noexcept { return kind != QuantizeKind::cast; }
};
static_assert(aggregate_arity<QuantizeConfig>() == std::tuple_size_v<decltype(QuantizeConfig::fields())>,
              "every QuantizeConfig member must be listed in QuantizeConfig::fields()");

/// The FP8 formats the quantize kernels of `arch` are built for (the release bundle ships each):
/// e4m3fnuz and e5m2fnuz on gfx942 (its FP8 instructions' formats), the OCP e4m3 and e5m2
/// elsewhere. The first is tuned_fp8_format(arch). Thread-safe.
std::span<const Fp8Format> quantize_formats(const ArchInfo& arch) noexcept;
/// The format the tuner measures the quantize variants of `arch` with: the first of
/// quantize_formats (e4m3fnuz on gfx942, e4m3 elsewhere). The tuning key leaves the format out: it
/// changes only the constants of the same code (the cast's encoding), so the choice serves every
/// format of the arch (docs/tuning.md). Thread-safe.
Fp8Format tuned_fp8_format(const ArchInfo& arch) noexcept;

/// The quantize space of `arch` and `dtype`, in a stable order (kind, threads, nvec, unroll, keep,
/// grid cap); every config passes validate(). pruned (the tuner's default, 17 variants per dtype
/// from 17 compiled sources): 16-byte vectors; cast with 256 threads and unroll 4 at 8 blocks per
/// CU, 512 threads at unroll 4 and 4 per CU, 512 threads at unroll 2 uncapped; keep with unroll 4:
/// 256 threads keeping 2, 4, 8 or 16 vectors, 512 threads 1, 2, 4 or 8, 1024 threads 1 or 2;
/// reread uncapped with unroll 4 at 256, 512 and 1024 threads and unroll 2 at 512. full: threads
/// each power of two from the wave size to 1024, every nvec, unroll 1-8, keep 1-16 (powers of two),
/// cast grid caps 1-16 per CU or uncapped, the one-launch kinds uncapped (their grid is the resident
/// one at most). Thread-safe (pure).
std::vector<QuantizeConfig> enumerate_quantize_space(const ArchInfo& arch, DType dtype, SpaceKind kind);

/// Largest input, bytes, the built-in default quantizes in one launch (keep); larger tensors take
/// the two launches (fused amax + scale, then cast). 8 MiB: what a resident grid of the default
/// keep variant (256 threads keeping eight 16-byte vectors, two blocks per SM) holds in registers on
/// a 132-SM H200.
inline constexpr std::uint64_t kQuantizeOneLaunchMaxBytes = 8ull << 20;

/// The built-in quantize default for `n` elements of `dtype` (the one place it is chosen): up to
/// kQuantizeOneLaunchMaxBytes of input one launch `quant.keep.t256.vV.u4.k8.buncapped`, above it
/// the cast `quant.cast.t512.vV.u4.k0.b4cu` after the single-tensor family's fused amax + scale
/// (V: 16-byte vectors). Both vendors. Thread-safe (pure).
QuantizeConfig builtin_quantize_default(const ArchInfo& arch, DType dtype, std::uint64_t n);

/// The grid of one launch of `c` on `n` elements of `dtype` on a device of `cu_count` CUs/SMs
/// holding `resident_per_cu` blocks of the kernel each (its occupancy; 0 unknown: not bounded): the
/// blocks that cover the input's vectors (cast: `unroll` vectors per thread per pass; keep: `keep`
/// vectors per thread, so the grid keeps all of them where it can; reread: `unroll` per thread),
/// at most the grid cap; the one-launch kinds at most cu_count x resident_per_cu (a cooperative
/// launch needs every block resident). At least 1. Thread-safe (pure).
std::uint32_t quantize_grid(const QuantizeConfig& c, DType dtype, std::uint64_t n, std::uint32_t cu_count,
                            std::uint32_t resident_per_cu) noexcept;

/// Entry point of `c` for `dtype` and `format`: `amax_quant_keep_t512_v8_u4_k4_bf16_e4m3` (the
/// kernel label, '.' -> '_').
std::string quantize_kernel_name(const QuantizeConfig& c, DType dtype, Fp8Format format);

/// Blocks per SM the quantize kernel's launch bounds promise (NVIDIA): the largest count whose
/// register share holds the kept vectors, the loads in flight and about 40 registers of indices,
/// pointers, the scale and the cast; at most 2048 / threads, at least 1.
std::uint32_t quantize_min_blocks_per_sm(const QuantizeConfig& config, DType dtype);

/// The flags bit of the torchao rule (CastRule::torchao) in the quantize kernels' flags word
/// (bit 0 is the NaN mode, AMAX_FLAG_IGNORE_NAN). Rendered as AMAX_QUANT_FLAG_TORCHAO.
inline constexpr unsigned kQuantizeFlagTorchao = 2u;

/// True where the quantize kernels of `format` convert with the GPU's FP8 instruction
/// (templates/amax_fp8_cvt_cuda.h: NVIDIA sm_89+, the OCP formats e4m3 and e5m2) instead of the
/// integer cast; both give the same bytes. Thread-safe.
bool quantize_uses_fp8_instruction(const ArchInfo& arch, Fp8Format format) noexcept;

/// The source of `config` for `dtype` and `format` on `arch`: the defines (the kind's and the
/// format's encoding among them), the vendor prelude, amax_kernels.h's helpers, amax_fp8_cast.h,
/// amax_fp8_cvt_cuda.h where quantize_uses_fp8_instruction, and amax_quantize_kernels.h.
/// Self-contained, includes no file. The config should pass validate(). Thread-safe.
std::string render_quantize_source(const QuantizeConfig& config, DType dtype, Fp8Format format, const ArchInfo& arch);

/// 16 hex digits: FNV-1a 64 over the templates quantize variants are rendered from (the
/// preludes, amax_kernels.h, amax_fp8_cast.h, amax_fp8_cvt_cuda.h, amax_quantize_kernels.h).
/// Thread-safe.
const std::string& quantize_template_hash();

}  // namespace amax
