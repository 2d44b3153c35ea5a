// The Verifier's shared launches on the GPU (label gpu): variants whose launches are identical
// (verify_launch_key) get the bits of one launch, and those bits are the ones each variant's own
// launch gives, for both grids, both NaN modes and both kernel families.
#include <gtest/gtest.h>

#include <set>

#include "amax/reference.hpp"
#include "amax/search.hpp"
#include "amax/verify.hpp"
#include "gpu_env.hpp"

namespace amax::tune {
namespace {

using test::DeviceBuffer;

// The small list of verify_small, one input kind per tensor, at element offset 1.
struct SmallList {
  SmallList(Backend& b, DType d, NanMode mode, std::uint64_t seed) : buf(b, 8 << 20) {
    const std::uint32_t eb = info(d).bytes;
    b.memset32_async(buf.get(), 0xffffffffu, buf.bytes() / 4, nullptr);
    b.synchronize(nullptr);
    std::uint64_t at = 0;
    for (std::uint32_t i = 0; i < std::size(kSmallVerifySizes); ++i) {
      const std::uint64_t n = kSmallVerifySizes[i];
      const auto host = make_input(all_input_kinds()[(seed + i) % all_input_kinds().size()], d, n, seed + i);
      char* p = buf.get<char>(at + eb);
      if (n) b.copy_to_device(p, host.data(), host.size());
      list.push_back({n ? p : nullptr, n, i});
      expect.push_back(reference_amax_bits(host.data(), d, n, mode));
      at += (n + 2) * eb + 256 - (n + 2) * eb % 256;
    }
  }
  DeviceBuffer buf;
  std::vector<MultiTensor> list;
  std::vector<std::uint32_t> expect;
};

TEST(GpuVerify, SharedSingleTensorLaunchesGiveEachVariantItsOwnLaunchsBits) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const auto cu = static_cast<std::uint32_t>(b.device().cu_count);
  const DType d = DType::fp32;
  // Every strategy and grid cap of the pruned space at 256 threads, unroll 2 (several caps per
  // kernel).
  std::vector<KernelConfig> cs;
  std::vector<const LoadedKernel*> ks;
  for (const KernelConfig& c : candidates(env->arch, d, SpaceKind::pruned))
    if (c.threads == 256 && c.unroll == 2 && c.epilogue == Epilogue::amax) {
      cs.push_back(c);
      ks.push_back(&env->kernels->get(c, d));
    }
  ASSERT_GE(cs.size(), 20u);
  const StreamHandle stream = b.create_stream();
  {
    Verifier v(b, stream);
    std::uint64_t seed = 11;
    for (NanMode mode : {NanMode::propagate, NanMode::ignore}) {
      const SmallList in(b, d, mode, seed += 7);
      Verifier::Memo memo;
      std::set<VerifyLaunchKey> keys;
      for (std::uint32_t cus : {cu, 1u}) {
        const auto shared = v.run(cs, ks, in.list, d, mode, cus, &memo);
        for (std::size_t i = 0; i < cs.size(); ++i) {
          const auto own = v.run(std::vector<KernelConfig>{cs[i]}, std::vector<const LoadedKernel*>{ks[i]}, in.list, d,
                                 mode, cus);
          EXPECT_EQ(shared[i], own[0]) << cs[i].label() << ", grid for " << cus << " CUs";
          EXPECT_EQ(own[0], in.expect) << cs[i].label() << ", grid for " << cus << " CUs";
          for (std::size_t t = 0; t < in.list.size(); ++t)
            keys.insert(verify_launch_key(*ks[i], cs[i], in.list[t].n, cus, t));
        }
      }
      // One launch per distinct key, fewer than one per variant, tensor and grid.
      EXPECT_EQ(memo.size(), keys.size());
      EXPECT_LT(keys.size(), cs.size() * in.list.size() * 2);
    }
    EXPECT_TRUE(v.verify_small(d, cs, ks).empty());
  }
  b.destroy_stream(stream);
}

TEST(GpuVerify, SharedMultiTensorLaunchesGiveEachVariantItsOwnLaunchsBits) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const auto cu = static_cast<std::uint32_t>(b.device().cu_count);
  const DType d = DType::bf16;
  const std::uint32_t capacity = multi_capacity_for(env->arch, 64);
  std::vector<MultiConfig> cs;
  std::vector<const LoadedMultiKernel*> ks;
  for (const MultiConfig& c : enumerate_multi_space(env->arch, d, SpaceKind::pruned))
    if (c.threads == 256 && c.unroll == 2 && c.epilogue == Epilogue::amax) {
      cs.push_back(c);
      ks.push_back(&env->kernels->get(c, d, capacity));
    }
  ASSERT_GE(cs.size(), 10u);
  const StreamHandle stream = b.create_stream();
  {
    Verifier v(b, stream);
    for (NanMode mode : {NanMode::propagate, NanMode::ignore}) {
      const SmallList in(b, d, mode, mode == NanMode::ignore ? 40 : 3);
      Verifier::Memo memo;
      for (std::uint32_t cus : {cu, 1u}) {
        const auto shared = v.run(cs, ks, in.list, d, mode, cus, &memo);
        for (std::size_t i = 0; i < cs.size(); ++i) {
          const auto own = v.run(std::vector<MultiConfig>{cs[i]}, std::vector<const LoadedMultiKernel*>{ks[i]},
                                 in.list, d, mode, cus);
          EXPECT_EQ(shared[i], own[0]) << cs[i].label() << ", grid for " << cus << " CUs";
          EXPECT_EQ(own[0], in.expect) << cs[i].label() << ", grid for " << cus << " CUs";
        }
      }
      EXPECT_LT(memo.size(), cs.size() * 2);
    }
    EXPECT_TRUE(v.verify_small(d, cs, ks).empty());
  }
  b.destroy_stream(stream);
}

}  // namespace
}  // namespace amax::tune
