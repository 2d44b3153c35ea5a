// The nearest-size rule (nearest.hpp) on its own: exact results at ties, n = 0, sizes near 2^63
// and 2^64, and the same-device and recency preferences at equal sizes.
#include <amax/db/nearest.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace amax::db {
namespace {

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kMax63 = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// The tuned n chosen among @p sizes for request q (all other-device, same timestamp).
std::uint64_t pick(std::uint64_t q, const std::vector<std::uint64_t>& sizes) {
  const std::size_t i = nearest_size(q, sizes.size(), [&](std::size_t k) { return SizeCandidate{sizes[k], false, ""}; });
  return i == sizes.size() ? 0 : sizes[i];
}

TEST(NearestRule, Log2DistanceIsComparedExactly) {
  EXPECT_LT(compare_log2_distance(2047, 1024, 4096), 0);  // 2047^2 < 1024 * 4096
  EXPECT_EQ(compare_log2_distance(2048, 1024, 4096), 0);  // one octave either way
  EXPECT_GT(compare_log2_distance(2049, 1024, 4096), 0);
  EXPECT_EQ(compare_log2_distance(100, 50, 200), 0);      // ratio 2 both ways, not a power of two
  EXPECT_LT(compare_log2_distance(100, 100, 101), 0);     // exact hit
  EXPECT_GT(compare_log2_distance(10, 9, 11), 0);         // 11/10 < 10/9: 11 is nearer, both 1 away
  EXPECT_EQ(compare_log2_distance(0, 1, 1), 0);
  EXPECT_LT(compare_log2_distance(0, 1, 2), 0);           // n = 0 counts as 1
  EXPECT_EQ(compare_log2_distance(0, 2, 2), 0);
  // Near 2^64 the products need 128 bits. Around q = 2^63: 2^62 is one octave below, 2^64 - 1
  // just under one octave above.
  EXPECT_GT(compare_log2_distance(std::uint64_t{1} << 63, std::uint64_t{1} << 62, kMax64), 0);
  EXPECT_LT(compare_log2_distance(kMax64, kMax63, std::uint64_t{1} << 62), 0);
  EXPECT_LT(compare_log2_distance(kMax64 - 1, kMax64 - 1, kMax64), 0);
  EXPECT_GT(compare_log2_distance(kMax64, kMax64 - 1, kMax64), 0);
}

TEST(NearestRule, TiesGoToTheLargerTunedSize) {
  const std::vector<std::uint64_t> grid{1024, 4096, 65536};
  EXPECT_EQ(pick(2048, grid), 4096u);
  EXPECT_EQ(pick(2047, grid), 1024u);
  EXPECT_EQ(pick(16384, grid), 65536u);  // 2^14 between 2^12 and 2^16
  EXPECT_EQ(pick(16383, grid), 4096u);
  EXPECT_EQ(pick(100, {50, 200}), 200u);
  EXPECT_EQ(pick(100, {200, 50}), 200u);  // order of the rows does not matter
  EXPECT_EQ(pick(2048, {4096, 1024}), 4096u);
}

TEST(NearestRule, EdgesOfTheRange) {
  const std::vector<std::uint64_t> grid{1024, 4096, 65536};
  EXPECT_EQ(pick(0, grid), 1024u);
  EXPECT_EQ(pick(1, grid), 1024u);
  EXPECT_EQ(pick(0, {1, 2}), 1u);
  EXPECT_EQ(pick(kMax64, grid), 65536u);
  EXPECT_EQ(pick(kMax64, {kMax63, std::uint64_t{1} << 62}), kMax63);
  EXPECT_EQ(pick(std::uint64_t{1} << 63, {std::uint64_t{1} << 62, kMax63}), kMax63);
  // 2^62 and 2^64 would tie around 2^63; with 2^63-1 the upper candidate is nearer.
  EXPECT_EQ(pick(kMax63, {std::uint64_t{1} << 61, kMax63}), kMax63);
  EXPECT_EQ(pick(5, {}), 0u);
  EXPECT_EQ(nearest_size(5, 0, [](std::size_t) { return SizeCandidate{}; }), 0u);
}

TEST(NearestRule, SameDeviceThenNewerOnlyAtEqualSize) {
  // At the same tuned n: the asking device's row, whatever the order or timestamps.
  EXPECT_TRUE(serves_better(4096, {4096, true, "2026-01-01T00:00:00Z"}, {4096, false, "2026-12-31T00:00:00Z"}));
  EXPECT_FALSE(serves_better(4096, {4096, false, "2026-12-31T00:00:00Z"}, {4096, true, "2026-01-01T00:00:00Z"}));
  // Same device-ness: the newer.
  EXPECT_TRUE(serves_better(4096, {4096, false, "2026-12-31T00:00:00Z"}, {4096, false, "2026-01-01T00:00:00Z"}));
  // Fully equal rows are equally good: neither serves better, the caller keeps its first.
  EXPECT_FALSE(serves_better(4096, {4096, true, "t"}, {4096, true, "t"}));
  // The device never outweighs the size: a nearer other-device row beats a farther own row, and
  // at a log2 tie the larger n beats the own device.
  EXPECT_TRUE(serves_better(3000, {3000, false, ""}, {4096, true, ""}));
  EXPECT_TRUE(serves_better(2048, {4096, false, ""}, {1024, true, ""}));
  const std::vector<SizeCandidate> rows{{4096, false, "2026-12-01T00:00:00Z"},
                                        {4096, true, "2026-01-01T00:00:00Z"},
                                        {4096, true, "2026-01-01T00:00:00Z"},
                                        {1024, true, "2027-01-01T00:00:00Z"}};
  EXPECT_EQ(nearest_size(4000, rows.size(), [&](std::size_t i) { return rows[i]; }), 1u);  // first of equals
  EXPECT_EQ(nearest_size(1000, rows.size(), [&](std::size_t i) { return rows[i]; }), 3u);
}

}  // namespace
}  // namespace amax::db

// ---------------------------------------------------------------------------------------------
// Multi-tensor groups: half-octave buckets and the nearest-group rule.

namespace amax::db {
namespace {

// round(2 log2 x) by brute force for x < 2^32 (x^4 < 2^128): the largest k with 2^(2k-1) <= x^4.
int reference_bucket(std::uint64_t x) {
  __extension__ using u128 = unsigned __int128;
  if (x == 0) x = 1;
  const u128 x4 = u128{x} * x * x * x;
  int k = 0;
  while (2 * (k + 1) - 1 < 128 && (u128{1} << (2 * (k + 1) - 1)) <= x4) ++k;
  return k;
}

TEST(GroupBucket, HalfOctaveBucketsExactly) {
  static_assert(half_octave_bucket(1) == 0 && half_octave_bucket(1024) == 20, "usable at compile time");
  EXPECT_EQ(half_octave_bucket(0), 0);  // counts as 1
  EXPECT_EQ(half_octave_bucket(1), 0);
  EXPECT_EQ(half_octave_bucket(2), 2);
  EXPECT_EQ(half_octave_bucket(3), 3);  // 2 log2 3 = 3.17
  EXPECT_EQ(half_octave_bucket(4), 4);
  EXPECT_EQ(half_octave_bucket(5), 5);  // 4.64
  EXPECT_EQ(half_octave_bucket(6), 5);  // 5.17
  EXPECT_EQ(half_octave_bucket(7), 6);  // 5.61
  EXPECT_EQ(half_octave_bucket(8), 6);
  EXPECT_EQ(half_octave_bucket(11), 7);
  EXPECT_EQ(half_octave_bucket(13), 7);
  EXPECT_EQ(half_octave_bucket(16), 8);
  // The edges of bucket 20 (2^10 in the middle): 2^(39/4) = 861.08..., 2^(41/4) = 1217.75...
  EXPECT_EQ(half_octave_bucket(861), 19);
  EXPECT_EQ(half_octave_bucket(862), 20);
  EXPECT_EQ(half_octave_bucket(1023), 20);
  EXPECT_EQ(half_octave_bucket(1217), 20);
  EXPECT_EQ(half_octave_bucket(1218), 21);
  EXPECT_EQ(half_octave_bucket(4096), 24);
  EXPECT_EQ(half_octave_bucket(32 * 1024), 30);
  EXPECT_EQ(half_octave_bucket(128u << 20), 54);
  EXPECT_EQ(half_octave_bucket((std::uint64_t{1} << 40) - 1), 80);
  EXPECT_EQ(half_octave_bucket(std::uint64_t{1} << 62), 124);
  EXPECT_EQ(half_octave_bucket(std::uint64_t{3} << 61), 125);  // 2 log2(1.5 * 2^62) = 125.17
  EXPECT_EQ(half_octave_bucket(kMax63), 126);
  EXPECT_EQ(half_octave_bucket(kMax64), 128);
}

TEST(GroupBucket, AgreesWithBruteForceEverywhereBelow2To32) {
  for (std::uint64_t x = 0; x < 70'000; ++x) ASSERT_EQ(half_octave_bucket(x), reference_bucket(x)) << x;
  // Around every bucket edge up to 2^32: the last x of a bucket and the first of the next (bucket 1,
  // [2^(1/4), 2^(3/4)), holds no integer).
  for (int k = 2; k < 64; ++k) {
    std::uint64_t lo = 1, hi = std::uint64_t{1} << 32;  // first x with reference_bucket(x) >= k
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (reference_bucket(mid) >= k) hi = mid; else lo = mid + 1;
    }
    if (lo >= (std::uint64_t{1} << 32)) break;
    ASSERT_EQ(half_octave_bucket(lo), k) << lo;
    ASSERT_EQ(half_octave_bucket(lo - 1), k == 2 ? 0 : k - 1) << lo - 1;
  }
}

struct Shape {  // any type with the three members, as amax::GroupShape
  std::uint64_t tensors, total_bytes, largest_bytes;
};

TEST(GroupBucket, OfAShape) {
  constexpr GroupBucket b = group_bucket(Shape{4096, 128u << 20, 32 * 1024});
  static_assert(b == GroupBucket{24, 54, 30});
  EXPECT_EQ(group_bucket(Shape{1, 1, 1}), (GroupBucket{0, 0, 0}));
  EXPECT_EQ(group_bucket(Shape{500, 8'192'000, 16'384}), (GroupBucket{18, 46, 28}));
  EXPECT_EQ(bucket_distance({24, 54, 30}, {24, 54, 30}), 0);
  EXPECT_EQ(bucket_distance({24, 54, 30}, {20, 56, 29}), 4 + 2 + 1);
}

// The index nearest_group picks among @p rows for bucket q.
std::size_t pick_group(const GroupBucket& q, const std::vector<GroupCandidate>& rows) {
  return nearest_group(q, rows.size(), [&](std::size_t i) { return rows[i]; });
}

TEST(NearestGroupRule, SmallestL1DistanceThenLargerTotalThenMoreTensorsThenDeviceThenNewer) {
  const GroupBucket q{20, 40, 30};
  // Distance decides: 1 beats 2, whatever the rest.
  EXPECT_EQ(pick_group(q, {{{20, 42, 30}, true, "2027"}, {{21, 40, 30}, false, "2020"}}), 1u);
  // Equal distance 2: the larger total_bytes bucket.
  EXPECT_EQ(pick_group(q, {{{22, 40, 30}, true, "2027"}, {{20, 41, 31}, false, "2020"}}), 1u);
  EXPECT_EQ(pick_group(q, {{{20, 39, 29}, true, "2027"}, {{19, 40, 29}, false, "2020"}}), 1u);  // 40 > 39
  // Equal distance and total: the larger tensors bucket.
  EXPECT_EQ(pick_group(q, {{{19, 40, 31}, true, "2027"}, {{21, 40, 29}, false, "2020"}}), 1u);
  // Equal buckets up to the largest tensor: the asking device's row, then the newer.
  EXPECT_EQ(pick_group(q, {{{20, 40, 31}, false, "2027"}, {{20, 40, 29}, true, "2020"}}), 1u);
  EXPECT_EQ(pick_group(q, {{{20, 40, 31}, false, "2020"}, {{20, 40, 29}, false, "2027"}}), 1u);
  // Equal in all five: the first.
  EXPECT_EQ(pick_group(q, {{{20, 40, 31}, true, "t"}, {{20, 40, 29}, true, "t"}}), 0u);
  // An exact bucket beats everything farther.
  EXPECT_EQ(pick_group(q, {{{21, 41, 31}, true, "2027"}, {{20, 40, 30}, false, "2000"}, {{20, 41, 30}, true, "2027"}}),
            1u);
  EXPECT_EQ(pick_group(q, {}), 0u);
  EXPECT_TRUE(serves_group_better(q, {{20, 40, 30}, false, ""}, {{20, 40, 31}, true, "z"}));
  EXPECT_FALSE(serves_group_better(q, {{20, 40, 30}, true, "t"}, {{20, 40, 30}, true, "t"}));
}

}  // namespace
}  // namespace amax::db
