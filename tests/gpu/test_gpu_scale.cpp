// The fused scale epilogue on the GPU (label `gpu`): amax, scale and scale_inv written by the
// reduction's launch, bit-exact against the CPU rule (amax::reference_scale_bits, TE's
// compute_scale_from_amax) for every strategy, one block and many, both NaN modes, every format
// and an explicit max; then through the public API (every strategy forced, n = 0, graph capture
// replayed with new data, bad input writing nothing).
#include "scale_cases.hpp"

// Every strategy x dtype x special case, with a one-block grid (n = 1000) and a many-block grid
// (n = 2^20 + 3, the amax in the last element), garbage in all three outputs beforehand, the slot
// back at zero afterwards.
TEST(GpuScale, EveryStrategySpecialValuesBitExact) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const std::uint32_t cu = static_cast<std::uint32_t>(b.device().cu_count);
  DeviceBuffer in(b, ((1u << 20) + 3) * 4), out(b, 12), slot(b, 4 * kSlotWords), ws(b, 1u << 20);
  b.memset32_async(slot.get(), 0, kSlotWords, nullptr);
  int checked = 0;
  for (Strategy st : all_strategies())
    for (const auto& d : all_dtypes()) {
      if (!runs_here(st, env->arch)) continue;
      const KernelConfig c = fused(st, d.dtype, BlockCap::per_cu(4));
      const LoadedKernel& k = env->kernels->get(c, d.dtype);
      for (std::uint64_t n : {std::uint64_t{1000}, (std::uint64_t{1} << 20) + 3})
        for (const SpecialCase& sc : special_cases(d.dtype)) {
          const auto host = one_hot(d.dtype, n, n - 1, sc.amax_bits);
          b.copy_to_device(in.get(), host.data(), host.size());
          b.memset32_async(out.get(), 0xdeadbeefu, 3, nullptr);
          const ScaleRule r = rule_of(sc.options);
          const ScaleArgs sa = args_of(r, out.get<float>(4), out.get<float>(8));
          const LaunchShape shape = launch_shape(c, n, cu, k.resident_per_cu);
          ASSERT_LE(shape.workspace_bytes, ws.bytes());
          launch_amax(b, k, shape, in.get(), n, out.get<float>(), ws.get(), slot.get<std::uint32_t>(), sc.mode, nullptr, &sa);
          b.synchronize(nullptr);
          const std::uint32_t amax = read_bits(b, out.get()), scale = read_bits(b, out.get(4)),
                              inv = read_bits(b, out.get(8));
          const std::string where = c.label() + " " + std::string(d.name) + " n=" + std::to_string(n) + " grid=" +
                                    std::to_string(shape.grid) + ": " + sc.what;
          const std::uint32_t ref_amax = reference_amax_bits(host.data(), d.dtype, n, sc.mode);
          const ScaleBits ref = reference_scale_bits(ref_amax, r);
          ASSERT_EQ(amax, ref_amax) << where;
          ASSERT_EQ(scale, ref.scale) << where;
          ASSERT_EQ(inv, ref.scale_inv) << where;
          EXPECT_EQ(amax, sc.expect_amax) << where;  // the hand-worked bits (the CPU rule's own test too)
          EXPECT_EQ(scale, sc.expect_scale) << where;
          EXPECT_EQ(inv, sc.expect_scale_inv) << where;
          ASSERT_EQ(read_bits(b, slot.get()), 0u) << where << ": slot count not reset";
          ASSERT_EQ(read_bits(b, slot.get(4)), 0u) << where << ": slot accumulator not reset";
          ++checked;
        }
    }
  std::printf("scale epilogue: %d strategy x dtype x size x special-value cases bit-exact\n", checked);
}

// Random inputs of every kind, sizes and offsets, capped and uncapped grids: amax, scale and
// scale_inv against the CPU reference for every strategy, both NaN modes, random rules.
TEST(GpuScale, EveryStrategyRandomInputsBitExact) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const std::uint32_t cu = static_cast<std::uint32_t>(b.device().cu_count);
  std::mt19937_64 rng(std::random_device{}());
  const std::uint64_t max_n = 1u << 24;
  DeviceBuffer in(b, max_n * 4 + 64), out(b, 12), slot(b, 4 * kSlotWords), ws(b, 64u << 20);
  b.memset32_async(slot.get(), 0, kSlotWords, nullptr);
  int checked = 0;
  for (Strategy st : all_strategies())
    for (const auto& d : all_dtypes())
      for (BlockCap cap : {BlockCap::per_cu(2), BlockCap::uncapped()}) {
        if (!runs_here(st, env->arch)) continue;
        const KernelConfig c = fused(st, d.dtype, cap);
        const LoadedKernel& k = env->kernels->get(c, d.dtype);
        for (int i = 0; i < 12; ++i) {
          const std::uint64_t n = 1 + rng() % (i < 6 ? 5000 : max_n - 16);
          const std::uint64_t off = rng() % (16 / d.bytes);
          const InputKind kind = all_input_kinds()[rng() % all_input_kinds().size()];
          const auto seed = rng();
          const auto host = make_input(kind, d.dtype, n, seed);
          b.copy_to_device(in.get(off * d.bytes), host.data(), host.size());
          b.memset32_async(out.get(), 0xffffffffu, 3, nullptr);
          amax_tune::ScaleOptions o = opts(static_cast<amax_fp8_format_t>(rng() % 4), (rng() % 3 == 0) ? 1e-6f : 0.0f,
                                           rng() % 2, rng() % 2);
          const ScaleRule r = rule_of(o);
          const ScaleArgs sa = args_of(r, out.get<float>(4), out.get<float>(8));
          const NanMode mode = rng() % 2 ? NanMode::ignore : NanMode::propagate;
          const LaunchShape shape = launch_shape(c, n, cu, k.resident_per_cu);
          launch_amax(b, k, shape, in.get(off * d.bytes), n, out.get<float>(), ws.get(), slot.get<std::uint32_t>(), mode,
                      nullptr, &sa);
          b.synchronize(nullptr);
          const std::uint32_t ref_amax = reference_amax_bits(host.data(), d.dtype, n, mode);
          const ScaleBits ref = reference_scale_bits(ref_amax, r);
          const std::string where = c.label() + " " + std::string(d.name) + " n=" + std::to_string(n) +
                                    " off=" + std::to_string(off) + " " + std::string(to_string(kind)) +
                                    " seed=" + std::to_string(seed);
          ASSERT_EQ(read_bits(b, out.get()), ref_amax) << where;
          ASSERT_EQ(read_bits(b, out.get(4)), ref.scale) << where;
          ASSERT_EQ(read_bits(b, out.get(8)), ref.scale_inv) << where;
          ++checked;
        }
      }
  std::vector<std::uint32_t> words(kSlotWords, 1u);
  b.copy_to_host(words.data(), slot.get(), 4 * kSlotWords);
  for (std::size_t w = 0; w < kSlotWords; ++w) ASSERT_EQ(words[w], 0u) << "slot word " << w << " not reset";
  std::printf("scale epilogue: %d random cases bit-exact\n", checked);
}

// The device rule against the CPU rule over many amax values: 20000 fp32 bit patterns (random
// normals, denormals, values near FLT_MAX and near each format's max, powers of two, +Inf, NaNs
// of other payloads), each the one element of an fp32 tensor reduced by a one-block fused kernel,
// with random formats, explicit maxima, epsilons, pow2 and the NaN option.
TEST(GpuScale, DeviceRuleMatchesTheCpuRuleOverManyAmaxValues) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const std::uint32_t cu = static_cast<std::uint32_t>(b.device().cu_count);
  constexpr std::size_t kValues = 20000;
  std::mt19937_64 rng(std::random_device{}());
  std::vector<std::uint32_t> values(kValues);
  for (std::size_t i = 0; i < kValues; ++i) {
    switch (i % 6) {
      case 0: values[i] = static_cast<std::uint32_t>(rng()) & 0x7fffffffu; break;        // anything, NaNs included
      case 1: values[i] = static_cast<std::uint32_t>(rng()) & 0x007fffffu; break;        // denormals
      case 2: values[i] = 0x7f000000u | (static_cast<std::uint32_t>(rng()) & 0x00ffffffu); break;  // huge
      case 3: values[i] = 0x43000000u | (static_cast<std::uint32_t>(rng()) & 0x01ffffffu); break;  // near the maxima
      case 4: values[i] = static_cast<std::uint32_t>(rng() % 255) << 23; break;            // powers of two, 0
      default: values[i] = (i % 12 == 5) ? 0x7f800000u : 0x00800000u | (static_cast<std::uint32_t>(rng()) & 0x7fffu);
    }
  }
  DeviceBuffer in(b, kValues * 4), out(b, kValues * 12), ws(b, 64);
  b.copy_to_device(in.get(), values.data(), kValues * 4);
  const KernelConfig c = fused(Strategy::one_pass, DType::fp32);
  const LoadedKernel& k = env->kernels->get(c, DType::fp32);
  const LaunchShape shape = launch_shape(c, 1, cu);
  ASSERT_EQ(shape.grid, 1u);
  std::vector<ScaleRule> rules(kValues);
  const float maxima[] = {448.0f, 57344.0f, 240.0f, 1.0f, 3.0e38f, 1e-30f, 7.0f};
  const float epsilons[] = {0.0f, 0.0f, 1e-12f, 1e-40f, 0.5f};
  for (std::size_t i = 0; i < kValues; ++i) {
    rules[i] = ScaleRule{maxima[rng() % 7], epsilons[rng() % 5], rng() % 2 == 0, rng() % 2 == 0};
    const ScaleArgs sa = args_of(rules[i], out.get<float>(kValues * 4 + 4 * i), out.get<float>(kValues * 8 + 4 * i));
    launch_amax(b, k, shape, in.get(4 * i), 1, out.get<float>(4 * i), ws.get(), nullptr, NanMode::propagate, nullptr, &sa);
  }
  b.synchronize(nullptr);
  std::vector<std::uint32_t> got(3 * kValues);
  b.copy_to_host(got.data(), out.get(), got.size() * 4);
  for (std::size_t i = 0; i < kValues; ++i) {
    const std::uint32_t amax = values[i] > 0x7f800000u ? kQNan : values[i];
    const ScaleBits want = reference_scale_bits(amax, rules[i]);
    ASSERT_EQ(got[i], amax) << std::hex << "value 0x" << values[i];
    ASSERT_EQ(got[kValues + i], want.scale) << std::hex << "amax 0x" << amax << " max " << rules[i].max << " eps "
                                            << rules[i].epsilon << " pow2 " << rules[i].force_pow2;
    ASSERT_EQ(got[2 * kValues + i], want.scale_inv) << std::hex << "amax 0x" << amax << " max " << rules[i].max;
  }
  std::printf("device scale rule: %zu amax values x random rules bit-exact with the CPU rule\n", kValues);
}
