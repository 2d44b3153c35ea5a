// Programmatic dependent launch for two_stage's finish kernel (issue 11 item 2, "also try"; label
// `gpu`): bit-exact with the finish kernel launched as a dependent (new data every call, so a
// finish kernel that read the workspace before stage one wrote it would return the previous
// call's answer), then the cold time of two_stage with and without it, and of self_reset, in
// interleaved rounds. Prints the table of docs/results/*.md, "Programmatic dependent launch"; asserts only
// the answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "amax/kernel_cache.hpp"
#include "amax/launch.hpp"
#include "amax/measure.hpp"
#include "amax/reference.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/runner.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;

TEST(GpuPdl, TwoStageWithADependentFinishKernelIsBitExactAndTimed) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const std::uint32_t cu = static_cast<std::uint32_t>(b.device().cu_count);
  const std::uint64_t sizes[] = {1u << 14, 1u << 16, 1u << 18, 1u << 20, 1u << 22, 1u << 24};
  const std::uint64_t max_n = sizes[std::size(sizes) - 1];
  DeviceBuffer in(b, max_n * 4 + 64), out(b, 4), ws(b, 4u << 20), counter(b, 64);
  b.memset32_async(counter.get(), 0, 16, nullptr);
  b.synchronize(nullptr);
  std::mt19937_64 rng(std::random_device{}());
  tune::InputRegion region(b, max_n * 4 + 64);
  StreamHandle stream = b.create_stream();
  const ReferenceKernels ref = ReferenceKernels::load(b, *env->compiler, env->kernels->binaries());
  tune::Gate gate(b, ref.gate);
  tune::Runner runner(b, stream, region, tune::TimingProtocol{}, &gate);
  std::printf("%-5s %10s %12s %12s %8s %12s\n", "dtype", "n", "two_stage us", "+PDL us", "ratio", "self_reset us");
  for (DType d : {DType::bf16, DType::fp32}) {
    const char* nvec = d == DType::fp32 ? "v4" : "v8";
    const KernelConfig two = KernelConfig::parse(std::string("two_stage.t512.") + nvec + ".u2.b4cu");
    const KernelConfig self = KernelConfig::parse(std::string("self_reset.t512.") + nvec + ".u2.b4cu");
    const LoadedKernel& k2 = env->kernels->get(two, d);
    const LoadedKernel& ks = env->kernels->get(self, d);
    for (std::uint64_t n : sizes) {
      LaunchShape dep = launch_shape(two, n, cu), plain = dep;
      plain.dependent_finish = false;
      ASSERT_TRUE(dep.finish_kernel && dep.dependent_finish) << n;
      // Bit-exact, new data every call, the answer read back each time.
      for (int i = 0; i < 12; ++i) {
        const auto host = make_input(all_input_kinds()[i % all_input_kinds().size()], d, n, rng());
        b.copy_to_device(in.get(), host.data(), host.size());
        launch_amax(b, k2, dep, in.get(), n, out.get<float>(), ws.get(), nullptr, NanMode::propagate, stream);
        b.synchronize(stream);
        ASSERT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), d, n, NanMode::propagate))
            << to_string(d) << " n=" << n << " call " << i;
      }
      std::vector<tune::Timed> timed{
          tune::variant_timed(b, k2, plain, n, {out.get<float>(), ws.get(), counter.get<std::uint32_t>()}, stream),
          tune::variant_timed(b, k2, dep, n, {out.get<float>(), ws.get(), counter.get<std::uint32_t>()}, stream),
          tune::variant_timed(b, ks, launch_shape(self, n, cu), n, {out.get<float>(), ws.get(), counter.get<std::uint32_t>()},
                              stream)};
      const auto samples = runner.interleaved(timed, n * info(d).bytes, 15);
      const double t0 = tune::Stats::of(samples[0]).median_us, t1 = tune::Stats::of(samples[1]).median_us,
                   t2 = tune::Stats::of(samples[2]).median_us;
      std::printf("%-5s %10llu %12.2f %12.2f %7.3fx %12.2f\n", std::string(to_string(d)).c_str(),
                  static_cast<unsigned long long>(n), t0, t1, t0 / t1, t2);
    }
  }
  b.destroy_stream(stream);
}

// Under graph capture the finish kernel is an ordinary launch (launch_amax asks the stream); the
// kernel's griddepcontrol.wait is then a no-op. Captured once, replayed on new data three times.
TEST(GpuPdl, TwoStageCapturedIntoAGraphReplaysBitExact) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const std::uint32_t cu = static_cast<std::uint32_t>(b.device().cu_count);
  const std::uint64_t n = 3u << 20;
  const KernelConfig two = KernelConfig::parse("two_stage.t512.v8.u2.b4cu");
  const LoadedKernel& k = env->kernels->get(two, DType::bf16);
  const LaunchShape shape = launch_shape(two, n, cu);
  ASSERT_TRUE(shape.dependent_finish);
  DeviceBuffer in(b, n * 2), out(b, 4), ws(b, shape.workspace_bytes);
  StreamHandle s = b.create_stream();
  b.begin_capture(s);
  launch_amax(b, k, shape, in.get(), n, out.get<float>(), ws.get(), nullptr, NanMode::ignore, s);
  GraphExecHandle g = b.end_capture(s);
  std::mt19937_64 rng(std::random_device{}());
  for (int i = 0; i < 3; ++i) {
    const auto host = make_input(InputKind::random, DType::bf16, n, rng());
    b.copy_to_device(in.get(), host.data(), host.size());
    b.launch_graph(g, s);
    b.synchronize(s);
    EXPECT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), DType::bf16, n, NanMode::ignore)) << "replay " << i;
  }
  b.destroy_graph(g);
  b.destroy_stream(s);
}
