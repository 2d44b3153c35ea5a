#pragma once
// The CPU reference amax with the exact contract of DESIGN.md section 2, and inputs designed to
// break wrong kernels (DESIGN.md section 5). Used by the GPU tests and by the tuner's verification.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "amax/dtype.hpp"

namespace amax {

/// fp32 bits of max |x| over `n` elements of `dtype` stored at `data` (host memory, any alignment):
/// +0.0 (0x00000000) for n == 0 or all zeros; +Inf 0x7f800000; the canonical quiet NaN 0x7fc00000
/// when a NaN is present and nan_mode is propagate; NaNs skipped when nan_mode is ignore. fp16 and
/// bf16 results are converted to fp32 exactly (fp16 denormals become fp32 normals). Computed with
/// plain float comparisons per element (a method independent of the kernels' integer trick).
/// Thread-safe.
std::uint32_t reference_amax_bits(const void* data, DType dtype, std::uint64_t n, NanMode nan_mode);

/// Kinds of adversarial input.
enum class InputKind : std::uint8_t {
  random,          ///< random signs and exponents, no special values
  max_first,       ///< the unique maximum at element 0
  max_last,        ///< ... at element n-1
  max_middle,      ///< ... at n/2
  max_in_vector,   ///< ... at 8k+5 near the middle (inside a 16-byte vector, not its first lane)
  all_negative,    ///< every element negative
  negative_zero,   ///< every element -0.0 (result +0.0)
  pos_inf,         ///< random plus +Inf at n/3
  neg_inf,         ///< random plus -Inf at n-1 (result +Inf)
  nan_first,       ///< random plus a NaN (random payload and sign) at 0
  nan_middle,      ///< ... at n/2
  nan_last,        ///< ... at n-1
  nan_and_inf,     ///< NaN at n/4 and -Inf at 3n/4
  all_nan,         ///< every element NaN (ignore mode gives +0.0)
  denormals,       ///< every element a denormal of the dtype (random sign), none zero
};
std::span<const InputKind> all_input_kinds() noexcept;
std::string_view to_string(InputKind k) noexcept;

/// n elements of `dtype` (n x element bytes) of the given kind, from the deterministic generator
/// seeded with `seed`. Thread-safe.
std::vector<std::uint8_t> make_input(InputKind kind, DType dtype, std::uint64_t n, std::uint64_t seed);

}  // namespace amax
