#pragma once
// FNV-1a 64: the one hash amax-tune uses for template hashes, source hashes (binary-cache keys) and
// cache-entry checksums. Not cryptographic: it detects change and damage, not tampering.
#include <cstdint>
#include <string>
#include <string_view>

namespace amax {

inline constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

/// FNV-1a 64 of `bytes`, continuing from `h` (chain calls to hash several parts).
constexpr std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t h = kFnvOffsetBasis) noexcept {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
  return h;
}
/// 16 lowercase hex digits.
std::string to_hex(std::uint64_t h);

}  // namespace amax
