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
