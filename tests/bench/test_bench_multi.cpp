// bench-multi on the CPU: the targets check on synthetic rows, the default groups (the GPU run is
// test_gpu_bench_multi.cpp).
#include <gtest/gtest.h>


#include "amax/bench_multi.hpp"

using namespace amax;
using namespace amax::bench;

namespace {
MultiRow row(MultiGroupSpec g, const char* contender, double us) {
  MultiRow r;
  r.group = g;
  r.contender = contender;
  r.stats.median_us = us;
  return r;
}
}  // namespace

TEST(BenchMulti, TargetsAreTheIssuesThree) {
  const MultiGroupSpec a{500, 4096, DType::fp32}, b{4096, 16384, DType::bf16}, big{64, 1u << 20, DType::bf16},
      huge{8, 1u << 24, DType::bf16}, small{64, 4096, DType::fp32};
  const std::vector<MultiRow> rows = {row(a, kMulti, 24.5),          row(b, kMulti, 61),
                                      row(big, kMulti, 40),          row(big, "stream read", 36),
                                      row(huge, kMulti, 70),         row(huge, "stream read", 56),
                                      row(small, kMulti, 5),         row(small, "stream read", 1)};
  const auto t = check_multi_targets(rows);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].target, "500x4096:fp32: <= 25 us");
  EXPECT_EQ(t[0].measured, "24.50 us");
  EXPECT_TRUE(t[0].met);
  EXPECT_EQ(t[1].target, "4096x16384:bf16: <= 60 us");
  EXPECT_FALSE(t[1].met);
  // 64 x 1 Mi bf16 = 134 MB at 90%, 8 x 16 Mi at 80% (the worst); 64 x 4096 fp32 (1 MB) not counted.
  EXPECT_EQ(t[2].measured, "worst 80.0% (8x16777216:bf16)");
  EXPECT_FALSE(t[2].met);
  EXPECT_FALSE(t[3].measured_ok);  // torch: from Python
  EXPECT_EQ(check_multi_targets({}).size(), 1u);
}

TEST(BenchMulti, DefaultGroupsHoldTheTargetShapes) {
  const auto g = default_multi_groups();
  EXPECT_EQ(g[0].name(), "500x4096:fp32");
  EXPECT_EQ(g[1].name(), "4096x16384:bf16");
  int big = 0;
  for (const auto& x : g) big += x.bytes() >= 64'000'000;
  EXPECT_EQ(big, 5);  // 4096 x 16 Ki, 512 x 64 Ki, 64 x 1 Mi, 128 x 1 Mi, 8 x 16 Mi bf16
}
