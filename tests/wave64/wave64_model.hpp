#pragma once
// The wave-64 model (docs/amd.md, "The wave-64 model"): the kernels the AMD targets get, rendered by
// the generator for AMD and run on an NVIDIA GPU through NVRTC with templates/prelude_wave64.h in
// place of prelude_hip.h, so that one AMD wave is two warps exchanging through shared memory. This
// library is the model's set (which kernels, which launch parameters), its sources, and the
// reference over large inputs that the GPU test compares with.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amax/arch.hpp"
#include "amax/binary_cache.hpp"
#include "amax/compiler.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"

namespace amax::wave64 {

/// An AMD device the model launches for: its processor and the CUs the grid caps are computed for.
struct ModelDevice {
  std::string_view processor;  ///< "gfx942"
  std::uint32_t cu_count;      ///< 304 (MI300X), 256 (MI355X)
  std::string_view product;
};
/// gfx942 as the MI300X (304 CUs: AMD Instinct MI300X data sheet) and gfx950 as the MI355X (256 CUs:
/// AMD Instinct MI355X data sheet). The first is the device every case launches for; the second
/// adds the grid-cap sizes of each variant under its own CU count.
inline constexpr ModelDevice kModelDevices[] = {{"gfx942", 304, "MI300X"}, {"gfx950", 256, "MI355X"}};

/// The NVIDIA target the model compiles for (the H200's).
ArchInfo model_target();

/// One compiled single-tensor kernel of the model and the full configs (grid caps) it launches as.
struct SingleKernel {
  KernelConfig kernel;                ///< the compile-time part
  DType dtype{};
  std::vector<KernelConfig> variants;  ///< every config of the set with this compile-time part
};
/// One compiled multi-tensor (list) kernel and its variants (chunk size, grid cap, combine).
struct MultiKernel {
  MultiConfig kernel;  ///< the compile-time part
  DType dtype{};
  std::uint32_t capacity = 0;  ///< descriptors per launch (multi_capacities of the AMD arch)
  std::vector<MultiConfig> variants;
};
struct ModelSet {
  std::vector<SingleKernel> singles;
  std::vector<MultiKernel> multis;
  std::size_t single_variants() const;
  std::size_t multi_variants() const;
};

/// The kernels the AMD targets (kModelDevices) get, every dtype: the union of the pruned spaces of
/// gfx942 and gfx950, each config also with the scale epilogue where it has one; the built-in
/// default (builtin_default) as every strategy AMD runs (AMAX_TUNE_FORCE_STRATEGY's configs) and
/// what amax_and_scale runs for each (fused_variant); the pruned list spaces with both epilogues and
/// the built-in list defaults (builtin_multi_default, both combines). Errors: std::logic_error when
/// a config of the set is not valid for an AMD arch. Deterministic order.
ModelSet model_set();

/// `amd_source` (a source rendered for AMD: render_source, render_multi_source) with the AMD prelude
/// replaced by the model's. Errors: std::logic_error when the AMD prelude is not in it exactly once.
std::string model_source(const std::string& amd_source);
/// The model sources of a single-tensor and a list kernel.
std::string model_source(const KernelConfig& kernel, DType dtype);
std::string model_source(const MultiConfig& kernel, DType dtype, std::uint32_t capacity);
/// The model's prelude: templates/prelude_wave64.h, then prelude_cuda.h's memory and arithmetic
/// operations (each after a #line naming its file). Errors: std::logic_error when prelude_cuda.h
/// no longer has them where the model cuts them out.
const std::string& model_prelude();
/// The kernel that reads and zeroes a model module's count of handshake timeouts (one unsigned).
inline constexpr std::string_view kFaultKernel = "amax_wave64_take_faults";

/// One program of the model: its source and a name for diagnostics.
struct ModelProgram {
  std::string name;
  std::string source;
};
/// The programs of `set`: its single-tensor kernels, then its list kernels, in the set's order.
std::vector<ModelProgram> model_programs(const ModelSet& set);
/// One program compiled for model_target(): the code object and log, or the error.
struct ModelBinary {
  CachedBinary code;
  std::string error;  ///< empty when compiled
  bool from_cache = false;
};
/// Compiles `programs` for `arch` (an NVIDIA target of sm_70 or later: model_target() without a
/// GPU, the device's own on one) through `cache` on `threads` threads (at least 1). Thread-safe;
/// needs no GPU.
std::vector<ModelBinary> compile_model(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                                       std::span<const ModelProgram> programs, unsigned threads);

/// The kernel the control runs broken (break_wave_reduce) and intact: a one_pass of 4 waves per
/// block whose grid-cap sizes stay small.
inline constexpr KernelConfig kControl{Strategy::one_pass, 256, 4, 1, BlockCap::per_cu(2)};
inline constexpr DType kControlDtype = DType::fp32;

/// `source` with the wave reduction's offsets stopping at 16 (a template written for 32 lanes): the
/// control that the model must fail. Errors: std::logic_error when amax_wave_reduce's loop is not
/// in it exactly once.
std::string break_wave_reduce(const std::string& source);

/// The reference amax over ranges of a large host array: reference_amax_bits of
/// measure/include/amax/reference.hpp on every block of kBlock elements and every superblock of
/// kSuper blocks, precomputed for both NaN modes, so that a range is the unsigned max of the
/// reference over its pieces (the reference's results are sign-cleared fp32 bits or the canonical
/// NaN, so their max is the reference of the union). Elements changed after construction
/// ("dirty": planted values) must be named to range(): their blocks are computed from the array.
class RangeReference {
 public:
  static constexpr std::uint64_t kBlock = 1024, kSuper = 1024;
  /// Precomputes over `data` (n elements of `dtype`, host memory that outlives this object) on
  /// `threads` threads.
  RangeReference(const std::uint8_t* data, DType dtype, std::uint64_t n, unsigned threads);
  /// reference_amax_bits over elements [lo, hi) as `data` holds them now; `dirty`: every element
  /// index whose value differs from construction time (any order).
  std::uint32_t range(std::uint64_t lo, std::uint64_t hi, NanMode mode, std::span<const std::uint64_t> dirty) const;

 private:
  const std::uint8_t* data_;
  DType dtype_;
  std::uint64_t n_;
  std::vector<std::uint32_t> block_[2], super_[2];
};

}  // namespace amax::wave64
