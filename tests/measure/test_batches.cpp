// The timed batches' decisions on a simulated device (sim_backend.hpp), without a GPU: the host
// enqueues a batch behind the other gate slot while the previous one runs and reads its events
// afterwards, never enqueues a call behind a gate it released, keeps two batches in flight only
// where both fit in the launch queue, never takes a time from a batch whose gate timed out (that
// batch is timed again alone with half the calls, up to four attempts), and the runner's probes,
// warm-ups and interleaved rounds come in the order of the protocol with each entry's own times.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "amax/measure.hpp"
#include "amax/runner.hpp"
#include "sim_backend.hpp"

using namespace amax;

namespace {

struct Sim {
  test::SimBackend b;
  StreamHandle stream = b.create_stream();
  tune::InputRegion inputs{b, 1 << 20};
  tune::Gate gate{b, test::SimBackend::gate_function(), 1000};
  // A call of kernel `id` (us of GPU time per launch).
  std::function<void(const void*)> call(int id, double us) {
    FunctionHandle f = b.kernel(id, us);
    return [this, f](const void*) { b.launch(f, 1, 32, stream, nullptr); };
  }
};

tune::BatchSpec spec(const std::function<void(const void*)>& call, int calls, int launches, bool timed = true) {
  return {&call, 4096, false, calls, launches, timed};
}

// The host's operations without the calls: gates, events and waits, in order.
std::vector<std::string> without_calls(const std::vector<std::string>& log) {
  std::vector<std::string> out;
  for (const auto& op : log)
    if (op.rfind("call", 0) != 0) out.push_back(op);
  return out;
}

// The batches enqueued behind gates, in order: (kernel id, calls) of each.
std::vector<std::pair<int, int>> gated_batches(const std::vector<std::string>& log) {
  std::vector<std::pair<int, int>> out;
  for (const auto& op : log)
    if (op.rfind("gate", 0) == 0) {
      out.push_back({0, 0});
    } else if (op.rfind("call ", 0) == 0 && !out.empty()) {
      out.back().first = std::stoi(op.substr(5));
      ++out.back().second;
    }
  return out;
}

using Ops = std::vector<std::string>;

// A runner with the default protocol (batches >= 200 us, warm-up 1 batch) and a call of kernel 1
// (`us` per call, one launch) prepared on it: probed, its warm-up queued.
struct Prepared {
  explicit Prepared(double us) : t{s.call(1, us)} {
    t.launches = 1;
    runner.prepare(t, 4096);
  }
  Sim s;
  tune::TimingProtocol p;
  tune::Runner runner{s.b, s.stream, s.inputs, p, &s.gate};
  tune::Timed t;
};

}  // namespace

TEST(TimedBatches, TheNextBatchIsEnqueuedBehindTheOtherGateWhileThePreviousRuns) {
  Sim s;
  const auto call = s.call(1, 2.5);
  const auto r = tune::run_batches(s.b, s.stream, s.inputs, {spec(call, 80, 1), spec(call, 80, 1), spec(call, 80, 1)},
                                   &s.gate);
  // Batch k + 1 is enqueued and released before the host waits for batch k.
  EXPECT_EQ(without_calls(s.b.op_log), (Ops{"gate 0", "record", "record", "gate 1", "record", "record", "wait",
                                             "gate 0", "record", "record", "wait", "wait"}));
  EXPECT_TRUE(s.b.violations.empty()) << s.b.violations[0];
  // At most the two batches in flight, each of 80 launches, a gate and two events, were queued.
  EXPECT_EQ(s.b.max_queued, 2u * 83);
  ASSERT_EQ(r.size(), 3u);
  for (const auto& x : r) {
    EXPECT_TRUE(x.timed);
    EXPECT_EQ(x.calls, 80);
    EXPECT_NEAR(x.us, 2.5, 1e-5);  // the events around each batch: 80 calls of 2.5 us
    EXPECT_EQ(x.spent.batches, 1);
    EXPECT_EQ(x.spent.calls, 80);
    EXPECT_NEAR(x.spent.gpu_s, 200e-6, 1e-9);
    EXPECT_EQ(x.spent.gate_timeouts, 0);
    EXPECT_GE(x.spent.wall_s, 0.0);
  }
  EXPECT_EQ(s.b.events_created, s.b.events_destroyed);
}

TEST(TimedBatches, AStopEndsTheRunAndTheBatchAlreadyEnqueuedGivesNoTime) {
  Sim s;
  const auto call = s.call(1, 2.5);
  const std::vector<tune::BatchSpec> four(4, spec(call, 80, 1));
  std::vector<std::size_t> asked;
  const auto r = tune::run_batches(s.b, s.stream, s.inputs, four, &s.gate, [&](std::size_t k, const tune::BatchResult& b) {
    asked.push_back(k);
    EXPECT_NEAR(b.us, 2.5, 1e-5);
    return k == 0;
  });
  // Batch 1 was enqueued before batch 0's time was read: it runs (waited for), batches 2-3 never.
  EXPECT_EQ(without_calls(s.b.op_log),
            (Ops{"gate 0", "record", "record", "gate 1", "record", "record", "wait", "wait"}));
  EXPECT_EQ(gated_batches(s.b.op_log), (std::vector<std::pair<int, int>>{{1, 80}, {1, 80}}));
  EXPECT_EQ(asked, (std::vector<std::size_t>{0}));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r[0].timed);
  EXPECT_NEAR(r[0].us, 2.5, 1e-5);
  EXPECT_FALSE(r[1].timed);
  EXPECT_EQ(r[1].us, 0.0);
  EXPECT_EQ(r[1].spent.calls, 80);  // what it cost is still counted
  EXPECT_FALSE(r[2].timed);
  EXPECT_EQ(r[2].spent.calls, 0);
  EXPECT_FALSE(r[3].timed);
  // Never stopping: every batch timed, as without `stop`.
  Sim t;
  const auto call2 = t.call(2, 4.0);
  const auto all = tune::run_batches(t.b, t.stream, t.inputs, std::vector<tune::BatchSpec>(3, spec(call2, 50, 1)),
                                     &t.gate, [](std::size_t, const tune::BatchResult&) { return false; });
  ASSERT_EQ(all.size(), 3u);
  for (const auto& x : all) EXPECT_TRUE(x.timed);
  EXPECT_EQ(gated_batches(t.b.op_log).size(), 3u);
}

TEST(TimedBatches, TwoBatchesAreInFlightOnlyWhereBothFitInTheLaunchQueue) {
  const std::function<void(const void*)> f;
  // Each batch takes calls x launches + 3 entries (its gate and two events).
  EXPECT_TRUE(tune::may_overlap(spec(f, 497, 1), spec(f, 497, 1)));   // 500 + 500
  EXPECT_FALSE(tune::may_overlap(spec(f, 498, 1), spec(f, 497, 1)));  // 501 + 500
  EXPECT_TRUE(tune::may_overlap(spec(f, 200, 2), spec(f, 200, 2)));   // 403 + 403
  EXPECT_FALSE(tune::may_overlap(spec(f, 200, 3), spec(f, 133, 3)));  // 603 + 402
  EXPECT_TRUE(tune::may_overlap(spec(f, 200, 3), spec(f, 131, 3)));   // 603 + 396
  EXPECT_FALSE(tune::may_overlap(spec(f, 10, 0), spec(f, 10, 1)));    // launches unknown
  EXPECT_FALSE(tune::may_overlap(spec(f, 10, 1), spec(f, 10, 0)));

  Sim s;
  const auto call = s.call(1, 2.0);
  const auto r = tune::run_batches(s.b, s.stream, s.inputs, {spec(call, 200, 3), spec(call, 200, 3)}, &s.gate);
  EXPECT_EQ(without_calls(s.b.op_log),
            (Ops{"gate 0", "record", "record", "wait", "gate 1", "record", "record", "wait"}));
  EXPECT_EQ(s.b.max_queued, 203u);
  EXPECT_NEAR(r[1].us, 2.0, 1e-5);
}

TEST(TimedBatches, WithoutTheGateEachBatchIsWaitedForBeforeTheNext) {
  Sim s;
  const auto call = s.call(1, 4.0);
  const auto r = tune::run_batches(s.b, s.stream, s.inputs, {spec(call, 50, 1), spec(call, 50, 1)}, nullptr);
  EXPECT_EQ(without_calls(s.b.op_log), (Ops{"record", "record", "wait", "record", "record", "wait"}));
  EXPECT_NEAR(r[0].us, 4.0, 1e-5);
  EXPECT_NEAR(r[1].us, 4.0, 1e-5);
}

TEST(TimedBatches, ABatchWhoseGateTimedOutGivesNoTimeAndIsTimedAgainAloneWithHalfTheCalls) {
  Sim s;
  s.b.time_out_gates = {1};  // the second batch's gate
  const auto call = s.call(1, 2.5);
  const auto r = tune::run_batches(s.b, s.stream, s.inputs, {spec(call, 80, 1), spec(call, 80, 1), spec(call, 80, 1)},
                                   &s.gate);
  // The three batches overlapped as always; then batch 1 alone, behind slot 0, with 40 calls.
  EXPECT_EQ(without_calls(s.b.op_log), (Ops{"gate 0", "record", "record", "gate 1", "record", "record", "wait",
                                             "gate 0", "record", "record", "wait", "wait", "gate 0", "record",
                                             "record", "wait"}));
  EXPECT_EQ(gated_batches(s.b.op_log), (std::vector<std::pair<int, int>>{{1, 80}, {1, 80}, {1, 80}, {1, 40}}));
  EXPECT_EQ(r[0].calls, 80);
  EXPECT_EQ(r[1].calls, 40);  // its time is the retry's, never the late batch's
  EXPECT_TRUE(r[1].timed);
  EXPECT_NEAR(r[1].us, 2.5, 1e-5);
  EXPECT_EQ(r[1].spent.gate_timeouts, 1);
  EXPECT_EQ(r[1].spent.batches, 1);
  EXPECT_EQ(r[1].spent.calls, 40);
  EXPECT_EQ(r[2].calls, 80);
  EXPECT_EQ(r[2].spent.gate_timeouts, 0);
}

TEST(TimedBatches, FourLateAttemptsThrowGateTimeout) {
  {  // 16, 8, 4 and 2 calls, each late
    Sim s;
    s.b.time_out_gates = {0, 1, 2, 3};
    const auto call = s.call(1, 2.5);
    try {
      tune::run_batches(s.b, s.stream, s.inputs, {spec(call, 16, 1)}, &s.gate);
      ADD_FAILURE() << "no GateTimeout";
    } catch (const tune::GateTimeout& e) {
      EXPECT_NE(std::string(e.what()).find("timed out 4 times (1000 ms each, batches of 16 down to 2 calls)"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(s.b.launches, 16 + 8 + 4 + 2);
  }
  {  // 8, 4, 2 and 1 call: the last is one call
    Sim s;
    s.b.time_out_gates = {0, 1, 2, 3};
    const auto call = s.call(1, 2.5);
    EXPECT_THROW(tune::run_batches(s.b, s.stream, s.inputs, {spec(call, 8, 1)}, &s.gate), tune::GateTimeout);
    EXPECT_EQ(s.b.launches, 8 + 4 + 2 + 1);
  }
  {  // a batch of one call: halving cannot help
    Sim s;
    s.b.time_out_gates = {0};
    const auto call = s.call(1, 2.5);
    try {
      tune::run_batches(s.b, s.stream, s.inputs, {spec(call, 1, 1)}, &s.gate);
      ADD_FAILURE() << "no GateTimeout";
    } catch (const tune::GateTimeout& e) {
      EXPECT_NE(std::string(e.what()).find("while the host enqueued one call"), std::string::npos) << e.what();
    }
    EXPECT_EQ(s.b.launches, 1);
  }
  {  // the serial form (time_batches) alike: 8, 4, 2, 1
    Sim s;
    s.b.time_out_gates = {0, 1, 2, 3};
    const auto call = s.call(1, 2.5);
    EXPECT_THROW(tune::time_batches(s.b, s.stream, s.inputs, 4096, false, 8, 1, call, &s.gate), tune::GateTimeout);
    EXPECT_EQ(s.b.launches, 15);
  }
}

TEST(TimedBatches, ALateWarmUpIsNeitherTimedNorTimedAgain) {
  Sim s;
  s.b.time_out_gates = {0};
  const auto call = s.call(1, 2.5);
  const auto r =
      tune::run_batches(s.b, s.stream, s.inputs, {spec(call, 80, 1, /*timed=*/false), spec(call, 80, 1)}, &s.gate);
  EXPECT_FALSE(r[0].timed);
  EXPECT_EQ(r[0].spent.gate_timeouts, 1);
  EXPECT_EQ(r[0].spent.batches, 0);
  EXPECT_TRUE(r[1].timed);
  EXPECT_EQ(s.b.launches, 160);
}

TEST(TimedBatches, TheSerialFormWaitsForEachBatch) {
  Sim s;
  const auto call = s.call(1, 2.5);
  const auto t = tune::time_batches(s.b, s.stream, s.inputs, 4096, false, 80, 2, call, &s.gate);
  EXPECT_EQ(without_calls(s.b.op_log),
            (Ops{"gate 0", "record", "record", "wait", "gate 1", "record", "record", "wait"}));
  ASSERT_EQ(t.us.size(), 2u);
  EXPECT_NEAR(t.us[1], 2.5, 1e-5);
  EXPECT_EQ(t.spent.batches, 2);
  EXPECT_EQ(t.spent.calls, 160);
}

TEST(Runner, ProbesWarmUpsAndInterleavedRoundsComeInProtocolOrderWithEachEntrysTimes) {
  Sim s;
  tune::TimingProtocol p;  // batches >= 200 us, warm-up 1 batch
  tune::Runner runner(s.b, s.stream, s.inputs, p, &s.gate);
  const double us[] = {2.0, 3.0, 4.0};
  std::vector<tune::Timed> entries;
  for (int i = 0; i < 3; ++i) {
    entries.push_back({s.call(i + 1, us[i])});
    entries.back().launches = 1;
  }
  const auto samples = runner.interleaved(entries, 4096, 4, tune::InterleaveOrder{1, true});
  // Each entry: two one-call probes, then its warm-up of a full batch (200 us / its time) ahead of
  // the next entry's probes, the last one ahead of the rounds; each round 2, 1, 3 (offset 1, reversed).
  std::vector<std::pair<int, int>> want{{1, 1}, {1, 1}, {1, 100}, {2, 1}, {2, 1}, {2, 67}, {3, 1}, {3, 1}, {3, 50}};
  for (int r = 0; r < 4; ++r) want.insert(want.end(), {{2, 67}, {1, 100}, {3, 50}});
  EXPECT_EQ(gated_batches(s.b.op_log), want);
  EXPECT_TRUE(s.b.violations.empty());
  ASSERT_EQ(samples.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(samples[i].size(), 4u);
    for (double x : samples[i]) EXPECT_NEAR(x, us[i], 1e-5) << i;
    EXPECT_EQ(entries[i].host_us.size(), 4u);  // the rounds' enqueue costs; probes and warm-up not
    EXPECT_EQ(entries[i].spent.batches, 2 + 1 + 4);
  }
  EXPECT_EQ(entries[0].spent.calls, 2 + 100 + 4 * 100);
  EXPECT_EQ(runner.spent().batches, 3 * (2 + 1 + 4));
  // Two batches at a time at most: the largest pair is entry 2's 67 calls and entry 1's 100.
  EXPECT_EQ(s.b.max_queued, 70u + 103u);
}

TEST(Runner, TheProbeIsTheWarmUpOfBatchesOfOneOrTwoCalls) {
  // Per-call times giving batches of 1, 2 and 3 calls (200 us target): the probe's two calls stand
  // for a warm-up of 1 or 2 calls; a batch of 3 still gets its warm-up batch.
  const std::pair<double, int> cases[] = {{250.0, 1}, {150.0, 2}, {70.0, 3}};
  for (const auto& [us, batch] : cases) {
    Prepared x(us);
    auto& [s, p, runner, t] = x;
    EXPECT_EQ(t.batch, batch) << us;
    const auto got = runner.measure(t, 4096, 3);
    std::vector<std::pair<int, int>> want{{1, 1}, {1, 1}};
    if (batch > 2) want.push_back({1, batch});
    want.insert(want.end(), 3, {1, batch});
    EXPECT_EQ(gated_batches(s.b.op_log), want) << us;
    ASSERT_EQ(got.size(), 3u);
    for (double x : got) EXPECT_NEAR(x, us, 1e-3) << us;
    EXPECT_EQ(t.spent.calls, 2 + (batch > 2 ? batch : 0) + 3 * batch) << us;
  }
}

TEST(Runner, ScreeningEnqueuesTheSecondBatchBeforeTheFirstsTimeAndDropsItWhenTheFirstIsTooSlow) {
  for (const bool slow : {false, true}) {
    Prepared x(4.0);
    auto& [s, p, runner, t] = x;
    // 4.0 us per call: above a limit of 3.9 (stopped), within 6.0 (two more batches).
    const auto got = runner.measure_unless(t, 4096, 2, slow ? 3.9 : 6.0);
    // The probes, the warm-up, then the first batch and the second, enqueued before the first's
    // time is read; the third only when not stopped.
    std::vector<std::pair<int, int>> want{{1, 1}, {1, 1}, {1, 50}, {1, 50}, {1, 50}};
    if (!slow) want.push_back({1, 50});
    EXPECT_EQ(gated_batches(s.b.op_log), want) << slow;
    ASSERT_EQ(got.size(), slow ? 1u : 3u);
    for (double x : got) EXPECT_NEAR(x, 4.0, 1e-5);
    EXPECT_EQ(t.host_us.size(), got.size());  // the batches returned only
    EXPECT_EQ(t.spent.calls, 2 + 50 + (slow ? 2 : 3) * 50);
  }
}

TEST(Runner, AWarmUpRunsAheadOfTheNextMeasurementAndSynchronizeDropsIt) {
  Prepared x(4.0);
  auto& [s, p, runner, t] = x;
  EXPECT_EQ(gated_batches(s.b.op_log), (std::vector<std::pair<int, int>>{{1, 1}, {1, 1}}));  // the probes only
  EXPECT_EQ(t.batch, 50);
  const auto got = runner.measure(t, 4096, 2);
  EXPECT_EQ(gated_batches(s.b.op_log),
            (std::vector<std::pair<int, int>>{{1, 1}, {1, 1}, {1, 50}, {1, 50}, {1, 50}}));  // warm-up, then 2
  EXPECT_EQ(without_calls(s.b.op_log),
            (Ops{"gate 0", "record", "record", "gate 1", "record", "record", "wait", "wait",  // the probes
                 "gate 0", "record", "record", "gate 1", "record", "record", "wait", "gate 0", "record", "record",
                 "wait", "wait"}));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], 4.0, 1e-5);
  EXPECT_EQ(t.host_us.size(), 2u);
  // A warm-up queued and then dropped by synchronize() never runs.
  runner.prepare(t, 4096);
  runner.synchronize();
  const std::size_t before = gated_batches(s.b.op_log).size();
  runner.measure(t, 4096, 1);
  EXPECT_EQ(gated_batches(s.b.op_log).size(), before + 1);
}
