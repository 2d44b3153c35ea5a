// The fused scale epilogue through the public API on the GPU (label `gpu`): every strategy forced,
// n = 0, graph capture replayed with new data, the atomic choice run as one
// self_reset launch, bad input writing nothing.
#include <algorithm>

#include "scale_cases.hpp"

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

// amax_explain of a forced label: "forced by AMAX_TUNE_FORCE_LABEL" where it is valid (bf16), and
// where it is not (fp32: 8 lanes of 4 bytes exceed the 16-byte load) the reason, then the decision
// that serves instead, as amax_multi_explain gives it.
TEST(GpuScale, ExplainSaysWhyAForcedLabelIsNotUsed) {
  AMAX_REQUIRE_GPU();
  const ArchInfo arch = ArchInfo::parse(env->backend->device().arch);
  ForceLabel force("one_pass.t512.v8.u2.b4cu");
  amax_tune::Context ctx(api_options());
  const amax_explanation_t bf16 = ctx.explain(AMAX_DTYPE_BF16, 1u << 20), fp32 = ctx.explain(AMAX_DTYPE_FP32, 1u << 20);
  EXPECT_STREQ(bf16.label, "one_pass.t512.v8.u2.b4cu");
  EXPECT_EQ(bf16.source, AMAX_SOURCE_OVERRIDE);
  EXPECT_NE(std::string(bf16.detail).find("; forced by AMAX_TUNE_FORCE_LABEL"), std::string::npos) << bf16.detail;
  EXPECT_NE(fp32.source, AMAX_SOURCE_OVERRIDE);
  EXPECT_STRNE(fp32.label, "one_pass.t512.v8.u2.b4cu");
  const std::string want = "; AMAX_TUNE_FORCE_LABEL is not valid for " + arch.name + " fp32 (";
  EXPECT_NE(std::string(fp32.detail).find(want), std::string::npos) << fp32.detail;
}

// Where the table's choice is atomic (memset + kernel), amax_and_scale runs self_reset of the same
// threads and nvec with a grid of at most 4 blocks per CU (an uncapped atomic: unroll at least 8)
// and the epilogue, one launch (fused_variant); other choices run as chosen, a forced atomic
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
  // atomic.t512.v8.u4.buncapped -> self_reset.t512.v8.u8.b4cu.scale (the grid cap lowered to 4 per
  // CU, the unroll raised to 8)
  ASSERT_NE(def.max_blocks.kind, BlockCap::Kind::per_cu) << label;
  const std::string want = "self_reset.t" + std::to_string(def.threads) + ".v" + std::to_string(def.nvec) + ".u" +
                           std::to_string(std::max(def.unroll, 8u)) + ".b4cu.scale";
  // its grid: ceil(vectors / (threads x 8)) under the cap of 4 per CU
  const std::uint64_t vectors = (n + def.nvec - 1) / def.nvec, per_block = std::uint64_t{def.threads} * std::max(def.unroll, 8u);
  const std::uint64_t want_grid = std::min<std::uint64_t>(4ull * b.device().cu_count, (vectors + per_block - 1) / per_block);
  {
    amax_tune::Context ctx(api_options());
    const amax_explanation_t amax_only = ctx.explain(AMAX_DTYPE_BF16, n);
    EXPECT_EQ(std::string(amax_only.label), label);
    EXPECT_EQ(amax_only.launches, 2u);
    const amax_explanation_t fused = ctx.explain_scale(AMAX_DTYPE_BF16, n);
    EXPECT_EQ(std::string(fused.label), want);
    EXPECT_EQ(fused.launches, 1u);
    EXPECT_EQ(fused.grid, want_grid);
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
