#include "amax/render.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "amax/hash.hpp"
#include "amax/launch_plan.hpp"
#include "template_data.hpp"

namespace amax {

namespace detail {
void append_template(std::string& s, std::string_view name) {
  s += "#line 1 \"" + std::string(name) + "\"\n";
  s += template_text(name);
}
std::string_view template_text(std::string_view name) {
  for (const auto& t : kTemplates)
    if (t.name == name) return t.text;
  throw std::logic_error("template " + std::string(name) + " is not embedded in this build");
}
}  // namespace detail

std::string to_hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf);
}

namespace {
/// `0x7f80u`: an unsigned C literal.
std::string hex_literal(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%xu", static_cast<unsigned>(v));
  return buf;
}
}  // namespace

std::string_view generator_version() noexcept { return AMAX_VERSION; }

namespace detail {
std::string hash_templates(std::initializer_list<std::string_view> skip) {
  std::uint64_t h = kFnvOffsetBasis;
  for (const auto& t : kTemplates) {
    if (std::find(skip.begin(), skip.end(), t.name) != skip.end()) continue;
    for (std::string_view part : {t.name, std::string_view("\0", 1), t.text}) h = fnv1a64(part, h);
  }
  return to_hex(h);
}
}  // namespace detail

const std::string& template_hash() {
  // The multi-tensor and quantize families have their own hashes (multi_template_hash,
  // quantize_template_hash).
  static const std::string hash = detail::hash_templates(
      {"amax_multi_kernels.h", "amax_fp8_cast.h", "amax_fp8_cvt_cuda.h", "amax_quantize_kernels.h"});
  return hash;
}

std::uint32_t min_blocks_per_sm(const KernelConfig& c, DType dtype) {
  // Registers a thread needs: the vectors in flight (unroll x vector bytes / 4) plus about 24 for
  // indices, pointers and the accumulator (read off ptxas reports of these kernels). A 64 Ki-entry
  // register file per SM (every NVIDIA GPU since sm_50) shared by min_blocks blocks then caps
  // registers at 65536 / (threads x min_blocks); at most 2048 threads per SM are resident.
  // Only NVIDIA's __launch_bounds__ reads it: the block has one 32-thread warp more for first_reset_warp.
  const std::uint32_t need = c.unroll * c.nvec * info(dtype).bytes / 4 + 24;
  const std::uint32_t block = block_threads(c.strategy, c.threads, 32);
  const std::uint32_t by_registers = 65536 / (block * need);
  const std::uint32_t by_threads = 2048 / block;
  return std::max<std::uint32_t>(1, std::min(by_registers, by_threads));
}

std::string epilogue_defines(Epilogue epilogue) {
  std::string s;
  detail::append_value_macros(s, kEpilogues);
  s += "#define AMAX_EPILOGUE " + std::string(info(epilogue).macro) + "\n";
  return s;
}

std::string dtype_defines(DType dtype) {
  std::string s = "#define AMAX_ELEM_BYTES " + std::to_string(info(dtype).bytes) + "\n";
  for (const DTypeInfo& d : all_dtypes())
    s += "#define " + std::string(d.macro) + " " + std::to_string(index(d.dtype)) + "\n";
  s += "#define AMAX_DTYPE " + std::string(info(dtype).macro) + "\n";
  s += "#define AMAX_ELEM_INF " + hex_literal(info(dtype).inf_abs_bits) + "\n";
  s += "#define AMAX_FP32_INF " + hex_literal(info(DType::fp32).inf_abs_bits) + "\n";
  s += "#define AMAX_FP32_QNAN " + hex_literal(info(DType::fp32).quiet_nan_bits()) + "\n";
  return s;
}

std::string render_source(const KernelConfig& c, DType dtype, Vendor vendor) {
  std::string s;
  s.reserve(16384);
  s += "// amax-tune generated kernel: " + c.kernel_label() + " " + std::string(to_string(dtype)) +
       " (" + std::string(to_string(vendor)) + ")\n";
  s += "// kernel label " + c.kernel_label() +
       " (launch parameters are not compiled in)\n";
  s += "// template hash " + template_hash() + ", generator version " +
       std::string(generator_version()) + "\n";
  // The value macros of the strategies (AMAX_STRATEGY_ONE_PASS 2, ...) and the epilogues, then the
  // compile-time fields (AMAX_STRATEGY, AMAX_THREADS, ..., AMAX_EPILOGUE) from KernelConfig::fields().
  detail::append_value_macros(s, kStrategies);
  detail::append_value_macros(s, kEpilogues);
  s += c.compile_time_defines();
  s += dtype_defines(dtype);
  s += "#define AMAX_MIN_BLOCKS " + std::to_string(min_blocks_per_sm(c, dtype)) + "\n";
  s += "#define AMAX_KERNEL_NAME " + kernel_name(c, dtype) + "\n";
  s += "#define AMAX_FINISH_NAME " + finish_kernel_name(c, dtype) + "\n";
  s += host_device_defines();
  s += vendor_prelude(vendor);
  detail::append_template(s, "amax_kernels.h");
  return s;
}

std::string vendor_prelude(Vendor vendor) {
  std::string s;
  detail::append_template(s, vendor == Vendor::nvidia ? "prelude_cuda.h" : "prelude_hip.h");
  return s;
}

}  // namespace amax
