// The bit-exact correctness cases of the GPU tests, written once and run through each backend:
// every variant of the pruned default space (plus TransformerEngine's fixed configurations) of
// every dtype against the CPU reference. test_gpu_correctness runs them through the first GPU
// backend present, test_hipshim through the HIP backend on the CUDA-driver shim.
#include "correctness_cases.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "amax/reference.hpp"
#include "amax/search_space.hpp"

using namespace amax;
using amax::test::DeviceBuffer;

namespace {

struct Variant {
  KernelConfig config;
  const LoadedKernel* kernel;
};

// Every variant to verify for `dtype`: the pruned space (every strategy, self_reset included),
// TransformerEngine's two fixed configs and three first_reset and three first_reset_warp shapes of
// the full space.
// Kernels are built in parallel (through the binary cache), then loaded.
const std::vector<Variant>& variants(test::GpuEnv& env, DType dtype) {
  static std::map<std::pair<const test::GpuEnv*, DType>, std::vector<Variant>> cache;
  auto& out = cache[{&env, dtype}];
  if (!out.empty()) return out;
  auto configs = enumerate_space(env.arch, dtype, SpaceKind::pruned);
  configs.push_back(transformer_engine_config(dtype, Strategy::atomic));
  configs.push_back(transformer_engine_config(dtype, Strategy::two_stage));
  // first_reset and first_reset_warp shapes of the full space beside the pruned space's own: a
  // narrow vector, 128 threads uncapped (tens of thousands of blocks at the largest sizes, each
  // taking a ticket on one word) and 8 loads in flight (first_reset_warp: 512 threads, the largest
  // that leave room for its ticket wave).
  const std::uint32_t nvec = 16 / info(dtype).bytes;
  for (Strategy s : {Strategy::first_reset, Strategy::first_reset_warp})
    for (const KernelConfig& c : {KernelConfig{s, 64, 1, 4, BlockCap::per_cu(16)},
                                  KernelConfig{s, 128, nvec, 1, BlockCap::uncapped()},
                                  KernelConfig{s, s == Strategy::first_reset ? 1024u : 512u, nvec, 8, BlockCap::uncapped()}}) {
      if (auto why = c.validate(env.arch, dtype)) throw std::logic_error(*why);
      configs.push_back(c);
    }
  const auto kernels = distinct_kernels(configs);
  std::atomic<std::size_t> next{0};
  std::vector<std::optional<KernelBinary>> built(kernels.size());
  std::vector<std::string> errors(kernels.size());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < kernels.size();) try {
          built[i] = build_kernel(env.kernels->compiler(), env.kernels->binaries(), env.arch, kernels[i], dtype);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
    });
  for (auto& t : pool) t.join();
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (!built[i]) throw std::runtime_error("build of " + kernels[i].label() + " failed: " + errors[i]);
    env.kernels->load(std::move(*built[i]));
  }
  for (const auto& c : configs) out.push_back({c, &env.kernels->get(c, dtype)});
  for (const StrategyInfo& s : kStrategies)
    if (std::none_of(out.begin(), out.end(), [&](const Variant& v) { return v.config.strategy == s.value; }) &&
        !strategy_unsupported_reason(s.value, env.arch))
      throw std::logic_error("no " + std::string(s.name) + " variant in the verified set");
  return out;
}

// Runs every variant on one input and checks each result bit for bit.
class CaseRunner {
 public:
  explicit CaseRunner(test::GpuEnv& env, std::size_t input_capacity)
      : env_(env),
        b_(*env.backend),
        input_(b_, input_capacity + 64),
        outputs_(b_, 4 * 1024),
        workspace_(b_, 64ull << 20),
        counter_(b_, 4 * kSlotWords),
        stream_(b_.create_stream()) {
    b_.memset32_async(counter_.get(), 0u, kSlotWords, stream_);
    b_.memset32_async(workspace_.get(), 0xabababab, workspace_.bytes() / 4, stream_);  // arbitrary bytes
    b_.synchronize(stream_);
  }
  ~CaseRunner() { b_.destroy_stream(stream_); }

  std::size_t launches = 0, cases = 0;

  void run(DType dtype, const std::vector<std::uint8_t>& host, std::uint64_t n, std::uint64_t offset,
           NanMode mode, const std::string& what) {
    const auto& vs = variants(env_, dtype);
    const std::uint32_t eb = info(dtype).bytes;
    const std::uint64_t bytes = n * eb, off_bytes = offset * eb;
    ASSERT_LE(off_bytes + bytes + 64, input_.bytes());
    ASSERT_LE(vs.size(), 1024u);
    // Guard words of all-ones (a NaN in every dtype) around the input: a kernel reading one
    // element too many returns NaN in propagate mode.
    b_.memset32_async(input_.get(), 0xffffffffu, (off_bytes + bytes + 64 + 3) / 4, stream_);
    b_.synchronize(stream_);
    if (bytes) b_.copy_to_device(input_.get(off_bytes), host.data(), bytes);
    const std::uint32_t expect = reference_amax_bits(host.data(), dtype, n, mode);
    static const std::uint32_t kGarbage[] = {0x7f800000u, 0x7fc00000u, 0x4b000000u, 0xffffffffu};
    b_.memset32_async(outputs_.get(), kGarbage[cases % 4], vs.size(), stream_);
    for (std::size_t i = 0; i < vs.size(); ++i) {
      const auto shape = launch_shape(vs[i].config, n, static_cast<std::uint32_t>(b_.device().cu_count),
                                      vs[i].kernel->resident_per_cu);
      ASSERT_LE(shape.workspace_bytes, workspace_.bytes());
      launch_amax(b_, *vs[i].kernel, shape, input_.get(off_bytes), n, outputs_.get<float>(4 * i),
                  workspace_.get(), counter_.get<std::uint32_t>(), mode, stream_);
    }
    b_.synchronize(stream_);
    std::vector<std::uint32_t> got(vs.size());
    b_.copy_to_host(got.data(), outputs_.get(), 4 * vs.size());
    int bad = 0;
    for (std::size_t i = 0; i < vs.size() && bad < 5; ++i)
      if (got[i] != expect) {
        ++bad;
        ADD_FAILURE() << vs[i].config.label() << " " << to_string(dtype) << " " << what << " n=" << n
                      << " offset=" << offset << " nan=" << (mode == NanMode::ignore ? "ignore" : "propagate")
                      << ": got 0x" << std::hex << got[i] << " expected 0x" << expect;
      }
    std::vector<std::uint32_t> slot(kSlotWords, 1u);
    b_.copy_to_host(slot.data(), counter_.get(), 4 * kSlotWords);
    EXPECT_EQ(slot[0], 0u) << "one_pass or self_reset left the arrival count non-zero after " << what;
    EXPECT_EQ(slot[1], 0u) << "self_reset left its accumulator non-zero after " << what;
    if (bytes && bytes <= (256u << 20)) {  // the input is never written
      std::vector<std::uint8_t> back(bytes);
      b_.copy_to_host(back.data(), input_.get(off_bytes), bytes);
      EXPECT_EQ(std::memcmp(back.data(), host.data(), bytes), 0) << "input modified by a variant: " << what;
    }
    launches += vs.size();
    ++cases;
  }

 private:
  test::GpuEnv& env_;
  Backend& b_;
  DeviceBuffer input_, outputs_, workspace_, counter_;
  StreamHandle stream_;
};

struct Summary {
  std::size_t variants = 0, launches = 0, cases = 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  void print(const char* name) const {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %zu variant x case launches over %zu cases, %.1f s\n", name, launches, cases, s);
  }
};

const std::uint64_t kSizes[] = {0, 1, 2, 31, 32, 33, 63, 64, 65, 255, 4095, 4097, 65537, 1000003, (1ull << 24) + 7};

}  // namespace

namespace amax::test {

void every_variant_every_size_both_nan_modes(GpuEnv* env) {
  CaseRunner r(*env, ((1ull << 24) + 64) * 4);
  std::mt19937_64 seeds(std::random_device{}());
  Summary sum;
  for (const auto& d : all_dtypes()) {
    const auto& vs = variants(*env, d.dtype);
    std::printf("%s: %zu variants (%zu self_reset)\n", std::string(d.name).c_str(), vs.size(),
                static_cast<std::size_t>(std::count_if(vs.begin(), vs.end(), [](const Variant& v) {
                  return v.config.strategy == Strategy::self_reset;
                })));
    for (std::uint64_t n : kSizes)
      for (NanMode m : {NanMode::propagate, NanMode::ignore}) {
        const auto seed = seeds();
        r.run(d.dtype, make_input(InputKind::random, d.dtype, n, seed), n, 0, m,
              "random seed " + std::to_string(seed));
      }
  }
  sum.launches = r.launches;
  sum.cases = r.cases;
  sum.print("sizes");
}

void pointers_offset_by_every_element_of_a_vector(GpuEnv* env) {
  CaseRunner r(*env, (1000003 + 64) * 4);
  std::mt19937_64 seeds(std::random_device{}());
  const InputKind kinds[] = {InputKind::max_first, InputKind::max_last, InputKind::max_in_vector, InputKind::random};
  Summary sum;
  for (const auto& d : all_dtypes()) {
    const std::uint32_t nvec = 16 / d.bytes;
    for (std::uint64_t n : {1ull, 2ull, 33ull, 65ull, 4097ull, 1000003ull})
      for (std::uint32_t off = 1; off < nvec; ++off) {
        const InputKind k = kinds[(off + n) % 4];
        const auto seed = seeds();
        r.run(d.dtype, make_input(k, d.dtype, n, seed), n, off, NanMode::propagate,
              std::string(to_string(k)) + " seed " + std::to_string(seed));
      }
  }
  sum.launches = r.launches;
  sum.cases = r.cases;
  sum.print("offsets");
}

void special_values_both_nan_modes(GpuEnv* env) {
  CaseRunner r(*env, (1000003 + 64) * 4);
  std::mt19937_64 seeds(std::random_device{}());
  Summary sum;
  for (const auto& d : all_dtypes())
    for (InputKind k : all_input_kinds())
      for (std::uint64_t n : {1ull, 33ull, 4097ull, 65537ull, 1000003ull})
        for (NanMode m : {NanMode::propagate, NanMode::ignore}) {
          const auto seed = seeds();
          r.run(d.dtype, make_input(k, d.dtype, n, seed), n, (n + seed) % 2, m,
                std::string(to_string(k)) + " seed " + std::to_string(seed));
        }
  sum.launches = r.launches;
  sum.cases = r.cases;
  sum.print("special values");
}

void bf16_above_two_to_the_31_elements(GpuEnv* env) {
  const std::uint64_t n = (1ull << 31) + (1ull << 20) + 3, at = (1ull << 31) + 12345;
  if (env->backend->device().memory_bytes < 3 * n) GTEST_SKIP() << "device memory too small for " << n << " bf16";
  // |x| < 2 everywhere (exponent's top bit cleared) but one 8.0 past index 2^31.
  std::vector<std::uint8_t> host(2 * n);
  {
    std::vector<std::thread> pool;
    const unsigned T = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t < T; ++t)
      pool.emplace_back([&, t] {
        auto* p = reinterpret_cast<std::uint16_t*>(host.data());
        std::uint64_t x = 0x9e3779b97f4a7c15ull * (t + 1);
        for (std::uint64_t i = n * t / T; i < n * (t + 1) / T; ++i) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          p[i] = static_cast<std::uint16_t>(x) & 0xbf7fu;
        }
      });
    for (auto& t : pool) t.join();
  }
  const std::uint16_t eight = 0xc100;  // -8.0
  std::memcpy(host.data() + 2 * at, &eight, 2);
  CaseRunner r(*env, 2 * n + 64);
  Summary sum;
  r.run(DType::bf16, host, n, 0, NanMode::propagate, "bf16 maximum at index 2^31+12345");
  sum.launches = r.launches;
  sum.cases = r.cases;
  sum.print("bf16 > 2^31");
}

}  // namespace amax::test
