#pragma once
// Bit-exact verification of many variants at once (DESIGN.md sections 2 and 5), written once for
// both kernel families: the launcher that runs every variant on one list of tensors, and the
// tuner's two verification passes built on it. A single-tensor variant runs a list one launch per
// tensor (launch_amax); a multi-tensor variant runs it in the launches of split_multi_launches.
#include <compare>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/device_buffer.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/measure.hpp"
#include "amax/multi_launch.hpp"
#include "amax/workload.hpp"

namespace amax::tune {

/// What one verification launch does: the kernel's code (its loaded object) and every launch
/// argument but the output word. Two variants whose keys are equal on the same tensors run the
/// same code on the same inputs with the same grid (e.g. configs differing only in a grid cap that
/// gives the same grid there, or a grid for one CU equal to the one for all), so the verifier
/// launches one of them and gives its result bits to both.
struct VerifyLaunchKey {
  const void* kernel = nullptr;       ///< the Loaded object
  std::vector<std::uint64_t> words;   ///< the launch arguments that vary (shape, tensor, launches)
  auto operator<=>(const VerifyLaunchKey&) const = default;
};

/// The key of single-tensor variant `config` (its loaded kernel `k`) on tensor `tensor` (of n
/// elements) of a list, launched for `cu_count` CUs/SMs: the kernel and its launch_shape. Pure.
VerifyLaunchKey verify_launch_key(const LoadedKernel& k, const KernelConfig& config, std::uint64_t n,
                                  std::uint32_t cu_count, std::size_t tensor);
/// The key of multi-tensor variant `config` (its loaded kernel `k`) launched as `plan` on a list:
/// the kernel, the launch-time fields but the grid cap (the plan's grids say what it does) and
/// each launch of the plan. Pure.
VerifyLaunchKey verify_launch_key(const LoadedMultiKernel& k, const MultiConfig& config,
                                  std::span<const MultiLaunch> plan);

/// Runs variants of either family (Config: KernelConfig or MultiConfig) on the same tensors and
/// returns each result's bits. Outputs are pre-filled with a garbage pattern that differs per call,
/// the workspace (grown as the variants need) holds arbitrary bytes, and after each run the stream
/// slot's words that every kernel must leave 0 are checked (the arrival count, self_reset's
/// accumulator; first_reset's persist by design). One stream; not
/// thread-safe.
class Verifier {
 public:
  Verifier(Backend& backend, StreamHandle stream);
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;

  /// Result bits of launches already run on one list of tensors, by VerifyLaunchKey (a
  /// single-tensor key's one word, a multi-tensor key's one word per tensor).
  using Memo = std::map<VerifyLaunchKey, std::vector<std::uint32_t>>;

  /// The result bits of every kernel (kernels[i] loaded, or nullptr: skipped, its words 0) on
  /// `tensors`, launched for a device of `cu_count` CUs/SMs: tensors.size() words per
  /// kernel, indexed by MultiTensor::index. Launches with equal keys (verify_launch_key) run once,
  /// into their own pre-garbaged output words; `memo` (optional, for one list of tensors) gives
  /// the results of keys run by earlier calls on the same tensors and takes this call's. Errors:
  /// BackendError from a launch; std::runtime_error when a kernel left a slot word set.
  template <class Config>
  std::vector<std::vector<std::uint32_t>> run(const std::vector<Config>& configs,
                                              const std::vector<const Loaded<Config>*>& kernels,
                                              std::span<const MultiTensor> tensors, DType dtype, NanMode mode,
                                              std::uint32_t cu_count, Memo* memo = nullptr);

  /// The full adversarial pass of each of `configs` (kernels[i] loaded, or nullptr: skipped): a
  /// list of tensors of kSmallVerifySizes elements at element offsets 0-2, in one buffer whose
  /// other bytes are all ones (a NaN in every dtype: a read past a tensor shows), each input kind
  /// of reference.hpp in turn, both NaN modes, launched for the device's CU count and for one CU
  /// (grids capped low: blocks loop over many vectors, multi-tensor blocks take runs of chunks and
  /// tensors are cut between them). Returns label -> the first failure ("tensor 3 of 7 (random
  /// n=4097 offset=1), nan=ignore, grid for 132 CUs: got 0x.., expected 0x.."); variants absent
  /// passed. Identical launches (verify_launch_key) of one list and NaN mode run once; the inputs
  /// are made on the host's threads. Errors: BackendError.
  template <class Config>
  std::map<std::string, std::string> verify_small(DType dtype, const std::vector<Config>& configs,
                                                  const std::vector<const Loaded<Config>*>& kernels);

  /// The pass at a work item's own shape (`group`: one tensor of n elements for a single-tensor
  /// key) on slice 0 of `inputs` (values < 2): tensor i, offset by one element, gets the dtype's
  /// largest power of two at its last, first or middle element (i mod 3); then a NaN in the middle
  /// of tensor tensors / 2 (propagate: NaN there; ignore: the maximum still). Slice 0 is restored.
  /// Returns one reason per config, empty where it passed. Errors: BackendError.
  template <class Config>
  std::vector<std::string> verify_at(InputRegion& inputs, const GroupSpec& group, const std::vector<Config>& configs,
                                     const std::vector<const Loaded<Config>*>& kernels);

 private:
  void reserve(std::uint64_t out_words, std::uint64_t workspace_bytes);
  Backend& b_;
  StreamHandle stream_;
  DeviceBuffer out_, workspace_, counter_;  // the results; the workspace; one stream slot
  std::uint64_t out_words_ = 0, workspace_bytes_ = 0;
  std::vector<unsigned char> args_;  // a multi-tensor launch's packed parameters
  std::uint32_t calls_ = 0;
};

/// Sizes of the full adversarial pass (Verifier::verify_small): empty, one element, a few vectors
/// with a tail, several blocks, and lists whose tensors span many chunks.
inline constexpr std::uint64_t kSmallVerifySizes[] = {0, 1, 33, 4097, 70001, 300007, (1u << 20) + 3};

}  // namespace amax::tune
