// Bit-exact correctness of every variant of the pruned default space (plus TransformerEngine's
// fixed configurations) against the CPU reference, through the first GPU backend present. The
// cases live in correctness_cases.cpp (shared with test_hipshim). Label `gpu`.
#include "correctness_cases.hpp"

TEST(GpuCorrectness, EveryVariantEverySizeBothNanModes) {
  AMAX_REQUIRE_GPU();
  amax::test::every_variant_every_size_both_nan_modes(env);
}

TEST(GpuCorrectness, PointersOffsetByEveryElementOfAVector) {
  AMAX_REQUIRE_GPU();
  amax::test::pointers_offset_by_every_element_of_a_vector(env);
}

TEST(GpuCorrectness, SpecialValuesBothNanModes) {
  AMAX_REQUIRE_GPU();
  amax::test::special_values_both_nan_modes(env);
}

TEST(GpuCorrectness, Bf16AboveTwoToThe31Elements) {
  AMAX_REQUIRE_GPU();
  amax::test::bf16_above_two_to_the_31_elements(env);
}
