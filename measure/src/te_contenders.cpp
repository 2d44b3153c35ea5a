#include "amax/te_contenders.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "amax/scale_rule.hpp"

namespace amax::bench {

namespace {
constexpr std::array kSequences{TeSequence::zero_kernel, TeSequence::memset, TeSequence::rocm_two_stage};
constexpr std::uint32_t kThreads = 512;        // amax_kernel_threads
constexpr std::uint64_t kMaxBlocks = 65535;    // launch_amax_kernel's max_blocks
constexpr std::uint32_t kFinalThreads = 256;   // ROCm's FINAL_REDUCE_THREADS

std::string entry(const char* prefix, DType d, bool aligned) {
  return std::string(prefix) + std::string(to_string(d)) + (aligned ? "_aligned" : "_unaligned");
}
}  // namespace

std::span<const TeSequence> all_te_sequences() noexcept { return kSequences; }

std::string_view contender_name(TeSequence s) noexcept {
  switch (s) {
    case TeSequence::zero_kernel: return "TE atomic (zero kernel)";
    case TeSequence::memset: return "TE atomic (memset)";
    case TeSequence::rocm_two_stage: return "ROCm TE two-stage";
  }
  return "?";
}

TeLaunch te_launch(DType dtype, std::uintptr_t in, std::uint64_t n) noexcept {
  TeLaunch l;
  const std::uint32_t bytes = info(dtype).bytes;
  l.nvec = 32 / bytes;
  const std::uint64_t misalignment = (in % 32) / bytes;  // in elements
  l.aligned = in % 32 == 0 && n % l.nvec == 0;
  if (n == 0) return l;
  l.vectors = (n + misalignment + l.nvec - 1) / l.nvec;
  l.grid = static_cast<std::uint32_t>(std::min<std::uint64_t>((l.vectors + kThreads - 1) / kThreads, kMaxBlocks));
  return l;
}

std::vector<std::string> te_kernel_names() {
  std::vector<std::string> out;
  for (const auto& d : all_dtypes())
    for (bool aligned : {true, false}) {
      out.push_back(entry("amax_te_", d.dtype, aligned));
      out.push_back(entry("amax_rocm_te_", d.dtype, aligned));
    }
  out.push_back("amax_te_zero");
  out.push_back("amax_rocm_te_final_reduce");
  out.push_back("amax_te_scale_from_amax");
  return out;
}

TeKernels::TeKernels(const Module& m) {
  for (const auto& d : all_dtypes())
    for (bool aligned : {true, false}) {
      te_[static_cast<int>(d.dtype)][aligned] = m.function(entry("amax_te_", d.dtype, aligned));
      rocm_[static_cast<int>(d.dtype)][aligned] = m.function(entry("amax_rocm_te_", d.dtype, aligned));
    }
  zero_ = m.function("amax_te_zero");
  final_reduce_ = m.function("amax_rocm_te_final_reduce");
  scale_ = m.function("amax_te_scale_from_amax");
}

float te_scale_from_amax(float amax, float max_fp8, bool force_pow2, float epsilon) noexcept {
  // The shared CPU reference of the rule (TE's defaults: a NaN amax gives 1).
  const ScaleRule rule{max_fp8, epsilon, force_pow2, false};
  return std::bit_cast<float>(reference_scale_bits(std::bit_cast<std::uint32_t>(amax), rule).scale);
}

void TeKernels::launch_scale(Backend& b, const float* amax, float* scale, float max_fp8, bool force_pow2,
                             float epsilon, StreamHandle stream) const {
  const float* noop = nullptr;
  void* args[] = {&amax, &scale, &max_fp8, &force_pow2, &epsilon, &noop};
  b.launch(scale_, 1, 1, stream, args);
}

void TeKernels::launch(Backend& b, TeSequence s, DType dtype, const void* in, std::uint64_t n, float* out,
                       float* workspace, StreamHandle stream) const {
  const float* noop = nullptr;
  if (s == TeSequence::zero_kernel) {
    void* zargs[] = {&out, &noop};
    b.launch(zero_, 1, 1, stream, zargs);
  } else {
    b.memset32_async(out, 0u, 1, stream);
  }
  if (n == 0) return;
  const TeLaunch l = te_launch(dtype, reinterpret_cast<std::uintptr_t>(in), n);
  unsigned long long count = n, vectors = l.vectors;
  const int d = static_cast<int>(dtype);
  if (s != TeSequence::rocm_two_stage) {
    void* args[] = {&in, &out, &count, &vectors, &noop};
    b.launch(te_[d][l.aligned], l.grid, kThreads, stream, args);
    return;
  }
  void* args[] = {&in, &out, &workspace, &count, &vectors};
  b.launch(rocm_[d][l.aligned], l.grid, kThreads, stream, args);
  int blocks = static_cast<int>(l.grid);
  void* fargs[] = {&workspace, &out, &blocks};
  b.launch(final_reduce_, 1, kFinalThreads, stream, fargs);
}

namespace {
constexpr Fp8Format kCastFormats[] = {Fp8Format::e4m3, Fp8Format::e5m2};
constexpr const char* kCastForms[] = {"aligned", "unaligned", "scalar"};
std::string cast_entry(DType d, Fp8Format f, int form) {
  return "amax_te_cast_" + std::string(to_string(d)) + "_" + std::string(info(f).name) + "_" + kCastForms[form];
}
}  // namespace

bool te_cast_supports(Fp8Format format) noexcept {
  return format == Fp8Format::e4m3 || format == Fp8Format::e5m2;
}

TeCastLaunch te_cast_launch(DType dtype, std::uintptr_t in, std::uintptr_t out, std::uint64_t n) noexcept {
  TeCastLaunch l;
  const std::uint32_t bytes = info(dtype).bytes, nvec = 32 / bytes;
  // CheckAlignment compares each pointer's offset from its own vector size, in bytes.
  const std::uint64_t in_off = in % (nvec * bytes), out_off = out % nvec;
  const std::uint64_t vectors = (n + in_off / bytes + nvec - 1) / nvec;  // get_num_aligned_elements
  if (in_off != out_off) {
    l.nvec = 1, l.form = TeCastForm::scalar, l.aligned_elements = n;
  } else {
    l.nvec = nvec;
    l.form = in_off == 0 && n % nvec == 0 ? TeCastForm::aligned : TeCastForm::unaligned;
    l.aligned_elements = vectors;
  }
  if (n == 0) return l;
  // The grid follows the vectors in every form: the nvec-1 kernel strides over n with it.
  l.grid = static_cast<std::uint32_t>(std::min<std::uint64_t>((vectors + kThreads - 1) / kThreads, kMaxBlocks));
  return l;
}

std::vector<std::string> te_cast_kernel_names() {
  std::vector<std::string> out;
  for (const auto& d : all_dtypes())
    for (Fp8Format f : kCastFormats)
      for (int form = 0; form < 3; ++form) out.push_back(cast_entry(d.dtype, f, form));
  return out;
}

TeQuantizeKernels::TeQuantizeKernels(const Module& m, const std::string& arch) {
  try {
    (void)m.function(cast_entry(DType::bf16, Fp8Format::e4m3, 0));
  } catch (const BackendError&) {
    throw std::runtime_error("TransformerEngine's FP8 cast contender needs the FP8 conversion instruction of NVIDIA "
                             "sm_89 or newer; this device is " + arch);
  }
  for (const auto& d : all_dtypes())
    for (int f = 0; f < 2; ++f)
      for (int form = 0; form < 3; ++form)
        cast_[static_cast<int>(d.dtype)][f][form] = m.function(cast_entry(d.dtype, kCastFormats[f], form));
}

void TeQuantizeKernels::launch_cast(Backend& b, DType dtype, Fp8Format format, const void* in, std::uint64_t n,
                                    unsigned char* out, const float* scale, float* scale_inv,
                                    StreamHandle stream) const {
  if (!te_cast_supports(format))
    throw std::invalid_argument("TransformerEngine's cast contender has no " + std::string(info(format).name) +
                                " kernel (e4m3 and e5m2 only)");
  const TeCastLaunch l =
      te_cast_launch(dtype, reinterpret_cast<std::uintptr_t>(in), reinterpret_cast<std::uintptr_t>(out), n);
  if (n == 0) return;
  const float* noop = nullptr;
  float* amax = nullptr;  // quantize_impl clears the output's amax before the cast
  unsigned long long count = n, m = l.aligned_elements;
  void* args[] = {&in, &noop, &out, &scale, &amax, &scale_inv, &count, &m};
  b.launch(cast_[static_cast<int>(dtype)][format == Fp8Format::e5m2][static_cast<int>(l.form)], l.grid, kThreads,
           stream, args);
}

void TeQuantizeKernels::launch_quantize(Backend& b, const TeKernels& te, DType dtype, Fp8Format format,
                                        const void* in, std::uint64_t n, unsigned char* out, float* amax,
                                        float* scale, float* scale_inv, StreamHandle stream) const {
  te.launch(b, TeSequence::zero_kernel, dtype, in, n, amax, nullptr, stream);
  te.launch_scale(b, amax, scale, info(format).max_finite, false, 0.f, stream);
  launch_cast(b, dtype, format, in, n, out, scale, scale_inv, stream);
}

}  // namespace amax::bench
