// amax-tune tuning database: the one rule that picks the tuned size serving a requested size,
// used by TuningDb::lookup_nearest and by the runtime's dispatch tables alike; and its
// multi-tensor counterpart, the half-octave buckets of group shapes and the nearest-group rule
// (TuningDb::lookup_nearest<MultiFamily>, and the runtime's multi-tensor dispatch).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace amax::db {

/// What the rule looks at in one tuned row.
struct SizeCandidate {
  std::uint64_t n = 0;           ///< tuned element count, >= 1
  bool same_device = false;      ///< measured on the device asking (same_device() with it)
  std::string_view timestamp;    ///< ISO-8601 UTC of the measurement (newer compares greater)
};

/// Compares the log2 distances of tuned sizes @p a and @p b from the request @p q (q = 0 counts
/// as 1; a, b >= 1): negative when a is nearer, 0 when equally near, positive when b is nearer.
/// Exact integer arithmetic: |log2 a - log2 q| < |log2 b - log2 q| exactly when
/// max(a,q)·min(b,q) < max(b,q)·min(a,q), computed in 128 bits. Thread-safe, never throws.
[[nodiscard]] constexpr int compare_log2_distance(std::uint64_t q, std::uint64_t a, std::uint64_t b) noexcept {
  __extension__ using u128 = unsigned __int128;
  if (q == 0) q = 1;
  const u128 hi_a = a > q ? a : q, lo_a = a > q ? q : a;
  const u128 hi_b = b > q ? b : q, lo_b = b > q ? q : b;
  const u128 lhs = hi_a * lo_b, rhs = hi_b * lo_a;  // ratio_a = hi_a/lo_a vs ratio_b = hi_b/lo_b
  return lhs < rhs ? -1 : (lhs == rhs ? 0 : 1);
}

/// The nearest-size rule: true when @p a serves request @p q better than @p b. In order:
/// 1. the smaller log2 distance to q (compare_log2_distance);
/// 2. on a tie, the larger tuned n (a request halfway between 2^10 and 2^12 gets 2^12);
/// 3. at equal n, a row measured on the asking device;
/// 4. then the newer timestamp.
/// Rows equal in all four are equally good (the caller keeps its first). Thread-safe.
[[nodiscard]] constexpr bool serves_better(std::uint64_t q, const SizeCandidate& a, const SizeCandidate& b) noexcept {
  if (const int c = compare_log2_distance(q, a.n, b.n); c != 0) return c < 0;
  if (a.n != b.n) return a.n > b.n;
  if (a.same_device != b.same_device) return a.same_device;
  return a.timestamp > b.timestamp;
}

/// Index in [0, count) of the row that serves request @p q best (serves_better; the first of
/// equally good rows), where @p candidate(i) gives row i's SizeCandidate; @p count when count is 0.
/// Thread-safe if @p candidate is.
template <class CandidateAt>
[[nodiscard]] std::size_t nearest_size(std::uint64_t q, std::size_t count, CandidateAt&& candidate) {
  std::size_t best = count;
  for (std::size_t i = 0; i < count; ++i)
    if (best == count || serves_better(q, candidate(i), candidate(best))) best = i;
  return best;
}

// ---------------------------------------------------------------------------------------------
// Multi-tensor groups

/// The half-octave bucket of a size: round(2 * log2(x)), computed exactly in integers; x = 0
/// counts as 1. Bucket k holds 2^((2k-1)/4) <= x < 2^((2k+1)/4), i.e. the sizes within a quarter
/// octave of 2^(k/2), so every power of two sits in the middle of its bucket (2 * log2(x) is never
/// exactly halfway: x^4 = 2^(2k+1) has no integer solution). Examples: 1 -> 0, 2 -> 2, 3 -> 3,
/// 5 and 6 -> 5, 7 and 8 -> 6, 862 .. 1217 -> 20 (1024 = 2^10 in the middle), 1218 -> 21,
/// 32 KiB -> 30, 128 MiB -> 54, 2^63-1 -> 126, 2^64-1 -> 128.
///
/// Exactness: with b = floor(log2 x) (bit_width), 2 * log2(x) lies in [2b, 2b+2) and rounds up
/// past 2b exactly when x^4 >= 2^(4b+1), and past 2b+1 when x^4 >= 2^(4b+3). With w = x shifted
/// to bit 63 and v = w^2 (128 bits), x^4 / 2^(4b) = v^2 / 2^252, so the two tests are
/// floor(v^2 / 2^128) >= 2^125 and >= 2^127, computed from the 64-bit halves of v.
/// Thread-safe, never throws.
[[nodiscard]] constexpr int half_octave_bucket(std::uint64_t x) noexcept {
  __extension__ using u128 = unsigned __int128;
  if (x == 0) x = 1;
  const int b = std::bit_width(x) - 1;                   // 2^b <= x < 2^(b+1)
  const std::uint64_t w = x << (63 - b);                 // x / 2^b in [1, 2), scaled by 2^63
  const u128 v = u128{w} * w;                            // (x / 2^b)^2 * 2^126, in [2^126, 2^128)
  const u128 h = v >> 64, l = v & 0xFFFF'FFFF'FFFF'FFFFu;
  const u128 mid = h * l;                                // v^2 = h^2 2^128 + mid 2^65 + l^2
  const u128 low = mid << 65;                            // (mid mod 2^63) 2^65, the part below 2^128
  const u128 sum = low + l * l;
  const u128 hi = h * h + (mid >> 63) + (sum < low ? 1 : 0);  // floor(v^2 / 2^128)
  return 2 * b + (hi >= (u128{1} << 125) ? 1 : 0) + (hi >= (u128{1} << 127) ? 1 : 0);
}

/// The bucket of a group shape: the half-octave bucket of each of its three sizes. Buckets are
/// how the tuning database keys multi-tensor results (one winner per arch, dtype, bucket and
/// provenance identity) and what the nearest-group rule measures distances in. Thread-safe.
struct GroupBucket {
  int tensors = 0;        ///< half_octave_bucket(number of tensors)
  int total_bytes = 0;    ///< half_octave_bucket(bytes of all tensors)
  int largest_bytes = 0;  ///< half_octave_bucket(bytes of the largest tensor)
  friend constexpr bool operator==(const GroupBucket&, const GroupBucket&) = default;
  friend constexpr auto operator<=>(const GroupBucket&, const GroupBucket&) = default;
};

/// The bucket of any shape with the members tensors, total_bytes and largest_bytes (db::GroupKey,
/// amax::GroupShape of the generator). Example: 4096 tensors, 128 MiB, largest 32 KiB ->
/// {24, 54, 30}. Thread-safe, never throws.
template <class Shape>
[[nodiscard]] constexpr GroupBucket group_bucket(const Shape& shape) noexcept {
  return GroupBucket{half_octave_bucket(shape.tensors), half_octave_bucket(shape.total_bytes),
                     half_octave_bucket(shape.largest_bytes)};
}

/// The L1 distance between two buckets: the sum over the three sizes of |a_i - b_i|, in half
/// octaves. Thread-safe, never throws.
[[nodiscard]] constexpr int bucket_distance(const GroupBucket& a, const GroupBucket& b) noexcept {
  auto diff = [](int x, int y) { return x > y ? x - y : y - x; };
  return diff(a.tensors, b.tensors) + diff(a.total_bytes, b.total_bytes) + diff(a.largest_bytes, b.largest_bytes);
}

/// What the nearest-group rule looks at in one tuned multi-tensor row.
struct GroupCandidate {
  GroupBucket bucket;          ///< group_bucket() of the tuned shape
  bool same_device = false;    ///< measured on the device asking (same_device() with it)
  std::string_view timestamp;  ///< ISO-8601 UTC of the measurement (newer compares greater)
};

/// The nearest-group rule: true when @p a serves a group of bucket @p q better than @p b. In order:
/// 1. the smaller bucket_distance() to q;
/// 2. on a tie, the larger total_bytes bucket;
/// 3. then the larger tensors bucket;
/// 4. then a row measured on the asking device;
/// 5. then the newer timestamp.
/// Rows equal in all five are equally good (the caller keeps its first; the largest_bytes bucket
/// alone decides nothing). Thread-safe, never throws.
[[nodiscard]] constexpr bool serves_group_better(const GroupBucket& q, const GroupCandidate& a,
                                                 const GroupCandidate& b) noexcept {
  if (const int da = bucket_distance(a.bucket, q), db = bucket_distance(b.bucket, q); da != db) return da < db;
  if (a.bucket.total_bytes != b.bucket.total_bytes) return a.bucket.total_bytes > b.bucket.total_bytes;
  if (a.bucket.tensors != b.bucket.tensors) return a.bucket.tensors > b.bucket.tensors;
  if (a.same_device != b.same_device) return a.same_device;
  return a.timestamp > b.timestamp;
}

/// Index in [0, count) of the row that serves a group of bucket @p q best (serves_group_better;
/// the first of equally good rows), where @p candidate(i) gives row i's GroupCandidate; @p count
/// when count is 0. Thread-safe if @p candidate is.
template <class CandidateAt>
[[nodiscard]] std::size_t nearest_group(const GroupBucket& q, std::size_t count, CandidateAt&& candidate) {
  std::size_t best = count;
  for (std::size_t i = 0; i < count; ++i)
    if (best == count || serves_group_better(q, candidate(i), candidate(best))) best = i;
  return best;
}

}  // namespace amax::db
