// amax-tune tuning database: the one rule that picks the tuned size serving a requested size,
// used by TuningDb::lookup_nearest and by the runtime's dispatch tables alike.
#pragma once

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

}  // namespace amax::db
