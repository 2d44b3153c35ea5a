// Which verification launches the Verifier runs once for several variants (verify_launch_key): only
// launches of the same loaded kernel with every launch argument equal but the output word. No GPU:
// the keys are computed from configs and unloaded Loaded objects.
#include <gtest/gtest.h>

#include "amax/verify.hpp"

namespace amax::tune {
namespace {

LoadedKernel kernel_of(const KernelConfig& c) {
  LoadedKernel k;
  k.config = c.compile_time_part();
  k.dtype = DType::fp32;
  return k;
}

KernelConfig capped(Strategy s, BlockCap cap) { return KernelConfig{s, 256, 4, 2, cap}; }

TEST(VerifyLaunchKey, SingleTensorCapsGivingTheSameGridShareALaunch) {
  const KernelConfig b2 = capped(Strategy::first_reset, BlockCap::per_cu(2));
  const KernelConfig un = capped(Strategy::first_reset, BlockCap::uncapped());
  const LoadedKernel k = kernel_of(b2);
  // n = 4097 fp32: 1025 vectors of 4, 512 per block: 3 blocks, under a cap of 2 x 132.
  ASSERT_EQ(launch_shape(b2, 4097, 132).grid, 3u);
  EXPECT_EQ(verify_launch_key(k, b2, 4097, 132, 3), verify_launch_key(k, un, 4097, 132, 3));
  // For one CU the cap gives 2 blocks, uncapped still 3: two launches.
  ASSERT_EQ(launch_shape(b2, 4097, 1).grid, 2u);
  EXPECT_NE(verify_launch_key(k, b2, 4097, 1, 3), verify_launch_key(k, un, 4097, 1, 3));
  // Uncapped, the grid for one CU is the grid for 132: one launch serves both.
  EXPECT_EQ(verify_launch_key(k, un, 4097, 1, 3), verify_launch_key(k, un, 4097, 132, 3));
  // n = 0 launches nothing whatever the cap: one key.
  EXPECT_EQ(verify_launch_key(k, b2, 0, 1, 0), verify_launch_key(k, un, 0, 132, 0));
}

TEST(VerifyLaunchKey, SingleTensorKernelTensorAndShapeEachSeparateLaunches) {
  const KernelConfig c = capped(Strategy::one_pass, BlockCap::uncapped());
  const LoadedKernel k = kernel_of(c), same_code_other_object = kernel_of(c);
  const VerifyLaunchKey key = verify_launch_key(k, c, 4097, 132, 3);
  EXPECT_EQ(key.kernel, &k);
  EXPECT_NE(key, verify_launch_key(same_code_other_object, c, 4097, 132, 3)) << "another loaded kernel";
  EXPECT_NE(key, verify_launch_key(k, c, 4097, 132, 4)) << "another tensor of the list";
  EXPECT_NE(key, verify_launch_key(k, c, 70001, 132, 3)) << "another size";
  // two_stage capped at one block per CU: 132 blocks (a workspace word each, a finish launch) for
  // 132 CUs, one block for one CU.
  const KernelConfig two = capped(Strategy::two_stage, BlockCap::per_cu(1));
  const LoadedKernel k2 = kernel_of(two);
  EXPECT_NE(verify_launch_key(k2, two, 1048579, 1, 6), verify_launch_key(k2, two, 1048579, 132, 6));
}

TEST(VerifyLaunchKey, MultiTensorCapsGivingTheSamePlanShareALaunch) {
  std::vector<MultiTensor> list;
  for (std::uint32_t i = 0; i < std::size(kSmallVerifySizes); ++i) list.push_back({nullptr, kSmallVerifySizes[i], i});
  auto cfg = [](BlockCap cap, Combine combine) { return MultiConfig{256, 4, 2, 16, cap, combine}; };
  LoadedMultiKernel k;
  k.config = cfg(BlockCap::uncapped(), Combine::thread).compile_time_part();
  k.capacity = 64;
  auto key = [&](const MultiConfig& c, std::uint32_t cu) {
    return verify_launch_key(k, c, split_multi_launches(list, c, DType::fp32, cu, k.capacity));
  };
  const MultiConfig un = cfg(BlockCap::uncapped(), Combine::thread);
  // 16 KiB chunks of fp32 (4096 elements): 1+1+1+2+18+74+257 = 354 chunks, one block each uncapped.
  const auto plan = split_multi_launches(list, un, DType::fp32, 132, 64);
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_EQ(plan[0].chunks, 354u);
  EXPECT_EQ(key(cfg(BlockCap::per_cu(4), Combine::thread), 132), key(un, 132)) << "528 blocks allowed, 354 used";
  EXPECT_NE(key(cfg(BlockCap::per_cu(2), Combine::thread), 132), key(un, 132)) << "264 blocks for 354 chunks";
  EXPECT_EQ(key(un, 1), key(un, 132)) << "uncapped: the same plan for one CU";
  EXPECT_NE(key(cfg(BlockCap::uncapped(), Combine::warp), 132), key(un, 132)) << "the combine is a launch argument";
  EXPECT_NE(key(MultiConfig{256, 4, 2, 32, BlockCap::uncapped(), Combine::thread}, 132), key(un, 132))
      << "another chunk size";
}

}  // namespace
}  // namespace amax::tune
