#pragma once
// KernelConfig: one point of the variant space (DESIGN.md section 3). Its fields are listed once,
// in KernelConfig::fields(); the canonical label, label parsing and the compile-time/launch-time
// split all derive from that list. Equality is the defaulted member-wise comparison.
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "amax/aggregate_arity.hpp"
#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/variant_field.hpp"

namespace amax {

/// How block maxima become the result (DESIGN.md section 3).
/// - atomic: the output is zeroed by a memset, then every block does an atomic max on the
///   float's bits (TransformerEngine's original kernel). Two launches.
/// - two_stage: block maxima go to a workspace and a second one-block kernel reduces them (ROCm
///   TransformerEngine's default). Two launches, one when the grid is a single block.
/// - one_pass: block maxima go to the workspace and the last block to finish reduces them,
///   detected with a context-owned counter that the last block resets. One launch.
/// - self_reset: every block does an atomic max into a context-owned accumulator word and counts
///   itself on a context-owned counter; the last block writes the output and zeroes both words.
///   One launch, no memset, no workspace.
/// - spin: a single-wave grid (no larger than the blocks the device holds at once, launched
///   cooperatively so that they are co-resident): every block but block 0 stores its maximum with
///   bit 31 set (the flag: an fp32 amax never has the sign bit) into its own word of the stream
///   slot; block 0 polls those words, zeroes them, reduces them and writes the output. One launch,
///   no memset, no workspace, no atomic (issue 27; tail probe: `spin_coop`). NVIDIA only
///   (spin_unsupported_reason); no clusters.
/// - first_reset: the output is zeroed inside the launch, at its start: thread 0 of every block
///   takes a ticket on a 64-bit {arrivals, epoch} word of the stream slot before its loads; the
///   first block to arrive zeroes the output and publishes the epoch with a release store, the
///   last to arrive moves the word to the next epoch. After its loads every block waits (acquire)
///   for that publication, normally long done, and ends with a fire-and-forget atomic max on the
///   output: no block waits for another block's loads and nothing is reset at the end. One
///   launch, no memset, no workspace, any grid (issue 27; tail probe: `first_reset`). amax only
///   (no block holds the final value for the scale epilogue: fused_variant runs self_reset); no
///   clusters.
/// - first_reset_warp: first_reset with the ticket taken by one extra wave of the block that loads
///   nothing (the block has threads + one wave), so no loading wave waits for the ticket's round
///   trip; that wave zeroes and publishes when its block arrives first, and contributes +0.0 to the
///   block reduction (tail probe: `first_reset_warp`, 0.14-0.31 us faster than first_reset at
///   64 KiB-1 MiB on the H200). threads + wave at most the block limit; otherwise as first_reset.
enum class Strategy : std::uint8_t {
  atomic = 0, two_stage = 1, one_pass = 2, self_reset = 3, spin = 4, first_reset = 5, first_reset_warp = 6
};

/// first_reset and first_reset_warp: the strategies whose output is zeroed at the start of the
/// launch (no scale epilogue, no clusters, the stream slot's persistent words).
constexpr bool resets_first(Strategy s) noexcept {
  return s == Strategy::first_reset || s == Strategy::first_reset_warp;
}
/// The threads a block of `threads` loading threads is launched with: first_reset_warp adds one
/// wave (its ticket wave), every other strategy none.
constexpr std::uint32_t block_threads(Strategy s, std::uint32_t threads, std::uint32_t wave) noexcept {
  return threads + (s == Strategy::first_reset_warp ? wave : 0u);
}

/// Static facts about one enumerator of a variant field's enum (Strategy, Epilogue, Combine): the
/// rows of its table (kStrategies, kEpilogues, kCombines), row i describing enumerator i.
template <class E>
struct EnumInfo {
  E value;
  std::string_view name;   ///< label spelling ("two_stage")
  std::string_view macro;  ///< the kernels' preprocessor name ("AMAX_STRATEGY_TWO_STAGE"), value = enum value
};
using StrategyInfo = EnumInfo<Strategy>;

/// Every strategy, in enum order: the one list that labels, parsing, the rendered
/// AMAX_STRATEGY_* defines, the search space and the tuner's per-strategy finalists derive from.
/// A new strategy is its enumerator above plus one row here (and its code in the template).
inline constexpr StrategyInfo kStrategies[] = {
    {Strategy::atomic, "atomic", "AMAX_STRATEGY_ATOMIC"},
    {Strategy::two_stage, "two_stage", "AMAX_STRATEGY_TWO_STAGE"},
    {Strategy::one_pass, "one_pass", "AMAX_STRATEGY_ONE_PASS"},
    {Strategy::self_reset, "self_reset", "AMAX_STRATEGY_SELF_RESET"},
    {Strategy::spin, "spin", "AMAX_STRATEGY_SPIN"},
    {Strategy::first_reset, "first_reset", "AMAX_STRATEGY_FIRST_RESET"},
    {Strategy::first_reset_warp, "first_reset_warp", "AMAX_STRATEGY_FIRST_RESET_WARP"},
};

namespace detail {
/// True when row i of `table` describes enumerator i (what info() relies on).
template <class E, std::size_t N>
constexpr bool table_in_enum_order(const EnumInfo<E> (&table)[N]) {
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(table[i].value) != i) return false;
  return true;
}
/// The name of `v` in its table ("?" for a value past its end).
template <class E, std::size_t N>
constexpr std::string_view enum_name(const EnumInfo<E> (&table)[N], E v) noexcept {
  return static_cast<std::size_t>(v) < N ? table[static_cast<std::size_t>(v)].name : "?";
}
/// The enumerator whose name is exactly `s`, else nullopt.
template <class E, std::size_t N>
constexpr std::optional<E> enum_parse(const EnumInfo<E> (&table)[N], std::string_view s) noexcept {
  for (const EnumInfo<E>& r : table)
    if (r.name == s) return r.value;
  return std::nullopt;
}
}  // namespace detail
static_assert(detail::table_in_enum_order(kStrategies),
              "kStrategies must list every Strategy in enum order");

/// Facts about `s` (a valid enumerator). Thread-safe.
constexpr const StrategyInfo& info(Strategy s) noexcept { return kStrategies[static_cast<std::size_t>(s)]; }
/// Every strategy's enumerator, in enum order (derived from kStrategies), for loops over strategies.
constexpr std::array<Strategy, std::size(kStrategies)> all_strategies() noexcept {
  std::array<Strategy, std::size(kStrategies)> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = kStrategies[i].value;
  return out;
}
std::string_view to_string(Strategy s) noexcept;
std::optional<Strategy> parse_strategy(std::string_view s) noexcept;
/// Every strategy's name in enum order, comma-separated ("atomic, two_stage, ..."): the accepted
/// spellings that errors about an unknown strategy list. Thread-safe.
std::string strategy_names();

/// What the launch writes besides the reduction (DESIGN.md section 6, "Fused scale").
/// - amax: the amax alone (amax_compute).
/// - scale: the amax, then scale and scale_inv by the scale rule (amax_scale_rule in the template,
///   bit-exact with common/include/amax/scale_rule.hpp), written in the same launch by whoever
///   writes the amax (amax_and_scale).
enum class Epilogue : std::uint8_t { amax = 0, scale = 1 };

/// Static facts about one Epilogue ("amax" is never written in a label: the field is omissible).
using EpilogueInfo = EnumInfo<Epilogue>;
/// Every epilogue, in enum order: label parsing and the rendered AMAX_EPILOGUE_* defines derive from it.
inline constexpr EpilogueInfo kEpilogues[] = {
    {Epilogue::amax, "amax", "AMAX_EPILOGUE_AMAX"},
    {Epilogue::scale, "scale", "AMAX_EPILOGUE_SCALE"},
};
static_assert(detail::table_in_enum_order(kEpilogues),
              "kEpilogues must list every Epilogue in enum order");
constexpr const EpilogueInfo& info(Epilogue e) noexcept { return kEpilogues[static_cast<std::size_t>(e)]; }
/// The table of an enum, found by overload (the label codec's generic enum spelling uses it).
constexpr const auto& enum_table(Strategy) noexcept { return kStrategies; }
constexpr const auto& enum_table(Epilogue) noexcept { return kEpilogues; }
std::string_view to_string(Epilogue e) noexcept;
std::optional<Epilogue> parse_epilogue(std::string_view s) noexcept;

/// The grid cap. Written in labels as `b8cu` (8 blocks per CU/SM: carries across SKUs of one
/// arch), `b65535` (an absolute number of blocks, used for TransformerEngine's fixed config) or
/// `buncapped` (as many blocks as there are vectors to load).
struct BlockCap {
  enum class Kind : std::uint8_t { uncapped = 0, per_cu = 1, absolute = 2 };
  Kind kind = Kind::uncapped;
  std::uint32_t value = 0;  ///< blocks per CU (per_cu) or blocks (absolute); 0 when uncapped

  static constexpr BlockCap uncapped() { return {}; }
  static constexpr BlockCap per_cu(std::uint32_t v) { return {Kind::per_cu, v}; }
  static constexpr BlockCap absolute(std::uint32_t v) { return {Kind::absolute, v}; }
  /// The largest grid this cap allows on a device with `cu_count` CUs/SMs (>= 1).
  std::uint64_t max_blocks(std::uint32_t cu_count) const noexcept;
  auto operator<=>(const BlockCap&) const = default;
};

/// One kernel variant. The fields, in label order, are listed once in fields().
struct KernelConfig {
  Strategy strategy = Strategy::one_pass;
  std::uint32_t threads = 256;  ///< threads per block, a multiple of the wave size
  std::uint32_t nvec = 4;       ///< elements per vector load; nvec * element bytes <= 16
  std::uint32_t unroll = 1;     ///< vector loads in flight per thread per iteration
  BlockCap max_blocks{};        ///< grid cap; a launch parameter, not compiled in
  Epilogue epilogue = Epilogue::amax;  ///< amax alone, or amax + scale + scale_inv (compiled in)
  /// Blocks per thread-block cluster (compiled in): 1 = no cluster; 2, 4 or 8 (NVIDIA sm_90+, the
  /// portable cluster sizes): the blocks of a cluster combine their maxima through distributed
  /// shared memory and only the cluster's first block takes part in the strategy's cross-block step
  /// (atomic max, workspace word, count), so that step has grid / cluster participants. The grid
  /// is rounded up to a multiple of the cluster (launch_shape). Issue 27.
  std::uint32_t cluster = 1;

  auto operator<=>(const KernelConfig&) const = default;

  /// Descriptor of one field (variant_field.hpp).
  template <class M>
  using Field = VariantField<KernelConfig, M>;

  /// The field list: the one place the variant's fields are enumerated. The labels, label
  /// parsing, the rendered #defines and the compile-time/launch-time split derive from it.
  /// The epilogue and the cluster are omissible: labels written before they existed (in databases,
  /// overrides, documents) name the amax-only, cluster-less variant they always named; a fused
  /// variant's label has `.scale` after the grid cap (`one_pass.t256.v8.u4.b8cu.scale`), a
  /// clustered one ends in `.cN` (`self_reset.t512.v8.u2.b4cu.c8`, `...b4cu.scale.c8`). `.amax`
  /// and `.c1` are not accepted: one label per variant.
  static constexpr auto fields() {
    return std::make_tuple(
        Field<Strategy>{"strategy", "", "", "AMAX_STRATEGY", &KernelConfig::strategy},
        Field<std::uint32_t>{"threads", "t", "", "AMAX_THREADS", &KernelConfig::threads},
        Field<std::uint32_t>{"nvec", "v", "", "AMAX_NVEC", &KernelConfig::nvec},
        Field<std::uint32_t>{"unroll", "u", "", "AMAX_UNROLL", &KernelConfig::unroll},
        Field<BlockCap>{"max_blocks", "b", "", "", &KernelConfig::max_blocks},
        Field<Epilogue>{"epilogue", "", "", "AMAX_EPILOGUE", &KernelConfig::epilogue, true},
        Field<std::uint32_t>{"cluster", "c", "", "AMAX_CLUSTER", &KernelConfig::cluster, true});
  }

  /// Canonical label, e.g. `two_stage.t256.v8.u4.b8cu` or `two_stage.t256.v8.u4.b8cu.scale`:
  /// every field in order, '.'-separated, omissible fields left out at their default.
  std::string label() const;
  /// The compile-time part of the label (launch parameters left out), e.g. `two_stage.t256.v8.u4`
  /// or `two_stage.t256.v8.u4.scale`:
  /// configs with equal kernel_label() share one compiled binary.
  std::string kernel_label() const;
  /// Parses a full label. Errors: std::invalid_argument naming the label and the bad token.
  /// The result is syntactically valid; check it against a target with validate().
  static KernelConfig parse(std::string_view label);
  /// This config with every launch-time field (no macro in fields()) at its default: the part
  /// that decides the compiled binary. Equal kernel_label() <=> equal compile_time_part().
  KernelConfig compile_time_part() const;
  /// `#define AMAX_THREADS 256` etc.: one line per compile-time field, in field order.
  std::string compile_time_defines() const;
  /// Reason this config cannot run on `arch` for `dtype` (empty optional when valid): threads not a
  /// multiple of the wave size or over the limit, vector wider than 16 bytes, a cluster other than
  /// 1, 2, 4 or 8, a cluster on AMD or below sm_90 (cluster_unsupported_reason), spin on AMD
  /// (spin_unsupported_reason) or spin with a cluster, first_reset with a cluster or the scale
  /// epilogue, and so on.
  std::optional<std::string> validate(const ArchInfo& arch, DType dtype) const;
};

/// Why `arch` cannot run the spin strategy, or nullopt where it can (NVIDIA). On AMD it is left
/// out: its polling has not been run on a CDNA GPU (on gfx942/gfx950 the XCDs have L2 caches of
/// their own, so the flag words need system-coherent loads and stores, which the template does not
/// emit there). Pure, thread-safe.
std::optional<std::string> spin_unsupported_reason(const ArchInfo& arch);

/// Why `arch` cannot run thread-block clusters (KernelConfig::cluster > 1), or nullopt where it
/// can (NVIDIA sm_90 and later: Hopper's distributed shared memory). AMD has no clusters; an NVIDIA
/// arch below sm_90 has none either. Pure, thread-safe.
std::optional<std::string> cluster_unsupported_reason(const ArchInfo& arch);

namespace detail {
/// Label tokens: a decimal u32 without leading zeros (nullopt otherwise), and `s` split at `sep`.
/// Shared by the label codecs of KernelConfig and MultiConfig.
std::optional<std::uint32_t> parse_u32(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
}  // namespace detail

static_assert(aggregate_arity<KernelConfig>() == std::tuple_size_v<decltype(KernelConfig::fields())>,
              "every KernelConfig member must be listed in KernelConfig::fields()");

/// Kernel entry-point names for a config and dtype: `amax_<kernel_label>_<dtype>` with '.' -> '_'
/// (`amax_one_pass_t256_v8_u4_bf16`, `amax_one_pass_t256_v8_u4_scale_bf16`,
/// `amax_self_reset_t512_v8_u2_c8_bf16`),
/// plus the second-stage kernel of two_stage (`..._finish`).
std::string kernel_name(const KernelConfig& c, DType dtype);
std::string finish_kernel_name(const KernelConfig& c, DType dtype);

}  // namespace amax
