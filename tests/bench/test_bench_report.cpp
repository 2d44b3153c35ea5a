// The bench's host side on the CPU: TE's launch arithmetic, the targets check, the CSV and the
// plots rendered by scripts/amax-tune-plot (python3 + matplotlib, as installed by
// scripts/install-deps.sh) from the CSV the bench writes and from the committed docs/results/2026-12-02/bench.csv.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "amax/bench.hpp"
#include "amax/te_contenders.hpp"

using namespace amax;
using namespace amax::bench;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

Row row(DType d, std::uint64_t n, std::string contender, double us, bool warm = false, std::string detail = "") {
  Row r;
  r.dtype = d;
  r.n = n;
  r.warm = warm;
  r.contender = std::move(contender);
  r.stats.median_us = us;
  r.stats.spread_us = 0.25;
  r.stats.samples = 15;
  r.detail = std::move(detail);
  return r;
}

const std::string kTeZero(contender_name(TeSequence::zero_kernel));
const std::string kTeMemset(contender_name(TeSequence::memset));
const std::string kRocm(contender_name(TeSequence::rocm_two_stage));

// The plot tests skip, naming the reason, where scripts/amax-tune-plot reports that matplotlib is
// missing (render_plots finds no python3 with it, or the script's exit status 3); CI installs it (scripts/install-deps.sh), so there they run.
bool matplotlib_missing(const std::string& why) {
  return why.find("no python3 with matplotlib") != std::string::npos ||
         why.find("matplotlib is not installed") != std::string::npos;
}
#define SKIP_WITHOUT_MATPLOTLIB(why) \
  if (matplotlib_missing(why)) GTEST_SKIP() << (why)

struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("amax-bench-test-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

void expect_png(const std::filesystem::path& p) {
  const std::string s = slurp(p);
  ASSERT_GT(s.size(), 10000u) << p;
  EXPECT_EQ(s.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << p;
  EXPECT_EQ(s.substr(12, 4), "IHDR") << p;
  EXPECT_EQ(s.substr(s.size() - 8, 4), "IEND") << p;
}

void expect_svg(const std::filesystem::path& p) {
  const std::string s = slurp(p);
  EXPECT_EQ(s.rfind("<?xml", 0), 0u) << p;
  EXPECT_NE(s.find("<svg "), std::string::npos) << p;
  EXPECT_EQ(s.substr(s.size() - 7), "</svg>\n") << p;
}

}  // namespace

TEST(TeLaunch, CopiesLaunchAmaxKernelsArithmetic) {
  // Aligned: pointer on 32 bytes and n a multiple of nvec.
  TeLaunch l = te_launch(DType::fp32, 0x10000, 1024);
  EXPECT_EQ(l.nvec, 8u);
  EXPECT_TRUE(l.aligned);
  EXPECT_EQ(l.vectors, 128u);
  EXPECT_EQ(l.grid, 1u);
  l = te_launch(DType::bf16, 0x10000, 1u << 20);
  EXPECT_EQ(l.nvec, 16u);
  EXPECT_TRUE(l.aligned);
  EXPECT_EQ(l.vectors, 65536u);
  EXPECT_EQ(l.grid, 128u);
  // n not a multiple of nvec: unaligned kernel, one more vector.
  l = te_launch(DType::fp16, 0x10000, 1000);
  EXPECT_FALSE(l.aligned);
  EXPECT_EQ(l.vectors, 63u);  // ceil(1000 / 16)
  // Pointer 2 bytes past 32: one element of misalignment joins the count.
  l = te_launch(DType::bf16, 0x10002, 1008);
  EXPECT_FALSE(l.aligned);
  EXPECT_EQ(l.vectors, 64u);  // ceil((1008 + 1) / 16)
  // 16-byte aligned is not enough (TE checks 32 bytes = nvec elements).
  l = te_launch(DType::fp32, 0x10010, 1024);
  EXPECT_FALSE(l.aligned);
  EXPECT_EQ(l.vectors, 129u);  // ceil((1024 + 4) / 8)
  // The grid stops at 65535 blocks (a grid-stride loop covers the rest).
  l = te_launch(DType::fp32, 0, 1ull << 30);
  EXPECT_EQ(l.vectors, 1ull << 27);
  EXPECT_EQ(l.grid, 65535u);
  l = te_launch(DType::fp32, 0, 0);
  EXPECT_EQ(l.grid, 0u);
  EXPECT_EQ(te_kernel_names().size(), 15u);
}

TEST(TeScaleFromAmax, FollowsComputeScaleFromAmaxCaseByCase) {
  const float e4m3 = 448.f, fmax = std::numeric_limits<float>::max();
  auto bits = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  };
  EXPECT_EQ(te_scale_from_amax(2.f, e4m3, false, 0.f), 224.f);
  EXPECT_EQ(te_scale_from_amax(3.f, e4m3, false, 0.f), 448.f / 3.f);
  EXPECT_EQ(te_scale_from_amax(3.f, e4m3, true, 0.f), 128.f);           // 149.33 -> 2^7
  EXPECT_EQ(te_scale_from_amax(0.f, e4m3, false, 0.f), 1.f);            // zero amax
  EXPECT_EQ(te_scale_from_amax(INFINITY, e4m3, false, 0.f), 1.f);       // infinite amax
  EXPECT_EQ(te_scale_from_amax(NAN, e4m3, false, 0.f), 1.f);            // NaN amax
  EXPECT_EQ(te_scale_from_amax(NAN, e4m3, false, 1e-3f), 1.f);          // NaN is not below epsilon
  EXPECT_EQ(te_scale_from_amax(1e-6f, e4m3, false, 1e-3f), 448.f / 1e-3f);  // below epsilon
  EXPECT_EQ(te_scale_from_amax(0.f, e4m3, false, 1e-3f), 448.f / 1e-3f);    // zero, then epsilon
  EXPECT_EQ(bits(te_scale_from_amax(1e-45f, e4m3, false, 0.f)), bits(fmax));  // denormal: inf -> FLT_MAX
  EXPECT_EQ(bits(te_scale_from_amax(1e-45f, e4m3, true, 0.f)), 0x7f000000u);  // FLT_MAX, pow2: 2^127
  EXPECT_EQ(te_scale_from_amax(57344.f, 57344.f, false, 0.f), 1.f);     // e5m2 at its maximum
}

TEST(CheckTargets, JudgesEachTargetOnColdRowsInGpuTime) {
  const DType f = DType::fp32;
  const std::vector<Row> rows = {
      // 64 KiB: the streaming read + 0.80 us (meets <= +1.0 us); fused +0.10 us
      row(f, 1u << 14, kAmaxTune, 3.0), row(f, 1u << 14, kTeZero, 4.0), row(f, 1u << 14, kTeMemset, 3.5),
      row(f, 1u << 14, kRocm, 4.5), row(f, 1u << 14, kCub, 3.2), row(f, 1u << 14, kStreamRead, 2.2),
      row(f, 1u << 14, kAmaxTuneScale, 3.1),
      // 1 MiB: 1.33x the streaming read (misses 1.25x), TE (memset) faster (0.95x), fused +0.30 us (misses)
      row(f, 1u << 18, kAmaxTune, 4.0), row(f, 1u << 18, kTeZero, 5.0), row(f, 1u << 18, kTeMemset, 3.8),
      row(f, 1u << 18, kRocm, 6.0), row(f, 1u << 18, kCub, 5.0), row(f, 1u << 18, kStreamRead, 3.0),
      row(f, 1u << 18, kAmaxTuneScale, 4.3),
      // 8 MiB: 1.07x the streaming read (meets 1.10x), 1.2x TE's fastest (zero kernel)
      row(f, 1u << 21, kAmaxTune, 6.0), row(f, 1u << 21, kTeZero, 7.2), row(f, 1u << 21, kTeMemset, 7.8),
      row(f, 1u << 21, kRocm, 8.0), row(f, 1u << 21, kCub, 9.0), row(f, 1u << 21, kStreamRead, 5.6),
      row(f, 1u << 21, kAmaxTuneScale, 6.1),
      // 256 MiB: 99.5% of the streaming read
      row(f, 1u << 26, kAmaxTune, 60.0), row(f, 1u << 26, kTeZero, 63.0), row(f, 1u << 26, kTeMemset, 63.0),
      row(f, 1u << 26, kRocm, 66.0), row(f, 1u << 26, kCub, 70.0), row(f, 1u << 26, kStreamRead, 59.7),
      row(f, 1u << 26, kAmaxTuneScale, 60.1),
      // warm rows never count
      row(f, 1u << 14, kAmaxTune, 100.0, true), row(f, 1u << 14, kStreamRead, 1.0, true),
  };
  const auto t = check_targets(rows);
  ASSERT_EQ(t.size(), 8u);
  EXPECT_EQ(t[0].target, ">= 256 MiB: >= 99% of the streaming read, every dtype");
  EXPECT_EQ(t[0].measured, "worst 99.5% (fp32 n=67108864)");
  EXPECT_TRUE(t[0].met);
  EXPECT_EQ(t[1].target, "256 KiB - 16 MiB: >= 1.15x TE's fastest sequence (geometric mean), every dtype");
  EXPECT_EQ(t[1].measured, "fp32 1.068x (2 sizes)");  // sqrt(3.8 / 4.0 x 7.2 / 6.0)
  EXPECT_FALSE(t[1].met);
  EXPECT_EQ(t[2].target, "4-256 MiB: within 1.10x of the streaming read");
  EXPECT_EQ(t[2].measured, "worst 1.07x (fp32 n=2097152)");
  EXPECT_TRUE(t[2].met);
  EXPECT_EQ(t[3].target, "256 KiB - 4 MiB: within 1.25x of the streaming read");
  EXPECT_EQ(t[3].measured, "worst 1.33x (fp32 n=262144)");
  EXPECT_FALSE(t[3].met);
  EXPECT_EQ(t[4].target, "below 256 KiB: at most the streaming read + 1.0 us");
  EXPECT_EQ(t[4].measured, "worst +0.80 us (fp32 n=16384)");
  EXPECT_TRUE(t[4].met);
  EXPECT_EQ(t[5].target, "every size: no TE contender or CUB faster (>= 1.0x)");
  EXPECT_EQ(t[5].measured, "worst 0.95x over TE atomic (memset) (fp32 n=262144)");
  EXPECT_FALSE(t[5].met);
  EXPECT_EQ(t[6].target, "every size: fused amax + scale within 0.2 us of amax alone");
  EXPECT_EQ(t[6].measured, "worst +0.30 us (fp32 n=262144)");
  EXPECT_FALSE(t[6].met);
  EXPECT_EQ(t[7].target, "torch");
  EXPECT_FALSE(t[7].measured_ok);
}

TEST(CheckTargets, LeavesOutTargetsWithoutRows) {
  const auto t = check_targets({row(DType::bf16, 1024, kAmaxTune, 5.0)});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].target, "torch");
}

TEST(WriteCsv, HeaderQuotedTextAndPercentOfTheStreamingRead) {
  TempDir dir;
  DeviceInfo dev;
  dev.name = "Test GPU";
  dev.arch = "sm_90";
  Row warm = row(DType::fp32, 1024, kAmaxTune, 3.0, true, "x");
  warm.stats.spread_us = 0.1;
  Row cold = row(DType::fp32, 1024, kAmaxTune, 5.0, false, "one_pass.t128.v4.u2.b2cu");
  cold.host_inclusive.median_us = 7.25;  // back to back from the host
  cold.host_us = 2.5;                    // the enqueue cost per call
  write_csv({cold, row(DType::fp32, 1024, kStreamRead, 4.0), warm}, dev, dir.path / "bench.csv");
  EXPECT_EQ(slurp(dir.path / "bench.csv"),
            "device,arch,regime,dtype,n,bytes,contender,variant,median_us,spread_us,samples,gbps,pct_of_stream_read,"
            "host_inclusive_us,host_us\n"
            "\"Test GPU\",sm_90,cold,fp32,1024,4096,\"amax-tune\",\"one_pass.t128.v4.u2.b2cu\",5.0000,0.2500,15,0.82,80.0,"
            "7.2500,2.5000\n"
            "\"Test GPU\",sm_90,cold,fp32,1024,4096,\"stream read\",\"\",4.0000,0.2500,15,1.02,100.0,0.0000,0.0000\n"
            "\"Test GPU\",sm_90,warm,fp32,1024,4096,\"amax-tune\",\"x\",3.0000,0.1000,15,1.37,,0.0000,0.0000\n");
  EXPECT_THROW(write_csv({}, dev, dir.path / "no-such-dir" / "bench.csv"), std::runtime_error);
}

TEST(RenderPlots, FromTheCsvTheBenchWrites) {
  TempDir dir;
  std::vector<Row> rows;
  for (const auto& d : all_dtypes())
    for (std::uint64_t n : {1ull << 10, 1ull << 16, 1ull << 22, 1ull << 28}) {
      const double stream = 4.0 + static_cast<double>(n * d.bytes) / 4.5e6;  // 4.5 TB/s after a 4 us launch
      rows.push_back(row(d.dtype, n, kAmaxTune, stream * 1.05, false, "atomic.t512.v4.u2.b65535"));
      rows.push_back(row(d.dtype, n, kTeZero, stream * 1.4));
      rows.push_back(row(d.dtype, n, kTeMemset, stream * 1.3));
      rows.push_back(row(d.dtype, n, kRocm, stream * 1.6));
      rows.push_back(row(d.dtype, n, kCub, stream * 2.0));
      rows.push_back(row(d.dtype, n, kTeScaleStep, stream * 1.5 + 4.0));
      rows.push_back(row(d.dtype, n, kAmaxTuneScale, stream * 1.25));
      rows.push_back(row(d.dtype, n, kStreamRead, stream));
      rows.push_back(row(d.dtype, n, kEmptyLaunch, 4.0));
    }
  DeviceInfo dev;
  dev.name = "Test GPU";
  dev.arch = "sm_90";
  write_csv(rows, dev, dir.path / "bench.csv");
  std::string why;
  const auto files = render_plots(dir.path / "bench.csv", dir.path / "plots", why);
  SKIP_WITHOUT_MATPLOTLIB(why);
  ASSERT_EQ(files.size(), 4u) << why;
  expect_png(dir.path / "plots" / "speedup.png");
  expect_png(dir.path / "plots" / "stream_read.png");
  expect_svg(dir.path / "plots" / "speedup.svg");
  expect_svg(dir.path / "plots" / "stream_read.svg");
  // Every contender has a line with its name in the legend (SVG text is drawn as glyphs, but
  // matplotlib keeps each legend entry's text in a comment).
  const std::string svg = slurp(dir.path / "plots" / "speedup.svg");
  for (const auto& name : {kTeZero, kTeMemset, kRocm, std::string(kCub)})
    EXPECT_NE(svg.find("<!-- " + name + " -->"), std::string::npos) << name;
  // TE's amax -> scale step is not an amax-only contender: against amax-tune's fused amax + scale
  // in the speedup plot, not in the streaming-read one.
  EXPECT_NE(svg.find(std::string("<!-- ") + kTeScaleStep + " vs " + kAmaxTuneScale + " -->"), std::string::npos);
  EXPECT_EQ(slurp(dir.path / "plots" / "stream_read.svg").find(kTeScaleStep), std::string::npos);
  EXPECT_EQ(slurp(dir.path / "plots" / "stream_read.svg").find(kAmaxTuneScale), std::string::npos);
  // Every point drawn, in the values file: 4 sizes x 3 dtypes x (5 speedup + 5 streaming-read lines).
  const std::string values = slurp(dir.path / "plots" / "plot_values.csv");
  EXPECT_EQ(std::count(values.begin(), values.end(), '\n'), 1 + 4 * 3 * 10) << values;
  // From the CSV's times (4 decimals): bf16 2^22, CUB 11.7283 us / amax-tune 6.1573 us; fp32 2^10,
  // TE's scale step 10.0014 us / the fused amax + scale 5.0011 us; fp16 2^10, 100 x the streaming
  // read 4.0005 us / amax-tune 4.2005 us.
  for (const std::string& line : {std::string("speedup,bf16,8388608,CUB,1.9048\n"),
                                 std::string("speedup,fp32,4096,") + kTeScaleStep + " vs " + kAmaxTuneScale + ",1.9998\n",
                                 std::string("stream_read,fp16,2048,amax-tune,95.2387\n")})
    EXPECT_NE(values.find(line), std::string::npos) << line << values;
}

// Renders docs/results/`csv` into `dir` and checks that both plots are there in both formats.
// Returns false (the caller skips) where matplotlib is missing.
bool render_committed(const char* csv, const std::filesystem::path& dir, std::string& why) {
  const auto files = render_plots(std::filesystem::path(AMAX_SOURCE_DIR "/docs/results") / csv, dir, why);
  if (matplotlib_missing(why)) return false;
  EXPECT_EQ(files.size(), 4u) << why;
  for (const char* plot : {"speedup", "stream_read"}) {
    expect_png(dir / (std::string(plot) + ".png"));
    expect_svg(dir / (std::string(plot) + ".svg"));
  }
  return true;
}

// The full GPU-time bench of the H200 (every dtype, 21 sizes each, both regimes): the cold regime
// by default, and the values drawn are the CSV's times divided as the plots say.
TEST(RenderPlots, FromTheCommittedGpuTimeBenchCsv) {
  TempDir dir;
  std::string why;
  if (!render_committed("2026-12-03-exact-tiles/bench.csv", dir.path, why)) GTEST_SKIP() << why;
  const std::string svg = slurp(dir.path / "speedup.svg");
  EXPECT_NE(svg.find("GPU time, cold"), std::string::npos);
  const std::string values = slurp(dir.path / "plot_values.csv");
  // 21 sizes x 3 dtypes x (4 amax contenders + TE's scale step; amax-tune + 4 amax contenders).
  EXPECT_EQ(std::count(values.begin(), values.end(), '\n'), 1 + 21 * 3 * 10);
  // bf16, 4 Mi elements: amax-tune 5.4032 us, TE atomic (memset) 6.0544 us, the streaming read
  // 4.6400 us, CUB 8.0751 us; TE's three-launch scale step 8.7171 us against amax-tune's fused amax
  // + scale 6.4354 us.
  for (const char* line : {"speedup,bf16,8388608,TE atomic (memset),1.1205\n",
                           "speedup,bf16,8388608,TE amax+scale (3 launches) vs amax-tune amax+scale,1.3546\n",
                           "stream_read,bf16,8388608,amax-tune,85.8750\n", "stream_read,bf16,8388608,CUB,57.4606\n"})
    EXPECT_NE(values.find(line), std::string::npos) << line;
  EXPECT_EQ(values.find("empty launch"), std::string::npos);
  EXPECT_EQ(values.find("stream_read,fp32,4096,amax-tune amax+scale"), std::string::npos);
}

// An older bench's CSV (host-inclusive times, no host_inclusive_us column) plots alike.
TEST(RenderPlots, FromTheCommittedBenchCsv) {
  TempDir dir;
  std::string why;
  if (!render_committed("2026-12-02/bench.csv", dir.path, why)) GTEST_SKIP() << why;
}

TEST(RenderPlots, ACsvWithoutTheNeededColumnsIsRefused) {
  TempDir dir;
  std::ofstream(dir.path / "bad.csv") << "dtype,n,time\nfp32,1024,5.0\n";
  std::string why;
  EXPECT_TRUE(render_plots(dir.path / "bad.csv", dir.path, why).empty());
  SKIP_WITHOUT_MATPLOTLIB(why);
  EXPECT_NE(why.find("failed (exit 2)"), std::string::npos) << why;
  EXPECT_NE(why.find("bad.csv"), std::string::npos) << why;
  EXPECT_FALSE(std::filesystem::exists(dir.path / "speedup.png"));
}
