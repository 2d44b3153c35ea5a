#pragma once
// What is measured, as the tuner and the bench name it: the size grid of single tensors and the
// group shape of a list of tensors.
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "amax/dtype.hpp"
#include "amax/multi_config.hpp"

namespace amax::tune {

/// The powers of two from 2^10 to 2^30 elements: the bench's default sizes and the core of the
/// tuner's default grid.
std::vector<std::uint64_t> power_of_two_sizes();

/// One group shape: `tensors` tensors of `n` elements of `dtype`, laid out one after another.
/// Text form `500x4096:fp32`. Plain value type.
struct GroupSpec {
  std::uint64_t tensors = 0;
  std::uint64_t n = 0;
  DType dtype{};
  std::uint64_t bytes() const noexcept { return tensors * n * info(dtype).bytes; }
  /// As the database keys it: tensors, total bytes, the largest tensor's bytes.
  GroupShape shape() const noexcept { return {tensors, bytes(), n * info(dtype).bytes}; }
  std::string name() const;
  auto operator<=>(const GroupSpec&) const = default;
};

}  // namespace amax::tune
