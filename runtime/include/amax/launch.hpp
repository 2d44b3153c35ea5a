#pragma once
// Launching a loaded kernel: its launch shape (grid, block, workspace, extra launches) and the
// launch sequence, written once for both vendors. Building and loading kernels is kernel_cache.hpp.
#include <cstddef>
#include <cstdint>

#include "amax/backend.hpp"
#include "amax/kernel_config.hpp"

namespace amax {

template <class Config>
struct Loaded;  // kernel_cache.hpp
using LoadedKernel = Loaded<KernelConfig>;

/// spin: the most blocks a spin grid has (launch_shape caps it here as well as at the blocks the
/// device holds at once), and the first slot word of its per-block words: block b (1 .. grid - 1)
/// stores its flagged maximum into word kSpinFirstWord + b (AMAX_SPIN_FIRST_WORD in
/// templates/amax_kernels.h). 1024 covers one wave of 512-thread blocks on the H200 (132 SMs x 4).
inline constexpr std::uint32_t kSpinMaxBlocks = 1024;
inline constexpr std::size_t kSpinFirstWord = 6;
/// first_reset: the first of its three slot words (AMAX_FIRST_RESET_WORD in
/// templates/amax_kernels.h): [kFirstResetWord, +1] the 64-bit {arrivals, epoch} word (8-byte
/// aligned), [kFirstResetWord + 2] the last published epoch + 1.
inline constexpr std::size_t kFirstResetWord = 2;

/// 32-bit words of one stream slot: [0] the arrival count (one_pass, self_reset), [1] the
/// accumulator of block (or cluster) maxima (self_reset), [2, 5) first_reset's words, [5] unused,
/// [kSpinFirstWord + 1, kSpinFirstWord + kSpinMaxBlocks) spin's per-block words. A slot is zeroed
/// once when allocated; every kernel that uses it leaves it zero again, except first_reset, whose
/// words are its own and carry its epoch from launch to launch (4120 bytes per slot; an even
/// count of words, so that every slot of an array starts 8-byte aligned).
inline constexpr std::size_t kSlotWords = kSpinFirstWord + kSpinMaxBlocks;
static_assert(kFirstResetWord % 2 == 0 && kFirstResetWord + 3 <= kSpinFirstWord && kSpinFirstWord % 2 == 0 &&
                  kSlotWords % 2 == 0,
              "first_reset's 64-bit word must be 8-byte aligned in every slot, below spin's words");

/// How one amax call on n elements is launched with a config on a device with cu_count CUs/SMs.
/// grid = ceil(vectors / (threads x unroll)) clamped to [1, the config's cap], where vectors =
/// ceil(n / nvec) (the aligned body holds at most floor(n / nvec) vectors at any alignment of
/// the input; the unaligned head and the tail, fewer than nvec elements each, are folded by the
/// first threads besides their vectors: amax_range_partial in templates/amax_kernels.h, so below
/// the cap a size that is a whole number of (threads x unroll x nvec) tiles takes that many blocks),
/// then rounded up to a multiple of the
/// config's cluster (a clustered kernel launches whole clusters: the cap may be exceeded by at
/// most cluster - 1 blocks). spin: the grid is further capped at kSpinMaxBlocks and at
/// resident_per_cu x cu_count, the blocks of the compiled kernel the device holds at once
/// (LoadedKernel::resident_per_cu, an occupancy query); with resident_per_cu 0 (not known: no
/// kernel loaded yet) only at kSpinMaxBlocks, and such a shape is only for sizing (workspace,
/// launches): launch_amax refuses a spin shape larger than its kernel's resident blocks. The shape
/// to launch a loaded kernel k with is launch_shape(config, n, cu_count, k.resident_per_cu),
/// `config` being the full config (k.config has its grid cap normalised away). Pure, thread-safe.
struct LaunchShape {
  std::uint32_t grid = 0;             ///< 0 when n == 0 (nothing is launched); a multiple of the
                                      ///< config's cluster
  std::uint32_t block = 0;            ///< the config's loading threads (launch_amax adds
                                      ///< first_reset_warp's ticket wave: block_threads)
  std::uint32_t parts = 0;            ///< participants of the cross-block step: grid / cluster
                                      ///< (the blocks, or the clusters of a clustered config)
  std::uint64_t workspace_bytes = 0;  ///< 4 x parts for two_stage/one_pass when parts > 1, else 0
  bool uses_slot = false;             ///< one_pass, self_reset, spin, first_reset(_warp) or atomic with
                                      ///< the scale epilogue, with parts > 1: the stream's slot
  bool cooperative = false;           ///< spin with parts > 1: a cooperative launch
                                      ///< (Backend::launch_cooperative)
  bool memset_output = false;         ///< atomic: the output is zeroed first
  bool finish_kernel = false;         ///< two_stage with parts > 1: a second launch
  /// two_stage with parts > 1: the finish kernel is launched as a programmatic dependent of stage
  /// one (Backend::launch_dependent: sm_90+; elsewhere an ordinary launch), except while the stream
  /// is being captured (an ordinary launch there). Measured on the H200 (docs/results/2026-12-02.md,
  /// "Programmatic dependent launch"): two_stage 1.02-1.12x faster, cold, 2^14-2^24 elements.
  bool dependent_finish = false;
  int launches() const noexcept { return (grid ? 1 : 0) + (memset_output ? 1 : 0) + (finish_kernel ? 1 : 0); }
};
LaunchShape launch_shape(const KernelConfig& config, std::uint64_t n, std::uint32_t cu_count,
                         std::uint32_t resident_per_cu = 0);

/// The scale epilogue's kernel parameter, byte for byte the template's amax_scale_args_t
/// (templates/amax_kernels.h): the scale and scale_inv outputs (one fp32 each, device memory,
/// 4-byte aligned) and the rule (ScaleRule of common/include/amax/scale_rule.hpp).
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
              "ScaleArgs must match amax_scale_args_t of templates/amax_kernels.h");

/// Enqueues amax of `n` elements at `in` into the fp32 at `out` on `stream`: n == 0 writes +0.0
/// with a memset and launches nothing; atomic memsets out then launches; two_stage launches stage
/// one and, with more than one block, the finish kernel; one_pass, self_reset and first_reset launch once
/// (first_reset_warp too, with one more wave per block: block_threads); spin
/// launches once, cooperatively when it has more than one block (also under graph capture, where
/// it is expected to become a kernel node with the cooperative attribute: tests/gpu check it).
/// workspace: at least shape.workspace_bytes bytes (any content); slot: kSlotWords 32-bit words
/// that are 0 (the kernels leave them 0), needed when shape.uses_slot; no two launches that may
/// run at the same time may share a slot. Never synchronises or allocates.
/// `scale`: required exactly when the kernel's config has the scale epilogue; the kernels then
/// write scale and scale_inv in the same launch. With n == 0 the amax 0 and the rule's scale and
/// scale_inv for it (reference_scale_bits) are written with memsets.
/// Errors: BackendError from the launch; std::logic_error when a spin shape has more blocks than
/// kernel.resident_per_cu x the device's CUs (a shape not made with
/// kernel.resident_per_cu): its
/// polling could wait for a block that is never resident.
/// `wave_size`: the wave the kernel was compiled for (first_reset_warp's ticket wave), 0 for the
/// device's: a kernel rendered for another vendor's wave runs in the wave-64 model (tests/wave64).
void launch_amax(Backend& backend, const LoadedKernel& kernel, const LaunchShape& shape, const void* in,
                 std::uint64_t n, float* out, void* workspace, std::uint32_t* slot, NanMode nan_mode,
                 StreamHandle stream, const ScaleArgs* scale = nullptr, std::uint32_t wave_size = 0);

}  // namespace amax
