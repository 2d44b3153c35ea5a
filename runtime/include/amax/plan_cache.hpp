#pragma once
// The runtime's in-memory plan cache: (dtype, n) -> plan, built once per key. A hit is a hash
// lookup under a shared lock: no SQL, no string building, no allocation.
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "amax/dtype.hpp"

namespace amax {

/// Plans keyed by dtype and element count. Thread-safety: get() may be called from any
/// number of threads; plans are never evicted, so returned references stay valid.
template <class Plan>
class PlanCache {
 public:
  /// The plan of (dtype, n); on a miss `make()` (returning std::unique_ptr<Plan>) builds it
  /// outside the lock, and the first inserted plan wins if two threads race.
  template <class Make>
  Plan& get(DType dtype, std::uint64_t n, Make&& make) {
    auto& m = maps_[index(dtype)];
    {
      std::shared_lock lock(mu_);
      if (auto it = m.find(n); it != m.end()) return *it->second;
    }
    std::unique_ptr<Plan> p = make();
    std::unique_lock lock(mu_);
    return *m.try_emplace(n, std::move(p)).first->second;
  }

 private:
  std::shared_mutex mu_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Plan>> maps_[kDTypeCount];
};

}  // namespace amax
