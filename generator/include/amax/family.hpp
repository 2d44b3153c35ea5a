#pragma once
// Kernel families as data (DESIGN.md, "Kernel families"). A family is a tag type whose members are
// the generator-level facts every upper layer needs about it: its config type, its name, the
// environment variable that forces one of its labels, the hash of the template it is rendered
// from and its variant space. The upper layers (tuning_db, runtime, tuner, bench, cli) are written
// once as templates over a family and add their own per-family facts as specialisations keyed by
// the same tags (the database's key type and tables, the runtime's launch plan and default, the
// bench's workload), so that a new family is one tag here, one template and one row per layer.
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"
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

/// True for the family tags above (a new family adds its tag here).
template <class F>
inline constexpr bool is_kernel_family_v = std::is_same_v<F, SingleFamily> || std::is_same_v<F, MultiFamily>;

/// The family whose config type is `C` (KernelConfig -> SingleFamily, MultiConfig -> MultiFamily).
template <class C>
struct family_of;
template <>
struct family_of<KernelConfig> { using type = SingleFamily; };
template <>
struct family_of<MultiConfig> { using type = MultiFamily; };
template <class C>
using family_of_t = typename family_of<C>::type;

}  // namespace amax
