// The bench's TransformerEngine contenders on the GPU (label `gpu`): each launch sequence bit-exact
// against the CPU reference (TE skips NaNs, so the reference in NaN-ignore mode) on every input
// kind, on the aligned and the unaligned kernel, past the 65535-block grid; then a small bench run
// end to end (its own verification included); TE's current-scaling quantize bit-exact, and the
// quantize bench in a quick mode.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <set>

#include "amax/reference.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/arch.hpp"
#include "amax/bench.hpp"
#include "amax/bench_quantize.hpp"
#include "amax/fp8_cast.hpp"
#include "../gpu/gpu_env.hpp"
#include "amax/te_contenders.hpp"

using namespace amax;
using namespace amax::bench;
using amax::test::DeviceBuffer;

namespace {

struct Te {
  ReferenceKernels ref;
  TeKernels kernels;
};

Te& te(test::GpuEnv& env) {
  static Te t = [&] {
    ReferenceKernels r = ReferenceKernels::load(*env.backend, *env.compiler, env.kernels->binaries());
    TeKernels k(*r.module);
    return Te{std::move(r), k};
  }();
  return t;
}

// Runs the three sequences on n elements at `in` and expects the reference's bits from each.
int check_all(test::GpuEnv& env, const void* in, DType d, std::uint64_t n, std::uint32_t expected,
              const std::string& what) {
  Backend& b = *env.backend;
  static DeviceBuffer out(b, 16), ws(b, kTeWorkspaceBytes);
  b.memset32_async(ws.get(), 0xabababab, kTeWorkspaceBytes / 4, nullptr);  // arbitrary workspace bytes
  b.memset32_async(out.get(), 0x7fc0dead, 4, nullptr);                        // garbage: a NaN pattern
  const auto seqs = all_te_sequences();
  for (std::size_t k = 0; k < seqs.size(); ++k)
    te(env).kernels.launch(b, seqs[k], d, in, n, out.get<float>(4 * k), ws.get<float>(), nullptr);
  b.synchronize(nullptr);
  std::uint32_t got[3];
  b.copy_to_host(got, out.get(), sizeof got);
  for (std::size_t k = 0; k < seqs.size(); ++k)
    EXPECT_EQ(got[k], expected) << contender_name(seqs[k]) << " " << what << " (aligned kernel: "
                                << te_launch(d, reinterpret_cast<std::uintptr_t>(in), n).aligned << ")";
  return static_cast<int>(seqs.size());
}

}  // namespace

TEST(GpuBench, TeContendersAreBitExactOnEveryInputKindAndAlignment) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  const std::uint64_t big = (1u << 24) + 7;
  DeviceBuffer in(b, big * 4 + 64);
  int checked = 0;
  for (const auto& d : all_dtypes()) {
    const std::uint64_t nvec = 32 / d.bytes;
    for (std::uint64_t n : std::vector<std::uint64_t>{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 255, 511, 4097, 65537,
                                                      1000003, big})
      for (std::uint64_t off : std::vector<std::uint64_t>{0, 1, nvec / 2, nvec - 1})
        for (InputKind kind : all_input_kinds()) {
          if (n == big && kind != InputKind::random && kind != InputKind::max_last && kind != InputKind::nan_middle)
            continue;
          const auto host = make_input(kind, d.dtype, n, 1234 + n + off);
          if (n) b.copy_to_device(in.get(off * d.bytes), host.data(), host.size());
          const std::uint32_t expected = reference_amax_bits(host.data(), d.dtype, n, NanMode::ignore);
          checked += check_all(*env, in.get(off * d.bytes), d.dtype, n, expected,
                               std::string(d.name) + " n=" + std::to_string(n) + " offset " + std::to_string(off) +
                                   " elements, " + std::string(to_string(kind)));
          if (HasFailure()) return;
        }
  }
  std::printf("TE contenders: %d sequence x case launches bit-exact\n", checked);
}

TEST(GpuBench, TeContendersPastTheGridCapWithAnUnalignedTail) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  // bf16: 65535 blocks x 512 threads x 16 elements = 536,862,720 per grid-stride step; 2^29 + 5
  // elements need a second step and end with a partial vector (unaligned kernel).
  const std::uint64_t n = (1ull << 29) + 5;
  ASSERT_EQ(te_launch(DType::bf16, 0, n).grid, 65535u);
  ASSERT_FALSE(te_launch(DType::bf16, 0, n).aligned);
  auto host = make_input(InputKind::random, DType::bf16, n, 77);
  const std::uint16_t top = 0x7f00;  // the largest value, at the last element
  std::memcpy(host.data() + (n - 1) * 2, &top, 2);
  DeviceBuffer in(b, n * 2);
  b.copy_to_device(in.get(), host.data(), host.size());
  const std::uint32_t expected = reference_amax_bits(host.data(), DType::bf16, n, NanMode::ignore);
  ASSERT_EQ(expected, 0x7f000000u);
  check_all(*env, in.get(), DType::bf16, n, expected, "bf16 n=2^29+5, maximum last");
}

TEST(GpuBench, SmallBenchRunVerifiesAndTimesEveryContender) {
  AMAX_REQUIRE_GPU();
  const auto dir = std::filesystem::temp_directory_path() / ("amax-gpu-bench-" + std::to_string(::getpid()));
  BenchOptions o;
  o.dtypes = {DType::fp32, DType::bf16};
  o.sizes = {1024, 1000003, 1u << 22};  // 1000003: TE's unaligned kernel (n % nvec != 0)
  o.warm = false;
  o.rounds = 3;
  o.progress = false;
  o.user_db = "";
  o.out_dir = dir;
  const BenchReport r = run_bench(o);
  const std::size_t contenders = env->backend->vendor() == Vendor::nvidia ? 9 : 8;  // CUB on NVIDIA
  ASSERT_EQ(r.rows.size(), 2 * 3 * contenders);
  std::size_t fused = 0;
  for (const auto& row : r.rows)
    if (row.contender == kAmaxTuneScale) {
      ++fused;
      EXPECT_TRUE(row.detail.ends_with(".scale")) << row.detail;
    }
  EXPECT_EQ(fused, 2u * 3);  // verified bit-exact (amax, scale, scale_inv) before timing, else run_bench throws
  for (const auto& row : r.rows) {
    EXPECT_GT(row.stats.median_us, 0) << row.contender;
    EXPECT_EQ(row.stats.samples, 3) << row.contender;
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "bench.csv"));
  EXPECT_FALSE(r.targets.empty());
  std::filesystem::remove_all(dir);
}

TEST(GpuBench, TeScaleKernelMatchesComputeScaleFromAmaxOnTheCpu) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  DeviceBuffer amax(b, 4), scale(b, 4);
  const float amaxes[] = {2.f, 3.f, 0.f, INFINITY, NAN, 1e-6f, 1e-45f, 1e-30f, 448.f, 57344.f, 1.5e38f};
  int checked = 0;
  for (float a : amaxes)
    for (float max_fp8 : {448.f, 57344.f, 240.f})
      for (bool pow2 : {false, true})
        for (float eps : {0.f, 1e-3f}) {
          b.copy_to_device(amax.get(), &a, 4);
          b.memset32_async(scale.get(), 0x7fc0dead, 1, nullptr);
          te(*env).kernels.launch_scale(b, amax.get<float>(), scale.get<float>(), max_fp8, pow2, eps, nullptr);
          b.synchronize(nullptr);
          std::uint32_t got = 0, want = 0;
          b.copy_to_host(&got, scale.get(), 4);
          const float w = te_scale_from_amax(a, max_fp8, pow2, eps);
          std::memcpy(&want, &w, 4);
          EXPECT_EQ(got, want) << "amax " << a << " max_fp8 " << max_fp8 << " pow2 " << pow2 << " eps " << eps;
          ++checked;
        }
  // TE's three-launch step on a tensor: zero kernel, amax kernel, scale kernel.
  const std::uint64_t n = 1000003;
  const auto host = make_input(InputKind::max_in_vector, DType::bf16, n, 5);
  DeviceBuffer in(b, n * 2);
  b.copy_to_device(in.get(), host.data(), host.size());
  te(*env).kernels.launch(b, TeSequence::zero_kernel, DType::bf16, in.get(), n, amax.get<float>(), nullptr, nullptr);
  te(*env).kernels.launch_scale(b, amax.get<float>(), scale.get<float>(), 448.f, false, 0.f, nullptr);
  b.synchronize(nullptr);
  float got_amax = 0, got_scale = 0;
  b.copy_to_host(&got_amax, amax.get(), 4);
  b.copy_to_host(&got_scale, scale.get(), 4);
  std::uint32_t amax_bits;
  std::memcpy(&amax_bits, &got_amax, 4);
  EXPECT_EQ(amax_bits, reference_amax_bits(host.data(), DType::bf16, n, NanMode::ignore));
  EXPECT_EQ(got_scale, te_scale_from_amax(got_amax, 448.f, false, 0.f));
  std::printf("TE scale kernel: %d cases bit-exact\n", checked);
}

// TE's current-scaling quantize (zero kernel, amax, compute_scale_from_amax, its FP8 cast) against
// the CPU reference: amax (TE skips NaNs: NaN-ignore), scale, scale_inv and every FP8 byte plus the
// two after them untouched, every dtype, both formats, every input kind, in the cast's three forms
// (aligned; n % nvec != 0: unaligned; differently aligned pointers: nvec 1).
TEST(GpuBench, TeQuantizeIsBitExactInEveryCastForm) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  if (compute_capability(ArchInfo::parse(b.device().arch)) < 89 || b.vendor() != Vendor::nvidia)
    GTEST_SKIP() << "TE's FP8 cast contender needs NVIDIA sm_89+ (" << b.device().arch << ")";
  const TeQuantizeKernels tq(*te(*env).ref.module, b.device().arch);
  const std::uint64_t max_n = (1u << 20) + 3;
  DeviceBuffer in(b, max_n * 4 + 64), out(b, max_n + 64), words(b, 16);
  int checked = 0;
  std::set<TeCastForm> forms;
  for (const auto& d : all_dtypes())
    for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2})
      for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{17}, std::uint64_t{4096}, max_n})
        for (auto [in_off, out_off] : {std::pair<int, int>{0, 0}, {1, 1}})
          for (InputKind kind : all_input_kinds()) {
            // The input in_off elements and the output out_off bytes past their vector boundaries:
            // aligned pointers (the aligned or, n % nvec != 0, the unaligned form), or different
            // byte offsets (the nvec-1 form).
            const std::uint64_t in_bytes = std::uint64_t(in_off) * d.bytes, out_bytes = out_off;
            const auto host = make_input(kind, d.dtype, n, 99 + n + in_off);
            b.copy_to_device(in.get(in_bytes), host.data(), host.size());
            b.memset32_async(out.get(), 0xa5a5a5a5u, (max_n + 64) / 4, nullptr);
            b.memset32_async(words.get(), 0x7fc0deadu, 4, nullptr);
            unsigned char* q = out.get<unsigned char>(out_bytes);
            tq.launch_quantize(b, te(*env).kernels, d.dtype, f, in.get(in_bytes), n, q, words.get<float>(0),
                               words.get<float>(4), words.get<float>(8), nullptr);
            b.synchronize(nullptr);
            forms.insert(te_cast_launch(d.dtype, reinterpret_cast<std::uintptr_t>(in.get(in_bytes)),
                                        reinterpret_cast<std::uintptr_t>(q), n).form);
            const std::uint32_t amax = reference_amax_bits(host.data(), d.dtype, n, NanMode::ignore);
            const ScaleBits s = reference_scale_bits(amax, ScaleRule{info(f).max_finite});
            std::vector<std::uint8_t> want(n + 2, 0xa5), got(n + 2);
            reference_quantize(host.data(), d.dtype, n, s.scale, f, CastRule::transformer_engine, want.data());
            b.copy_to_host(got.data(), q, n + 2);
            std::uint32_t w[3];
            b.copy_to_host(w, words.get(), sizeof w);
            const std::string where = std::string(d.name) + " -> " + std::string(info(f).name) + " n=" +
                                      std::to_string(n) + " offsets " + std::to_string(in_off) + "/" +
                                      std::to_string(out_off) + " " + std::string(to_string(kind));
            ASSERT_EQ(w[0], amax) << where;
            ASSERT_EQ(w[1], s.scale) << where;
            ASSERT_EQ(w[2], s.scale_inv) << where;
            const auto [g, r] = std::mismatch(got.begin(), got.end(), want.begin());
            ASSERT_TRUE(g == got.end()) << where << ": byte " << (g - got.begin()) << " got " << int(*g) << " want "
                                        << int(*r);
            ++checked;
          }
  EXPECT_EQ(forms.size(), 3u) << "every form of TE's cast was run";
  std::printf("TE quantize: %d cases bit-exact (amax, scale, scale_inv, every byte)\n", checked);
}

// The quantize bench in a quick mode: every contender verified bit-exact (FP8 bytes, amax, scale,
// scale_inv) before it is timed, else run_bench_quantize throws; both views timed.
TEST(GpuBench, QuickQuantizeBenchVerifiesAndTimesEveryContender) {
  AMAX_REQUIRE_GPU();
  if (compute_capability(ArchInfo::parse(env->backend->device().arch)) < 89 ||
      env->backend->vendor() != Vendor::nvidia)
    GTEST_SKIP() << "TE's FP8 cast contender needs NVIDIA sm_89+";
  const auto dir = std::filesystem::temp_directory_path() / ("amax-gpu-qbench-" + std::to_string(::getpid()));
  QuantizeBenchOptions o;
  o.dtypes = {DType::bf16, DType::fp32};
  o.formats = {Fp8Format::e4m3, Fp8Format::e5m2};
  o.sizes = {1024, 1000003, 1u << 22};  // 1000003: TE's unaligned cast, amax-tune's tails
  o.rounds = 3;
  o.progress = false;
  o.out_dir = dir;
  const QuantizeBenchReport r = run_bench_quantize(o);
  ASSERT_EQ(r.rows.size(), 2u * 2 * 3 * 6);
  std::size_t calls = 0;
  for (const auto& row : r.rows)
    if (row.contender == kQuantApi) {
      ++calls;
      EXPECT_TRUE(row.detail.starts_with("quant.")) << row.detail;  // the dispatched variant's label
    }
  EXPECT_EQ(calls, 2u * 2 * 3);
  for (const auto& row : r.rows) {
    EXPECT_GT(row.stats.median_us, 0) << row.contender;
    EXPECT_EQ(row.stats.samples, 3) << row.contender;
    EXPECT_GT(row.host_inclusive.median_us, 0) << row.contender;
  }
  EXPECT_EQ(r.targets.size(), 4u);  // the three of bf16 -> e4m3 and the Python line
  EXPECT_TRUE(std::filesystem::exists(dir / "bench_quantize.csv"));
  std::printf("%s", quantize_report_markdown(r, "test").c_str());
  std::filesystem::remove_all(dir);
}
