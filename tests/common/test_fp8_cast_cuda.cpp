// The FP8 cast's CPU reference against CUDA's own conversion: cuda_fp8.h's host-side
// __nv_cvt_float_to_fp8 with __NV_SATFINITE (what TransformerEngine's __nv_fp8_e4m3 / __nv_fp8_e5m2
// constructors call; on sm_89+ devices the same rules run as cvt.rn.satfinite), compiled for the
// host from the CUDA toolkit's headers. The transformer_engine rule of e4m3 and e5m2 over every
// 251st fp32 pattern, every pattern within 2 ulp of a rounding boundary and fresh random patterns.
#include <gtest/gtest.h>

#include <cuda_fp8.h>

#include <bit>
#include <cstdio>
#include <random>

#include "amax/fp8_cast.hpp"

using namespace amax;

TEST(Fp8CastCuda, TransformerEngineRuleEqualsCudaSatfiniteConversion) {
  const struct {
    Fp8Format f;
    __nv_fp8_interpretation_t cuda;
  } formats[] = {{Fp8Format::e4m3, __NV_E4M3}, {Fp8Format::e5m2, __NV_E5M2}};
  std::mt19937 rng(std::random_device{}());
  long checked = 0;
  for (const auto& fm : formats) {
    auto check = [&](std::uint32_t x) {
      const std::uint8_t ours = fp8_from_fp32_bits(x, fm.f, CastRule::transformer_engine);
      const std::uint8_t cuda = __nv_cvt_float_to_fp8(std::bit_cast<float>(x), __NV_SATFINITE, fm.cuda);
      if (ours != cuda) {
        ADD_FAILURE() << info(fm.f).name << " x=0x" << std::hex << x << ": reference 0x" << int(ours)
                      << ", cuda_fp8.h 0x" << int(cuda);
        return false;
      }
      ++checked;
      return true;
    };
    for (std::uint64_t x = 0; x < (1ull << 32); x += 251)
      if (!check(static_cast<std::uint32_t>(x))) return;
    for (unsigned c = 0; c < encoding(fm.f).max_code; ++c) {
      const float mid = static_cast<float>((fp8_to_double(static_cast<std::uint8_t>(c), fm.f) +
                                            fp8_to_double(static_cast<std::uint8_t>(c + 1), fm.f)) / 2);
      for (int d = -2; d <= 2; ++d)
        for (std::uint32_t s : {0u, 0x80000000u})
          if (!check((std::bit_cast<std::uint32_t>(mid) + static_cast<std::uint32_t>(d)) | s)) return;
    }
    for (int i = 0; i < 4000000; ++i)
      if (!check(rng())) return;
  }
  std::printf("fp8 cast: %ld fp32 patterns equal cuda_fp8.h's __nv_cvt_float_to_fp8(__NV_SATFINITE)\n", checked);
}
