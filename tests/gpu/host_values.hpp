#pragma once
// Writing values into host buffers of device element types, shared by the quantize tests.
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "amax/dtype.hpp"

namespace amax::test {

/// Element i of `host` (dtype elements) set to `v`: fp32 as it is, bf16 its top half (truncated, so
/// |x| <= |v|), fp16 rounded to nearest (the host's _Float16).
inline void put(std::vector<std::uint8_t>& host, DType dtype, std::uint64_t i, float v) {
  if (dtype == DType::fp32) {
    std::memcpy(host.data() + i * 4, &v, 4);
    return;
  }
  const std::uint16_t h = dtype == DType::bf16 ? static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16)
                                               : std::bit_cast<std::uint16_t>(static_cast<_Float16>(v));
  std::memcpy(host.data() + i * 2, &h, 2);
}

}  // namespace amax::test
