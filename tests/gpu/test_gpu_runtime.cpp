// The runtime library through its public API on the GPU (label `gpu`): tuned dispatch bit-exact,
// graph capture and replay, several threads and streams, bad input statuses.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>

#include "amax/amax_tune.hpp"
#include "amax/dtype_c.hpp"
#include "amax/reference.hpp"
#include "amax/scale_rule.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;

namespace {


amax_tune::Options options(amax_nan_mode_t mode = AMAX_NAN_PROPAGATE) {
  amax_tune::Options o;
  o.nan_mode = mode;
  o.user_db_path = "";  // only the shipped system database (and the defaults) serve these tests
#ifdef AMAX_TEST_SYSTEM_DB
  o.system_db_path = AMAX_TEST_SYSTEM_DB;
#endif
  return o;
}

}  // namespace

TEST(GpuRuntime, TunedDispatchIsBitExactOverRandomSizesAndOffsets) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  std::mt19937_64 rng(std::random_device{}());
  DeviceBuffer in(b, (1u << 26) * 4 + 64), out(b, 4), ws(b, 64u << 20);
  int checked = 0;
  for (amax_nan_mode_t mode : {AMAX_NAN_PROPAGATE, AMAX_NAN_IGNORE}) {
    amax_tune::Context ctx(options(mode));
    for (int i = 0; i < 60; ++i) {
      const auto& d = all_dtypes()[rng() % 3];
      const std::uint64_t n = static_cast<std::uint64_t>(std::exp2(std::uniform_real_distribution<double>(0, 26)(rng)));
      const std::uint64_t off = rng() % (16 / d.bytes);
      const InputKind kind = all_input_kinds()[rng() % all_input_kinds().size()];
      const auto seed = rng();
      const auto host = make_input(kind, d.dtype, n, seed);
      b.copy_to_device(in.get(off * d.bytes), host.data(), host.size());
      b.memset32_async(out.get(), 0x7f800000u, 1, nullptr);  // garbage: +Inf
      const std::size_t need = ctx.workspace_size(to_c(d.dtype), n);
      ASSERT_GE(need, 4u);
      ASSERT_LE(need, ws.bytes());
      ctx.compute(in.get(off * d.bytes), to_c(d.dtype), n, out.get<float>(), ws.get(), need, nullptr);
      b.synchronize(nullptr);
      const auto mm = mode == AMAX_NAN_IGNORE ? NanMode::ignore : NanMode::propagate;
      ASSERT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), d.dtype, n, mm))
          << d.name << " n=" << n << " offset=" << off << " " << to_string(kind) << " seed=" << seed << " via "
          << ctx.explain(to_c(d.dtype), n).label;
      ++checked;
    }
  }
  std::printf("tuned dispatch: %d random (dtype, n, offset, input) cases bit-exact\n", checked);
}

TEST(GpuRuntime, SiblingSharesKernelsAndSlotsWithItsOwnNanMode) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  // Sizes of one block, of a slot-using strategy (self_reset / first_reset) and of a large grid.
  const std::uint64_t sizes[] = {1000, 1u << 20, 20000000};
  const amax_dtype_t dt = AMAX_DTYPE_BF16;
  std::optional<amax_tune::Context> base(std::in_place, options(AMAX_NAN_PROPAGATE));
  base->preload({dt}, {sizes[0], sizes[1], sizes[2]});
  amax_tune::Context ignore = base->sibling(AMAX_NAN_IGNORE);
  for (std::uint64_t n : sizes) {  // the base's plans and loaded kernels serve the sibling
    const amax_explanation_t e = ignore.explain(dt, n), f = base->explain(dt, n);
    EXPECT_STREQ(e.label, f.label) << "n=" << n;
    EXPECT_EQ(std::string(e.detail).find("not loaded yet"), std::string::npos) << "n=" << n << ": " << e.detail;
  }
  std::mt19937_64 rng(std::random_device{}());
  StreamHandle s = b.create_stream();
  DeviceBuffer in(b, sizes[2] * 2), out(b, 8), ws(b, 64u << 20);
  for (int round = 0; round < 3; ++round)
    for (std::uint64_t n : sizes) {
      const auto host = make_input(round == 2 ? InputKind::all_nan : InputKind::nan_middle, DType::bf16, n, rng());
      b.copy_to_device(in.get(), host.data(), host.size());
      b.memset32_async(out.get(), 0x7f800000u, 2, s);
      // Back to back on one stream: both use the stream's one shared slot.
      base->compute(in.get(), dt, n, out.get<float>(), ws.get(), ws.bytes(), s);
      ignore.compute(in.get(), dt, n, out.get<float>() + 1, ws.get(), ws.bytes(), s);
      b.synchronize(s);
      std::uint32_t got[2];
      b.copy_to_host(got, out.get(), 8);
      EXPECT_EQ(got[0], reference_amax_bits(host.data(), DType::bf16, n, NanMode::propagate)) << "round " << round << " n=" << n;
      EXPECT_EQ(got[1], reference_amax_bits(host.data(), DType::bf16, n, NanMode::ignore)) << "round " << round << " n=" << n;
    }
  // The sibling outlives its creator; a sibling of a sibling propagates again.
  base.reset();
  amax_tune::Context again = ignore.sibling(AMAX_NAN_PROPAGATE);
  const auto host = make_input(InputKind::nan_middle, DType::bf16, sizes[1], rng());
  b.copy_to_device(in.get(), host.data(), host.size());
  ignore.compute(in.get(), dt, sizes[1], out.get<float>(), ws.get(), ws.bytes(), s);
  again.compute(in.get(), dt, sizes[1], out.get<float>() + 1, ws.get(), ws.bytes(), s);
  b.synchronize(s);
  std::uint32_t got[2];
  b.copy_to_host(got, out.get(), 8);
  EXPECT_EQ(got[0], reference_amax_bits(host.data(), DType::bf16, sizes[1], NanMode::ignore));
  EXPECT_EQ(got[1], 0x7fc00000u);
  b.destroy_stream(s);
}

TEST(GpuRuntime, GraphCapturedOnceAndReplayedThreeTimes) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  amax_tune::Context ctx(options());
  const std::uint64_t sizes[] = {1000, 1u << 20, 50000000};  // one launch; one_pass counter; atomic memset
  const amax_dtype_t dtypes[] = {AMAX_DTYPE_BF16, AMAX_DTYPE_FP32};
  ctx.preload(dtypes, 2, sizes, 3);
  StreamHandle s = b.create_stream();
  std::mt19937_64 rng(std::random_device{}());
  for (amax_dtype_t dt : dtypes)
    for (std::uint64_t n : sizes) {
      const DType d = static_cast<DType>(dt);
      DeviceBuffer in(b, n * info(d).bytes + 16), out(b, 4), ws(b, ctx.workspace_size(dt, n));
      b.memset32_async(out.get(), 0xffffffffu, 1, s);
      b.begin_capture(s);
      ctx.compute(in.get(), dt, n, out.get<float>(), ws.get(), ws.bytes(), s);
      GraphExecHandle g = b.end_capture(s);
      for (int replay = 0; replay < 3; ++replay) {
        const InputKind kind = replay == 1 ? InputKind::nan_middle : replay == 2 ? InputKind::max_last : InputKind::random;
        const auto host = make_input(kind, d, n, rng());
        b.copy_to_device(in.get(), host.data(), host.size());
        b.launch_graph(g, s);
        b.synchronize(s);
        EXPECT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), d, n, NanMode::propagate))
            << "replay " << replay << " " << to_string(d) << " n=" << n << " (" << ctx.explain(dt, n).label << ")";
      }
      b.destroy_graph(g);
    }
  b.destroy_stream(s);
}

// AMAX_TUNE_FORCE_STRATEGY=self_reset for the contexts created while it lives (read at creation).
struct ForceStrategy {
  explicit ForceStrategy(const char* s) { setenv("AMAX_TUNE_FORCE_STRATEGY", s, 1); }
  ~ForceStrategy() { unsetenv("AMAX_TUNE_FORCE_STRATEGY"); }
};

namespace {

// Captures ctx.compute of n elements of dt once on each of two streams (inputs in1/in2, outputs
// out[0] and out[1]) and replays both graphs back to back four times with other inputs (NaN, the
// maximum last or first), checking both outputs against the CPU reference in `mode` after each
// round: two graphs of the same call replayed at the same time, each on its capture stream's slot.
// Returns the number of outputs checked.
int check_two_graphs_on_two_streams(Backend& b, amax_tune::Context& ctx, amax_dtype_t dt, std::uint64_t n,
                                    NanMode mode, const std::string& label, StreamHandle s1, StreamHandle s2,
                                    std::mt19937_64& rng) {
  const DType d = static_cast<DType>(dt);
  DeviceBuffer in1(b, n * info(d).bytes + 16), in2(b, n * info(d).bytes + 16), out(b, 8), ws(b, 4);
  b.memset32_async(out.get(), 0xffffffffu, 2, s1);
  b.synchronize(s1);
  b.begin_capture(s1);
  ctx.compute(in1.get(), dt, n, out.get<float>(0), ws.get(), ws.bytes(), s1);
  GraphExecHandle g1 = b.end_capture(s1);
  b.begin_capture(s2);
  ctx.compute(in2.get(), dt, n, out.get<float>(4), ws.get(), ws.bytes(), s2);
  GraphExecHandle g2 = b.end_capture(s2);
  int checked = 0;
  for (int replay = 0; replay < 4; ++replay) {
    const InputKind k1 = replay == 1 ? InputKind::nan_middle : replay == 2 ? InputKind::max_last : InputKind::random;
    const InputKind k2 = replay == 3 ? InputKind::nan_middle : InputKind::max_first;
    const auto h1 = make_input(k1, d, n, rng()), h2 = make_input(k2, d, n, rng());
    b.copy_to_device(in1.get(), h1.data(), h1.size());
    b.copy_to_device(in2.get(), h2.data(), h2.size());
    for (int k = 0; k < 3; ++k) {  // back-to-back replays on both streams
      b.launch_graph(g1, s1);
      b.launch_graph(g2, s2);
    }
    b.synchronize(s1);
    b.synchronize(s2);
    EXPECT_EQ(read_bits(b, out.get(0)), reference_amax_bits(h1.data(), d, n, mode))
        << "replay " << replay << " stream 1 " << to_string(d) << " n=" << n << " (" << label << ")";
    EXPECT_EQ(read_bits(b, out.get(4)), reference_amax_bits(h2.data(), d, n, mode))
        << "replay " << replay << " stream 2 " << to_string(d) << " n=" << n << " (" << label << ")";
    checked += 2;
  }
  b.destroy_graph(g1);
  b.destroy_graph(g2);
  return checked;
}

}  // namespace

TEST(GpuRuntime, SelfResetGraphReplaysAndTwoGraphsOnTwoStreams) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  ForceStrategy force("self_reset");
  amax_tune::Context ctx(options());
  const std::uint64_t sizes[] = {1000, 1u << 20, 50000000};  // one block (no slot); 128 blocks; capped grid
  const amax_dtype_t dtypes[] = {AMAX_DTYPE_BF16, AMAX_DTYPE_FP32};
  ctx.preload(dtypes, 2, sizes, 3);
  StreamHandle s1 = b.create_stream(), s2 = b.create_stream();
  std::mt19937_64 rng(std::random_device{}());
  for (amax_dtype_t dt : dtypes)
    for (std::uint64_t n : sizes) {
      const auto e = ctx.explain(dt, n);
      ASSERT_EQ(std::string(e.label).rfind("self_reset.", 0), 0u) << e.label;
      ASSERT_EQ(e.launches, 1u) << e.label;
      ASSERT_EQ(e.workspace_bytes, 4u) << e.label;  // self_reset needs none; the size is never 0
      check_two_graphs_on_two_streams(b, ctx, dt, n, NanMode::propagate, e.label, s1, s2, rng);
    }
  b.destroy_stream(s1);
  b.destroy_stream(s2);
}

namespace {
// A one-launch strategy that keeps state in the stream slot (first_reset(_warp)) through the C API,
// forced: one block (no slot), a grid of many blocks, and a large grid; eager calls back to back (each call must
// leave the slot ready for the
// next), then graphs captured on two streams replayed back to back, both NaN modes, amax alone and
// fused with the scale (whose variant starts with `fused_prefix`). Returns the cases checked.
int check_forced_slot_strategy(amax::test::GpuEnv* env, const char* strategy, const std::string& fused_prefix) {
  Backend& b = *env->backend;
  ForceStrategy force(strategy);
  const std::string prefix = std::string(strategy) + ".";
  const std::uint64_t sizes[] = {1000, 1u << 20, 50000000};
  const amax_dtype_t dtypes[] = {AMAX_DTYPE_BF16, AMAX_DTYPE_FP32, AMAX_DTYPE_FP16};
  StreamHandle s1 = b.create_stream(), s2 = b.create_stream();
  std::mt19937_64 rng(std::random_device{}());
  int checked = 0;
  for (amax_nan_mode_t mode : {AMAX_NAN_PROPAGATE, AMAX_NAN_IGNORE}) {
    const auto mm = mode == AMAX_NAN_IGNORE ? NanMode::ignore : NanMode::propagate;
    amax_tune::Context ctx(options(mode));
    ctx.preload(dtypes, 3, sizes, 3);
    ctx.preload_scale({AMAX_DTYPE_BF16, AMAX_DTYPE_FP32, AMAX_DTYPE_FP16}, {1000, 1u << 20, 50000000});
    for (amax_dtype_t dt : dtypes)
      for (std::uint64_t n : sizes) {
        const DType d = static_cast<DType>(dt);
        const auto e = ctx.explain(dt, n);
        EXPECT_EQ(std::string(e.label).rfind(prefix, 0), 0u) << e.label;
        EXPECT_EQ(e.launches, 1u) << e.label;
        EXPECT_EQ(e.workspace_bytes, 4u) << e.label;  // it needs none; the size is never 0
        DeviceBuffer in1(b, n * info(d).bytes + 16), out(b, 3 * 4), ws(b, 4);
        // Eager, five calls back to back on one stream, each with its own input kind.
        for (int k = 0; k < 5; ++k) {
          const InputKind kind = k == 1 ? InputKind::nan_middle : k == 3 ? InputKind::max_last : InputKind::random;
          const auto h = make_input(kind, d, n, rng());
          b.copy_to_device(in1.get(), h.data(), h.size());
          b.memset32_async(out.get(), 0xffffffffu, 1, s1);
          ctx.compute(in1.get(), dt, n, out.get<float>(0), ws.get(), ws.bytes(), s1);
          b.synchronize(s1);
          EXPECT_EQ(read_bits(b, out.get()), reference_amax_bits(h.data(), d, n, mm))
              << "eager call " << k << " " << to_string(d) << " n=" << n << " (" << e.label << ")";
          ++checked;
        }
        // Fused with the scale (e4m3 rule), eager.
        {
          const auto h = make_input(InputKind::max_in_vector, d, n, rng());
          b.copy_to_device(in1.get(), h.data(), h.size());
          b.memset32_async(out.get(), 0xffffffffu, 3, s1);
          amax_tune::ScaleOptions so;
          ctx.amax_and_scale(in1.get(), dt, n, so, out.get<float>(0), out.get<float>(4), out.get<float>(8), ws.get(), ws.bytes(),
                             s1);
          b.synchronize(s1);
          const std::uint32_t ref = reference_amax_bits(h.data(), d, n, mm);
          const ScaleBits rs = reference_scale_bits(ref, ScaleRule{448.0f, 0.0f, false, false});
          EXPECT_EQ(std::string(ctx.explain_scale(dt, n).label).rfind(fused_prefix, 0), 0u)
              << ctx.explain_scale(dt, n).label;
          EXPECT_EQ(read_bits(b, out.get()), ref) << "fused " << to_string(d) << " n=" << n;
          EXPECT_EQ(read_bits(b, out.get(4)), rs.scale) << "fused scale " << to_string(d) << " n=" << n;
          EXPECT_EQ(read_bits(b, out.get(8)), rs.scale_inv) << "fused scale_inv " << to_string(d) << " n=" << n;
          ++checked;
        }
        checked += check_two_graphs_on_two_streams(b, ctx, dt, n, mm, e.label, s1, s2, rng);
      }
  }
  b.destroy_stream(s1);
  b.destroy_stream(s2);
  return checked;
}
}  // namespace

// first_reset: its epoch words carry from call to call and from replay to replay; fused, it runs as
// self_reset (fused_variant), also when forced.
TEST(GpuRuntime, FirstResetEagerAndGraphReplaysOnTwoStreamsBothNanModes) {
  AMAX_REQUIRE_GPU();
  const int checked = check_forced_slot_strategy(env, "first_reset", "self_reset.");
  std::printf("first_reset through the C API: %d eager, fused and graph-replay cases bit-exact\n", checked);
}

// first_reset_warp: first_reset's words, taken by the block's ticket wave.
TEST(GpuRuntime, FirstResetWarpEagerAndGraphReplaysOnTwoStreamsBothNanModes) {
  AMAX_REQUIRE_GPU();
  const int checked = check_forced_slot_strategy(env, "first_reset_warp", "self_reset.");
  std::printf("first_reset_warp through the C API: %d eager, fused and graph-replay cases bit-exact\n", checked);
}

TEST(GpuRuntime, SelfResetSeveralThreadsWithTheirOwnStreamsBothNanModes) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  ForceStrategy force("self_reset");
  for (amax_nan_mode_t mode : {AMAX_NAN_PROPAGATE, AMAX_NAN_IGNORE}) {
    amax_tune::Context ctx(options(mode));
    const auto mm = mode == AMAX_NAN_IGNORE ? NanMode::ignore : NanMode::propagate;
    std::atomic<int> wrong{0}, done{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(2000 + t);
        StreamHandle s = t == 0 ? reinterpret_cast<StreamHandle>(2) : b.create_stream();  // 0: per-thread default
        DeviceBuffer in(b, (1u << 22) * 4 + 16), out(b, 4 * 40), ws(b, 4);
        std::vector<std::uint32_t> expect;
        for (int i = 0; i < 40; ++i) {
          const DType d = static_cast<DType>(i % 3);
          const std::uint64_t n = 1 + rng() % (1u << 22);
          const InputKind kind = i % 4 == 3 ? InputKind::nan_middle : InputKind::max_in_vector;
          const auto host = make_input(kind, d, n, rng());
          b.synchronize(s);  // the previous call has read its input
          b.copy_to_device(in.get(), host.data(), host.size());
          ctx.compute(in.get(), to_c(d), n, out.get<float>(4 * i), ws.get(), ws.bytes(), s);
          expect.push_back(reference_amax_bits(host.data(), d, n, mm));
        }
        b.synchronize(s);
        std::vector<std::uint32_t> got(expect.size());
        b.copy_to_host(got.data(), out.get(), 4 * got.size());
        for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != expect[i];
        done += static_cast<int>(got.size());
        if (t != 0) b.destroy_stream(s);
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0) << (mode == AMAX_NAN_IGNORE ? "ignore" : "propagate");
    EXPECT_EQ(done.load(), 320);
  }
}

TEST(GpuRuntime, NoCompilationDuringCapture) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  amax_tune::Options o = options();
  o.kernel_cache_dir = "";  // no disk cache and (below) no kernel bundle: nothing can be loaded
  ::setenv("AMAX_TUNE_BUNDLE", "", 1);  // bundled kernels load during capture (test_gpu_bundle)
  amax_tune::Context ctx(o);
  ::unsetenv("AMAX_TUNE_BUNDLE");
  DeviceBuffer in(b, 4096), out(b, 4), ws(b, 4096);
  StreamHandle s = b.create_stream();
  b.begin_capture(s);
  const amax_status_t st = amax_compute(ctx.get(), in.get(), AMAX_DTYPE_FP16, 1000, out.get<float>(), ws.get(), ws.bytes(), s);
  const std::string msg = amax_last_error();
  b.destroy_graph(b.end_capture(s));  // the capture is still valid: nothing illegal was enqueued
  EXPECT_EQ(st, AMAX_STATUS_NOT_PRELOADED);
  EXPECT_NE(msg.find("call amax_preload"), std::string::npos) << msg;
  b.destroy_stream(s);
}

TEST(GpuRuntime, SeveralThreadsWithTheirOwnStreams) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  amax_tune::Context ctx(options());
  std::atomic<int> wrong{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      StreamHandle s = b.create_stream();
      DeviceBuffer in(b, (1u << 22) * 4 + 16), out(b, 4 * 40), ws(b, 16u << 20);
      std::vector<std::uint32_t> expect;
      for (int i = 0; i < 40; ++i) {
        const DType d = static_cast<DType>(i % 3);
        const std::uint64_t n = 1 + rng() % (1u << 22);
        const auto host = make_input(InputKind::max_in_vector, d, n, rng());
        b.synchronize(s);  // the previous call has read its input
        b.copy_to_device(in.get(), host.data(), host.size());
        ctx.compute(in.get(), to_c(d), n, out.get<float>(4 * i), ws.get(), ws.bytes(), s);
        expect.push_back(reference_amax_bits(host.data(), d, n, NanMode::propagate));
      }
      b.synchronize(s);
      std::vector<std::uint32_t> got(expect.size());
      b.copy_to_host(got.data(), out.get(), 4 * got.size());
      for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != expect[i];
      done += static_cast<int>(got.size());
      b.destroy_stream(s);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(done.load(), 320);
}

TEST(GpuRuntime, BadInputGetsItsOwnStatus) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  amax_tune::Context ctx(options());
  DeviceBuffer in(b, 1 << 20), out(b, 8), ws(b, 1 << 20);
  amax_context_t c = ctx.get();
  auto* f = out.get<float>();
  EXPECT_EQ(amax_compute(c, in.get(1), AMAX_DTYPE_FP32, 100, f, ws.get(), ws.bytes(), nullptr), AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_NE(std::string(amax_last_error()).find("not aligned to the 4-byte elements of fp32"), std::string::npos);
  EXPECT_EQ(amax_compute(c, in.get(2), AMAX_DTYPE_BF16, 100, f, ws.get(), ws.bytes(), nullptr), AMAX_STATUS_SUCCESS);
  EXPECT_EQ(amax_compute(c, in.get(), AMAX_DTYPE_FP32, 100, out.get<float>(2), ws.get(), ws.bytes(), nullptr),
            AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_EQ(amax_compute(c, nullptr, AMAX_DTYPE_FP32, 100, f, ws.get(), ws.bytes(), nullptr), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_compute(c, in.get(), static_cast<amax_dtype_t>(9), 100, f, ws.get(), ws.bytes(), nullptr), AMAX_STATUS_UNKNOWN_DTYPE);
  EXPECT_NE(std::string(amax_last_error()).find("unknown dtype 9"), std::string::npos);
  const std::size_t need = ctx.workspace_size(AMAX_DTYPE_FP32, 1u << 18);
  EXPECT_EQ(amax_compute(c, in.get(), AMAX_DTYPE_FP32, 1u << 18, f, ws.get(), need - 1, nullptr), AMAX_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_NE(std::string(amax_last_error()).find("amax_workspace_size gives " + std::to_string(need)), std::string::npos)
      << amax_last_error();
  // n == 0: +0.0 over garbage, with a null input allowed.
  b.memset32_async(out.get(), 0xffffffffu, 1, nullptr);
  EXPECT_EQ(amax_compute(c, nullptr, AMAX_DTYPE_FP16, 0, f, nullptr, 0, nullptr), AMAX_STATUS_SUCCESS);
  b.synchronize(nullptr);
  EXPECT_EQ(read_bits(b, out.get()), 0u);
  amax_explanation_t e;
  ASSERT_EQ(amax_explain(c, AMAX_DTYPE_BF16, 1u << 20, &e), AMAX_STATUS_SUCCESS);
  std::printf("explain bf16 n=2^20: source %d label %s grid %u launches %u: %s\n", e.source, e.label, e.grid, e.launches,
              e.detail);
  EXPECT_GT(std::strlen(e.label), 10u);
}
