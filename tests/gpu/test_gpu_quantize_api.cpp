// amax_quantize through the public C++ API on the GPU (label `gpu`): the built-in default and every
// kind forced by AMAX_TUNE_FORCE_QUANTIZE_LABEL, bit-exact (every FP8 byte, amax, scale, scale_inv)
// against the CPU references (fp8_cast.hpp, scale_rule.hpp, reference_amax_bits) on fresh random
// inputs and the special values, every dtype, every format the device takes, both cast rules,
// both NaN modes, sizes 0, 1, odd and large, misaligned input and output; the fnuz refusal
// elsewhere; bad input writing nothing; graph capture replayed with new data; the slot shared with
// amax_and_scale on one stream; amax_multi_quantize.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "amax/fp8_cast.hpp"
#include "host_values.hpp"
#include "scale_cases.hpp"

using amax::test::put;

namespace {

constexpr std::uint64_t kMaxN = (std::uint64_t{1} << 22) + 5;
constexpr std::uint8_t kSentinel = 0xa5;

amax_tune::Options api_options(amax_nan_mode_t mode = AMAX_NAN_PROPAGATE) {
  amax_tune::Options o;
  o.nan_mode = mode;
  o.user_db_path = "";
  o.system_db_path = "";  // the built-in default, or the label forced below
  return o;
}

// AMAX_TUNE_FORCE_QUANTIZE_LABEL for the contexts created while it lives (read at creation); "" forces nothing.
struct ForceQuantLabel {
  explicit ForceQuantLabel(const std::string& l) {
    if (!l.empty()) setenv("AMAX_TUNE_FORCE_QUANTIZE_LABEL", l.c_str(), 1);
  }
  ~ForceQuantLabel() { unsetenv("AMAX_TUNE_FORCE_QUANTIZE_LABEL"); }
};

// The labels of the kinds (v4: valid for every dtype), one keep with a grid of 3 blocks (it re-reads
// what its registers do not hold), "" for the built-in default.
const std::vector<std::string>& labels() {
  static const std::vector<std::string> l = {"",
                                             "quant.keep.t256.v4.u2.k2.buncapped",
                                             "quant.keep.t128.v4.u2.k1.b3",
                                             "quant.reread.t512.v4.u4.k0.buncapped",
                                             "quant.cast.t256.v4.u2.k0.b2cu"};
  return l;
}

std::vector<Fp8Format> formats_here(const ArchInfo& arch) {
  if (arch.processor == "gfx942") return {Fp8Format::e4m3, Fp8Format::e5m2, Fp8Format::e4m3fnuz, Fp8Format::e5m2fnuz};
  return {Fp8Format::e4m3, Fp8Format::e5m2};
}

// Runs fn(label, ctx, ignore) for each label of labels(), forced, with a context of NaN mode
// propagate created under it and its sibling of mode ignore.
template <class F>
void for_each_label(F&& fn) {
  for (const std::string& label : labels()) {
    ForceQuantLabel force(label);
    amax_tune::Context ctx(api_options());
    amax_tune::Context ignore = ctx.sibling(AMAX_NAN_IGNORE);
    fn(label.empty() ? std::string("default") : label, ctx, ignore);
  }
}

amax_tune::QuantizeOptions qopts(Fp8Format f, CastRule rule, const ScaleRule& r = {}) {
  amax_tune::QuantizeOptions o;
  o.format = static_cast<amax_fp8_format_t>(f);
  o.cast_rule = rule == CastRule::torchao ? AMAX_CAST_TORCHAO : AMAX_CAST_TRANSFORMER_ENGINE;
  o.epsilon = r.epsilon;
  o.force_pow2 = r.force_pow2;
  o.nan_propagates = r.nan_propagates;
  return o;
}
ScaleRule rule_of(const amax_tune::QuantizeOptions& o) {
  return {info(static_cast<Fp8Format>(o.format)).max_finite, o.epsilon, o.force_pow2, o.nan_propagates};
}

// Device buffers of one test and the check of one call against the references.
class QuantizeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = test::gpu_env();
    if (!env_) GTEST_SKIP() << test::skip_reason();
    b_ = env_->backend.get();
    in_ = std::make_unique<DeviceBuffer>(*b_, (kMaxN + 16) * 4);
    out_ = std::make_unique<DeviceBuffer>(*b_, kMaxN + 64);
    words_ = std::make_unique<DeviceBuffer>(*b_, 64);
    ws_ = std::make_unique<DeviceBuffer>(*b_, 1 << 20);
  }

  // Sentinels in the output bytes and the three words.
  void poison(StreamHandle s = nullptr) {
    b_->memset32_async(out_->get(), 0xa5a5a5a5u, (kMaxN + 64) / 4, s);
    b_->memset32_async(words_->get(), 0xdeadbeefu, 16, s);
  }
  float* word(int i) { return words_->get<float>(4 * i); }

  // What the call must have written for `host` (n elements), the output at byte `out_off`: nothing
  // before it, the reference's bytes, nothing after; amax, scale and scale_inv. "" when all match.
  std::string mismatch(const std::vector<std::uint8_t>& host, DType d, std::uint64_t n, std::uint64_t out_off,
                       const amax_tune::QuantizeOptions& o, NanMode mode, int word0 = 0) {
    const Fp8Format f = static_cast<Fp8Format>(o.format);
    const CastRule rule = o.cast_rule == AMAX_CAST_TORCHAO ? CastRule::torchao : CastRule::transformer_engine;
    const std::uint32_t ra = reference_amax_bits(host.data(), d, n, mode);
    const ScaleBits rs = reference_scale_bits(ra, rule_of(o));
    std::vector<std::uint8_t> want(out_off + n + 2, kSentinel);
    if (n) reference_quantize(host.data(), d, n, rs.scale, f, rule, want.data() + out_off);
    std::vector<std::uint8_t> got(want.size());
    b_->copy_to_host(got.data(), out_->get(), got.size());
    const std::uint32_t a = read_bits(*b_, word(word0)), s = read_bits(*b_, word(word0 + 1)),
                        v = read_bits(*b_, word(word0 + 2));
    char buf[200];
    if (a != ra || s != rs.scale || v != rs.scale_inv) {
      std::snprintf(buf, sizeof buf, "amax/scale/scale_inv 0x%08x 0x%08x 0x%08x, want 0x%08x 0x%08x 0x%08x", a, s, v,
                    ra, rs.scale, rs.scale_inv);
      return buf;
    }
    for (std::size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i]) {
        std::snprintf(buf, sizeof buf, "byte %zu (element %lld of %llu): got 0x%02x, want 0x%02x", i,
                      static_cast<long long>(i) - static_cast<long long>(out_off),
                      static_cast<unsigned long long>(n), got[i], want[i]);
        return buf;
      }
    return {};
  }

  // One direct call: `host` at element offset in_off, the output at byte out_off; "" when exact.
  std::string run(amax_tune::Context& ctx, const std::vector<std::uint8_t>& host, DType d, std::uint64_t n,
                  std::uint64_t in_off, std::uint64_t out_off, const amax_tune::QuantizeOptions& o, NanMode mode) {
    const std::uint32_t bytes = info(d).bytes;
    if (n) b_->copy_to_device(in_->get(in_off * bytes), host.data(), n * bytes);
    poison();
    const amax_dtype_t dt = static_cast<amax_dtype_t>(d);
    const std::size_t wsb = ctx.quantize_workspace_size(dt, n, o);
    EXPECT_LE(wsb, std::size_t{1} << 20);
    ctx.quantize(in_->get(in_off * bytes), dt, n, o, out_->get<std::uint8_t>(out_off), word(0), word(1), word(2),
                 ws_->get(), wsb);
    b_->synchronize(nullptr);
    return mismatch(host, d, n, out_off, o, mode);
  }

  test::GpuEnv* env_ = nullptr;
  Backend* b_ = nullptr;
  std::unique_ptr<DeviceBuffer> in_, out_, words_, ws_;
};

}  // namespace

// The default and every kind forced: fresh random inputs of every kind (NaN, +-Inf, -0, denormals,
// all NaN, the maximum in a vector lane) at sizes 1, odd, 1000, 2^16 + 1 and 2^22 + 5, misaligned
// input and output, every dtype, format, rule, both NaN modes (the context and its sibling), random
// epsilon / pow2 / nan_propagates; the forced label is the one explained and run.
TEST_F(QuantizeApi, EveryKindForcedRandomAndSpecialInputsBitExact) {
  std::mt19937_64 rng(std::random_device{}());
  int checked = 0;
  for_each_label([&](const std::string& label, amax_tune::Context& ctx, amax_tune::Context& ignore) {
    for (const DTypeInfo& di : all_dtypes())
      for (Fp8Format f : formats_here(env_->arch))
        for (CastRule rule : {CastRule::transformer_engine, CastRule::torchao})
          for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1000}, std::uint64_t{65537},
                                  kMaxN}) {
            const amax_dtype_t dt = static_cast<amax_dtype_t>(di.dtype);
            if (label != "default") {
              const amax_explanation_t e = ctx.explain_quantize(dt, n, qopts(f, rule));
              EXPECT_EQ(e.source, AMAX_SOURCE_OVERRIDE) << label << " " << e.detail;
              EXPECT_EQ(std::string(e.label), label);
            }
            const int draws = n == kMaxN ? 1 : 3;
            for (int k = 0; k < draws; ++k) {
              const InputKind kind = all_input_kinds()[rng() % all_input_kinds().size()];
              const std::uint64_t seed = rng(), in_off = rng() % (16 / di.bytes), out_off = rng() % 16;
              const bool ign = rng() % 2;
              const ScaleRule r{info(f).max_finite, rng() % 3 == 0 ? 1e-6f : 0.0f, rng() % 2 == 0, rng() % 2 == 0};
              const auto host = make_input(kind, di.dtype, n, seed);
              const std::string m = run(ign ? ignore : ctx, host, di.dtype, n, in_off, out_off, qopts(f, rule, r),
                                        ign ? NanMode::ignore : NanMode::propagate);
              ASSERT_EQ(m, "") << label << " " << di.name << " -> " << info(f).name
                               << " " << to_string(rule) << " n=" << n << " " << to_string(kind) << " seed=" << seed
                               << " in_off=" << in_off << " out_off=" << out_off << (ign ? " ignore-NaN" : "")
                               << " eps=" << r.epsilon << " pow2=" << r.force_pow2 << " nanp=" << r.nan_propagates;
              ++checked;
            }
          }
  });
  std::printf("quantize API: %d random calls bit-exact (every byte, amax, scale, scale_inv)\n", checked);
}

// The special amaxes of TE's rule (amax 0, below epsilon, +Inf, NaN in both modes and with
// nan_propagates, denormal amaxes, pow2, every format's max) with every kind: amax, scale,
// scale_inv as the literal bits scale_cases states and every byte as the reference.
TEST_F(QuantizeApi, SpecialAmaxesEveryKindBitExact) {
  int checked = 0;
  for_each_label([&](const std::string& label, amax_tune::Context& ctx, amax_tune::Context& ignore) {
    for (const DTypeInfo& di : all_dtypes())
      for (const SpecialCase& sc : special_cases(di.dtype)) {
        if (sc.options.format == AMAX_FP8_EXPLICIT_MAX) continue;  // the cast needs a format
        const Fp8Format f = static_cast<Fp8Format>(sc.options.format);
        const auto here = formats_here(env_->arch);
        if (std::find(here.begin(), here.end(), f) == here.end()) continue;
        for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{1} << 20})
          for (CastRule rule : {CastRule::transformer_engine, CastRule::torchao}) {
            // the amax (negated) at the end, before it a ramp of its fractions with alternating signs
            // where it is finite and not 0 (so that the cast has work), else zeros (the cases' amax)
            const float a = std::bit_cast<float>(sc.amax_bits);
            std::vector<std::uint8_t> host = one_hot(di.dtype, n, n - 1, sc.amax_bits);
            if (std::isfinite(a) && a > 0.0f)
              for (std::uint64_t i = 0; i + 1 < n; ++i)
                put(host, di.dtype, i, (i % 2 ? -a : a) * static_cast<float>(i % 1024) / 1024.0f);
            amax_tune::QuantizeOptions o = qopts(f, rule, rule_of(sc.options));
            const std::string m = run(sc.mode == NanMode::ignore ? ignore : ctx, host, di.dtype, n, 0, 0, o, sc.mode);
            ASSERT_EQ(m, "") << label << " " << di.name << " " << sc.what << " n=" << n
                             << " " << to_string(rule);
            EXPECT_EQ(read_bits(*b_, word(0)), sc.expect_amax) << sc.what;
            EXPECT_EQ(read_bits(*b_, word(1)), sc.expect_scale) << sc.what;
            EXPECT_EQ(read_bits(*b_, word(2)), sc.expect_scale_inv) << sc.what;
            ++checked;
          }
      }
  });
  std::printf("quantize API: %d special-amax calls bit-exact\n", checked);
}

// Every value the cast can meet in a tensor: all 2^16 bf16 and fp16 patterns (NaNs, +-Inf, -0,
// denormals, values at and beyond each format's max once scaled) under a fixed amax, each kind.
TEST_F(QuantizeApi, EverySixteenBitPatternEveryKindBitExact) {
  for_each_label([&](const std::string& label, amax_tune::Context& ctx, amax_tune::Context& ignore) {
    for (DType d : {DType::bf16, DType::fp16})
      for (Fp8Format f : formats_here(env_->arch))
        for (CastRule rule : {CastRule::transformer_engine, CastRule::torchao})
          for (NanMode mode : {NanMode::ignore, NanMode::propagate}) {
            std::vector<std::uint8_t> host(2 << 16);
            for (std::uint32_t i = 0; i < (1u << 16); ++i) {
              host[2 * i] = static_cast<std::uint8_t>(i);
              host[2 * i + 1] = static_cast<std::uint8_t>(i >> 8);
            }
            const std::string m = run(mode == NanMode::ignore ? ignore : ctx, host, d, 1u << 16, 0, 0,
                                      qopts(f, rule), mode);
            ASSERT_EQ(m, "") << label << " " << to_string(d) << " -> " << info(f).name
                             << " " << to_string(rule) << (mode == NanMode::ignore ? " ignore-NaN" : "");
          }
  });
}

// n = 0: amax +0.0 and the rule's scale and scale_inv for it, no byte; input and output may be NULL.
TEST_F(QuantizeApi, EmptyTensorWritesTheRuleForZeroAndNoByte) {
  amax_tune::Context ctx(api_options());
  const amax_tune::QuantizeOptions o =
      qopts(Fp8Format::e4m3, CastRule::transformer_engine, {448.0f, 0.5f, true, false});
  EXPECT_EQ(ctx.quantize_workspace_size(AMAX_DTYPE_BF16, 0, o), 4u);
  EXPECT_EQ(ctx.explain_quantize(AMAX_DTYPE_BF16, 0, o).launches, 3u);
  poison();
  ctx.quantize(nullptr, AMAX_DTYPE_BF16, 0, o, nullptr, word(0), word(1), word(2), nullptr, 0);
  b_->synchronize(nullptr);
  EXPECT_EQ(mismatch({}, DType::bf16, 0, 0, o, NanMode::propagate), "");
  EXPECT_EQ(read_bits(*b_, word(1)), 0x44000000u) << "448 / 0.5 = 896, rounded down to 512";
}

// Refused calls write nothing (no byte, no word) and name the argument; fnuz formats are refused
// off gfx942; a kernel not loaded during capture is NOT_PRELOADED.
TEST_F(QuantizeApi, RefusedCallsWriteNothing) {
  amax_tune::Context ctx(api_options());
  const std::uint64_t n = 1 << 16;
  const auto host = make_input(InputKind::random, DType::bf16, n, 7);
  b_->copy_to_device(in_->get(), host.data(), host.size());
  const amax_tune::QuantizeOptions o = qopts(Fp8Format::e4m3, CastRule::transformer_engine);
  const amax_quantize_options_t co = o.to_c();
  auto expect_refused = [&](amax_status_t want, const std::string& needle, auto&& call) {
    poison();
    b_->synchronize(nullptr);
    EXPECT_EQ(call(), want) << needle;
    EXPECT_NE(std::string(amax_last_error()).find(needle), std::string::npos) << amax_last_error();
    b_->synchronize(nullptr);
    std::vector<std::uint8_t> got(n + 8);
    b_->copy_to_host(got.data(), out_->get(), got.size());
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](std::uint8_t v) { return v == kSentinel; })) << needle;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(read_bits(*b_, word(i)), 0xdeadbeefu) << needle << " word " << i;
  };
  auto* out = out_->get<std::uint8_t>();
  const void* in = in_->get();
  const std::size_t wsb = ctx.quantize_workspace_size(AMAX_DTYPE_BF16, n, o);
  expect_refused(AMAX_STATUS_NULL_POINTER, "output is NULL", [&] {
    return amax_quantize(ctx.get(), in, AMAX_DTYPE_BF16, n, &co, nullptr, word(0), word(1), word(2), ws_->get(), wsb,
                         nullptr);
  });
  expect_refused(AMAX_STATUS_MISALIGNED_POINTER, "is not aligned to the 2-byte elements of bf16", [&] {
    return amax_quantize(ctx.get(), in_->get(1), AMAX_DTYPE_BF16, n, &co, out, word(0), word(1), word(2), ws_->get(),
                         wsb, nullptr);
  });
  expect_refused(AMAX_STATUS_INVALID_ARGUMENT, "overlaps input", [&] {
    return amax_quantize(ctx.get(), in, AMAX_DTYPE_BF16, n, &co, in_->get<std::uint8_t>(8), word(0), word(1), word(2),
                         ws_->get(), wsb, nullptr);
  });
  expect_refused(AMAX_STATUS_WORKSPACE_TOO_SMALL, "amax_quantize_workspace_size gives", [&] {
    return amax_quantize(ctx.get(), in, AMAX_DTYPE_BF16, n, &co, out, word(0), word(1), word(2), ws_->get(), wsb - 1,
                         nullptr);
  });
  amax_quantize_options_t bad = co;
  bad.cast_rule = static_cast<amax_cast_rule_t>(5);
  expect_refused(AMAX_STATUS_INVALID_ARGUMENT, "options.cast_rule is 5", [&] {
    return amax_quantize(ctx.get(), in, AMAX_DTYPE_BF16, n, &bad, out, word(0), word(1), word(2), ws_->get(), wsb,
                         nullptr);
  });
  expect_refused(AMAX_STATUS_INVALID_ARGUMENT, "must be three distinct fp32 words", [&] {
    return amax_quantize(ctx.get(), in, AMAX_DTYPE_BF16, n, &co, out, word(0), word(1), word(0), ws_->get(), wsb,
                         nullptr);
  });
  if (env_->arch.processor != "gfx942") {
    amax_quantize_options_t fnuz = co;
    fnuz.format = AMAX_FP8_E4M3FNUZ;
    expect_refused(AMAX_STATUS_INVALID_ARGUMENT, "is the MI300's (gfx942) FP8; this device is " + env_->arch.name, [&] {
      return amax_quantize(ctx.get(), in, AMAX_DTYPE_BF16, n, &fnuz, out, word(0), word(1), word(2), ws_->get(), wsb,
                           nullptr);
    });
    std::size_t b = 0;
    EXPECT_EQ(amax_quantize_workspace_size(ctx.get(), AMAX_DTYPE_BF16, n, &fnuz, &b), AMAX_STATUS_INVALID_ARGUMENT);
  }
  // During capture, a kernel not loaded: NOT_PRELOADED, nothing captured or written.
  for (const std::string& label : labels()) {
    ForceQuantLabel force(label);
    amax_tune::Context fresh(api_options());
    StreamHandle s = b_->create_stream();
    poison(s);
    b_->synchronize(s);
    b_->begin_capture(s);
    const amax_status_t st = amax_quantize(fresh.get(), in, AMAX_DTYPE_FP16, 12345, &co, out, word(0), word(1),
                                           word(2), ws_->get(), 1 << 20, s);
    const std::string msg = amax_last_error();
    GraphExecHandle g = b_->end_capture(s);
    b_->destroy_graph(g);
    EXPECT_EQ(st, AMAX_STATUS_NOT_PRELOADED) << label;
    EXPECT_NE(msg.find("call amax_preload_quantize"), std::string::npos) << msg;
    b_->synchronize(s);
    EXPECT_EQ(read_bits(*b_, word(0)), 0xdeadbeefu) << label;
    b_->destroy_stream(s);
  }
}

// Preloaded, captured once on a stream, replayed with new data (a NaN, an infinity, random): every
// replay gives the new bytes, amax, scale and scale_inv; every kind.
TEST_F(QuantizeApi, GraphCaptureReplayedWithNewDataEveryKind) {
  std::mt19937_64 rng(std::random_device{}());
  for (const std::string& label : labels())
    for (std::uint64_t n : {std::uint64_t{1000}, std::uint64_t{3} << 20}) {
      ForceQuantLabel force(label);
      amax_tune::Context ctx(api_options());
      const amax_tune::QuantizeOptions o = qopts(Fp8Format::e4m3, CastRule::torchao, {448.0f, 0.0f, false, true});
      ctx.preload_quantize({AMAX_DTYPE_BF16}, {n}, o);
      const std::size_t wsb = ctx.quantize_workspace_size(AMAX_DTYPE_BF16, n, o);
      StreamHandle s = b_->create_stream();
      b_->begin_capture(s);
      ctx.quantize(in_->get(), AMAX_DTYPE_BF16, n, o, out_->get<std::uint8_t>(), word(0), word(1), word(2),
                   ws_->get(), wsb, s);
      GraphExecHandle g = b_->end_capture(s);
      for (InputKind kind : {InputKind::nan_middle, InputKind::neg_inf, InputKind::random, InputKind::denormals}) {
        const auto host = make_input(kind, DType::bf16, n, rng());
        b_->copy_to_device(in_->get(), host.data(), host.size());
        poison(s);
        b_->launch_graph(g, s);
        b_->synchronize(s);
        EXPECT_EQ(mismatch(host, DType::bf16, n, 0, o, NanMode::propagate), "")
            << label << " n=" << n << " replay " << to_string(kind);
      }
      b_->destroy_graph(g);
      b_->destroy_stream(s);
    }
}

// One stream, alternating quantize (one launch: words 0, 1 and 5 of the slot) and amax_and_scale
// (one_pass / self_reset: words 0 and 1): each result exact, so the shared words are left 0.
TEST_F(QuantizeApi, SlotSharedWithAmaxAndScaleOnOneStream) {
  ForceQuantLabel force("quant.keep.t256.v4.u2.k2.buncapped");
  amax_tune::Context ctx(api_options());
  const std::uint64_t n = 1 << 22;
  const amax_tune::QuantizeOptions o = qopts(Fp8Format::e5m2, CastRule::transformer_engine);
  const std::size_t wsb = std::max(ctx.quantize_workspace_size(AMAX_DTYPE_FP32, n, o),
                                   ctx.workspace_size(AMAX_DTYPE_FP32, n));
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 6; ++round) {
    const auto host = make_input(InputKind::random, DType::fp32, n, rng());
    b_->copy_to_device(in_->get(), host.data(), host.size());
    poison();
    ctx.quantize(in_->get(), AMAX_DTYPE_FP32, n, o, out_->get<std::uint8_t>(), word(0), word(1), word(2), ws_->get(),
                 wsb);
    ctx.amax_and_scale(in_->get(), AMAX_DTYPE_FP32, n, opts(AMAX_FP8_E5M2), word(4), word(5), word(6), ws_->get(),
                       wsb);
    b_->synchronize(nullptr);
    ASSERT_EQ(mismatch(host, DType::fp32, n, 0, o, NanMode::propagate), "") << "round " << round;
    ASSERT_EQ(mismatch(host, DType::fp32, n, 0, o, NanMode::propagate, 4), "") << "amax_and_scale, round " << round;
  }
}

// amax_multi_quantize: a list of every dtype and size 0, 1, odd and large, each tensor its own
// amax, scale, scale_inv and bytes; a bad tensor refused naming its index, nothing written.
TEST_F(QuantizeApi, MultiQuantizeEachTensorItsOwnScale) {
  amax_tune::Context ctx(api_options());
  std::mt19937_64 rng(std::random_device{}());
  const std::vector<std::pair<DType, std::uint64_t>> shape = {
      {DType::bf16, 1000}, {DType::fp32, 0}, {DType::fp16, 1}, {DType::fp32, 77777}, {DType::bf16, 1 << 20}};
  std::vector<std::vector<std::uint8_t>> hosts;
  std::vector<amax_tensor_t> tensors;
  std::vector<std::uint8_t*> outputs;
  std::uint64_t in_at = 0, out_at = 0;
  for (const auto& [d, n] : shape) {
    hosts.push_back(make_input(all_input_kinds()[rng() % all_input_kinds().size()], d, n, rng()));
    if (n) b_->copy_to_device(in_->get(in_at), hosts.back().data(), hosts.back().size());
    tensors.push_back({in_->get(in_at), n, static_cast<amax_dtype_t>(d)});
    outputs.push_back(out_->get<std::uint8_t>(out_at));
    in_at += (n * info(d).bytes + 15) / 16 * 16;
    out_at += n + 3;
  }
  const amax_tune::QuantizeOptions o =
      qopts(Fp8Format::e4m3, CastRule::transformer_engine, {448.0f, 0.0f, true, false});
  const std::size_t wsb = ctx.multi_quantize_workspace_size(tensors, o);
  poison();
  const std::size_t k = tensors.size();
  ctx.multi_quantize(tensors, o, outputs, word(0), word(k), word(2 * k), ws_->get(), wsb);
  b_->synchronize(nullptr);
  std::vector<std::uint8_t> got(out_at);
  b_->copy_to_host(got.data(), out_->get(), got.size());
  for (std::size_t i = 0; i < k; ++i) {
    const auto [d, n] = shape[i];
    const std::uint32_t ra = reference_amax_bits(hosts[i].data(), d, n, NanMode::propagate);
    const ScaleBits rs = reference_scale_bits(ra, rule_of(o));
    EXPECT_EQ(read_bits(*b_, word(static_cast<int>(i))), ra) << i;
    EXPECT_EQ(read_bits(*b_, word(static_cast<int>(k + i))), rs.scale) << i;
    EXPECT_EQ(read_bits(*b_, word(static_cast<int>(2 * k + i))), rs.scale_inv) << i;
    std::vector<std::uint8_t> want(n);
    reference_quantize(hosts[i].data(), d, n, rs.scale, Fp8Format::e4m3, CastRule::transformer_engine, want.data());
    const std::size_t at = outputs[i] - out_->get<std::uint8_t>();
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + at)) << "tensor " << i;
    EXPECT_EQ(got[at + n], kSentinel) << "tensor " << i << ": a byte past its end";
  }
  // tensors[3] misaligned: refused by index, nothing written
  std::vector<amax_tensor_t> bad = tensors;
  bad[3].data = static_cast<const char*>(bad[3].data) + 2;
  poison();
  const amax_quantize_options_t co = o.to_c();
  EXPECT_EQ(amax_multi_quantize(ctx.get(), bad.data(), k, &co, outputs.data(), word(0), word(k), word(2 * k),
                                ws_->get(), wsb, nullptr),
            AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_NE(std::string(amax_last_error()).find("tensors[3].data"), std::string::npos) << amax_last_error();
  b_->synchronize(nullptr);
  std::vector<std::uint8_t> after(out_at);
  b_->copy_to_host(after.data(), out_->get(), after.size());
  EXPECT_TRUE(std::all_of(after.begin(), after.end(), [](std::uint8_t v) { return v == kSentinel; }));
  EXPECT_EQ(read_bits(*b_, word(0)), 0xdeadbeefu);
}
