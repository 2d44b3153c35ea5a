// The cold-cache rotation region against each arch's last cache level (no GPU: DeviceInfo as the
// backends fill it).
#include <gtest/gtest.h>

#include "amax/backend.hpp"
#include "amax/measure.hpp"

using namespace amax;

namespace {
DeviceInfo mi300x() {
  DeviceInfo d;
  d.name = "AMD Instinct MI300X";
  d.arch = "gfx942:sramecc+:xnack-";
  d.cu_count = 304;
  d.wave_size = 64;
  d.l2_bytes = 4ull << 20;  // hipDeviceProp_t::l2CacheSize: one XCD's L2, not the Infinity Cache
  d.memory_bytes = 192ull << 30;
  return d;
}
}  // namespace

TEST(RotationRegion, DefeatsTheInfinityCacheOnGfx942WhateverTheSizes) {
  const DeviceInfo d = mi300x();
  constexpr std::uint64_t kMall = 256ull << 20;
  for (std::uint64_t largest : {4096ull, 16ull << 20, 64ull << 20, 1ull << 30}) {
    const std::uint64_t region = tune::rotation_region_bytes(d, largest);
    EXPECT_GT(region, largest + 5 * kMall) << largest;
    EXPECT_EQ(region, (largest + 5 * kMall + (1 << 20) - 1) / (1 << 20) * (1 << 20) + (1 << 20)) << largest;
  }
  // gfx950 (MI355X) has the same 256 MiB; any target ID of the processor counts.
  DeviceInfo m = d;
  m.arch = "gfx950";
  EXPECT_GT(tune::rotation_region_bytes(m, 1 << 20), (1u << 20) + 5 * kMall);
  m.arch = "gfx942:xnack+";
  EXPECT_GT(tune::rotation_region_bytes(m, 1 << 20), (1u << 20) + 5 * kMall);
  // 5x the last level less is also what max_input_elements keeps free.
  EXPECT_EQ(tune::max_input_elements(d, DType::fp32), ((192ull << 30) - 5 * kMall - (1ull << 30)) / 4);
}

TEST(RotationRegion, UsesTheReportedL2WhereItIsTheLastLevel) {
  DeviceInfo h200;
  h200.arch = "sm_90";
  h200.l2_bytes = 60ull << 20;
  EXPECT_EQ(tune::rotation_region_bytes(h200, 1ull << 30), (1ull << 30) + 300ull * (1 << 20) + (1 << 20));
  DeviceInfo mi250 = h200;
  mi250.arch = "gfx90a";
  mi250.l2_bytes = 8ull << 20;
  EXPECT_EQ(tune::rotation_region_bytes(mi250, 0), 40ull * (1 << 20) + (1 << 20));
}
