// Many tensors per call on the GPU (label `gpu`; skips without a GPU): amax_multi_compute and
// amax_multi_and_scale through the C++ API, every tensor's result bit-exact against the CPU
// reference (and the CPU scale rule), for 1 to 10,000 tensors of mixed dtypes and sizes (n = 0 with
// NULL, odd element offsets), forced variants of both combines, small and large chunks, every grid
// cap (tensors cut between blocks), both descriptor capacities, both NaN modes, a tensor of 2^31 + 1
// elements, graph capture replayed with new data, and bad input writing no output.
#include "multi_cases.hpp"

TEST(GpuMulti, ListsOf1To10000TensorsAreBitExactPerTensor) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  int cases = 0;
  for (amax_nan_mode_t m : {AMAX_NAN_PROPAGATE, AMAX_NAN_IGNORE}) {
    amax_tune::Context ctx(options(m));
    const NanMode mode = m == AMAX_NAN_IGNORE ? NanMode::ignore : NanMode::propagate;
    for (std::size_t count : {1, 7, 500, 4096, 10000}) {
      const std::uint64_t seed = rng();
      auto g = make_group(b, random_specs(rng, count, count > 1000 ? 15 : 20, true), seed);
      const auto e = ctx.multi_explain(g->tensors, AMAX_DTYPE_BF16);
      EXPECT_EQ(run_and_check(b, ctx, *g, mode, std::to_string(count) + " tensors seed " + std::to_string(seed)), 0)
          << "bf16 via " << e.label << ", " << e.launches << " launches";
      ++cases;
    }
  }
  std::printf("multi: %d lists (1 to 10000 tensors, mixed dtypes, n = 0 with NULL, odd offsets) bit-exact\n", cases);
}

TEST(GpuMulti, ForcedVariantsBothCombinesEveryGridCapEveryCapacity) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  const ArchInfo arch = ArchInfo::parse(b.device().arch);
  // One list per descriptor capacity (192, 512 and 1600 on NVIDIA sm_70+): 5 tensors, then one more
  // than each smaller capacity holds, so that each kernel is the one launched.
  const std::vector<std::uint32_t> caps = multi_capacities(arch);
  std::vector<std::size_t> counts{5};
  for (std::size_t i = 1; i < caps.size(); ++i) counts.push_back(caps[i - 1] + 1);
  int cases = 0;
  for (const auto& d : all_dtypes())
    for (const MultiConfig& c : enumerate_multi_space(arch, d.dtype, SpaceKind::pruned)) {
      // Every combine, grid cap and thread count; the smallest and the largest chunk; unroll 2 and 8.
      if (!(c.chunk_kib == 16 || c.chunk_kib == 256) || !(c.unroll == 2 || c.unroll == 8)) continue;
      ForceMulti force(c.label());
      for (amax_nan_mode_t m : {AMAX_NAN_PROPAGATE, AMAX_NAN_IGNORE}) {
        amax_tune::Context ctx(options(m));
        for (std::size_t count : counts) {
          // sizes up to 2^19 elements, 2^17 past 300 tensors (the lists of 513 cost as much as one of 128)
          std::vector<Spec> specs = random_specs(rng, count, count > 300 ? 17 : 19, false);
          for (Spec& s : specs) s.dtype = d.dtype;
          auto g = make_group(b, specs, rng());
          const auto e = ctx.multi_explain(g->tensors, to_c(d.dtype));
          ASSERT_EQ(std::string(e.label), c.label());
          ASSERT_EQ(e.source, AMAX_SOURCE_OVERRIDE);
          EXPECT_EQ(run_and_check(b, ctx, *g, m == AMAX_NAN_IGNORE ? NanMode::ignore : NanMode::propagate,
                                  c.label() + " " + std::string(d.name) + " x" + std::to_string(count)), 0);
          ++cases;
        }
      }
    }
  std::printf("multi: %d forced-variant lists bit-exact\n", cases);
}

TEST(GpuMulti, TensorsCutBetweenManyBlocksCombineExactly) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  // 16 KiB chunks, one chunk per block (uncapped) or a few (b1cu, b2cu): a tensor of up to 256
  // chunks spans up to 256 blocks; the unique maximum sits in one of them (max_first / max_last /
  // max_middle / max_in_vector), a NaN in another tensor.
  int cases = 0;
  for (const char* label : {"multi.t256.v8.u2.c16k.buncapped.thread", "multi.t256.v8.u2.c16k.buncapped.warp",
                            "multi.t512.v8.u4.c16k.b1cu.thread", "multi.t512.v8.u4.c16k.b2cu.warp",
                            "multi.t1024.v8.u8.c16k.b1cu.warp"}) {
    ForceMulti force(label);
    amax_tune::Context ctx(options(AMAX_NAN_PROPAGATE));
    for (InputKind k : {InputKind::max_first, InputKind::max_last, InputKind::max_middle, InputKind::max_in_vector,
                        InputKind::nan_middle, InputKind::all_negative}) {
      std::vector<Spec> specs;
      for (std::uint64_t n : {1ull << 21, 3ull << 20, 1ull, 8193ull, 0ull, 1ull << 20, 40000ull})
        specs.push_back({DType::bf16, n, static_cast<std::uint32_t>(rng() % 8), k});
      auto g = make_group(b, specs, rng());
      EXPECT_EQ(run_and_check(b, ctx, *g, NanMode::propagate, std::string(label) + " " + std::string(to_string(k))), 0);
      ++cases;
    }
  }
  std::printf("multi: %d lists of tensors cut between blocks bit-exact\n", cases);
}
TEST(GpuMulti, FusedScalePerTensorEveryFormatAndRuleBitExact) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  const ArchInfo arch = ArchInfo::parse(b.device().arch);
  std::vector<amax_tune::ScaleOptions> rules;
  for (amax_fp8_format_t f : {AMAX_FP8_E4M3, AMAX_FP8_E5M2, AMAX_FP8_E4M3FNUZ, AMAX_FP8_E5M2FNUZ}) {
    amax_tune::ScaleOptions o;
    o.format = f;
    rules.push_back(o);
  }
  rules.push_back(amax_tune::ScaleOptions::explicit_max(1.0f));
  amax_tune::ScaleOptions pow2;
  pow2.force_pow2 = true;
  pow2.epsilon = 1e-3f;
  rules.push_back(pow2);
  amax_tune::ScaleOptions nanp;
  nanp.nan_propagates = true;
  nanp.format = AMAX_FP8_E5M2;
  rules.push_back(nanp);
  int cases = 0;
  // The default variant and a forced one of each combine (tensors cut between blocks).
  for (const char* label : {"", "multi.t256.v8.u2.c16k.buncapped.thread", "multi.t512.v8.u4.c16k.b1cu.warp"})
    for (amax_nan_mode_t m : {AMAX_NAN_PROPAGATE, AMAX_NAN_IGNORE}) {
      std::unique_ptr<ForceMulti> force;
      if (*label) force = std::make_unique<ForceMulti>(label);
      amax_tune::Context ctx(options(m));
      const NanMode mode = m == AMAX_NAN_IGNORE ? NanMode::ignore : NanMode::propagate;
      for (const auto& o : rules) {
        // Every input kind (zeros, denormals: scale overflow to FLT_MAX, Inf, NaN, all-NaN), n = 0,
        // mixed dtypes, sizes up to 2^19.
        std::vector<Spec> specs = random_specs(rng, 200, 19, true);
        for (std::size_t i = 0; i < all_input_kinds().size(); ++i) specs[i].kind = all_input_kinds()[i];
        specs.push_back({DType::fp32, 0, 0, InputKind::random});
        auto g = make_group(b, specs, rng());
        EXPECT_EQ(run_and_check_scale(b, ctx, *g, mode, o,
                                      std::string(*label ? label : "default") + " format " + std::to_string(o.format)),
                  0);
        ++cases;
      }
    }
  (void)arch;
  std::printf("multi: %d fused amax + scale lists bit-exact (every format, explicit max, pow2 + epsilon, NaN rule)\n",
              cases);
}

TEST(GpuMulti, TensorOfTwoTo31PlusOneElementsBesideSmallOnes) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  if (b.device().memory_bytes < (6ull << 30)) GTEST_SKIP() << "needs 6 GiB of device memory";
  const std::uint64_t n = (1ull << 31) + 1;
  // bf16, 4 GiB: every element 1.0 but the last (index 2^31: 3.0), beside a 1-element tensor (2.0)
  // and an empty one; the default variant, 4 KiB chunks one per block (2^20 blocks, combined by one
  // wave) and 4 MiB chunks.
  DeviceBuffer big(b, n * 2 + 16), small(b, 64), out(b, 16);
  b.memset32_async(big.get(), 0x3f803f80u, (n * 2 + 16) / 4, nullptr);  // bf16 1.0 pairs
  const std::uint16_t three = 0x4040, two = 0x4000;
  b.copy_to_device(big.get((n - 1) * 2), &three, 2);
  b.copy_to_device(small.get(), &two, 2);
  for (const char* label : {"", "multi.t512.v8.u4.c4k.buncapped.warp", "multi.t1024.v8.u8.c4096k.b4cu.thread"}) {
    std::unique_ptr<ForceMulti> force;
    if (*label) force = std::make_unique<ForceMulti>(label);
    amax_tune::Context c(options(AMAX_NAN_PROPAGATE));
    const std::vector<amax_tensor_t> t = {{small.get(), 1, AMAX_DTYPE_BF16}, {big.get(), n, AMAX_DTYPE_BF16}, {nullptr, 0, AMAX_DTYPE_BF16}};
    const std::size_t ws_bytes = c.multi_workspace_size(t);
    DeviceBuffer ws(b, ws_bytes);
    b.memset32_async(out.get(), 0xffffffffu, 3, nullptr);
    c.multi_compute(t, out.get<float>(), ws.get(), ws_bytes, nullptr);
    b.synchronize(nullptr);
    EXPECT_EQ(read_bits(b, out.get(0)), 0x40000000u) << label;  // 2.0
    EXPECT_EQ(read_bits(b, out.get(4)), 0x40400000u) << label;  // 3.0 at index 2^31
    EXPECT_EQ(read_bits(b, out.get(8)), 0u) << label;           // n = 0: +0.0
  }
}
