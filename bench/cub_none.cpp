// Builds without nvcc: no CUB contender.
#include <stdexcept>

#include "cub_amax.hpp"

namespace amax::bench {
bool have_cub() noexcept { return false; }
std::size_t cub_temp_bytes(int, std::uint64_t) { throw std::runtime_error("this build has no CUB contender"); }
void cub_amax(int, const void*, std::uint64_t, float*, void*, std::size_t, void*) {
  throw std::runtime_error("this build has no CUB contender");
}
}  // namespace amax::bench
