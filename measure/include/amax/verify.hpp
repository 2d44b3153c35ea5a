#pragma once
// Bit-exact verification of many variants at once (DESIGN.md sections 2 and 5): the launcher
// that runs every variant on one input, and the tuner's two verification passes built on it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/device_buffer.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/launch.hpp"
#include "amax/measure.hpp"

namespace amax::tune {

/// Launches many variants on the same input and returns each result's bits.
/// Outputs are pre-filled with a garbage pattern that differs per call, workspace holds
/// arbitrary bytes; one synchronisation per call of run().
class Verifier {
 public:
  Verifier(Backend& backend, StreamHandle stream, std::size_t max_variants, std::uint64_t max_workspace_bytes);
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;
  /// Result bits of every kernel on `n` elements at device pointer `in`. A launch that fails
  /// throws BackendError naming the call. Also checks that the stream slot's
  /// words (arrival count of one_pass and self_reset, accumulator of self_reset) are 0 after.
  std::vector<std::uint32_t> run(const std::vector<const LoadedKernel*>& kernels,
                                 const std::vector<KernelConfig>& configs, const void* in, std::uint64_t n,
                                 NanMode mode);
  std::uint32_t* counter() const noexcept { return counter_.get<std::uint32_t>(); }

 private:
  Backend& b_;
  StreamHandle stream_;
  std::size_t max_variants_;
  std::uint64_t max_workspace_;
  DeviceBuffer outputs_, workspace_, counter_;  // one fp32 per variant; workspace; a stream slot
  std::uint32_t calls_ = 0;
};

/// Sizes of the full adversarial pass (verify_small): one element, a few vectors with a tail, and
/// several blocks. Workspaces must hold each variant's workspace at these sizes.
inline constexpr std::uint64_t kSmallVerifySizes[] = {1, 33, 4097};

/// The full adversarial pass of every variant of `dtype` at kSmallVerifySizes: every input kind of
/// reference.hpp, both NaN modes, pointers offset by 0-2 elements. `kernels[i]` is configs[i]'s
/// loaded kernel or nullptr (not compiled: skipped). Returns label -> the first failure ("kind n=..
/// offset=.. nan=..: got 0x.., expected 0x.."); variants absent passed. Errors: BackendError.
std::map<std::string, std::string> verify_small(Backend& backend, Verifier& verifier, DType dtype,
                                                const std::vector<KernelConfig>& configs,
                                                const std::vector<const LoadedKernel*>& kernels);

/// The pass at a key's own size n: the maximum planted at the last element of a pointer offset by
/// one element, then a NaN in the middle (propagate -> NaN, ignore -> the maximum), on slice 0 of
/// `inputs` (restored afterwards). Returns one reason per config, empty where it passed.
/// Errors: BackendError.
std::vector<std::string> verify_at_size(Backend& backend, Verifier& verifier, InputRegion& inputs, DType dtype,
                                        std::uint64_t n, const std::vector<KernelConfig>& configs,
                                        const std::vector<const LoadedKernel*>& kernels);

}  // namespace amax::tune
