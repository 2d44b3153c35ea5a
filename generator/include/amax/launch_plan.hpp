#pragma once
// The launch plan of a single-tensor call, built from the strategy's row (kStrategies) and the
// config: the ordered operations (a memset of the output, the main kernel, a finish kernel, with
// their grid, block and cooperative or dependent launch), the workspace bytes, whether the stream
// slot is used, and the kernels' argument layout. Also every constant the host and the kernels
// share (slot words, flag bits, the scale epilogue's argument struct): the host reads them here,
// and render_source / render_multi_source write them into every source (host_device_defines), so
// the templates hold none of them.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "amax/arch.hpp"
#include "amax/kernel_config.hpp"
#include "amax/quantize_config.hpp"

namespace amax {

/// The one-launch quantize kernels' (keep, reread) words of the stream slot, rendered as
/// AMAX_QUANT_SYNC_ARRIVALS etc.: the arrival count and the amax accumulator are 0 between
/// launches, so they share the words of strategies whose words are 0 between launches too (launches
/// on one stream never overlap); the publication (the final amax and a parity bit that each launch
/// flips) persists from launch to launch and is no strategy's word.
inline constexpr std::uint32_t kQuantizeArrivalWord = 0;
inline constexpr std::uint32_t kQuantizeAccumulatorWord = 1;
inline constexpr std::uint32_t kQuantizePublishedWord = 5;

namespace detail {
/// True when no two rows' slot words overlap unless both rows' words persist or neither's do (a
/// persistent word must never be zeroed or counted on by another strategy), and every persistent
/// range starts 8-byte aligned (first_reset's 64-bit word).
constexpr bool slot_words_disjoint() {
  for (const StrategyInfo& a : kStrategies) {
    if (a.persistent_slot && a.slot_first % 2) return false;
    for (const StrategyInfo& b : kStrategies) {
      const bool overlap = a.slot_count && b.slot_count && a.slot_first < b.slot_first + b.slot_count &&
                           b.slot_first < a.slot_first + a.slot_count;
      if (overlap && a.persistent_slot != b.persistent_slot) return false;
    }
  }
  return true;
}
/// The words of a slot holding the words of every strategy `arch` runs (every strategy when
/// `arch` is null), rounded up to an even count so that every slot of an array starts 8-byte aligned.
constexpr std::size_t slot_words_for(const ArchInfo* arch) {
  std::size_t end = std::size_t{std::max({kQuantizeArrivalWord, kQuantizeAccumulatorWord, kQuantizePublishedWord})} + 1;
  for (const StrategyInfo& r : kStrategies)
    if (!arch || arch->vendor != Vendor::amd || r.amd_unsupported.empty())
      end = std::max<std::size_t>(end, std::size_t{r.slot_first} + r.slot_count);
  return (end + 1) / 2 * 2;
}
}  // namespace detail
static_assert(detail::slot_words_disjoint(), "a strategy's persistent slot words overlap another's");

namespace detail {
/// True when quantize's zero-between-launches words touch no persistent strategy word and its
/// persistent word touches no strategy's word at all.
constexpr bool quantize_slot_words_fit() {
  auto in = [](const StrategyInfo& r, std::uint32_t w) {
    return r.slot_count && w >= r.slot_first && w < r.slot_first + r.slot_count;
  };
  for (const StrategyInfo& r : kStrategies) {
    if (in(r, kQuantizePublishedWord)) return false;
    if (r.persistent_slot && (in(r, kQuantizeArrivalWord) || in(r, kQuantizeAccumulatorWord))) return false;
  }
  return kQuantizeArrivalWord != kQuantizeAccumulatorWord;
}
}  // namespace detail
static_assert(detail::quantize_slot_words_fit(), "quantize's slot words collide with a strategy's");

/// 32-bit words of one stream slot: every strategy's words (its row's slot_first, slot_count) and
/// the one-launch quantize kernels'. A slot is zeroed once when allocated; every kernel that uses it
/// leaves it zero again, except the persistent words (persistent_slot, kQuantizePublishedWord),
/// which carry state from launch to launch.
inline constexpr std::size_t kSlotWords = detail::slot_words_for(nullptr);
/// The slot words a context on `arch` allocates: those of the strategies `arch` runs.
inline std::size_t slot_words(const ArchInfo& arch) { return detail::slot_words_for(&arch); }

/// The flags word of every kernel: the NaN mode (AMAX_FLAG_IGNORE_NAN).
inline constexpr std::uint32_t kFlagIgnoreNan = 1u;

/// The scale epilogue's kernel parameter, byte for byte the template's amax_scale_args_t: the scale
/// and scale_inv outputs (one fp32 each, device memory, 4-byte aligned) and the rule (ScaleRule of
/// common/include/amax/scale_rule.hpp).
struct ScaleArgs {
  float* scale = nullptr;
  float* scale_inv = nullptr;
  float max = 448.0f;
  float epsilon = 0.0f;
  std::uint32_t rule_flags = 0;  ///< kRuleForcePow2 | kRuleNanPropagates
};
inline constexpr std::uint32_t kRuleForcePow2 = 1u;      // AMAX_RULE_FORCE_POW2
inline constexpr std::uint32_t kRuleNanPropagates = 2u;  // AMAX_RULE_NAN_PROPAGATES
static_assert(sizeof(ScaleArgs) == 32 && offsetof(ScaleArgs, max) == 16 && offsetof(ScaleArgs, rule_flags) == 24,
              "ScaleArgs: the layout host_device_defines states (AMAX_SCALE_ARGS_BYTES)");

/// `#define AMAX_FLAG_IGNORE_NAN 1u` etc.: every constant the host and the kernels share (the flag
/// bits, the rule flags, the scale argument struct's size, each strategy's named slot word), one
/// line each; the templates static_assert what they rely on. Thread-safe.
std::string host_device_defines();

/// The arguments of the kernels, in parameter order (templates/amax_kernels.h: the stage-one entry
/// point and the finish kernel); `scale` is passed to every kernel (an amax-only kernel has no such
/// parameter, and the launch API reads only the parameters a kernel has).
enum class KernelArg : std::uint8_t { input, count, output, workspace, slot, flags, scale, parts };
inline constexpr std::array<KernelArg, 7> kMainArgs = {KernelArg::input,     KernelArg::count, KernelArg::output,
                                                       KernelArg::workspace, KernelArg::slot,  KernelArg::flags,
                                                       KernelArg::scale};
inline constexpr std::array<KernelArg, 4> kFinishArgs = {KernelArg::workspace, KernelArg::parts, KernelArg::output,
                                                         KernelArg::scale};

/// One operation of a launch plan, in enqueue order.
struct LaunchOp {
  enum class Kind : std::uint8_t { memset_output, main, finish };
  Kind kind = Kind::main;
  std::uint32_t grid = 0;    ///< blocks (main, finish)
  std::uint32_t block = 0;   ///< loading threads; the launch adds one wave where extra_wave
  bool extra_wave = false;   ///< the block has one wave more (StrategyInfo::extra_wave)
  bool cooperative = false;  ///< Backend::launch_cooperative
  bool dependent = false;    ///< Backend::launch_dependent, except while the stream is being captured
  auto operator<=>(const LaunchOp&) const = default;
};

/// How one amax call on n elements is launched with a config on a device with cu_count CUs/SMs
/// (the plan of the config's strategy row). grid = ceil(vectors / (threads x unroll)) clamped to
/// [1, the config's cap], where vectors = ceil(n / nvec) (the unaligned head and the tail, fewer
/// than nvec elements each, are folded by the first threads besides their vectors:
/// amax_range_partial in templates/amax_kernels.h, so below the cap a size that is a whole number
/// of (threads x unroll x nvec) tiles takes that many blocks). A row with resident_grid: the grid is further capped
/// at the row's max_grid
/// and at resident_per_cu x cu_count, the blocks of the compiled kernel the device holds at once
/// (Loaded::resident_per_cu, an occupancy query); with resident_per_cu 0 (not known: no kernel
/// loaded yet) only at max_grid, and such a shape is only for sizing (workspace, launches):
/// launch_amax refuses a resident-grid shape larger than its kernel's resident blocks. Pure,
/// thread-safe.
struct LaunchShape {
  std::uint32_t grid = 0;             ///< 0 when n == 0 (nothing is launched)
  std::uint32_t block = 0;            ///< the config's loading threads (without an extra wave)
  std::uint32_t parts = 0;            ///< participants of the cross-block step: the grid's blocks
  std::uint64_t workspace_bytes = 0;  ///< 4 x parts for a row with workspace when parts > 1, else 0
  bool uses_slot = false;             ///< the row's slot use applies: the stream's slot is passed
  bool resident_grid = false;         ///< the row's resident_grid (the grid depends on the loaded kernel)
  bool extra_wave = false;            ///< the row's extra_wave
  bool cooperative = false;           ///< resident_grid with parts > 1: a cooperative launch
  bool memset_output = false;         ///< the output is zeroed first
  bool finish_kernel = false;         ///< a finish kernel with parts > 1: a second launch
  bool dependent_finish = false;      ///< the finish kernel as a programmatic dependent launch
  /// The ordered operations: memset_output, main, finish, those that apply (none when grid == 0).
  std::array<LaunchOp, 3> ops_storage{};
  std::size_t op_count = 0;
  const LaunchOp* begin() const noexcept { return ops_storage.data(); }
  const LaunchOp* end() const noexcept { return ops_storage.data() + op_count; }
  int launches() const noexcept { return static_cast<int>(op_count); }
};
LaunchShape launch_shape(const KernelConfig& config, std::uint64_t n, std::uint32_t cu_count,
                         std::uint32_t resident_per_cu = 0);

/// How the quantize kernel of `config` is launched on n elements of `dtype` (one main operation;
/// the two-launch path's fused amax + scale before a cast kernel is the single-tensor family's own
/// plan): the grid is quantize_grid's (quantize_config.hpp; resident_per_cu 0 = not known yet, a
/// shape for sizing only, as launch_shape's); keep and reread are launched cooperatively and with
/// the stream slot (kQuantize*Word) when the grid has more than one block (their grid barrier
/// waits for every block). No workspace; nothing for n == 0. Pure, thread-safe.
LaunchShape launch_shape(const QuantizeConfig& config, DType dtype, std::uint64_t n, std::uint32_t cu_count,
                         std::uint32_t resident_per_cu = 0);

}  // namespace amax
