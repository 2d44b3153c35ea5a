// Many tensors per call on the GPU, the calls around them (label `gpu`; skips without a GPU): graph
// capture replayed with new data, not preloaded during capture, bad input writing no output, a NULL
// list after a prepared one, repeated lists served prepared.
#include "multi_cases.hpp"

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
  ::setenv("AMAX_TUNE_BUNDLE", "", 1);  // bundled kernels load during capture (test_gpu_bundle)
  amax_context_t c = bare_context();
  ::unsetenv("AMAX_TUNE_BUNDLE");
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
  ::setenv("AMAX_TUNE_BUNDLE", "", 1);  // bundled kernels load during capture (test_gpu_bundle)
  amax_tune::Context ctx(options(AMAX_NAN_PROPAGATE));
  ::unsetenv("AMAX_TUNE_BUNDLE");
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
  // A sibling of ctx (NaN ignored; shared kernels, tables and slots): its own prepared list of the
  // same tensors, with its own NaN mode, interleaved with ctx's.
  amax_tune::Context sibling = ctx.sibling(AMAX_NAN_IGNORE);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(run_and_check(b, sibling, *a, NanMode::ignore, "the first list, NaN-ignoring sibling"), 0);
    EXPECT_EQ(run_and_check(b, ctx, *a, NanMode::propagate, "the first list after the sibling's"), 0);
  }
  std::printf("multi: %d calls of two repeated lists, 300 others, fused, another context and a sibling "
              "bit-exact\n", calls + 308);
}
