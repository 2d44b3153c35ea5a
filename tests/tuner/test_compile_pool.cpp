// The tuner's compile pool and its progress report (tuner/include/amax/compile_pool.hpp), with
// stand-in jobs: every index built once, the ticks, a failure rethrown; the lines a terminal and a
// log get; BuildOutcome, the typed result of one build.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <stdexcept>
#include <string>
#include <vector>

#include "amax/compile_pool.hpp"

using namespace amax::tune;
using namespace std::chrono_literals;

TEST(CompilePool, BuildsEveryIndexOnceAndTicksUpToTheCount) {
  constexpr std::size_t kCount = 50;
  std::vector<std::atomic<int>> calls(kCount);
  std::vector<std::size_t> ticks;
  run_compile_pool(
      kCount, 4,
      [&](std::size_t i) {
        std::this_thread::sleep_for(1ms);
        ++calls[i];
      },
      1ms, [&](std::size_t done) { ticks.push_back(done); });
  for (std::size_t i = 0; i < kCount; ++i) EXPECT_EQ(calls[i], 1) << i;
  ASSERT_FALSE(ticks.empty());
  EXPECT_EQ(ticks.back(), kCount);
  for (std::size_t i = 1; i < ticks.size(); ++i) EXPECT_LE(ticks[i - 1], ticks[i]);
}

TEST(CompilePool, NothingToBuildTicksOnceWithZero) {
  std::vector<std::size_t> ticks;
  run_compile_pool(
      0, 0, [](std::size_t) { FAIL() << "no index to build"; }, 1ms,
      [&](std::size_t done) { ticks.push_back(done); });
  EXPECT_EQ(ticks, std::vector<std::size_t>{0});
}

TEST(CompilePool, AFailureStopsThePoolAndIsRethrown) {
  std::atomic<int> calls{0};
  std::vector<std::size_t> ticks;
  try {
    run_compile_pool(
        1000, 2,
        [&](std::size_t i) {
          ++calls;
          if (i == 3) throw std::runtime_error("device lost at kernel 3");
          std::this_thread::sleep_for(1ms);  // a build takes time; the failure is seen meanwhile
        },
        1ms, [&](std::size_t done) { ticks.push_back(done); });
    FAIL() << "the failure was not rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "device lost at kernel 3");
  }
  // Indices are handed out in order and the pool stops handing them out once one failed: the
  // other worker finishes the builds it took meanwhile (a scheduler may delay the failing worker's
  // flag by a few of them), never the remaining hundreds.
  EXPECT_GE(calls, 4);
  EXPECT_LT(calls, 100);
  for (std::size_t t : ticks) EXPECT_LT(t, 1000u);  // no final tick after a failure
}

TEST(CompileProgress, ATerminalGetsOneRewrittenLine) {
  std::vector<std::string> out;
  CompileProgress p(342, true, [&](const std::string& s) { out.push_back(s); });
  p.update(0);
  p.update(120);
  p.update(342);  // the end: the caller's summary follows
  EXPECT_EQ(out, (std::vector<std::string>{"\rcompiling kernels: 0/342", "\rcompiling kernels: 120/342"}));
}

TEST(CompileProgress, ALogGetsAFullLineEveryTwoSecondsEvenWhenTheCountStands) {
  std::vector<std::string> out;
  CompileProgress p(342, false, [&](const std::string& s) { out.push_back(s); });
  const auto t = std::chrono::steady_clock::now();
  p.update(0, t + 100ms);
  p.update(40, t + 1900ms);
  EXPECT_TRUE(out.empty());
  p.update(41, t + 2000ms);
  p.update(60, t + 3000ms);
  p.update(60, t + 4100ms);  // one long compile holds the count: still a line
  p.update(342, t + 9000ms);
  EXPECT_EQ(out, (std::vector<std::string>{"compiling kernels: 41/342, 2.0 s\n", "compiling kernels: 60/342, 4.1 s\n"}));
}

TEST(BuildOutcome, TheStageNotTheTextSaysWhatFailed) {
  EXPECT_TRUE(BuildOutcome{}.ok());
  const BuildOutcome load = BuildOutcome::load_failure("cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (200)");
  EXPECT_FALSE(load.ok());
  EXPECT_EQ(load.stage, BuildOutcome::Stage::load_failed);
  EXPECT_EQ(load.error, "module load failed: cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (200)");
  // A compile error whose text happens to start like a load failure is still a compile failure.
  const BuildOutcome compile = BuildOutcome::compile_failure("module load failed: in the kernel's source");
  EXPECT_EQ(compile.stage, BuildOutcome::Stage::compile_failed);
  EXPECT_EQ(compile.error, "module load failed: in the kernel's source");
}

TEST(BuildOutcome, ACompileErrorIsCutTo2000Characters) {
  const BuildOutcome o = BuildOutcome::compile_failure(std::string(5000, 'x'));
  EXPECT_EQ(o.stage, BuildOutcome::Stage::compile_failed);
  EXPECT_EQ(o.error, std::string(2000, 'x'));
}
