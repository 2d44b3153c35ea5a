#pragma once
// Kernel families as data (DESIGN.md, "Kernel families"). A family is a tag type whose members are
// the generator-level facts every upper layer needs about it: its config type, its name, the
// environment variable that forces one of its labels, the hash of the template it is rendered
// from and its variant space. The upper layers (tuning_db, runtime, tuner, bench, cli) are written
// once as templates over a family and add their own per-family facts as specialisations keyed by
// the same tags (the database's key type and tables, the runtime's launch plan and default, the
// bench's workload), so that a new family is one tag here, one template and one row per layer.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"
#include "amax/quantize_config.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"

namespace amax {

/// One tensor per launch (KernelConfig, templates/amax_kernels.h), tuned per (arch, dtype, size).
struct SingleFamily {
  using Config = KernelConfig;
  /// The family's name in messages and reports.
  static constexpr std::string_view kName = "single-tensor";
  /// The environment variable whose label overrides every table for this family.
  static constexpr std::string_view kForceLabelEnv = "AMAX_TUNE_FORCE_LABEL";
  /// Hash of the template files the family's variants are rendered from (render.hpp).
  static const std::string& template_hash() { return amax::template_hash(); }
  /// The variant space of (arch, dtype).
  static std::vector<Config> space(const ArchInfo& arch, DType dtype, SpaceKind kind) {
    return enumerate_space(arch, dtype, kind);
  }
  /// The entry point of `c`'s kernel for `dtype` (kernel_name of its compile-time part); the
  /// kernel has no descriptor capacity (`capacity` is 0).
  static std::string kernel_name(const Config& c, DType dtype, std::uint32_t /*capacity*/) {
    return amax::kernel_name(c.compile_time_part(), dtype);
  }
  /// The kernel's source for `arch` (render_source).
  static std::string render(const Config& c, DType dtype, const ArchInfo& arch, std::uint32_t /*capacity*/) {
    return render_source(c.compile_time_part(), dtype, arch.vendor);
  }
  /// What a call is looked up by: n, elements.
  using Query = std::uint64_t;
  /// The built-in default for a call on `query` (builtin_default), amax epilogue.
  static Config builtin_default(const ArchInfo& arch, DType dtype, Query n) {
    return amax::builtin_default(arch, dtype, n);
  }
  /// The compile fallback of `chosen` for a call on `n` (compile_fallback).
  static Config fallback(const Config& chosen, const ArchInfo& arch, DType dtype, Query n, std::uint32_t cu_count) {
    return compile_fallback(chosen, arch, dtype, n, cu_count);
  }
  /// How a call with the scale epilogue runs `amax_only` (fused_variant).
  static Config fused(const Config& amax_only, const ArchInfo& arch, DType dtype) {
    return fused_variant(amax_only, arch, dtype);
  }
  /// AMAX_TUNE_FORCE_STRATEGY applies to this family.
  static constexpr bool kForcedStrategy = true;
};

/// Many tensors per launch (MultiConfig, templates/amax_multi_kernels.h), tuned per (arch, dtype,
/// group shape bucket).
struct MultiFamily {
  using Config = MultiConfig;
  static constexpr std::string_view kName = "multi-tensor";
  static constexpr std::string_view kForceLabelEnv = "AMAX_TUNE_FORCE_MULTI_LABEL";
  static const std::string& template_hash() { return multi_template_hash(); }
  static std::vector<Config> space(const ArchInfo& arch, DType dtype, SpaceKind kind) {
    return enumerate_multi_space(arch, dtype, kind);
  }
  /// The entry point of `c`'s kernel for `dtype` compiled for `capacity` descriptors per launch
  /// (multi_kernel_name).
  static std::string kernel_name(const Config& c, DType dtype, std::uint32_t capacity) {
    return multi_kernel_name(c.compile_time_part(), dtype, capacity);
  }
  /// The kernel's source for `arch` and `capacity` (render_multi_source).
  static std::string render(const Config& c, DType dtype, const ArchInfo& arch, std::uint32_t capacity) {
    return render_multi_source(c.compile_time_part(), dtype, arch, capacity);
  }
  /// What a call is looked up by: the dtype group's shape.
  using Query = GroupShape;
  static Config builtin_default(const ArchInfo& arch, DType dtype, const Query& shape) {
    return builtin_multi_default(arch, dtype, shape);
  }
  /// The compile fallback of `chosen`: the built-in default with chosen's epilogue (a call's
  /// workspace covers both: group_multi).
  static Config fallback(const Config& chosen, const ArchInfo& arch, DType dtype, const Query& shape,
                         std::uint32_t /*cu_count*/) {
    Config def = builtin_multi_default(arch, dtype, shape);
    def.epilogue = chosen.epilogue;
    return def;
  }
  /// Every variant carries the scale epilogue as it is.
  static Config fused(Config amax_only, const ArchInfo&, DType) {
    amax_only.epilogue = Epilogue::scale;
    return amax_only;
  }
  static constexpr bool kForcedStrategy = false;
};

/// FP8 quantize of one tensor (QuantizeConfig, templates/amax_quantize_kernels.h): amax, scale,
/// scale_inv and the FP8 bytes, tuned per (arch, dtype, size) with the arch's tuned_fp8_format. A
/// kernel is compiled per FP8 format: the `format` argument of kernel_name and render (the kernel
/// cache's per-family `capacity`) is the Fp8Format's value (format_of / variant_of).
struct QuantizeFamily {
  using Config = QuantizeConfig;
  static constexpr std::string_view kName = "quantize";
  static constexpr std::string_view kForceLabelEnv = "AMAX_TUNE_FORCE_QUANTIZE_LABEL";
  static const std::string& template_hash() { return quantize_template_hash(); }
  static std::vector<Config> space(const ArchInfo& arch, DType dtype, SpaceKind kind) {
    return enumerate_quantize_space(arch, dtype, kind);
  }
  /// The kernel-cache argument that selects `format`'s kernel.
  static constexpr std::uint32_t variant_of(Fp8Format format) noexcept { return static_cast<std::uint32_t>(format); }
  /// The format a kernel-cache argument selects. Errors: std::invalid_argument naming the value.
  static Fp8Format format_of(std::uint32_t variant) {
    if (auto f = fp8_format_from_int(static_cast<int>(variant))) return *f;
    throw std::invalid_argument("quantize kernel: " + std::to_string(variant) + " is not an FP8 format (0.." +
                                std::to_string(kFp8Formats.size() - 1) + ")");
  }
  /// The entry point of `c`'s kernel for `dtype` and the format `variant` selects (quantize_kernel_name).
  static std::string kernel_name(const Config& c, DType dtype, std::uint32_t variant) {
    return quantize_kernel_name(c.compile_time_part(), dtype, format_of(variant));
  }
  /// The kernel's source for `arch` and the format `variant` selects (render_quantize_source).
  static std::string render(const Config& c, DType dtype, const ArchInfo& arch, std::uint32_t variant) {
    return render_quantize_source(c.compile_time_part(), dtype, format_of(variant), arch);
  }
  /// What a call is looked up by: n, elements (the format is not part of the key).
  using Query = std::uint64_t;
  static Config builtin_default(const ArchInfo& arch, DType dtype, Query n) {
    return builtin_quantize_default(arch, dtype, n);
  }
  /// The compile fallback of any choice: the built-in default for n (a one-launch or a cast
  /// variant uses the stream slot's barrier words or the fused amax + scale's own needs, never a
  /// caller's workspace beyond the single-tensor family's).
  static Config fallback(const Config&, const ArchInfo& arch, DType dtype, Query n, std::uint32_t /*cu_count*/) {
    return builtin_quantize_default(arch, dtype, n);
  }
  /// A quantize always writes amax, scale and scale_inv: every variant is its own fused form.
  static Config fused(const Config& c, const ArchInfo&, DType) { return c; }
  static constexpr bool kForcedStrategy = false;
};

/// True for the family tags above (a new family adds its tag here).
template <class F>
inline constexpr bool is_kernel_family_v = std::is_same_v<F, SingleFamily> || std::is_same_v<F, MultiFamily> ||
                                           std::is_same_v<F, QuantizeFamily>;

/// The family whose config type is `C` (KernelConfig -> SingleFamily, MultiConfig -> MultiFamily, ...).
template <class C>
struct family_of;
template <>
struct family_of<KernelConfig> { using type = SingleFamily; };
template <>
struct family_of<MultiConfig> { using type = MultiFamily; };
template <>
struct family_of<QuantizeConfig> { using type = QuantizeFamily; };
template <class C>
using family_of_t = typename family_of<C>::type;

}  // namespace amax
