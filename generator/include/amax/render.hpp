#pragma once
// Rendering: one config + dtype + vendor -> one self-contained kernel source string.
#include <cstdint>
#include <string>
#include <string_view>

#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"

namespace amax {

/// Version of the generator (the project version); recorded in rendered sources and the DB.
std::string_view generator_version() noexcept;

/// 16 hex digits: FNV-1a 64 over the template files variants are rendered from (the preludes and
/// amax_kernels.h; not amax_multi_kernels.h nor the quantize family's templates, see
/// multi_template_hash and quantize_template_hash; the tuner's reference kernels are not embedded
/// here) as built into this binary. Changes whenever one of them changes; recorded with every
/// tuning row so that rows made from other templates are recognised as stale. Thread-safe.
const std::string& template_hash();

/// Blocks per SM that the kernel's launch bounds promise (NVIDIA): the largest count whose
/// register share still holds the thread's vectors in flight, at most 2048 / threads, at least 1.
std::uint32_t min_blocks_per_sm(const KernelConfig& config, DType dtype);

/// The element type's #defines every kernel source starts with: AMAX_ELEM_BYTES, the
/// AMAX_DTYPE_* values, AMAX_DTYPE, AMAX_ELEM_INF, AMAX_FP32_INF, AMAX_FP32_QNAN. Thread-safe.
std::string dtype_defines(DType dtype);
/// The AMAX_EPILOGUE_* values and `#define AMAX_EPILOGUE` of `epilogue`. Thread-safe.
std::string epilogue_defines(Epilogue epilogue);

/// The kernel source for `config` (its compile-time fields), `dtype` and `vendor`: a comment
/// naming the kernel label, dtype, vendor, template hash and generator version; the compile-time
/// constants; the vendor prelude; the vendor-neutral kernel bodies. It includes no file.
/// Entry points: kernel_name(config, dtype) and, for two_stage, finish_kernel_name(config, dtype),
/// both extern "C" with the signatures documented in templates/amax_kernels.h.
/// The config should be valid for the target (validate()); an invalid one still renders but may
/// not compile. Thread-safe.
std::string render_source(const KernelConfig& config, DType dtype, Vendor vendor);

/// The vendor prelude (templates/prelude_cuda.h or prelude_hip.h) that rendered sources carry
/// after their compile-time constants: the vendor's types, intrinsics and launch bounds, after a
/// `#line 1 "prelude_cuda.h"` (or `prelude_hip.h`) so that compiler messages name the file.
/// Thread-safe.
std::string vendor_prelude(Vendor vendor);

namespace detail {
/// Appends template `name` (one of the embedded templates) after a `#line 1 "name"`, so that
/// compiler messages name the template file and its own line numbers. Errors: std::logic_error
/// for a name that is not embedded.
void append_template(std::string& s, std::string_view name);
/// Appends `#define <macro> <enumerator value>` for every row of an enum's table (kStrategies,
/// kEpilogues, kCombines), so a template compares a field's macro against each value by name.
template <class Row, std::size_t N>
void append_value_macros(std::string& s, const Row (&table)[N]) {
  for (const Row& r : table)
    s += "#define " + std::string(r.macro) + " " + std::to_string(static_cast<unsigned>(r.value)) + "\n";
}
}  // namespace detail

}  // namespace amax
