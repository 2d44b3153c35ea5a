// The tune's time breakdown without a GPU: what a phase timer adds, the JSON report's shape and
// values, and the summary line, from a breakdown filled in by hand.
#include <gtest/gtest.h>

#include <thread>

#include "amax/tune_times.hpp"

using namespace amax::tune;

namespace {

TimingSpent spent(long batches, long calls, double gpu, double enqueue, double wall, int timeouts = 0) {
  TimingSpent s;
  s.batches = batches, s.calls = calls, s.gpu_s = gpu, s.enqueue_s = enqueue, s.wall_s = wall;
  s.gate_timeouts = timeouts;
  return s;
}

// Keys: 2 items over 10 s, 9.5 s of it in the phases; groups: 1 item over 4 s.
TuneTimes example() {
  TuneTimes t;
  t.startup_s = 0.5;
  t.device_s = 0.25;
  t.load_s = 0.75;
  t.fill_s = 1.5;
  t.keys.items = 2;
  t.keys.wall_s = 10;
  t.keys[Phase::region] = {1.0, {}};
  t.keys[Phase::verify] = {0.5, spent(0, 0, 0, 0, 0)};
  t.keys[Phase::screen] = {5.0, spent(40, 4000, 2.0, 1.5, 4.5, 1)};
  t.keys[Phase::final] = {2.0, spent(20, 2000, 1.0, 0.5, 2.0)};
  t.keys[Phase::confirm] = {0.5, spent(5, 500, 0.25, 0.125, 0.5)};
  t.keys[Phase::ceiling] = {0.25, spent(2, 2, 0.125, 0, 0.25)};
  t.keys[Phase::record] = {0.25, {}};
  t.groups.items = 1;
  t.groups.wall_s = 4;
  t.groups[Phase::screen] = {4.0, spent(8, 80, 1.0, 2.0, 3.5)};
  t.kinds["first_reset"] = {3, spent(30, 3000, 1.5, 1.0, 3.0)};
  t.kinds["atomic"] = {2, spent(10, 1000, 0.5, 0.5, 1.5, 1)};
  t.kinds["multi.thread"] = {1, spent(8, 80, 1.0, 2.0, 3.5)};
  return t;
}

}  // namespace

TEST(TuneTimes, SinceIsTheDifferenceOfEveryField) {
  const TimingSpent a = spent(3, 30, 0.5, 0.25, 1.0, 1), b = spent(10, 130, 2.5, 1.25, 4.0, 3);
  const TimingSpent d = b.since(a);
  EXPECT_EQ(d.batches, 7);
  EXPECT_EQ(d.calls, 100);
  EXPECT_DOUBLE_EQ(d.gpu_s, 2.0);
  EXPECT_DOUBLE_EQ(d.enqueue_s, 1.0);
  EXPECT_DOUBLE_EQ(d.wall_s, 3.0);
  EXPECT_EQ(d.gate_timeouts, 2);
  TimingSpent sum = a;
  sum += d;
  EXPECT_EQ(sum.batches, b.batches);
  EXPECT_EQ(sum.calls, b.calls);
  EXPECT_DOUBLE_EQ(sum.gpu_s, b.gpu_s);
  EXPECT_EQ(sum.gate_timeouts, b.gate_timeouts);
}

TEST(TuneTimes, APhaseTimerAddsItsWallTimeAndTheRunnersBatchesMeanwhile) {
  PhaseTime p{1.0, spent(1, 10, 0.5, 0.5, 0.5)};
  TimingSpent runner = spent(100, 1000, 10, 5, 20, 2);
  {
    PhaseTimer t(p, &runner);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    runner += spent(4, 40, 0.25, 0.125, 0.5, 1);  // what the runner timed within the phase
  }
  EXPECT_GE(p.wall_s, 1.02);
  EXPECT_LT(p.wall_s, 3.0);
  EXPECT_EQ(p.timed.batches, 5);
  EXPECT_EQ(p.timed.calls, 50);
  EXPECT_DOUBLE_EQ(p.timed.gpu_s, 0.75);
  EXPECT_DOUBLE_EQ(p.timed.enqueue_s, 0.625);
  EXPECT_DOUBLE_EQ(p.timed.wall_s, 1.0);
  EXPECT_EQ(p.timed.gate_timeouts, 1);
  // Without a runner only the wall time counts.
  PhaseTime q;
  { PhaseTimer t(q, nullptr); }
  EXPECT_GE(q.wall_s, 0.0);
  EXPECT_EQ(q.timed.batches, 0);
}

TEST(TuneTimes, TheJsonHoldsEveryPhaseOfEachFamilyAndEveryKind) {
  const auto j = to_json(example(), 20.0, 5.0);
  EXPECT_DOUBLE_EQ(j.at("wall_s").get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j.at("startup_s").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j.at("device_s").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j.at("compile_s").get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j.at("load_s").get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j.at("fill_s").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j.at("verify_beside_s").get<double>(), 0.0);
  EXPECT_EQ(j.at("verified_beside").get<int>(), 0);
  EXPECT_DOUBLE_EQ(j.at("other_s").get<double>(), 20.0 - 0.5 - 5.0 - 10.0 - 4.0);
  const auto& keys = j.at("keys");
  EXPECT_EQ(keys.at("items").get<int>(), 2);
  EXPECT_DOUBLE_EQ(keys.at("wall_s").get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(keys.at("other_s").get<double>(), 0.5);
  ASSERT_EQ(keys.at("phases").size(), kPhaseNames.size());
  for (auto name : kPhaseNames) {
    const auto& p = keys.at("phases").at(std::string(name));
    for (const char* f : {"wall_s", "batches", "calls", "gpu_s", "enqueue_s", "timing_wall_s", "gate_timeouts"})
      EXPECT_TRUE(p.contains(f)) << name << " " << f;
    EXPECT_EQ(p.size(), 7u) << name;
  }
  const auto& screen = keys.at("phases").at("screen");
  EXPECT_DOUBLE_EQ(screen.at("wall_s").get<double>(), 5.0);
  EXPECT_EQ(screen.at("batches").get<long>(), 40);
  EXPECT_EQ(screen.at("calls").get<long>(), 4000);
  EXPECT_DOUBLE_EQ(screen.at("gpu_s").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(screen.at("enqueue_s").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(screen.at("timing_wall_s").get<double>(), 4.5);
  EXPECT_EQ(screen.at("gate_timeouts").get<int>(), 1);
  EXPECT_EQ(j.at("groups").at("items").get<int>(), 1);
  EXPECT_DOUBLE_EQ(j.at("groups").at("other_s").get<double>(), 0.0);
  const auto& kinds = j.at("kinds");
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds.at("first_reset").at("variants").get<int>(), 3);
  EXPECT_DOUBLE_EQ(kinds.at("first_reset").at("timing_wall_s").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(kinds.at("multi.thread").at("gpu_s").get<double>(), 1.0);
  EXPECT_EQ(kinds.at("atomic").at("gate_timeouts").get<int>(), 1);
}

TEST(TuneTimes, TheSummaryLineNamesEachPartOnce) {
  EXPECT_EQ(summary_line(example(), 20.0, 5.0),
            "time: 20.0 s = startup 0.5 (device 0.2) + compile 5.0 (load 0.8, fill 1.5 beside it)"
            " + keys 10.0 (2: region 1.0, verify 0.5, screen 5.0, final 2.0, confirm 0.5, ceiling 0.2, record 0.2,"
            " other 0.5; batches 7.2 s, GPU 3.4 s, enqueue 2.1 s)"
            " + groups 4.0 (1: region 0.0, verify 0.0, screen 4.0, final 0.0, confirm 0.0, ceiling 0.0, record 0.0,"
            " other 0.0; batches 3.5 s, GPU 1.0 s, enqueue 2.0 s)"
            " + other 0.5; by kind (batches s/GPU s): atomic 1.5/0.5, first_reset 3.0/1.5, multi.thread 3.5/1.0");
  // A run without groups (--groups none) leaves them out, and one without timed kinds the kinds.
  TuneTimes t = example();
  t.groups = {};
  t.kinds.clear();
  const std::string line = summary_line(t, 16.0, 5.0);
  EXPECT_EQ(line.find("groups"), std::string::npos) << line;
  EXPECT_EQ(line.find("by kind"), std::string::npos) << line;
  EXPECT_NE(line.find(" + other 0.5"), std::string::npos) << line;
  // Verification beside the compiles, where it ran, is named inside the compile part.
  t.verify_beside_s = 6.25;
  t.verified_beside = 90;
  const std::string beside = summary_line(t, 16.0, 5.0);
  EXPECT_NE(beside.find("compile 5.0 (load 0.8, fill 1.5 beside it, verify 6.2 of 90 work items beside it) + keys"),
            std::string::npos)
      << beside;
  EXPECT_DOUBLE_EQ(to_json(t, 16.0, 5.0).at("verify_beside_s").get<double>(), 6.25);
  EXPECT_EQ(to_json(t, 16.0, 5.0).at("verified_beside").get<int>(), 90);
}
