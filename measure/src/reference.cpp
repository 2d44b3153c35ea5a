#include "amax/reference.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

namespace amax {
namespace {

// Element -> float, exactly (every fp16 and bf16 value is representable in fp32).
float decode(const std::uint8_t* p, DType dtype) {
  if (dtype == DType::fp32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  if (dtype == DType::bf16) return std::bit_cast<float>(std::uint32_t{h} << 16);
  const std::uint32_t sign = (h >> 15) & 1u, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float mag;
  if (e == 0x1f) mag = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else if (e == 0) mag = std::ldexp(static_cast<float>(m), -24);
  else mag = std::ldexp(static_cast<float>(m | 0x400u), static_cast<int>(e) - 25);
  return sign ? -mag : mag;
}

}  // namespace

std::uint32_t reference_amax_bits(const void* data, DType dtype, std::uint64_t n, NanMode nan_mode) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  const std::uint32_t bytes = info(dtype).bytes;
  float best = 0.0f;
  bool nan = false;
  for (std::uint64_t i = 0; i < n; ++i) {
    const float a = std::fabs(decode(p + i * bytes, dtype));
    if (std::isnan(a)) {
      nan = true;
      continue;
    }
    if (a > best) best = a;
  }
  if (nan && nan_mode == NanMode::propagate) return 0x7fc00000u;
  return std::bit_cast<std::uint32_t>(best);  // best >= +0.0, never -0.0
}

namespace {
constexpr std::array<InputKind, 15> kKinds{
    InputKind::random,      InputKind::max_first,  InputKind::max_last,      InputKind::max_middle,
    InputKind::max_in_vector, InputKind::all_negative, InputKind::negative_zero, InputKind::pos_inf,
    InputKind::neg_inf,     InputKind::nan_first,  InputKind::nan_middle,    InputKind::nan_last,
    InputKind::nan_and_inf, InputKind::all_nan,    InputKind::denormals};

struct Format {
  int exp_bits, mant_bits;
  std::uint32_t make(std::uint32_t sign, std::uint32_t exp, std::uint32_t mant) const {
    return (sign << (exp_bits + mant_bits)) | (exp << mant_bits) | mant;
  }
  std::uint32_t exp_max() const { return (1u << exp_bits) - 1; }
};
Format format_of(DType d) {
  switch (d) {
    case DType::fp32: return {8, 23};
    case DType::fp16: return {5, 10};
    case DType::bf16: return {8, 7};
  }
  return {8, 23};
}
}  // namespace

std::span<const InputKind> all_input_kinds() noexcept { return kKinds; }

std::string_view to_string(InputKind k) noexcept {
  static constexpr std::array<std::string_view, 15> names{
      "random", "max_first", "max_last", "max_middle", "max_in_vector", "all_negative", "negative_zero",
      "pos_inf", "neg_inf", "nan_first", "nan_middle", "nan_last", "nan_and_inf", "all_nan", "denormals"};
  return names[static_cast<std::size_t>(k)];
}

std::vector<std::uint8_t> make_input(InputKind kind, DType dtype, std::uint64_t n, std::uint64_t seed) {
  const Format f = format_of(dtype);
  const std::uint32_t bytes = info(dtype).bytes;
  std::vector<std::uint8_t> out(n * bytes);
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + static_cast<unsigned>(kind) + 1);
  const std::uint32_t mant_mask = (1u << f.mant_bits) - 1;
  // Ordinary values: exponents in [1, exp_max - 2], so exp_max - 1 is free for a unique maximum.
  auto ordinary = [&](int sign) {
    const std::uint32_t e = 1 + static_cast<std::uint32_t>(rng() % (f.exp_max() - 2));
    const std::uint32_t s = sign < 0 ? static_cast<std::uint32_t>(rng() & 1) : static_cast<std::uint32_t>(sign);
    return f.make(s, e, static_cast<std::uint32_t>(rng()) & mant_mask);
  };
  auto put = [&](std::uint64_t i, std::uint32_t v) { std::memcpy(out.data() + i * bytes, &v, bytes); };
  auto nan = [&] { return f.make(rng() & 1, f.exp_max(), 1 + static_cast<std::uint32_t>(rng() % mant_mask)); };
  const std::uint32_t inf = f.make(0, f.exp_max(), 0);
  const std::uint32_t neg_inf = f.make(1, f.exp_max(), 0);

  for (std::uint64_t i = 0; i < n; ++i) {
    switch (kind) {
      case InputKind::all_negative: put(i, ordinary(1)); break;
      case InputKind::negative_zero: put(i, f.make(1, 0, 0)); break;
      case InputKind::all_nan: put(i, nan()); break;
      case InputKind::denormals: put(i, f.make(rng() & 1, 0, 1 + static_cast<std::uint32_t>(rng() % mant_mask))); break;
      default: put(i, ordinary(-1)); break;
    }
  }
  if (n == 0) return out;
  const std::uint32_t biggest = f.make(rng() & 1, f.exp_max() - 1, static_cast<std::uint32_t>(rng()) & mant_mask);
  switch (kind) {
    case InputKind::max_first: put(0, biggest); break;
    case InputKind::max_last: put(n - 1, biggest); break;
    case InputKind::max_middle: put(n / 2, biggest); break;
    case InputKind::max_in_vector: put(std::min<std::uint64_t>(n - 1, (n / 2) / 8 * 8 + 5), biggest); break;
    case InputKind::pos_inf: put(n / 3, inf); break;
    case InputKind::neg_inf: put(n - 1, neg_inf); break;
    case InputKind::nan_first: put(0, nan()); break;
    case InputKind::nan_middle: put(n / 2, nan()); break;
    case InputKind::nan_last: put(n - 1, nan()); break;
    case InputKind::nan_and_inf:
      put(n / 4, nan());
      put(3 * n / 4, neg_inf);
      break;
    default: break;
  }
  return out;
}

}  // namespace amax
