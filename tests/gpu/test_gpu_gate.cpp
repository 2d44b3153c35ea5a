// The timing gate (measure.hpp Gate) and the gated runner on the GPU: GPU time behind the gate,
// a gate released early or late never gives a wrong or negative time, a gate that times out is
// reported (GateTimeout) instead of hanging, the host's enqueue cost is recorded, and two batches
// in flight take the GPU time of one at a time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "amax/measure.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/runner.hpp"
#include "gpu_env.hpp"

using namespace amax;

namespace {

struct GateFixture {
  Backend& b;
  ReferenceKernels ref;
  StreamHandle stream;
  explicit GateFixture(test::GpuEnv& env)
      : b(*env.backend), ref(ReferenceKernels::load(b, *env.compiler, env.kernels->binaries())),
        stream(b.create_stream()) {}
  ~GateFixture() { b.destroy_stream(stream); }
  void empty() { b.launch(ref.empty, 1, 32, stream, nullptr); }
};

}  // namespace

TEST(GpuGate, HoldsTheStreamUntilReleased) {
  AMAX_REQUIRE_GPU();
  GateFixture f(*env);
  tune::Gate gate(f.b, f.ref.gate, 5000);
  EventHandle done = f.b.create_event();
  gate.close(f.stream);
  f.empty();
  f.b.record(done, f.stream);
  // While closed, nothing behind the gate has run: the event is not complete after 50 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  gate.release();
  f.b.synchronize(f.stream);
  EXPECT_FALSE(gate.timed_out());
  // The release, not the timeout (5 s), let it through.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  f.b.destroy_event(done);
}

TEST(GpuGate, ReleasedEarlyGivesAPositiveTimeAndNoTimeout) {
  AMAX_REQUIRE_GPU();
  GateFixture f(*env);
  tune::Gate gate(f.b, f.ref.gate, 1000);
  EventHandle start = f.b.create_event(), stop = f.b.create_event();
  for (int rep = 0; rep < 5; ++rep) {
    gate.close(f.stream);
    f.b.record(start, f.stream);
    gate.release();  // before the batch is enqueued: the host's launch rate shows, never less than 0
    for (int i = 0; i < 50; ++i) f.empty();
    f.b.record(stop, f.stream);
    const float ms = f.b.elapsed_ms(start, stop);
    EXPECT_GT(ms, 0.0f) << rep;
    EXPECT_FALSE(gate.timed_out()) << rep;
  }
  f.b.destroy_event(start);
  f.b.destroy_event(stop);
}

TEST(GpuGate, ReleasedLateIsReportedAsTimedOut) {
  AMAX_REQUIRE_GPU();
  GateFixture f(*env);
  tune::Gate gate(f.b, f.ref.gate, 20);  // 20 ms
  const auto t0 = std::chrono::steady_clock::now();
  gate.close(f.stream);
  f.empty();
  f.b.synchronize(f.stream);  // returns once the gate gave up: never hangs
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(gate.timed_out());
  EXPECT_GE(waited, 0.015);
  EXPECT_LT(waited, 2.0);
  gate.release();
  // The next close starts afresh.
  gate.close(f.stream);
  gate.release();
  f.b.synchronize(f.stream);
  EXPECT_FALSE(gate.timed_out());
}

TEST(GpuGate, TimeBatchesThrowsGateTimeoutInsteadOfTimingALateBatch) {
  AMAX_REQUIRE_GPU();
  GateFixture f(*env);
  tune::InputRegion inputs(f.b, 1 << 20);
  tune::Gate gate(f.b, f.ref.gate, 10);  // 10 ms, while every call takes the host 15 ms to enqueue
  int calls = 0;
  auto slow = [&](const void*) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    f.empty();
  };
  EXPECT_THROW(tune::time_batches(f.b, f.stream, inputs, 4096, false, 8, 1, slow, &gate), tune::GateTimeout);
  // Four attempts of 8, 4, 2 and 1 calls, each timed out, none taken as a time.
  EXPECT_EQ(calls, 8 + 4 + 2 + 1);
  f.b.synchronize(f.stream);
}

TEST(GpuGate, GatedRunnerMeasuresGpuTimeAndHostCost) {
  AMAX_REQUIRE_GPU();
  GateFixture f(*env);
  tune::InputRegion inputs(f.b, 1 << 20);
  tune::Gate gate(f.b, f.ref.gate);
  tune::TimingProtocol gated, host;
  host.gated = false;
  EXPECT_THROW(tune::Runner(f.b, f.stream, inputs, gated, nullptr), std::invalid_argument);
  std::vector<tune::Timed> entries{{[&](const void*) { f.empty(); }}};
  const auto both = tune::measure_both(f.b, f.stream, inputs, gate, gated, false, entries, 4096, 7);
  ASSERT_EQ(both.size(), 1u);
  const auto& m = both[0];
  std::printf("empty kernel: GPU %.2f us (IQR %.2f), host-inclusive %.2f us, host enqueue %.2f us per call\n",
              m.gpu.median_us, m.gpu.spread_us, m.host_inclusive.median_us, m.host_us);
  EXPECT_EQ(m.gpu.samples, 7);
  EXPECT_EQ(m.host_inclusive.samples, 7);
  EXPECT_GT(m.gpu.median_us, 0.0);
  EXPECT_GT(m.host_us, 0.0);
  // Back to back from the host a call can never take less than its GPU time (5% for noise).
  EXPECT_LE(m.gpu.median_us, 1.05 * m.host_inclusive.median_us);
  // A gated Runner records the enqueue cost of every timed batch.
  tune::Runner r(f.b, f.stream, inputs, gated, &gate);
  tune::Timed t{[&](const void*) { f.empty(); }};
  r.prepare(t, 4096);
  EXPECT_TRUE(t.host_us.empty());  // warm-up and the batch-size probe are not recorded
  const auto us = r.measure(t, 4096, 3);
  EXPECT_EQ(us.size(), 3u);
  EXPECT_EQ(t.host_us.size(), 3u);
}

// Two batches in flight (the host enqueues one while the GPU runs the other) take the same GPU time
// per call as one batch at a time: the method is the same, only the host's waiting moves. The
// streaming read of 1 MiB (a few us) and the empty kernel, interleaved rounds of both forms.
TEST(GpuGate, BatchesInFlightTwoAtATimeTakeTheGpuTimeOfOneAtATime) {
  AMAX_REQUIRE_GPU();
  GateFixture f(*env);
  tune::InputRegion inputs(f.b, 1 << 20);
  tune::Gate gate(f.b, f.ref.gate);
  DeviceBuffer sink(f.b, 4);
  const std::uint64_t bytes = 1 << 20;
  const std::function<void(const void*)> read = [&](const void* in) {
    f.ref.launch_stream_read(f.b, in, bytes, sink.get(), f.stream);
  };
  const std::function<void(const void*)> empty = [&](const void*) { f.empty(); };
  for (const auto* call : {&read, &empty}) {
    std::vector<double> one, two;
    for (int round = 0; round < 9; ++round) {
      // launches 0: one batch at a time; 1: two in flight.
      for (const int launches : {0, 1}) {
        const std::vector<tune::BatchSpec> specs(6, tune::BatchSpec{call, bytes, false, 100, launches, true});
        for (const auto& r : tune::run_batches(f.b, f.stream, inputs, specs, &gate)) {
          ASSERT_TRUE(r.timed);
          ASSERT_EQ(r.spent.gate_timeouts, 0);
          (launches ? two : one).push_back(r.us);
        }
      }
    }
    const double a = tune::Stats::of(one).median_us, b = tune::Stats::of(two).median_us;
    std::printf("%s: GPU time per call %.3f us one batch at a time, %.3f us two in flight (%.4fx)\n",
                call == &read ? "streaming read of 1 MiB" : "empty kernel", a, b, b / a);
    EXPECT_NEAR(b / a, 1.0, 0.05);
  }
}
