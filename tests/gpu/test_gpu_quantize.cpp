// The quantize kernels (templates/amax_quantize_kernels.h) on the GPU (label `gpu`), launched
// directly from their rendered sources: every FP8 byte, and for the one-launch kernels the amax,
// scale and scale_inv, against the CPU reference (amax/fp8_cast.hpp, amax/scale_rule.hpp,
// amax/reference.hpp); both cast rules, every FP8 format, every dtype, both NaN modes, sizes from 1
// element to 2^24 + 3, misaligned input and output pointers, special values and random inputs. On
// NVIDIA sm_89+ the integer cast is also compared with the hardware's own conversion
// (cvt.rn.satfinite, what TransformerEngine's __nv_fp8_e4m3 / __nv_fp8_e5m2 run there) over all
// 2^32 fp32 patterns, and the AMD targets' kernels run in the wave-64 model (tests/wave64).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "amax/fp8_cast.hpp"
#include "amax/launch_plan.hpp"
#include "amax/quantize_config.hpp"
#include "amax/reference.hpp"
#include "amax/scale_rule.hpp"
#include "gpu_env.hpp"
#include "host_values.hpp"
#include "wave64_model.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::put;
using amax::test::read_bits;

namespace {

constexpr Fp8Format kAllFormats[] = {Fp8Format::e4m3, Fp8Format::e5m2, Fp8Format::e4m3fnuz, Fp8Format::e5m2fnuz};
constexpr CastRule kBothRules[] = {CastRule::transformer_engine, CastRule::torchao};

// A compiled quantize kernel and how many blocks of it one CU/SM holds; for the wave-64 model, the
// module's handshake-fault kernel (wave64::kFaultKernel).
struct QuantKernel {
  std::unique_ptr<Module> module;
  FunctionHandle f = nullptr;
  FunctionHandle faults = nullptr;
  std::uint32_t resident_per_cu = 0;
};

// Compiles (once per process) `c` for `dtype` and `format` with the environment's JIT compiler: the
// device's own source, or with `model` the source rendered for that AMD arch in the wave-64 model
// (its prelude swapped: wave64::model_source). `extra` is appended to the source (a test kernel
// using the template's functions). The modules are never unloaded (the process-wide environment may
// be gone when static objects are destroyed).
QuantKernel& kernel(test::GpuEnv& env, const QuantizeConfig& c, DType dtype, Fp8Format format,
                    const std::string& extra = {}, const std::string& extra_name = {},
                    const ArchInfo* model = nullptr) {
  static auto& cache = *new std::map<std::string, QuantKernel>;
  const std::string name = extra_name.empty() ? quantize_kernel_name(c, dtype, format) : extra_name;
  const std::string key = model ? name + "@wave64-" + model->name : name;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const std::string src = model ? wave64::model_source(render_quantize_source(c, dtype, format, *model)) + extra
                                : render_quantize_source(c, dtype, format, env.arch) + extra;
  QuantKernel k;
  try {
    const CompiledProgram p = env.compiler->compile(src, key + ".src", env.arch);
    k.module = env.backend->load_module(p.binary);
  } catch (const CompileError& e) {
    ADD_FAILURE() << key << ": " << e.what() << "\n" << e.log();
    throw;
  }
  k.f = k.module->function(name);
  if (model) k.faults = k.module->function(std::string(wave64::kFaultKernel));
  k.resident_per_cu = env.backend->max_active_blocks_per_cu(k.f, c.threads);
  return cache.emplace(key, std::move(k)).first->second;
}

std::uint32_t flags_of(NanMode mode, CastRule rule) {
  return (mode == NanMode::ignore ? 1u : 0u) | (rule == CastRule::torchao ? kQuantizeFlagTorchao : 0u);
}

// The first differing byte of `got` against `want`, as a message ("" when equal).
std::string first_difference(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want,
                             const std::vector<std::uint8_t>& input, DType dtype) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      std::uint32_t e = 0;  // the element's bits (none for the bytes after the tensor)
      if ((i + 1) * info(dtype).bytes <= input.size())
        std::memcpy(&e, input.data() + i * info(dtype).bytes, info(dtype).bytes);
      char buf[160];
      std::snprintf(buf, sizeof buf, "byte %zu of %zu: got 0x%02x, want 0x%02x (element bits 0x%x)", i, want.size(),
                    got[i], want[i], e);
      return buf;
    }
  return {};
}

// One quantize run's outputs read back.
struct Outputs {
  std::vector<std::uint8_t> bytes;
  std::uint32_t amax = 0, scale = 0, scale_inv = 0;
};

// The grid of a one-launch kernel: the blocks its tiles need (keep: every vector kept), at most the
// resident blocks (a cooperative launch).
std::uint32_t one_launch_grid(const QuantizeConfig& c, const QuantKernel& k, std::uint64_t n, std::uint32_t cu) {
  const std::uint64_t vectors = n / c.nvec + 1;
  const std::uint64_t per_block = std::uint64_t{c.threads} * (c.kind == QuantizeKind::keep ? c.keep : c.unroll);
  std::uint64_t grid = std::max<std::uint64_t>(1, (vectors + per_block - 1) / per_block);
  grid = std::min<std::uint64_t>(grid, std::uint64_t{k.resident_per_cu} * cu);
  return static_cast<std::uint32_t>(grid);
}

// One random case: a size in [1, n_max], offsets of the input (elements, within a 16-byte vector)
// and the output (bytes), an input of a random kind, and random NaN mode, cast rule and scale rule.
struct RandomCase {
  std::uint64_t n = 0, in_off = 0, out_off = 0, seed = 0;
  InputKind kind{};
  std::vector<std::uint8_t> host;
  NanMode mode{};
  CastRule rule{};
  ScaleRule r;
  std::string describe() const {
    return std::string(to_string(rule)) + " n=" + std::to_string(n) + " in_off=" + std::to_string(in_off) +
           " out_off=" + std::to_string(out_off) + " " + std::string(to_string(kind)) + " seed=" +
           std::to_string(seed) + (mode == NanMode::ignore ? " ignore-NaN" : "");
  }
};
RandomCase draw_case(std::mt19937_64& rng, DType dtype, Fp8Format f, std::uint64_t n_max) {
  RandomCase c;
  c.n = 1 + rng() % n_max;
  c.in_off = rng() % (16 / info(dtype).bytes);
  c.out_off = rng() % 16;
  c.kind = all_input_kinds()[rng() % all_input_kinds().size()];
  c.seed = rng();
  c.host = make_input(c.kind, dtype, c.n, c.seed);
  c.mode = rng() % 2 ? NanMode::ignore : NanMode::propagate;  // propagate: NaN amaxes and scales too
  c.rule = kBothRules[rng() % 2];
  c.r = ScaleRule{info(f).max_finite, (rng() % 3 == 0) ? 1e-6f : 0.0f, rng() % 2 == 0, rng() % 2 == 0};
  return c;
}

class QuantizeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = test::gpu_env();
    if (!env_) GTEST_SKIP() << test::skip_reason();
    b_ = env_->backend.get();
    cu_ = static_cast<std::uint32_t>(b_->device().cu_count);
    in_ = std::make_unique<DeviceBuffer>(*b_, (kMaxN + 64) * 4);
    out_ = std::make_unique<DeviceBuffer>(*b_, kMaxN + 64);
    scalars_ = std::make_unique<DeviceBuffer>(*b_, 64);
    sync_ = std::make_unique<DeviceBuffer>(*b_, 4 * kSlotWords);  // one stream slot
    b_->memset32_async(sync_->get(), 0, kSlotWords, nullptr);
    b_->synchronize(nullptr);
  }

  // The one-launch kernel `c` on `host` (n elements) at element offset `in_off` and byte offset
  // `out_off`, with `grid` blocks (0: one_launch_grid's).
  Outputs run_one_launch(const QuantizeConfig& c, DType dtype, Fp8Format format, const std::vector<std::uint8_t>& host,
                         std::uint64_t n, std::uint64_t in_off, std::uint64_t out_off, NanMode mode, CastRule rule,
                         const ScaleRule& r, std::uint32_t grid = 0, const ArchInfo* model = nullptr) {
    QuantKernel& k = kernel(*env_, c, dtype, format, {}, {}, model);
    if (model) used_models_.push_back(&k);
    const std::uint32_t bytes = info(dtype).bytes;
    if (!host.empty()) b_->copy_to_device(in_->get(in_off * bytes), host.data(), host.size());
    b_->memset32_async(out_->get(), 0xa5a5a5a5u, (kMaxN + 64) / 4, nullptr);
    b_->memset32_async(scalars_->get(), 0xdeadbeefu, 3, nullptr);
    if (!grid) grid = one_launch_grid(c, k, n, cu_);
    const void* in = in_->get(in_off * bytes);
    unsigned char* out = out_->get<unsigned char>(out_off);
    float* amax_out = scalars_->get<float>(0);
    unsigned* sync = sync_->get<unsigned>();
    unsigned flags = flags_of(mode, rule);
    ScaleArgs sa{scalars_->get<float>(4), scalars_->get<float>(8), r.max, r.epsilon,
                 (r.force_pow2 ? kRuleForcePow2 : 0u) | (r.nan_propagates ? kRuleNanPropagates : 0u)};
    void* args[] = {&in, &n, &out, &amax_out, &sync, &flags, &sa};
    b_->launch_cooperative(k.f, grid, c.threads, nullptr, args);
    b_->synchronize(nullptr);
    Outputs o;
    o.bytes.resize(n + 2);
    b_->copy_to_host(o.bytes.data(), out_->get(out_off), n + 2);  // and the 2 bytes after: untouched
    o.amax = read_bits(*b_, scalars_->get(0));
    o.scale = read_bits(*b_, scalars_->get(4));
    o.scale_inv = read_bits(*b_, scalars_->get(8));
    return o;
  }

  // `o` against the CPU reference of `host` (n elements): amax, scale, scale_inv, every byte and
  // the 2 bytes after them untouched.
  static ::testing::AssertionResult matches_reference(const Outputs& o, const std::vector<std::uint8_t>& host,
                                                      DType dtype, std::uint64_t n, Fp8Format f, NanMode mode,
                                                      CastRule rule, const ScaleRule& r) {
    const std::uint32_t ref_amax = reference_amax_bits(host.data(), dtype, n, mode);
    const ScaleBits ref = reference_scale_bits(ref_amax, r);
    std::vector<std::uint8_t> want(n + 2, 0xa5);
    reference_quantize(host.data(), dtype, n, ref.scale, f, rule, want.data());
    char buf[160];
    if (o.amax != ref_amax || o.scale != ref.scale || o.scale_inv != ref.scale_inv) {
      std::snprintf(buf, sizeof buf, "amax/scale/scale_inv 0x%08x/0x%08x/0x%08x, want 0x%08x/0x%08x/0x%08x", o.amax,
                    o.scale, o.scale_inv, ref_amax, ref.scale, ref.scale_inv);
      return ::testing::AssertionFailure() << buf;
    }
    const std::string diff = first_difference(o.bytes, want, host, dtype);
    if (!diff.empty()) return ::testing::AssertionFailure() << diff;
    return ::testing::AssertionSuccess();
  }

  // The cast kernel `c` with the scale whose bits are `scale` on `host` (n elements) at element
  // offset `in_off` and byte offset `out_off`; the bytes and the 2 after them.
  std::vector<std::uint8_t> run_cast(const QuantizeConfig& c, DType dtype, Fp8Format format,
                                     const std::vector<std::uint8_t>& host, std::uint64_t n, std::uint64_t in_off,
                                     std::uint64_t out_off, CastRule rule, std::uint32_t scale,
                                     const ArchInfo* model = nullptr) {
    QuantKernel& k = kernel(*env_, c, dtype, format, {}, {}, model);
    if (model) used_models_.push_back(&k);
    const std::uint32_t bytes = info(dtype).bytes;
    b_->copy_to_device(in_->get(in_off * bytes), host.data(), host.size());
    b_->copy_to_device(scalars_->get(4), &scale, 4);
    b_->memset32_async(out_->get(), 0xa5a5a5a5u, (kMaxN + 64) / 4, nullptr);
    const void* in = in_->get(in_off * bytes);
    unsigned char* out = out_->get<unsigned char>(out_off);
    const float* sp = scalars_->get<float>(4);
    unsigned flags = flags_of(NanMode::propagate, rule);
    void* args[] = {&in, &n, &out, &sp, &flags};
    const std::uint64_t vectors = n / c.nvec + 1;
    const std::uint32_t grid = static_cast<std::uint32_t>(
        std::min<std::uint64_t>((vectors + c.threads * c.unroll - 1) / (c.threads * c.unroll), 4 * cu_));
    b_->launch(k.f, grid, c.threads, nullptr, args);
    b_->synchronize(nullptr);
    std::vector<std::uint8_t> got(n + 2);
    b_->copy_to_host(got.data(), out_->get(out_off), n + 2);
    return got;
  }

  // No handshake of the wave-64 model timed out in the model kernels run since the last call.
  void expect_no_model_faults() {
    DeviceBuffer count(*b_, 4);
    for (QuantKernel* k : used_models_) {
      void* p = count.get();
      void* args[] = {&p};
      b_->launch(k->faults, 1, 1, nullptr, args);
      EXPECT_EQ(read_bits(*b_, count.get()), 0u) << "handshake waits of the wave-64 model timed out";
    }
    used_models_.clear();
  }

  // The barrier's count and accumulator are back at 0 after every launch.
  void expect_sync_reset() {
    std::vector<std::uint32_t> sync(kSlotWords);
    b_->copy_to_host(sync.data(), sync_->get(), 4 * kSlotWords);
    EXPECT_EQ(sync[kQuantizeArrivalWord], 0u) << "arrival count not reset";
    EXPECT_EQ(sync[kQuantizeAccumulatorWord], 0u) << "accumulator not reset";
    for (std::size_t w = 0; w < kSlotWords; ++w)
      if (w != kQuantizePublishedWord) {
        EXPECT_EQ(sync[w], 0u) << "slot word " << w << " not left 0";
      }
  }

  static constexpr std::uint64_t kMaxN = (std::uint64_t{1} << 24) + 3;
  test::GpuEnv* env_ = nullptr;
  Backend* b_ = nullptr;
  std::uint32_t cu_ = 0;
  std::unique_ptr<DeviceBuffer> in_, out_, scalars_, sync_;
  std::vector<QuantKernel*> used_models_;
};

// The one-launch kernels under test: keep with 1 and 8 vectors kept, reread.
std::vector<QuantizeConfig> one_launch_configs(DType dtype) {
  const std::uint32_t nvec = 16 / info(dtype).bytes;
  return {QuantizeConfig{QuantizeKind::keep, 256, nvec, 2, 1, {}},
          QuantizeConfig{QuantizeKind::keep, 512, nvec, 2, 8, {}},
          QuantizeConfig{QuantizeKind::reread, 512, nvec, 4, 0, {}}};
}

}  // namespace

// The integer cast against the hardware conversion over every fp32 pattern (NVIDIA sm_89+), and a
// sample of 2^26 patterns of both against the CPU reference.
TEST_F(QuantizeGpu, IntegerCastEqualsHardwareSatfiniteConversionOnAllFp32Patterns) {
  if (compute_capability(env_->arch) < 89)
    GTEST_SKIP() << "the FP8 conversion instruction needs NVIDIA sm_89+ (" << env_->arch.name << ")";
  for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const std::string cvt = f == Fp8Format::e4m3 ? "e4m3x2" : "e5m2x2";
    const std::string name = std::string("quant_hw_check_") + std::string(info(f).name);
    // Thread i handles patterns i, i + stride, ... of [first, first + count); mismatches are
    // counted and the first few recorded; the patterns of [sample_first, + sample) are written out.
    const std::string extra = "\nextern \"C\" __global__ void " + name +
                              "(unsigned long long first, unsigned long long count, unsigned* mismatches,"
                              " unsigned* sample_soft, unsigned char* sample_hw, unsigned char* sample_soft8,"
                              " unsigned long long sample_count) {\n"
                              "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;"
                              " i < count; i += (unsigned long long)gridDim.x * blockDim.x) {\n"
                              "    const unsigned u = (unsigned)(first + i);\n"
                              "    const unsigned soft = amax_fp8_from_fp32(u, false);\n"
                              "    unsigned short hw2;\n"
                              "    asm(\"cvt.rn.satfinite." + cvt + ".f32 %0, %2, %1;\"\n"
                              "        : \"=h\"(hw2) : \"f\"(__uint_as_float(u)), \"f\"(0.0f));\n"
                              "    const unsigned hw = hw2 & 0xffu;\n"
                              "    if (hw != soft) {\n"
                              "      const unsigned k = atomicAdd(mismatches, 1u);\n"
                              "      if (k < 8) mismatches[1 + k] = u;\n"
                              "    }\n"
                              "    if (i < sample_count) { sample_soft[i] = u; sample_hw[i] = (unsigned char)hw;"
                              " sample_soft8[i] = (unsigned char)soft; }\n"
                              "  }\n}\n";
    const QuantizeConfig c{QuantizeKind::cast, 256, 4, 1, 0, {}};
    QuantKernel& k = kernel(*env_, c, DType::fp32, f, extra, name);
    constexpr std::uint64_t kSample = std::uint64_t{1} << 26;
    DeviceBuffer mism(*b_, 64), s_bits(*b_, kSample * 4), s_hw(*b_, kSample), s_soft(*b_, kSample);
    b_->memset32_async(mism.get(), 0, 16, nullptr);
    std::mt19937_64 rng(std::random_device{}());
    const std::uint64_t sample_first = rng() % ((std::uint64_t{1} << 32) - kSample);
    // The sample first (its own launch), then all 2^32 patterns in four launches of 2^30.
    {
      std::uint64_t first = sample_first, count = kSample, sample = kSample;
      void* p_mism = mism.get();
      void* p_bits = s_bits.get();
      void* p_hw = s_hw.get();
      void* p_soft = s_soft.get();
      void* args[] = {&first, &count, &p_mism, &p_bits, &p_hw, &p_soft, &sample};
      b_->launch(k.f, 8 * cu_, 512, nullptr, args);
    }
    for (std::uint64_t q = 0; q < 4; ++q) {
      std::uint64_t first = q << 30, count = std::uint64_t{1} << 30, sample = 0;
      void* p_mism = mism.get();
      void* p_null = nullptr;
      void* args[] = {&first, &count, &p_mism, &p_null, &p_null, &p_null, &sample};
      b_->launch(k.f, 16 * cu_, 512, nullptr, args);
    }
    b_->synchronize(nullptr);
    std::uint32_t m[9];
    b_->copy_to_host(m, mism.get(), sizeof m);
    // (A mismatch in the sample counts twice: the sweep covers the sample's patterns too.)
    EXPECT_EQ(m[0], 0u) << info(f).name << ": the integer cast differs from cvt.rn.satfinite; first patterns 0x"
                        << std::hex << m[1] << " 0x" << m[2] << " 0x" << m[3];
    std::vector<std::uint32_t> bits(kSample);
    std::vector<std::uint8_t> hw(kSample), soft(kSample);
    b_->copy_to_host(bits.data(), s_bits.get(), kSample * 4);
    b_->copy_to_host(hw.data(), s_hw.get(), kSample);
    b_->copy_to_host(soft.data(), s_soft.get(), kSample);
    for (std::uint64_t i = 0; i < kSample; ++i) {
      ASSERT_EQ(bits[i], static_cast<std::uint32_t>(sample_first + i));
      const std::uint8_t want = fp8_from_fp32_bits(bits[i], f, CastRule::transformer_engine);
      ASSERT_EQ(hw[i], want) << info(f).name << " hardware, pattern 0x" << std::hex << bits[i];
      ASSERT_EQ(soft[i], want) << info(f).name << " integer cast, pattern 0x" << std::hex << bits[i];
    }
    std::printf("quantize: %s integer cast == cvt.rn.satfinite on all 2^32 fp32 patterns; 2^26 of them (from 0x%llx) "
                "== the CPU reference\n",
                std::string(info(f).name).c_str(), static_cast<unsigned long long>(sample_first));
  }
}

// The two-launch path's cast kernel: random and adversarial inputs of every kind, random scales,
// every format and rule, sizes and both pointers' offsets.
TEST_F(QuantizeGpu, CastKernelBytesEqualTheReference) {
  std::mt19937_64 rng(std::random_device{}());
  int checked = 0;
  for (const auto& d : all_dtypes())
    for (Fp8Format f : kAllFormats) {
      const std::uint32_t nvec = 16 / d.bytes;
      for (const QuantizeConfig& c : {QuantizeConfig{QuantizeKind::cast, 256, nvec, 4, 0, {}},
                                      QuantizeConfig{QuantizeKind::cast, 1024, 1, 1, 0, {}}}) {
        for (int i = 0; i < 10; ++i) {
          const RandomCase rc = draw_case(rng, d.dtype, f, i == 0 ? 1 : i < 5 ? 5000 : i < 9 ? 1u << 20 : kMaxN);
          const std::uint32_t scale =
              reference_scale_bits(reference_amax_bits(rc.host.data(), d.dtype, rc.n, rc.mode), rc.r).scale;
          const std::vector<std::uint8_t> got = run_cast(c, d.dtype, f, rc.host, rc.n, rc.in_off, rc.out_off, rc.rule,
                                                         scale);
          std::vector<std::uint8_t> want(rc.n + 2, 0xa5);
          reference_quantize(rc.host.data(), d.dtype, rc.n, scale, f, rc.rule, want.data());
          ASSERT_EQ(first_difference(got, want, rc.host, d.dtype), "")
              << c.label() << " " << d.name << " -> " << info(f).name << " " << rc.describe() << " scale=0x"
              << std::hex << scale;
          ++checked;
        }
      }
    }
  std::printf("quantize: cast kernel, %d runs of every dtype x format bit-exact (random kinds, sizes, offsets, "
              "rules)\n",
              checked);
}

// The one-launch kernels on inputs with one special amax (scale_cases' cases: amax 0, below
// epsilon, +Inf, NaN in both modes, denormal amaxes, ...): amax, scale, scale_inv and every byte.
TEST_F(QuantizeGpu, OneLaunchSpecialAmaxBitExact) {
  int checked = 0;
  struct Special {
    const char* what;
    std::uint32_t amax_bits;  // sign-cleared, placed negated at the last element
    float epsilon;
    bool nan_propagates;
    NanMode mode;
  };
  const Special cases[] = {
      {"amax 0", 0u, 0.0f, false, NanMode::propagate},
      {"amax 0 below epsilon", 0u, 0.5f, false, NanMode::propagate},
      {"amax 2^-10 below epsilon", 0x3a800000u, 0.5f, false, NanMode::propagate},
      {"amax 3", 0x40400000u, 0.0f, false, NanMode::propagate},
      {"amax +Inf", 0x7f800000u, 0.0f, false, NanMode::propagate},
      {"NaN, propagate, TE rule", 0x7fc00000u, 0.0f, false, NanMode::propagate},
      {"NaN, propagate, nan_propagates", 0x7fc00000u, 0.0f, true, NanMode::propagate},
      {"NaN, ignore", 0x7fc00000u, 0.0f, false, NanMode::ignore},
      {"denormal amax 2^-133 (the scale overflows to FLT_MAX)", 0x00010000u, 0.0f, false, NanMode::propagate},
      {"amax 2^-24 (fp16's smallest denormal)", 0x33800000u, 0.0f, false, NanMode::propagate},
  };
  for (const auto& d : all_dtypes())
    for (const QuantizeConfig& c : one_launch_configs(d.dtype))
      for (Fp8Format f : kAllFormats)
        for (std::uint64_t n : {std::uint64_t{1000}, (std::uint64_t{1} << 20) + 3})
          for (const Special& sc : cases) {
            if (d.dtype == DType::fp16 && sc.amax_bits == 0x00010000u) continue;  // below fp16's denormals
            // n elements: a ramp of fractions of the special amax (alternating signs; for an
            // infinite or NaN amax, of 1; for amax 0, zeros), so that the cast has work, and the
            // special amax itself, negated, at the last element.
            const float a = std::bit_cast<float>(sc.amax_bits);
            const float top = std::isfinite(a) ? a : 1.0f;
            std::vector<std::uint8_t> host(n * d.bytes);
            for (std::uint64_t i = 0; i + 1 < n; ++i)
              put(host, d.dtype, i, (i % 2 ? -top : top) * static_cast<float>(i % 1024) / 1024.0f);
            put(host, d.dtype, n - 1, -a);
            const ScaleRule r{info(f).max_finite, sc.epsilon, false, sc.nan_propagates};
            for (CastRule rule : kBothRules) {
              const Outputs o = run_one_launch(c, d.dtype, f, host, n, 0, 0, sc.mode, rule, r);
              ASSERT_TRUE(matches_reference(o, host, d.dtype, n, f, sc.mode, rule, r))
                  << c.label() << " " << d.name << " -> " << info(f).name << " " << to_string(rule) << " n=" << n
                  << ": " << sc.what;
              ++checked;
            }
          }
  expect_sync_reset();
  std::printf("quantize: one launch, %d special-amax cases bit-exact (amax, scale, scale_inv, every byte)\n", checked);
}

// The one-launch kernels on random inputs of every kind: sizes up to 2^24 + 3, misaligned input and
// output, both NaN modes and rules, random rules, grids from their own to 3 blocks (keep then
// re-reads what its registers do not hold), each run twice in a row (the barrier's words).
TEST_F(QuantizeGpu, OneLaunchRandomInputsBitExact) {
  std::mt19937_64 rng(std::random_device{}());
  int checked = 0;
  for (const auto& d : all_dtypes())
    for (const QuantizeConfig& c : one_launch_configs(d.dtype))
      for (Fp8Format f : kAllFormats)
        for (int i = 0; i < 8; ++i) {
          const RandomCase rc = draw_case(rng, d.dtype, f, i == 0 ? 1 : i < 4 ? 5000 : i < 7 ? 1u << 20 : kMaxN);
          const std::uint32_t grid = i % 3 == 2 ? 3 : 0;
          for (int rep = 0; rep < 2; ++rep) {
            const Outputs o = run_one_launch(c, d.dtype, f, rep == 0 ? rc.host : std::vector<std::uint8_t>{}, rc.n,
                                             rc.in_off, rc.out_off, rc.mode, rc.rule, rc.r, grid);
            ASSERT_TRUE(matches_reference(o, rc.host, d.dtype, rc.n, f, rc.mode, rc.rule, rc.r))
                << c.label() << " " << d.name << " -> " << info(f).name << " " << rc.describe() << " grid=" << grid
                << " run " << rep + 1;
            ++checked;
          }
        }
  expect_sync_reset();
  std::printf("quantize: one launch, %d random runs bit-exact (keep 1 and 8, reread; sizes to 2^24 + 3)\n", checked);
}

// The AMD targets' quantize kernels in the wave-64 model (an NVIDIA GPU; one AMD wave is two warps
// exchanging through shared memory): gfx942's (the fnuz formats) and gfx950's (the OCP formats)
// cast and one-launch kernels, rendered for AMD with only the prelude swapped
// (wave64::model_source), bit-exact on random inputs with forced small grids too, and no handshake
// of the model timed out.
TEST_F(QuantizeGpu, AmdKernelsInTheWave64ModelBitExact) {
  if (env_->arch.vendor != Vendor::nvidia) GTEST_SKIP() << "the wave-64 model runs on NVIDIA GPUs";
  std::mt19937_64 rng(std::random_device{}());
  int checked = 0;
  const struct {
    const char* arch;
    Fp8Format formats[2];
  } targets[] = {{"gfx942", {Fp8Format::e4m3fnuz, Fp8Format::e5m2fnuz}},
                 {"gfx950", {Fp8Format::e4m3, Fp8Format::e5m2}}};
  for (const auto& t : targets) {
    const ArchInfo amd = ArchInfo::parse(t.arch);
    for (const auto& d : all_dtypes())
      for (Fp8Format f : t.formats) {
        std::vector<QuantizeConfig> configs = one_launch_configs(d.dtype);
        configs.push_back(QuantizeConfig{QuantizeKind::cast, 256, 16 / d.bytes, 4, 0, {}});
        for (const QuantizeConfig& c : configs)
          for (int i = 0; i < 4; ++i) {
            const RandomCase rc = draw_case(rng, d.dtype, f, i == 0 ? 5000 : i < 3 ? 1u << 20 : kMaxN);
            const std::string where = std::string(t.arch) + " model: " + c.label() + " " + std::string(d.name) +
                                      " -> " + std::string(info(f).name) + " " + rc.describe();
            if (c.kind == QuantizeKind::cast) {
              const std::uint32_t scale =
                  reference_scale_bits(reference_amax_bits(rc.host.data(), d.dtype, rc.n, rc.mode), rc.r).scale;
              const std::vector<std::uint8_t> got =
                  run_cast(c, d.dtype, f, rc.host, rc.n, rc.in_off, rc.out_off, rc.rule, scale, &amd);
              std::vector<std::uint8_t> want(rc.n + 2, 0xa5);
              reference_quantize(rc.host.data(), d.dtype, rc.n, scale, f, rc.rule, want.data());
              ASSERT_EQ(first_difference(got, want, rc.host, d.dtype), "") << where;
            } else {
              const std::uint32_t grid = i == 2 ? 3 : 0;
              const Outputs o = run_one_launch(c, d.dtype, f, rc.host, rc.n, rc.in_off, rc.out_off, rc.mode, rc.rule,
                                               rc.r, grid, &amd);
              ASSERT_TRUE(matches_reference(o, rc.host, d.dtype, rc.n, f, rc.mode, rc.rule, rc.r))
                  << where << " grid=" << grid;
            }
            ++checked;
          }
        expect_no_model_faults();
      }
  }
  expect_sync_reset();
  std::printf("quantize: %d runs of the gfx942 and gfx950 kernels in the wave-64 model bit-exact\n", checked);
}
