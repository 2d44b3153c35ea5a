// Backend::launch_cooperative through the first GPU backend present (the cases live in
// cooperative_cases.cpp, shared with test_hipshim). Label `gpu`.
#include "cooperative_cases.hpp"

TEST(GpuCooperative, GridBarrierAtTheResidentLimit) {
  AMAX_REQUIRE_GPU();
  amax::test::grid_barrier_at_the_resident_limit(env);
}

TEST(GpuCooperative, GridOneBlockPastTheResidentLimitRefused) {
  AMAX_REQUIRE_GPU();
  amax::test::grid_one_block_past_the_resident_limit_refused(env);
}
