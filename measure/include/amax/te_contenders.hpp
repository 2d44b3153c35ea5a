#pragma once
// TransformerEngine's amax, as contenders of `amax-tune bench`: the launch sequences of TE's
// nvte_compute_amax (NVIDIA main, older NVIDIA and ROCm with NVTE_USE_ATOMIC_AMAX=1, ROCm's
// default two-stage) around kernels written in this project from TE's published source
// (templates/bench_kernels.h says what each kernel copies and from which commit). The host side
// here copies launch_amax_kernel: the alignment check, the grid and the zeroing of the output.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amax/backend.hpp"
#include "amax/dtype.hpp"
#include "amax/scale_rule.hpp"

namespace amax::bench {

/// One of TE's launch sequences for one amax.
enum class TeSequence : std::uint8_t {
  /// "TE atomic (zero kernel)": NVIDIA TE main (2026): zero_amax_kernel<<<1, 1>>> zeroes the
  /// output, then amax_kernel, one atomicMax per block. Two launches.
  zero_kernel,
  /// "TE atomic (memset)": NVIDIA TE before the zero kernel (commits 0064fbd645a9, e9a0581d5a81)
  /// and ROCm TE with NVTE_USE_ATOMIC_AMAX=1: cudaMemsetAsync of the output, then amax_kernel.
  memset,
  /// "ROCm TE two-stage": ROCm TE's default: cudaMemsetAsync of the output, amax_kernel writing
  /// each block's maximum to a workspace, then amax_final_reduce<256> (one block). Three operations.
  rocm_two_stage,
};

/// The three sequences, in the order above.
std::span<const TeSequence> all_te_sequences() noexcept;

/// The contender's name in the bench's tables and CSV ("TE atomic (zero kernel)", ...).
std::string_view contender_name(TeSequence s) noexcept;

/// How TE launches amax_kernel for n elements of `dtype` at device address `in`
/// (launch_amax_kernel with CheckAlignment and get_num_aligned_elements). Pure; thread-safe.
struct TeLaunch {
  std::uint32_t nvec = 0;      ///< elements per 32-byte vector: 8 (fp32) or 16 (fp16, bf16)
  bool aligned = false;        ///< in % 32 == 0 and n % nvec == 0: every vector loaded whole
  std::uint64_t vectors = 0;   ///< ceil((n + (in % 32) / element bytes) / nvec)
  std::uint32_t grid = 0;      ///< min(ceil(vectors / 512), 65535) blocks of 512 threads; 0 when n == 0
};
TeLaunch te_launch(DType dtype, std::uintptr_t in, std::uint64_t n) noexcept;

/// Workspace of rocm_two_stage: one float per block of the largest grid (65535 blocks).
inline constexpr std::size_t kTeWorkspaceBytes = 65535 * 4;

/// Names of the TE kernels in the reference kernels' module (render_reference_kernels): per dtype
/// amax_te_<dtype>_{aligned,unaligned} and amax_rocm_te_<dtype>_{aligned,unaligned}, then
/// amax_te_zero, amax_rocm_te_final_reduce and amax_te_scale_from_amax.
std::vector<std::string> te_kernel_names();

/// TE's compute_scale_from_amax (recipe_common.cuh, commit 01c24fe0c2db) on the CPU: amax below
/// `epsilon` becomes epsilon; an infinite, zero or NaN amax gives 1; else max_fp8 / amax rounded
/// to nearest, an infinite quotient replaced by the largest finite fp32 (value_for_inf as TE's
/// nvte_compute_scale_from_amax passes it); `force_pow2` clears the mantissa. The reference the
/// scale kernel is checked against. Thread-safe.
float te_scale_from_amax(float amax, float max_fp8, bool force_pow2, float epsilon) noexcept;

/// The TE kernels of one loaded reference module.
class TeKernels {
 public:
  /// Looks up every entry point of te_kernel_names() in `reference_module` (which must outlive
  /// this object). Errors: BackendError when one is missing.
  explicit TeKernels(const Module& reference_module);

  /// Enqueues amax of n elements at `in` (element-aligned device memory) into the fp32 at `out`
  /// on `stream` with sequence `s`, exactly as TE launches it: the output zeroed first; for
  /// n == 0 only that. `workspace`: kTeWorkspaceBytes of device memory (rocm_two_stage only; any
  /// content). NaNs in the input are skipped (fmaxf semantics). Never synchronises.
  /// Errors: BackendError from a launch.
  void launch(Backend& backend, TeSequence s, DType dtype, const void* in, std::uint64_t n, float* out,
              float* workspace, StreamHandle stream) const;

  /// Enqueues TE's compute_scale_from_amax_kernel<<<1, 1>>>: reads the fp32 at `amax` and writes
  /// te_scale_from_amax(*amax, ...) to `scale` (both device memory). After launch(zero_kernel),
  /// TE's three-launch amax -> scale step of FP8 current scaling. Errors: BackendError.
  void launch_scale(Backend& backend, const float* amax, float* scale, float max_fp8, bool force_pow2, float epsilon,
                    StreamHandle stream) const;

 private:
  FunctionHandle te_[3][2]{};    // [dtype][aligned]
  FunctionHandle rocm_[3][2]{};  // [dtype][aligned]
  FunctionHandle zero_ = nullptr;
  FunctionHandle final_reduce_ = nullptr;
  FunctionHandle scale_ = nullptr;
};

/// The contender name of TE's current-scaling quantize in `amax-tune bench --quantize`: the zero
/// kernel, amax kernel, compute_scale_from_amax kernel and the FP8 cast (TeQuantizeKernels).
inline constexpr const char* kTeQuantize = "TE current scaling (4 launches)";

/// Which of TE's cast kernels VectorizedUnaryKernelLauncher picks (templates/bench_kernels.h):
/// input and output both vector-aligned and n a multiple of nvec; equally misaligned (in bytes);
/// or differently aligned (nvec 1 over the n elements). TE compares byte offsets, so an input and
/// an output misaligned by the same bytes but a different count of elements get the unaligned
/// kernel, whose loader and storer then shift by different element counts and misplace bytes; TE's
/// tensors are allocated aligned, so no caller meets it, and the bench's pointers are aligned.
enum class TeCastForm : std::uint8_t { aligned, unaligned, scalar };

/// How TE launches its FP8 cast of n elements of `dtype` from device address `in` to `out`
/// (CastVectorizedUnaryKernelLauncher: nvec = 32 / element bytes; CheckAlignment,
/// get_num_aligned_elements, 512 threads, at most 65535 blocks). Pure; thread-safe.
struct TeCastLaunch {
  std::uint32_t nvec = 0;            ///< elements per vector of the form launched (1 for scalar)
  TeCastForm form = TeCastForm::aligned;
  std::uint64_t aligned_elements = 0;  ///< the loop's bound M (n for scalar)
  /// min(ceil(vectors / 512), 65535), vectors = get_num_aligned_elements at nvec 32 / element
  /// bytes also for the nvec-1 form (the launcher computes it once); 0 when n == 0 (nothing launched)
  std::uint32_t grid = 0;
};
TeCastLaunch te_cast_launch(DType dtype, std::uintptr_t in, std::uintptr_t out, std::uint64_t n) noexcept;

/// The FP8 formats TE's cast contender is compiled for (NVIDIA's OCP formats): e4m3, e5m2.
bool te_cast_supports(Fp8Format format) noexcept;

/// Names of TE's cast kernels in the reference kernels' module where it has them (NVIDIA sm_89+):
/// amax_te_cast_<dtype>_<format>_{aligned,unaligned,scalar} for every dtype and te_cast_supports format.
std::vector<std::string> te_cast_kernel_names();

/// TE's FP8 cast kernels of one loaded reference module, and its current-scaling quantize.
class TeQuantizeKernels {
 public:
  /// Looks up te_cast_kernel_names() in `reference_module` (which must outlive this object).
  /// Errors: std::runtime_error naming `arch` where the module has none (they need NVIDIA sm_89+'s
  /// FP8 conversion instruction); BackendError when only some are missing.
  TeQuantizeKernels(const Module& reference_module, const std::string& arch);

  /// Enqueues TE's cast of n elements at `in` to n FP8 bytes at `out` with the fp32 scale at
  /// `scale` (device memory), writing 1 / scale (rcp.rn) to `scale_inv`, as TE launches it
  /// (te_cast_launch); no amax. Nothing for n == 0. Errors: std::invalid_argument for a format
  /// te_cast_supports refuses; BackendError.
  void launch_cast(Backend& backend, DType dtype, Fp8Format format, const void* in, std::uint64_t n, unsigned char* out,
                   const float* scale, float* scale_inv, StreamHandle stream) const;

  /// Enqueues TE's current-scaling quantize (quantize_impl): `te`'s zero kernel and amax kernel
  /// into `amax`, compute_scale_from_amax (the format's max, epsilon 0) into `scale`, then
  /// launch_cast. Four launches. Errors: as launch_cast.
  void launch_quantize(Backend& backend, const TeKernels& te, DType dtype, Fp8Format format, const void* in,
                       std::uint64_t n, unsigned char* out, float* amax, float* scale, float* scale_inv,
                       StreamHandle stream) const;

 private:
  FunctionHandle cast_[3][2][3]{};  // [dtype][format][form]
};

}  // namespace amax::bench
