// The fused scale epilogue on the GPU (label `gpu`): amax, scale and scale_inv written by the
// reduction's launch, bit-exact against the CPU rule (amax::reference_scale_bits, TE's
// compute_scale_from_amax) for every strategy, one block and many, both NaN modes, every format
// and an explicit max; then through the public API (every strategy forced, n = 0, graph capture
// replayed with new data, bad input writing nothing).
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "amax/amax_tune.hpp"
#include "amax/dispatch.hpp"
#include "amax/dtype_c.hpp"
#include "amax/reference.hpp"
#include "amax/scale_rule.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;

namespace {

constexpr std::uint32_t kQNan = 0x7fc00000u, kOne = 0x3f800000u, kFltMax = 0x7f7fffffu;

// n elements of `dtype`, all +-0 but one, whose sign-cleared fp32 bits are `amax_bits` (low 16
// bits zero for the 16-bit types: bf16 takes the top half; fp16 only the values used below), at
// `pos`, negated (the amax is of |x|).
std::vector<std::uint8_t> one_hot(DType dtype, std::uint64_t n, std::uint64_t pos, std::uint32_t amax_bits) {
  std::vector<std::uint8_t> h(n * info(dtype).bytes, 0);
  if (dtype == DType::fp32) {
    const std::uint32_t v = amax_bits | 0x80000000u;
    std::memcpy(h.data() + pos * 4, &v, 4);
  } else {
    std::uint16_t v = 0;
    if (dtype == DType::bf16) {
      v = static_cast<std::uint16_t>(amax_bits >> 16);
    } else {  // fp16: the few values of the cases below
      switch (amax_bits) {
        case 0u: v = 0; break;
        case 0x7f800000u: v = 0x7c00; break;
        case 0x7fc00000u: v = 0x7e00; break;
        case 0x40400000u: v = 0x4200; break;   // 3
        case 0x447a0000u: v = 0x63d0; break;   // 1000
        case 0x3a800000u: v = 0x1400; break;   // 2^-10
        case 0x33800000u: v = 0x0001; break;   // 2^-24, the smallest fp16 denormal
        default: ADD_FAILURE() << "no fp16 value for " << std::hex << amax_bits;
      }
    }
    v |= 0x8000;
    std::memcpy(h.data() + pos * 2, &v, 2);
  }
  return h;
}

ScaleRule rule_of(const amax_tune::ScaleOptions& o) {
  ScaleRule r;
  r.max = o.format == AMAX_FP8_EXPLICIT_MAX ? o.max : info(*fp8_format_from_int(o.format)).max_finite;
  r.epsilon = o.epsilon;
  r.force_pow2 = o.force_pow2;
  r.nan_propagates = o.nan_propagates;
  return r;
}

ScaleArgs args_of(const ScaleRule& r, float* scale, float* scale_inv) {
  return {scale, scale_inv, r.max, r.epsilon, (r.force_pow2 ? kRuleForcePow2 : 0u) | (r.nan_propagates ? kRuleNanPropagates : 0u)};
}

// One special case: the amax present in the input and the rule, with the bits TE's rule gives
// (literal where worked out by hand; 0 = take the CPU reference alone).
struct SpecialCase {
  const char* what;
  std::uint32_t amax_bits;
  amax_tune::ScaleOptions options;
  NanMode mode;
  std::uint32_t expect_amax, expect_scale, expect_scale_inv;
};

amax_tune::ScaleOptions opts(amax_fp8_format_t f, float eps = 0, bool pow2 = false, bool nanp = false) {
  amax_tune::ScaleOptions o;
  o.format = f;
  o.epsilon = eps;
  o.force_pow2 = pow2;
  o.nan_propagates = nanp;
  return o;
}

std::vector<SpecialCase> special_cases(DType d) {
  std::vector<SpecialCase> c = {
      {"amax 0", 0u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0u, kOne, kOne},
      {"amax 3, e4m3", 0x40400000u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0x40400000u, 0x43155555u, 0x3bdb6db7u},
      {"amax 3, e4m3, pow2", 0x40400000u, opts(AMAX_FP8_E4M3, 0, true), NanMode::propagate, 0x40400000u, 0x43000000u,
       0x3c000000u},
      {"amax 3, e4m3fnuz", 0x40400000u, opts(AMAX_FP8_E4M3FNUZ), NanMode::propagate, 0x40400000u, 0x42a00000u,
       0x3c4ccccdu},
      {"amax 1000, e5m2", 0x447a0000u, opts(AMAX_FP8_E5M2), NanMode::propagate, 0x447a0000u, 0x42656042u, 0x3c8edb6du},
      {"amax 1000, e5m2fnuz", 0x447a0000u, opts(AMAX_FP8_E5M2FNUZ), NanMode::propagate, 0x447a0000u, 0x42656042u,
       0x3c8edb6du},
      {"amax 1000, e5m2, pow2", 0x447a0000u, opts(AMAX_FP8_E5M2, 0, true), NanMode::propagate, 0x447a0000u, 0x42000000u,
       0x3d000000u},
      {"amax 3, explicit max 1", 0x40400000u, amax_tune::ScaleOptions::explicit_max(1.0f), NanMode::propagate,
       0x40400000u, 0x3eaaaaabu, 0x40400000u},
      // below epsilon: the scale is max / epsilon; the amax written is the true one
      {"amax 2^-10 below epsilon 0.5", 0x3a800000u, opts(AMAX_FP8_E4M3, 0.5f), NanMode::propagate, 0x3a800000u,
       0x44600000u, 0x3a924925u},
      {"amax 0 below epsilon 0.5", 0u, opts(AMAX_FP8_E4M3, 0.5f), NanMode::propagate, 0u, 0x44600000u, 0x3a924925u},
      {"amax +Inf", 0x7f800000u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0x7f800000u, kOne, kOne},
      {"amax +Inf, pow2", 0x7f800000u, opts(AMAX_FP8_E4M3, 0, true), NanMode::propagate, 0x7f800000u, kOne, kOne},
      {"NaN, propagate mode, TE rule", kQNan, opts(AMAX_FP8_E4M3), NanMode::propagate, kQNan, kOne, kOne},
      {"NaN, propagate mode, nan_propagates", kQNan, opts(AMAX_FP8_E4M3, 0, false, true), NanMode::propagate, kQNan,
       kQNan, kQNan},
      {"NaN, ignore mode, TE rule (all other elements 0)", kQNan, opts(AMAX_FP8_E4M3), NanMode::ignore, 0u, kOne, kOne},
      {"NaN, ignore mode, nan_propagates", kQNan, opts(AMAX_FP8_E4M3, 0, false, true), NanMode::ignore, 0u, kOne, kOne},
  };
  if (d == DType::fp32)  // the smallest denormal: 448 / 2^-149 overflows -> FLT_MAX, 1 / FLT_MAX = 2^-128
    c.push_back({"denormal amax 2^-149", 0x00000001u, opts(AMAX_FP8_E4M3), NanMode::propagate, 1u, kFltMax, 0x00200000u});
  if (d == DType::bf16)  // the smallest bf16 denormal 2^-133: 448 * 2^133 overflows
    c.push_back({"denormal amax 2^-133", 0x00010000u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0x00010000u, kFltMax,
                 0x00200000u});
  if (d == DType::fp16)  // the smallest fp16 denormal 2^-24: 448 * 2^24, no overflow
    c.push_back({"denormal amax 2^-24", 0x33800000u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0x33800000u, 0x4fe00000u,
                 0x2f124925u});
  return c;
}

// The fused config of a strategy for a dtype (16-byte loads), in clusters of `cluster` blocks.
KernelConfig fused(Strategy s, DType d, BlockCap cap = BlockCap::per_cu(4), std::uint32_t cluster = 1) {
  KernelConfig c{s, 256, 16 / info(d).bytes, 2, cap, Epilogue::scale};
  c.cluster = cluster;
  return c;
}

// The cluster sizes to run: 1, and 2 and 8 where the device has thread-block clusters (issue 27).
std::vector<std::uint32_t> clusters_here(const ArchInfo& arch) {
  if (cluster_unsupported_reason(arch)) return {1};
  return {1, 2, 8};
}

// Whether strategy `s` in clusters of `cluster` runs on `arch`: spin only where the arch runs it
// (spin_unsupported_reason) and without clusters; every other strategy everywhere.
bool runs_here(Strategy s, std::uint32_t cluster, const ArchInfo& arch) {
  return s != Strategy::spin || (cluster == 1 && !spin_unsupported_reason(arch));
}

}  // namespace

// Every strategy x dtype x special case, with a one-block grid (n = 1000) and a many-block grid
// (n = 2^20 + 3, the amax in the last element), garbage in all three outputs beforehand, the slot
// back at zero afterwards; without clusters and, where the device has them, in clusters of 2 and 8
// (one cluster at n = 1000, many at 2^20 + 3).
TEST(GpuScale, EveryStrategySpecialValuesBitExact) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const std::uint32_t cu = static_cast<std::uint32_t>(b.device().cu_count);
  DeviceBuffer in(b, ((1u << 20) + 3) * 4), out(b, 12), slot(b, 4 * kSlotWords), ws(b, 1u << 20);
  b.memset32_async(slot.get(), 0, kSlotWords, nullptr);
  int checked = 0;
  for (std::uint32_t cluster : clusters_here(env->arch))
  for (Strategy st : all_strategies())
    for (const auto& d : all_dtypes()) {
      if (!runs_here(st, cluster, env->arch)) continue;
      const KernelConfig c = fused(st, d.dtype, BlockCap::per_cu(4), cluster);
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
// scale_inv against the CPU reference for every strategy, both NaN modes, random rules; without
// clusters and in clusters of 2 and 8 where the device has them.
TEST(GpuScale, EveryStrategyRandomInputsBitExact) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const std::uint32_t cu = static_cast<std::uint32_t>(b.device().cu_count);
  std::mt19937_64 rng(std::random_device{}());
  const std::uint64_t max_n = 1u << 24;
  DeviceBuffer in(b, max_n * 4 + 64), out(b, 12), slot(b, 4 * kSlotWords), ws(b, 64u << 20);
  b.memset32_async(slot.get(), 0, kSlotWords, nullptr);
  int checked = 0;
  for (std::uint32_t cluster : clusters_here(env->arch))
  for (Strategy st : all_strategies())
    for (const auto& d : all_dtypes())
      for (BlockCap cap : {BlockCap::per_cu(2), BlockCap::uncapped()}) {
        if (!runs_here(st, cluster, env->arch)) continue;
        const KernelConfig c = fused(st, d.dtype, cap, cluster);
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

namespace {
amax_tune::Options api_options(amax_nan_mode_t mode = AMAX_NAN_PROPAGATE) {
  amax_tune::Options o;
  o.nan_mode = mode;
  o.user_db_path = "";
  o.system_db_path = "";  // built-in defaults; each strategy is forced below
  return o;
}
// AMAX_TUNE_FORCE_STRATEGY for the contexts created while it lives (read at creation).
struct ForceStrategy {
  explicit ForceStrategy(Strategy s) { setenv("AMAX_TUNE_FORCE_STRATEGY", std::string(to_string(s)).c_str(), 1); }
  ~ForceStrategy() { unsetenv("AMAX_TUNE_FORCE_STRATEGY"); }
};
}  // namespace

namespace {
// amax_and_scale through the C++ API of a context created now (under whatever forcing variable
// the caller set): n = 0, then for bf16 and fp32 one block, many blocks and a capped grid, direct
// and from a graph captured once and replayed with new data. `what` names the case in failures.
void api_and_graph_replay(test::GpuEnv* env, const std::string& what) {
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  const std::uint64_t sizes[] = {1000, 1u << 20, 50000000};
  DeviceBuffer in(b, 50000000ull * 4 + 16), out(b, 12);
  amax_tune::Context ctx(api_options());
  const amax_dtype_t dtypes[] = {AMAX_DTYPE_BF16, AMAX_DTYPE_FP32};
  ctx.preload_scale({AMAX_DTYPE_BF16, AMAX_DTYPE_FP32}, {1000, 1u << 20, 50000000});
  amax_tune::ScaleOptions o = opts(AMAX_FP8_E4M3, 1e-12f, true, false);
  const ScaleRule r = rule_of(o);
  // n = 0: amax +0.0 and the rule's scale for it (epsilon 1e-12: 448 / 1e-12, pow2), no kernel
  b.memset32_async(out.get(), 0xffffffffu, 3, nullptr);
  ctx.amax_and_scale(in.get(), AMAX_DTYPE_FP32, 0, o, out.get<float>(), out.get<float>(4), out.get<float>(8), nullptr, 4);
  b.synchronize(nullptr);
  const ScaleBits zero = reference_scale_bits(0u, r);
  EXPECT_EQ(read_bits(b, out.get()), 0u);
  EXPECT_EQ(read_bits(b, out.get(4)), zero.scale);
  EXPECT_EQ(read_bits(b, out.get(8)), zero.scale_inv);
  for (amax_dtype_t dt : dtypes)
    for (std::uint64_t n : sizes) {
      const DType d = static_cast<DType>(dt);
      const std::size_t wsb = ctx.workspace_size(dt, n);
      DeviceBuffer ws(b, wsb);
      // direct
      auto host = make_input(InputKind::random, d, n, rng());
      b.copy_to_device(in.get(), host.data(), host.size());
      b.memset32_async(out.get(), 0xffffffffu, 3, nullptr);
      ctx.amax_and_scale(in.get(), dt, n, o, out.get<float>(), out.get<float>(4), out.get<float>(8), ws.get(), wsb);
      b.synchronize(nullptr);
      std::uint32_t ra = reference_amax_bits(host.data(), d, n, NanMode::propagate);
      ScaleBits rs = reference_scale_bits(ra, r);
      const std::string where = what + " " + std::string(to_string(d)) + " n=" + std::to_string(n);
      ASSERT_EQ(read_bits(b, out.get()), ra) << where;
      ASSERT_EQ(read_bits(b, out.get(4)), rs.scale) << where;
      ASSERT_EQ(read_bits(b, out.get(8)), rs.scale_inv) << where;
      // captured once, replayed with new data
      StreamHandle s = b.create_stream();
      b.begin_capture(s);
      ctx.amax_and_scale(in.get(), dt, n, o, out.get<float>(), out.get<float>(4), out.get<float>(8), ws.get(), wsb, s);
      GraphExecHandle g = b.end_capture(s);
      std::uint32_t previous = ra;
      for (int replay = 0; replay < 3; ++replay) {
        const InputKind kind = replay == 0 ? InputKind::max_last : replay == 1 ? InputKind::nan_middle : InputKind::random;
        host = make_input(kind, d, n, rng());
        b.copy_to_device(in.get(), host.data(), host.size());
        b.memset32_async(out.get(), 0xffffffffu, 3, s);
        b.launch_graph(g, s);
        b.synchronize(s);
        ra = reference_amax_bits(host.data(), d, n, NanMode::propagate);
        rs = reference_scale_bits(ra, r);
        EXPECT_EQ(read_bits(b, out.get()), ra) << where << " replay " << replay;
        EXPECT_EQ(read_bits(b, out.get(4)), rs.scale) << where << " replay " << replay;
        EXPECT_EQ(read_bits(b, out.get(8)), rs.scale_inv) << where << " replay " << replay;
        if (replay == 1) {
          EXPECT_NE(ra, previous) << "the NaN input must change the result";
        }
        previous = ra;
      }
      b.destroy_graph(g);
      b.destroy_stream(s);
    }
}

// AMAX_TUNE_FORCE_LABEL for the contexts created while it lives (read at creation).
struct ForceLabel {
  explicit ForceLabel(const std::string& l) { setenv("AMAX_TUNE_FORCE_LABEL", l.c_str(), 1); }
  ~ForceLabel() { unsetenv("AMAX_TUNE_FORCE_LABEL"); }
};
}  // namespace

// amax_and_scale through the C++ API for every strategy (forced), one block, many blocks and a
// capped grid, and n = 0; then a graph captured once per strategy and replayed with new data:
// every replay gives the new amax, scale and scale_inv.
TEST(GpuScale, ApiEveryStrategyAndGraphReplayWithNewData) {
  AMAX_REQUIRE_GPU();
  for (Strategy st : all_strategies()) {
    ForceStrategy force(st);
    api_and_graph_replay(env, std::string(to_string(st)));
  }
}

// Clustered variants (issue 27) through the C++ API, forced by label (bf16 runs the label in
// clusters of 8; fp32, for which a v8 label is invalid, runs the built-in default), direct and
// from graphs replayed with new data: the cluster launch is graph-capture safe.
TEST(GpuScale, ClusteredLabelsThroughTheApiAndGraphReplay) {
  AMAX_REQUIRE_GPU();
  if (auto why = cluster_unsupported_reason(env->arch)) GTEST_SKIP() << *why;
  for (Strategy st : all_strategies()) {
    const std::string label = std::string(to_string(st)) + ".t512.v8.u2.b4cu.c8";
    ForceLabel force(label);
    api_and_graph_replay(env, label);
  }
}

// Where the table's choice is atomic (memset + kernel), amax_and_scale runs self_reset of the same
// threads, nvec and unroll with a grid of at most 4 blocks per CU and the epilogue, one launch
// (fused_variant); other choices run as chosen, a forced atomic
// stays atomic. The built-in default of a large n is atomic on NVIDIA. Bit-exact direct, over
// repeated calls (the stream slot's words come back to zero) and from a graph replayed with new data.
TEST(GpuScale, AtomicChoiceRunsFusedAsOneLaunchSelfReset) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const ArchInfo arch = ArchInfo::parse(b.device().arch);
  const std::uint64_t n = (1ull << 22) + 5, small = 1000;
  const KernelConfig def = builtin_default(arch, DType::bf16, n), def_small = builtin_default(arch, DType::bf16, small);
  if (def.strategy != Strategy::atomic)
    GTEST_SKIP() << "the built-in default of " << arch.name << " for bf16 n=" << n << " is " << def.label()
                 << ", not atomic";
  const std::string label = def.label();
  // atomic.t512.v8.u4.buncapped -> self_reset.t512.v8.u4.b4cu.scale (the grid cap lowered to 4 per CU)
  const std::size_t shape = std::strlen("atomic");
  const std::string want = "self_reset" + label.substr(shape, label.rfind('.') - shape) + ".b4cu.scale";
  {
    amax_tune::Context ctx(api_options());
    const amax_explanation_t amax_only = ctx.explain(AMAX_DTYPE_BF16, n);
    EXPECT_EQ(std::string(amax_only.label), label);
    EXPECT_EQ(amax_only.launches, 2u);
    const amax_explanation_t fused = ctx.explain_scale(AMAX_DTYPE_BF16, n);
    EXPECT_EQ(std::string(fused.label), want);
    EXPECT_EQ(fused.launches, 1u);
    EXPECT_EQ(fused.grid, amax_only.grid);
    EXPECT_EQ(fused.source, AMAX_SOURCE_DEFAULT);
    EXPECT_NE(std::string(fused.detail).find("fused as " + want + " (the amax-only " + label + " without its memset launch)"),
              std::string::npos)
        << fused.detail;
    const amax_explanation_t one = ctx.explain_scale(AMAX_DTYPE_BF16, small);
    EXPECT_EQ(std::string(one.label), def_small.label() + ".scale");
    EXPECT_EQ(std::string(one.detail).find("fused as"), std::string::npos) << one.detail;
    EXPECT_EQ(ctx.explain_scale(AMAX_DTYPE_BF16, 0).launches, 3u);

    std::mt19937_64 rng(std::random_device{}());
    const amax_tune::ScaleOptions o = opts(AMAX_FP8_E5M2, 0.0f, false, false);
    const ScaleRule r = rule_of(o);
    const std::size_t wsb = ctx.workspace_size(AMAX_DTYPE_BF16, n);
    DeviceBuffer in(b, n * 2 + 16), out(b, 12), ws(b, wsb);
    ctx.preload_scale({AMAX_DTYPE_BF16}, {n});
    auto expect = [&](const std::vector<std::uint8_t>& host, const std::string& where) {
      const std::uint32_t ra = reference_amax_bits(host.data(), DType::bf16, n, NanMode::propagate);
      const ScaleBits rs = reference_scale_bits(ra, r);
      EXPECT_EQ(read_bits(b, out.get()), ra) << where;
      EXPECT_EQ(read_bits(b, out.get(4)), rs.scale) << where;
      EXPECT_EQ(read_bits(b, out.get(8)), rs.scale_inv) << where;
    };
    int call = 0;
    for (InputKind kind : {InputKind::random, InputKind::max_last, InputKind::nan_middle, InputKind::random}) {
      const auto host = make_input(kind, DType::bf16, n, rng());
      b.copy_to_device(in.get(), host.data(), host.size());
      b.memset32_async(out.get(), 0xffffffffu, 3, nullptr);
      ctx.amax_and_scale(in.get(), AMAX_DTYPE_BF16, n, o, out.get<float>(), out.get<float>(4), out.get<float>(8), ws.get(), wsb);
      b.synchronize(nullptr);
      expect(host, want + " call " + std::to_string(call++));
    }
    StreamHandle st = b.create_stream();
    b.begin_capture(st);
    ctx.amax_and_scale(in.get(), AMAX_DTYPE_BF16, n, o, out.get<float>(), out.get<float>(4), out.get<float>(8), ws.get(), wsb, st);
    GraphExecHandle g = b.end_capture(st);
    for (int replay = 0; replay < 3; ++replay) {
      const auto host = make_input(replay == 1 ? InputKind::nan_middle : InputKind::random, DType::bf16, n, rng());
      b.copy_to_device(in.get(), host.data(), host.size());
      b.memset32_async(out.get(), 0xffffffffu, 3, st);
      b.launch_graph(g, st);
      b.synchronize(st);
      expect(host, want + " replay " + std::to_string(replay));
    }
    b.destroy_graph(g);
    b.destroy_stream(st);
  }
  ForceStrategy force(Strategy::atomic);
  amax_tune::Context forced(api_options());
  const amax_explanation_t f = forced.explain_scale(AMAX_DTYPE_BF16, n);
  EXPECT_EQ(std::string(f.label), label + ".scale");
  EXPECT_EQ(f.launches, 2u);
  EXPECT_EQ(f.source, AMAX_SOURCE_OVERRIDE);
}

// Bad input to amax_and_scale on a real context: its own status, a message naming the value, and
// nothing written (the outputs keep their sentinel).
TEST(GpuScale, BadInputWritesNothing) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  amax_tune::Context ctx(api_options());
  DeviceBuffer in(b, 4096 * 4), out(b, 16), ws(b, 1u << 20);
  std::vector<float> h(4096, 2.0f);
  b.copy_to_device(in.get(), h.data(), h.size() * 4);
  b.memset32_async(out.get(), 0xdeadbeefu, 4, nullptr);
  b.synchronize(nullptr);
  amax_scale_options_t o;
  auto call = [&](const amax_scale_options_t* opt, float* a, float* s, float* si) {
    return amax_and_scale(ctx.get(), in.get(), AMAX_DTYPE_FP32, 4096, opt, a, s, si, ws.get(), ws.bytes(), nullptr);
  };
  float* a = out.get<float>(0);
  float* s = out.get<float>(4);
  float* si = out.get<float>(8);
  amax_scale_options_init(&o);
  o.epsilon = -1.0f;
  EXPECT_EQ(call(&o, a, s, si), AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(amax_last_error(), "options.epsilon is -1 (must be finite and >= 0)");
  amax_scale_options_init(&o);
  o.format = static_cast<amax_fp8_format_t>(9);
  EXPECT_EQ(call(&o, a, s, si), AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(amax_last_error()).find("options.format is 9"), std::string::npos) << amax_last_error();
  amax_scale_options_init(&o);
  o.format = AMAX_FP8_EXPLICIT_MAX;
  o.max = 0.0f;
  EXPECT_EQ(call(&o, a, s, si), AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(amax_last_error(), "options.max is 0 (must be finite and > 0) with AMAX_FP8_EXPLICIT_MAX");
  EXPECT_EQ(call(nullptr, a, s, si), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "options is NULL");
  amax_scale_options_init(&o);
  EXPECT_EQ(call(&o, a, nullptr, si), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "scale_out is NULL");
  EXPECT_EQ(call(&o, a, s, nullptr), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "scale_inv_out is NULL");
  EXPECT_EQ(call(&o, nullptr, s, si), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "amax_out is NULL");
  EXPECT_EQ(call(&o, a, s, reinterpret_cast<float*>(out.get<char>(10))), AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_NE(std::string(amax_last_error()).find("scale_inv_out"), std::string::npos) << amax_last_error();
  EXPECT_EQ(call(&o, a, a, si), AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(amax_last_error()).find("must be three distinct"), std::string::npos) << amax_last_error();
  EXPECT_EQ(amax_and_scale(ctx.get(), in.get(), AMAX_DTYPE_FP32, 4096, &o, a, s, si, ws.get(), 0, nullptr),
            AMAX_STATUS_WORKSPACE_TOO_SMALL);
  b.synchronize(nullptr);
  for (int w = 0; w < 4; ++w) EXPECT_EQ(read_bits(b, out.get(4 * w)), 0xdeadbeefu) << "word " << w << " was written";
  // and the good call writes all three: amax 2, scale 448 / 2 = 224, scale_inv 1/224
  EXPECT_EQ(call(&o, a, s, si), AMAX_STATUS_SUCCESS) << amax_last_error();
  b.synchronize(nullptr);
  EXPECT_EQ(read_bits(b, a), 0x40000000u);
  EXPECT_EQ(read_bits(b, s), 0x43600000u);
  EXPECT_EQ(read_bits(b, si), std::bit_cast<std::uint32_t>(1.0f / 224.0f));
  EXPECT_EQ(read_bits(b, out.get(12)), 0xdeadbeefu);
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
