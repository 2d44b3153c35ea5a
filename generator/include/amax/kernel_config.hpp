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
/// - first_reset: the output is zeroed inside the launch, at its start: thread 0 of every block
///   takes a ticket on a 64-bit {arrivals, epoch} word of the stream slot before its loads; the
///   first block to arrive zeroes the output and publishes the epoch with a release store, the
///   last to arrive moves the word to the next epoch. After its loads every block waits (acquire)
///   for that publication, normally long done, and ends with a fire-and-forget atomic max on the
///   output: no block waits for another block's loads and nothing is reset at the end. One
///   launch, no memset, no workspace, any grid. amax only (no block holds the final value for the
///   scale epilogue: fused_variant runs self_reset).
/// - first_reset_warp: first_reset with the ticket taken by one extra wave of the block that loads
///   nothing (the block has threads + one wave), so no loading wave waits for the ticket's round
///   trip; that wave zeroes and publishes when its block arrives first, and contributes +0.0 to the
///   block reduction, so it is faster than first_reset where the ticket's round trip is not hidden
///   by the loads (docs/tuning.md). threads + wave at most the block limit; otherwise as first_reset.
enum class Strategy : std::uint8_t {
  atomic = 0, two_stage = 1, one_pass = 2, self_reset = 3, first_reset = 4, first_reset_warp = 5
};

/// Static facts about one enumerator of a variant field's enum (Epilogue, Combine): the rows of its
/// table (kEpilogues, kCombines), row i describing enumerator i. kStrategies' rows (StrategyInfo)
/// carry these three fields first and the strategy's launch facts after them.
template <class E>
struct EnumInfo {
  E value;
  std::string_view name;   ///< label spelling ("scale")
  std::string_view macro;  ///< the kernels' preprocessor name ("AMAX_EPILOGUE_SCALE"), value = enum value
};

/// Where a strategy keeps state between its participants (blocks) in the stream slot.
/// - none: it never touches the slot;
/// - participants: with more than one participant;
/// - scale_participants: with more than one participant and the scale epilogue only (the last
///   participant to arrive, counted on the slot's arrival word, writes scale and scale_inv).
enum class SlotUse : std::uint8_t { none, participants, scale_participants };

/// How amax_and_scale runs a strategy's amax-only choice (fused_variant, search_space.hpp).
/// - itself: with the scale epilogue;
/// - self_reset_in_space: as self_reset of its shape (fused_variant) where the pruned space holds
///   that self_reset, else itself;
/// - self_reset: as self_reset of its shape always (it has no scale epilogue).
enum class FusedAs : std::uint8_t { itself, self_reset_in_space, self_reset };

/// The pruned space's grid caps as bits of StrategyInfo::pruned_caps, in the order of
/// search_space.cpp's pruned cap list: 2, 4, 8, 16 blocks per CU, uncapped.
inline constexpr std::uint8_t kPrunedCapsAll = 0x1f;

/// One strategy's facts: its spellings, what a launch of it needs (launch_plan.hpp builds the plan
/// from them), what it supports and its pruned space.
struct StrategyInfo {
  Strategy value;
  std::string_view name;   ///< label spelling ("two_stage")
  std::string_view macro;  ///< the kernels' preprocessor name ("AMAX_STRATEGY_TWO_STAGE"), value = enum value
  std::string_view column;  ///< at most 5 characters: the tune summary's "vs <column>" column ("2stg")
  // ---- what a launch needs ----
  bool memset_output = false;  ///< the output is zeroed by a memset before the main kernel
  bool workspace = false;      ///< one workspace word per participant, with more than one
  SlotUse slot = SlotUse::none;
  /// Its words of the stream slot, [slot_first, slot_first + slot_count) (launch_plan.hpp), rendered
  /// as `#define <slot_macro> <slot_first>u` where slot_macro is not empty.
  std::uint32_t slot_first = 0, slot_count = 0;
  std::string_view slot_macro = {};
  bool persistent_slot = false;  ///< its slot words carry state from launch to launch (zeroed once)
  /// A one-block second kernel (AMAX_FINISH_NAME) over the workspace, launched as a programmatic
  /// dependent of the first (Backend::launch_dependent) except during stream capture.
  bool finish_kernel = false;
  /// One wave of co-resident blocks: its grid is capped at max_grid and at the blocks of its kernel
  /// the device holds at once (an occupancy query when the kernel is loaded), and a grid of more
  /// than one block is launched cooperatively.
  bool resident_grid = false;
  std::uint32_t max_grid = 0;  ///< the most blocks of its grid (0: no cap of its own)
  bool extra_wave = false;     ///< its block has one wave more than its loading threads (loading nothing)
  // ---- what it supports ----
  bool scale_epilogue = true;  ///< it can carry the scale epilogue
  std::string_view amd_unsupported = {};  ///< why it is not generated for AMD ("" where it is)
  FusedAs fused = FusedAs::itself;
  // ---- its pruned space (the full space holds every valid config) ----
  bool in_pruned = true;
  std::uint32_t pruned_min_threads = 0;       ///< fewer threads are left out of the pruned space
  std::uint32_t pruned_max_unroll = 16;       ///< a larger unroll is left out
  std::uint8_t pruned_caps = kPrunedCapsAll;  ///< the pruned grid caps it takes (bits: kPrunedCapsAll)
};

/// first_reset's three slot words: [kFirstResetWord, +1] the 64-bit {arrivals, epoch} word (8-byte
/// aligned), [kFirstResetWord + 2] the last published epoch + 1.
inline constexpr std::uint32_t kFirstResetWord = 2;

/// Every strategy, in enum order: the one list that labels, parsing, the rendered AMAX_STRATEGY_*
/// defines, the search space, the launch plan and the tuner's per-strategy finalists derive from.
/// A new strategy is its enumerator, one row here and its block in templates/amax_kernels.h.
inline constexpr StrategyInfo kStrategies[] = {
    {.value = Strategy::atomic, .name = "atomic", .macro = "AMAX_STRATEGY_ATOMIC", .column = "atom",
     .memset_output = true, .slot = SlotUse::scale_participants, .slot_count = 1,
     .fused = FusedAs::self_reset_in_space},
    {.value = Strategy::two_stage, .name = "two_stage", .macro = "AMAX_STRATEGY_TWO_STAGE", .column = "2stg",
     .workspace = true, .finish_kernel = true},
    {.value = Strategy::one_pass, .name = "one_pass", .macro = "AMAX_STRATEGY_ONE_PASS", .column = "1pass",
     .workspace = true, .slot = SlotUse::participants, .slot_count = 1},
    {.value = Strategy::self_reset, .name = "self_reset", .macro = "AMAX_STRATEGY_SELF_RESET", .column = "self",
     .slot = SlotUse::participants, .slot_count = 2, .pruned_min_threads = 256, .pruned_caps = 0x1e},
    {.value = Strategy::first_reset, .name = "first_reset", .macro = "AMAX_STRATEGY_FIRST_RESET", .column = "first",
     .slot = SlotUse::participants, .slot_first = kFirstResetWord, .slot_count = 3,
     .slot_macro = "AMAX_FIRST_RESET_WORD", .persistent_slot = true, .scale_epilogue = false,
     .fused = FusedAs::self_reset, .pruned_min_threads = 256, .pruned_max_unroll = 4, .pruned_caps = 0x17},
    {.value = Strategy::first_reset_warp, .name = "first_reset_warp", .macro = "AMAX_STRATEGY_FIRST_RESET_WARP",
     .column = "frw", .slot = SlotUse::participants, .slot_first = kFirstResetWord, .slot_count = 3,
     .slot_macro = "AMAX_FIRST_RESET_WORD", .persistent_slot = true, .extra_wave = true, .scale_epilogue = false,
     .fused = FusedAs::self_reset, .pruned_min_threads = 256, .pruned_max_unroll = 4, .pruned_caps = 0x17},
};

namespace detail {
/// True when row i of `table` describes enumerator i (what info() relies on).
template <class Row, std::size_t N>
constexpr bool table_in_enum_order(const Row (&table)[N]) {
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(table[i].value) != i) return false;
  return true;
}
/// The name of `v` in its table ("?" for a value past its end).
template <class Row, std::size_t N, class E>
constexpr std::string_view enum_name(const Row (&table)[N], E v) noexcept {
  return static_cast<std::size_t>(v) < N ? table[static_cast<std::size_t>(v)].name : "?";
}
/// The enumerator whose name is exactly `s`, else nullopt.
template <class Row, std::size_t N>
constexpr auto enum_parse(const Row (&table)[N], std::string_view s) noexcept
    -> std::optional<decltype(table[0].value)> {
  for (const Row& r : table)
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
/// Whether `s` zeroes its output at the start of its launch, its slot words carrying its epoch from
/// launch to launch (StrategyInfo::persistent_slot).
constexpr bool resets_first(Strategy s) noexcept { return info(s).persistent_slot; }
/// The threads a block of `threads` loading threads is launched with: one wave more where the
/// strategy's row says so (StrategyInfo::extra_wave).
constexpr std::uint32_t block_threads(Strategy s, std::uint32_t threads, std::uint32_t wave) noexcept {
  return threads + (info(s).extra_wave ? wave : 0u);
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

  auto operator<=>(const KernelConfig&) const = default;

  /// Descriptor of one field (variant_field.hpp).
  template <class M>
  using Field = VariantField<KernelConfig, M>;

  /// The field list: the one place the variant's fields are enumerated. The labels, label
  /// parsing, the rendered #defines and the compile-time/launch-time split derive from it.
  /// The epilogue is omissible: labels written before it existed (in databases, overrides,
  /// documents) name the amax-only variant they always named; a fused variant's label has `.scale`
  /// after the grid cap (`one_pass.t256.v8.u4.b8cu.scale`). `.amax` is not accepted: one label per
  /// variant.
  static constexpr auto fields() {
    return std::make_tuple(
        Field<Strategy>{"strategy", "", "", "AMAX_STRATEGY", &KernelConfig::strategy},
        Field<std::uint32_t>{"threads", "t", "", "AMAX_THREADS", &KernelConfig::threads},
        Field<std::uint32_t>{"nvec", "v", "", "AMAX_NVEC", &KernelConfig::nvec},
        Field<std::uint32_t>{"unroll", "u", "", "AMAX_UNROLL", &KernelConfig::unroll},
        Field<BlockCap>{"max_blocks", "b", "", "", &KernelConfig::max_blocks},
        Field<Epilogue>{"epilogue", "", "", "AMAX_EPILOGUE", &KernelConfig::epilogue, true});
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
  /// multiple of the wave size or over the limit, vector wider than 16 bytes, a strategy the arch
  /// does not run (strategy_unsupported_reason), the scale epilogue on a strategy whose row does not
  /// support it, and so on.
  std::optional<std::string> validate(const ArchInfo& arch, DType dtype) const;
};

/// Why `arch` cannot run strategy `s` (its row's amd_unsupported on AMD), or nullopt where it can.
/// Pure, thread-safe.
std::optional<std::string> strategy_unsupported_reason(Strategy s, const ArchInfo& arch);

namespace detail {
/// Label tokens: a decimal u32 without leading zeros (nullopt otherwise), and `s` split at `sep`.
/// Shared by the label codecs of KernelConfig and MultiConfig.
std::optional<std::uint32_t> parse_u32(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
}  // namespace detail

static_assert(aggregate_arity<KernelConfig>() == std::tuple_size_v<decltype(KernelConfig::fields())>,
              "every KernelConfig member must be listed in KernelConfig::fields()");

/// Kernel entry-point names for a config and dtype: `amax_<kernel_label>_<dtype>` with '.' -> '_'
/// (`amax_one_pass_t256_v8_u4_bf16`, `amax_one_pass_t256_v8_u4_scale_bf16`), plus the second-stage kernel of
/// two_stage (`..._finish`).
std::string kernel_name(const KernelConfig& c, DType dtype);
std::string finish_kernel_name(const KernelConfig& c, DType dtype);

}  // namespace amax
