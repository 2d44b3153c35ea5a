// Many tensors per call on the GPU (label `gpu`; skips without a GPU): amax_multi_compute and
// amax_multi_and_scale through the C++ API, every tensor's result bit-exact against the CPU
// reference (and the CPU scale rule), for 1 to 10,000 tensors of mixed dtypes and sizes (n = 0 with
// NULL, odd element offsets), forced variants of both combines, small and large chunks, every grid
// cap (tensors cut between blocks), both descriptor capacities, both NaN modes, a tensor of 2^31 + 1
// elements, graph capture replayed with new data, and bad input writing no output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "amax/amax_tune.hpp"
#include "amax/dtype_c.hpp"
#include "amax/multi_config.hpp"
#include "amax/reference.hpp"
#include "amax/scale_rule.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;

namespace {

amax_tune::Options options(amax_nan_mode_t mode) {
  amax_tune::Options o;
  o.nan_mode = mode;
  o.user_db_path = "";
  o.system_db_path = "";
  return o;
}

// A C API context without databases (null where creation failed; amax_last_error says why).
amax_context_t bare_context() {
  amax_context_options_t o;
  amax_context_options_init(&o);
  o.user_db_path = "";
  o.system_db_path = "";
  amax_context_t c = nullptr;
  return amax_context_create(&o, &c) == AMAX_STATUS_SUCCESS ? c : nullptr;
}

// AMAX_TUNE_FORCE_MULTI_LABEL for the contexts created while it lives (read at creation).
struct ForceMulti {
  explicit ForceMulti(const std::string& l) { setenv("AMAX_TUNE_FORCE_MULTI_LABEL", l.c_str(), 1); }
  ~ForceMulti() { unsetenv("AMAX_TUNE_FORCE_MULTI_LABEL"); }
};

struct Spec {
  DType dtype;
  std::uint64_t n;
  std::uint32_t offset;  // elements past a 256-byte boundary
  InputKind kind;
};

std::string fmt_ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// The list's inputs in one device buffer, with their host copies and expected bits.
struct Group {
  std::vector<Spec> specs;
  std::vector<std::vector<std::uint8_t>> host;
  std::vector<amax_tensor_t> tensors;
  std::unique_ptr<DeviceBuffer> in, out;
};

std::unique_ptr<Group> make_group(Backend& b, std::vector<Spec> specs, std::uint64_t seed) {
  auto g = std::make_unique<Group>();
  g->specs = std::move(specs);
  std::vector<std::uint64_t> at;
  std::uint64_t bytes = 256;
  for (const Spec& s : g->specs) {
    at.push_back(bytes + s.offset * info(s.dtype).bytes);
    bytes += (s.offset + s.n) * info(s.dtype).bytes + 256 - ((s.offset + s.n) * info(s.dtype).bytes) % 256 + 256;
  }
  g->in = std::make_unique<DeviceBuffer>(b, bytes);
  g->out = std::make_unique<DeviceBuffer>(b, 4 * std::max<std::size_t>(1, g->specs.size()));
  for (std::size_t i = 0; i < g->specs.size(); ++i) {
    const Spec& s = g->specs[i];
    g->host.push_back(make_input(s.kind, s.dtype, s.n, seed + i));
    if (s.n) b.copy_to_device(g->in->get(at[i]), g->host.back().data(), g->host.back().size());
    g->tensors.push_back({s.n ? g->in->get(at[i]) : nullptr, s.n, to_c(s.dtype)});
  }
  return g;
}

// Runs the call (output filled with garbage first) and checks every tensor; returns the mismatches.
int run_and_check(Backend& b, amax_tune::Context& ctx, Group& g, NanMode mode, const std::string& what) {
  const std::size_t ws_bytes = ctx.multi_workspace_size(g.tensors);
  DeviceBuffer ws(b, ws_bytes);
  b.memset32_async(ws.get(), 0xdeadbeefu, ws_bytes / 4, nullptr);
  b.memset32_async(g.out->get(), 0x7f800001u, g.specs.size(), nullptr);  // garbage: a NaN
  ctx.multi_compute(g.tensors, g.out->get<float>(), ws.get(), ws_bytes, nullptr);
  b.synchronize(nullptr);
  std::vector<std::uint32_t> got(g.specs.size());
  b.copy_to_host(got.data(), g.out->get(), 4 * got.size());
  int bad = 0;
  for (std::size_t i = 0; i < g.specs.size(); ++i) {
    const Spec& s = g.specs[i];
    const std::uint32_t want = reference_amax_bits(g.host[i].data(), s.dtype, s.n, mode);
    if (got[i] != want && bad++ < 10)
      ADD_FAILURE() << what << ": tensor " << i << " of " << g.specs.size() << " (" << to_string(s.dtype) << " n=" << s.n
                    << " offset " << s.offset << " " << to_string(s.kind) << "): got 0x" << std::hex << got[i]
                    << ", want 0x" << want;
  }
  return bad;
}

std::vector<Spec> random_specs(std::mt19937_64& rng, std::size_t count, double max_log2, bool mixed_dtypes) {
  std::vector<Spec> out;
  for (std::size_t i = 0; i < count; ++i) {
    const DType d = mixed_dtypes ? all_dtypes()[rng() % 3].dtype : DType::bf16;
    std::uint64_t n = static_cast<std::uint64_t>(std::exp2(std::uniform_real_distribution<double>(0, max_log2)(rng)));
    if (rng() % 10 == 0) n = 0;
    const auto kinds = all_input_kinds();
    out.push_back({d, n, static_cast<std::uint32_t>(rng() % (16 / info(d).bytes)), kinds[rng() % kinds.size()]});
  }
  return out;
}

}  // namespace

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

namespace {
// amax_multi_and_scale on `g` with `o`: checks every tensor's amax, scale and scale_inv bits.
int run_and_check_scale(Backend& b, amax_tune::Context& ctx, Group& g, NanMode mode, const amax_tune::ScaleOptions& o,
                        const std::string& what) {
  const std::size_t count = g.specs.size(), ws_bytes = ctx.multi_workspace_size(g.tensors);
  DeviceBuffer ws(b, ws_bytes), outs(b, 12 * count);
  b.memset32_async(ws.get(), 0xdeadbeefu, ws_bytes / 4, nullptr);
  b.memset32_async(outs.get(), 0x7f800001u, 3 * count, nullptr);
  float* amax = outs.get<float>(0);
  ctx.multi_and_scale(g.tensors, o, amax, amax + count, amax + 2 * count, ws.get(), ws_bytes, nullptr);
  b.synchronize(nullptr);
  std::vector<std::uint32_t> got(3 * count);
  b.copy_to_host(got.data(), outs.get(), 12 * count);
  ScaleRule r;
  r.max = o.format == AMAX_FP8_EXPLICIT_MAX ? o.max : info(*fp8_format_from_int(o.format)).max_finite;
  r.epsilon = o.epsilon;
  r.force_pow2 = o.force_pow2;
  r.nan_propagates = o.nan_propagates;
  int bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const Spec& s = g.specs[i];
    const std::uint32_t a = reference_amax_bits(g.host[i].data(), s.dtype, s.n, mode);
    const ScaleBits want = reference_scale_bits(a, r);
    if ((got[i] != a || got[count + i] != want.scale || got[2 * count + i] != want.scale_inv) && bad++ < 10)
      ADD_FAILURE() << what << ": tensor " << i << " (" << to_string(s.dtype) << " n=" << s.n << " "
                    << to_string(s.kind) << "): got amax/scale/scale_inv 0x" << std::hex << got[i] << "/0x"
                    << got[count + i] << "/0x" << got[2 * count + i] << ", want 0x" << a << "/0x" << want.scale
                    << "/0x" << want.scale_inv;
  }
  return bad;
}
}  // namespace

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

TEST(GpuMulti, GraphCapturedOnceAndReplayedWithNewData) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  amax_tune::Context ctx(options(AMAX_NAN_PROPAGATE));
  for (std::size_t count : {3, 500, 1000, 2000}) {  // one launch at capacity 192; 512; 1600; two launches
    auto g = make_group(b, random_specs(rng, count, 18, true), rng());
    ctx.multi_preload(g->tensors);
    StreamHandle s = b.create_stream();
    const std::size_t ws_bytes = ctx.multi_workspace_size(g->tensors);
    DeviceBuffer ws(b, ws_bytes);
    b.begin_capture(s);
    {
      // The list lives only in this scope: the graph must not read it after the call.
      std::vector<amax_tensor_t> copy = g->tensors;
      ctx.multi_compute(copy, g->out->get<float>(), ws.get(), ws_bytes, s);
      std::fill(copy.begin(), copy.end(), amax_tensor_t{nullptr, 0, AMAX_DTYPE_FP32});
    }
    GraphExecHandle graph = b.end_capture(s);
    for (int replay = 0; replay < 3; ++replay) {
      for (std::size_t i = 0; i < count; ++i) {
        const Spec& sp = g->specs[i];
        const InputKind k = replay == 1 ? InputKind::nan_middle : replay == 2 ? InputKind::max_last : InputKind::random;
        g->host[i] = make_input(k, sp.dtype, sp.n, rng());
        if (sp.n) b.copy_to_device(const_cast<void*>(g->tensors[i].data), g->host[i].data(), g->host[i].size());
      }
      b.memset32_async(g->out->get(), 0x7f800001u, count, s);
      b.launch_graph(graph, s);
      b.synchronize(s);
      std::vector<std::uint32_t> got(count);
      b.copy_to_host(got.data(), g->out->get(), 4 * count);
      int bad = 0;
      for (std::size_t i = 0; i < count; ++i)
        if (got[i] != reference_amax_bits(g->host[i].data(), g->specs[i].dtype, g->specs[i].n, NanMode::propagate) &&
            bad++ < 5)
          ADD_FAILURE() << "replay " << replay << " of " << count << " tensors: tensor " << i;
    }
    b.destroy_graph(graph);
    b.destroy_stream(s);
  }
}

TEST(GpuMulti, NotPreloadedDuringCaptureAndBadInputWriteNoOutput) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  ForceMulti force("multi.t256.v8.u2.c128k.b2cu.warp");  // a variant no other test of this context loaded
  amax_context_t c = bare_context();
  ASSERT_NE(c, nullptr) << amax_last_error();
  DeviceBuffer in(b, 4096), out(b, 16), ws(b, 4096);
  b.memset32_async(out.get(), 0x12345678u, 4, nullptr);
  amax_tensor_t t[3] = {{in.get(), 100, AMAX_DTYPE_BF16}, {in.get(2), 10, AMAX_DTYPE_BF16}, {in.get(1), 5, AMAX_DTYPE_FP32}};
  EXPECT_EQ(amax_multi_compute(c, t, 3, out.get<float>(), ws.get(), ws.bytes(), nullptr), AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_STREQ(amax_last_error(), ("tensors[2].data " + fmt_ptr(in.get(1)) + " is not aligned to the 4-byte elements of fp32").c_str());
  t[2].data = nullptr;
  EXPECT_EQ(amax_multi_compute(c, t, 3, out.get<float>(), ws.get(), ws.bytes(), nullptr), AMAX_STATUS_NULL_POINTER);
  t[2] = {in.get(), 5, AMAX_DTYPE_FP32};
  EXPECT_EQ(amax_multi_compute(c, t, 3, out.get<float>(1), ws.get(), ws.bytes(), nullptr), AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_EQ(amax_multi_compute(c, t, 3, out.get<float>(), ws.get(), 0, nullptr), AMAX_STATUS_WORKSPACE_TOO_SMALL);
  StreamHandle s = b.create_stream();
  b.begin_capture(s);
  EXPECT_EQ(amax_multi_compute(c, t, 3, out.get<float>(), ws.get(), ws.bytes(), s), AMAX_STATUS_NOT_PRELOADED);
  EXPECT_NE(std::string(amax_last_error()).find("call amax_multi_preload"), std::string::npos) << amax_last_error();
  b.destroy_graph(b.end_capture(s));
  b.destroy_stream(s);
  b.synchronize(nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(read_bits(b, out.get(4 * i)), 0x12345678u) << "output " << i << " was written";
  EXPECT_EQ(amax_multi_compute(c, t, 0, nullptr, nullptr, 0, nullptr), AMAX_STATUS_SUCCESS);  // empty list: nothing
  amax_context_destroy(c);
}

// Issue 24: a NULL list with count > 0 after a list of that count was enqueued (and so prepared)
// on the context: every entry point answers NULL_POINTER naming it, none reads the NULL array (the
// prepared-list lookup of amax_multi_compute / amax_multi_and_scale compared tensors[i] first and
// crashed), and nothing is written.
TEST(GpuMulti, NullListAfterAPreparedListOfThatCountIsANullPointerStatusNotACrash) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  amax_context_t c = bare_context();
  ASSERT_NE(c, nullptr) << amax_last_error();
  constexpr std::size_t kCount = 8;
  DeviceBuffer in(b, 4096 * kCount), outs(b, 3 * 4 * kCount);
  amax_tensor_t t[kCount];
  for (std::size_t i = 0; i < kCount; ++i) t[i] = {in.get(4096 * i), 1000, AMAX_DTYPE_FP32};
  b.memset32_async(in.get(), 0x3f800000u, 1024 * kCount, nullptr);  // every element 1.0f
  std::size_t ws_bytes = 0;
  ASSERT_EQ(amax_multi_workspace_size(c, t, kCount, &ws_bytes), AMAX_STATUS_SUCCESS);
  DeviceBuffer ws(b, ws_bytes);
  float* amax = outs.get<float>(0);
  amax_scale_options_t so;
  amax_scale_options_init(&so);
  // Enqueued twice each: the second call is served from the prepared list.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(amax_multi_compute(c, t, kCount, amax, ws.get(), ws_bytes, nullptr), AMAX_STATUS_SUCCESS) << amax_last_error();
    ASSERT_EQ(amax_multi_and_scale(c, t, kCount, &so, amax, amax + kCount, amax + 2 * kCount, ws.get(), ws_bytes, nullptr),
              AMAX_STATUS_SUCCESS)
        << amax_last_error();
  }
  b.synchronize(nullptr);
  EXPECT_EQ(read_bits(b, amax), 0x3f800000u);
  b.memset32_async(outs.get(), 0x12345678u, 3 * kCount, nullptr);
  b.synchronize(nullptr);
  const std::string msg = "tensors is NULL with count = 8";
  EXPECT_EQ(amax_multi_compute(c, nullptr, kCount, amax, ws.get(), ws_bytes, nullptr), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_last_error(), msg);
  EXPECT_EQ(amax_multi_and_scale(c, nullptr, kCount, &so, amax, amax + kCount, amax + 2 * kCount, ws.get(), ws_bytes,
                                 nullptr),
            AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_last_error(), msg);
  std::size_t bytes = 12345;
  EXPECT_EQ(amax_multi_workspace_size(c, nullptr, kCount, &bytes), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_last_error(), msg);
  EXPECT_EQ(bytes, 12345u);
  EXPECT_EQ(amax_multi_preload(c, nullptr, kCount), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_last_error(), msg);
  EXPECT_EQ(amax_multi_preload_scale(c, nullptr, kCount), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_last_error(), msg);
  amax_multi_explanation_t e;
  EXPECT_EQ(amax_multi_explain(c, nullptr, kCount, AMAX_DTYPE_FP32, &e), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_last_error(), msg);
  b.synchronize(nullptr);
  for (std::size_t i = 0; i < 3 * kCount; ++i)
    EXPECT_EQ(read_bits(b, outs.get(4 * i)), 0x12345678u) << "output word " << i << " was written";
  // The prepared list still serves its own array afterwards.
  EXPECT_EQ(amax_multi_compute(c, t, kCount, amax, ws.get(), ws_bytes, nullptr), AMAX_STATUS_SUCCESS) << amax_last_error();
  b.synchronize(nullptr);
  EXPECT_EQ(read_bits(b, outs.get(4 * (kCount - 1))), 0x3f800000u);
  amax_context_destroy(c);
}

TEST(GpuMulti, FusedGraphReplayAndBadInputWriteNoOutput) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  amax_tune::Context ctx(options(AMAX_NAN_PROPAGATE));
  const std::size_t count = 700;
  auto g = make_group(b, random_specs(rng, count, 17, true), rng());
  amax_tune::ScaleOptions o;
  o.format = AMAX_FP8_E5M2;
  const std::size_t ws_bytes = ctx.multi_workspace_size(g->tensors);
  DeviceBuffer ws(b, ws_bytes), outs(b, 12 * count);
  float* amax = outs.get<float>(0);
  // During capture without amax_multi_preload_scale: NOT_PRELOADED naming it, nothing written.
  StreamHandle s = b.create_stream();
  b.memset32_async(outs.get(), 0x12345678u, 3 * count, nullptr);
  b.synchronize(nullptr);
  const amax_scale_options_t co = o.to_c();
  b.begin_capture(s);
  EXPECT_EQ(amax_multi_and_scale(ctx.get(), g->tensors.data(), count, &co, amax, amax + count, amax + 2 * count, ws.get(),
                                 ws_bytes, s),
            AMAX_STATUS_NOT_PRELOADED);
  EXPECT_NE(std::string(amax_last_error()).find("call amax_multi_preload_scale"), std::string::npos) << amax_last_error();
  b.destroy_graph(b.end_capture(s));
  // Bad input, each with its status and nothing enqueued.
  EXPECT_EQ(amax_multi_and_scale(ctx.get(), g->tensors.data(), count, &co, amax, amax + count - 1, amax + 2 * count,
                                 ws.get(), ws_bytes, nullptr),
            AMAX_STATUS_INVALID_ARGUMENT);  // amax_out and scale_out overlap by one word
  EXPECT_NE(std::string(amax_last_error()).find("amax_out"), std::string::npos) << amax_last_error();
  EXPECT_EQ(amax_multi_and_scale(ctx.get(), g->tensors.data(), count, &co, amax, nullptr, amax + 2 * count, ws.get(),
                                 ws_bytes, nullptr),
            AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), ("scale_out is NULL with count = " + std::to_string(count)).c_str());
  amax_scale_options_t bad = co;
  bad.epsilon = -1.0f;
  EXPECT_EQ(amax_multi_and_scale(ctx.get(), g->tensors.data(), count, &bad, amax, amax + count, amax + 2 * count, ws.get(),
                                 ws_bytes, nullptr),
            AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(amax_last_error()).find("options.epsilon is -1"), std::string::npos) << amax_last_error();
  b.synchronize(nullptr);
  std::vector<std::uint32_t> untouched(3 * count);
  b.copy_to_host(untouched.data(), outs.get(), 12 * count);
  for (std::size_t i = 0; i < 3 * count; ++i) ASSERT_EQ(untouched[i], 0x12345678u) << "word " << i << " was written";
  // Preloaded: captured once, replayed with new data; every amax, scale and scale_inv exact.
  ctx.multi_preload_scale(g->tensors);
  b.begin_capture(s);
  {
    std::vector<amax_tensor_t> copy = g->tensors;
    ctx.multi_and_scale(copy, o, amax, amax + count, amax + 2 * count, ws.get(), ws_bytes, s);
    std::fill(copy.begin(), copy.end(), amax_tensor_t{nullptr, 0, AMAX_DTYPE_FP32});
  }
  GraphExecHandle graph = b.end_capture(s);
  ScaleRule r;
  r.max = 57344.0f;
  for (int replay = 0; replay < 3; ++replay) {
    for (std::size_t i = 0; i < count; ++i) {
      const Spec& sp = g->specs[i];
      const InputKind k = replay == 1 ? InputKind::nan_middle : replay == 2 ? InputKind::denormals : InputKind::random;
      g->host[i] = make_input(k, sp.dtype, sp.n, rng());
      if (sp.n) b.copy_to_device(const_cast<void*>(g->tensors[i].data), g->host[i].data(), g->host[i].size());
    }
    b.memset32_async(outs.get(), 0x7f800001u, 3 * count, s);
    b.launch_graph(graph, s);
    b.synchronize(s);
    std::vector<std::uint32_t> got(3 * count);
    b.copy_to_host(got.data(), outs.get(), 12 * count);
    int bad_count = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint32_t a = reference_amax_bits(g->host[i].data(), g->specs[i].dtype, g->specs[i].n, NanMode::propagate);
      const ScaleBits want = reference_scale_bits(a, r);
      if ((got[i] != a || got[count + i] != want.scale || got[2 * count + i] != want.scale_inv) && bad_count++ < 5)
        ADD_FAILURE() << "fused replay " << replay << ": tensor " << i;
    }
  }
  b.destroy_graph(graph);
  b.destroy_stream(s);
}

TEST(GpuMulti, RepeatedListsAreServedPreparedWithTheirNewDataOutputsAndWorkspaces) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  amax_tune::Context ctx(options(AMAX_NAN_PROPAGATE));
  // Two lists used in turn (the second prepared list must not serve the first), each call with new
  // data, another output array and another workspace; then 300 other lists (the per-thread cache
  // holds 256: the first ones are dropped) and the first list again; the fused call on the same list.
  auto a = make_group(b, random_specs(rng, 900, 18, true), rng());
  auto c = make_group(b, random_specs(rng, 900, 18, true), rng());
  auto out2 = std::make_unique<DeviceBuffer>(b, 4 * 900);
  int calls = 0;
  for (int round = 0; round < 3; ++round)
    for (Group* g : {a.get(), c.get()}) {
      for (std::size_t i = 0; i < g->specs.size(); ++i) {
        g->host[i] = make_input(round == 1 ? InputKind::nan_last : InputKind::max_in_vector, g->specs[i].dtype,
                                g->specs[i].n, rng());
        if (g->specs[i].n) b.copy_to_device(const_cast<void*>(g->tensors[i].data), g->host[i].data(), g->host[i].size());
      }
      if (round == 2) std::swap(g->out, out2);  // another output array (run_and_check: another workspace each call)
      EXPECT_EQ(run_and_check(b, ctx, *g, NanMode::propagate, "repeated list, round " + std::to_string(round)), 0);
      ++calls;
    }
  for (int k = 0; k < 300; ++k) {
    auto other = make_group(b, random_specs(rng, 3 + k % 5, 12, true), rng());
    EXPECT_EQ(run_and_check(b, ctx, *other, NanMode::propagate, "filler list " + std::to_string(k)), 0);
  }
  EXPECT_EQ(run_and_check(b, ctx, *a, NanMode::propagate, "the first list after 300 others"), 0);
  amax_tune::ScaleOptions o;
  EXPECT_EQ(run_and_check_scale(b, ctx, *a, NanMode::propagate, o, "the first list fused"), 0);
  EXPECT_EQ(run_and_check(b, ctx, *a, NanMode::propagate, "the first list again, amax only"), 0);
  // Another context (NaN ignored) with the very same list: its own preparation, its own NaN mode.
  amax_tune::Context ignore(options(AMAX_NAN_IGNORE));
  EXPECT_EQ(run_and_check(b, ignore, *a, NanMode::ignore, "the first list, NaN-ignoring context"), 0);
  std::printf("multi: %d calls of two repeated lists, 300 others, fused and another context bit-exact\n", calls + 304);
}
