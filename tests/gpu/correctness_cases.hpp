#pragma once
// The bit-exact correctness cases shared by the GPU test programs (one case list, any backend).
// Each runs every variant of the pruned space of every dtype (kernels built through env's compiler
// and binary cache, loaded through env's backend) and reports mismatches with gtest failures naming
// the variant, dtype, size, offset, NaN mode and input seed. Not thread-safe (one env per thread).
#include "gpu_env.hpp"

namespace amax::test {

/// Sizes 0 .. 2^24+7 (odd, multi-block, one element), random input, both NaN modes.
void every_variant_every_size_both_nan_modes(GpuEnv* env);
/// Input pointers offset by 1 .. (16 / element bytes) - 1 elements from a 16-byte boundary.
void pointers_offset_by_every_element_of_a_vector(GpuEnv* env);
/// Every special-value input kind (NaN, Inf, denormals, -0, max first/last ...), both NaN modes.
void special_values_both_nan_modes(GpuEnv* env);
/// One bf16 input of 2^31 + 2^20 + 3 elements with its maximum past index 2^31 (skips when the
/// device memory is too small).
void bf16_above_two_to_the_31_elements(GpuEnv* env);

}  // namespace amax::test
