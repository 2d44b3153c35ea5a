#include "amax/workload.hpp"

#include <fmt/format.h>

namespace amax::tune {

std::vector<std::uint64_t> power_of_two_sizes() {
  std::vector<std::uint64_t> s;
  for (int p = 10; p <= 30; ++p) s.push_back(1ull << p);
  return s;
}

std::string GroupSpec::name() const { return fmt::format("{}x{}:{}", tensors, n, to_string(dtype)); }

}  // namespace amax::tune
