// bench-multi on the GPU (label gpu; skips without a GPU): a small run verifies every tensor (amax,
// and scale and scale_inv of the fused call), times every contender (the graph replay included;
// per-tensor contenders of more launches than a gated batch holds back to back only)
// and writes the CSV.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "amax/bench_multi.hpp"
#include "amax/runner.hpp"

using namespace amax;
using namespace amax::bench;

TEST(GpuBenchMulti, SmallRunChecksEveryTensorAndWritesTheCsv) {
  Vendor v{};
  if (!first_available_vendor(v)) GTEST_SKIP() << "no GPU: " << no_device_reason(Vendor::nvidia);
  MultiBenchOptions o;
  o.groups = {{7, 1000, DType::bf16}, {300, 4096, DType::fp32}};
  o.rounds = 3;
  o.user_db = o.system_db = "";
  o.out_dir = std::filesystem::temp_directory_path() / ("amax-bench-multi-" + std::to_string(::getpid()));
  const auto r = run_bench_multi(o);
  ASSERT_EQ(r.rows.size(), 2 * std::size(kMultiContenders));
  for (const auto& row : r.rows) {
    // Per-tensor contenders of more than kMaxGatedLaunches launches per call (300 tensors: up to 600
    // and 900 launches) are timed back to back only: no GPU time, a host-inclusive one.
    const bool per_tensor = row.contender == kPerTensor || row.contender == kTeStepPerTensor;
    const bool gated = !per_tensor || 3 * row.group.tensors <= static_cast<std::uint64_t>(tune::kMaxGatedLaunches);
    if (gated) {
      EXPECT_GT(row.stats.median_us, 0) << row.group.name() << " " << row.contender;
    } else {
      EXPECT_EQ(row.stats.samples, 0) << row.group.name() << " " << row.contender;
    }
    EXPECT_GT(row.host_inclusive.median_us, 0) << row.group.name() << " " << row.contender;
  }
  for (const auto& g : o.groups)
    for (const char* c : kMultiContenders) EXPECT_TRUE(r.find(g, c)) << g.name() << " " << c;
  std::ifstream csv(o.out_dir / "bench_multi.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), {});
  EXPECT_NE(text.find(",300x4096:fp32,300,4096,fp32,4915200,\"amax-tune multi\""), std::string::npos) << text;
  std::filesystem::remove_all(o.out_dir);
}
