#include "amax/quantize_config.hpp"

#include <algorithm>

#include "amax/fp8_cast.hpp"
#include "amax/launch_plan.hpp"
#include "amax/render.hpp"
#include "label_codec.hpp"
#include "template_data.hpp"

namespace amax {

std::string_view to_string(QuantizeKind k) noexcept { return detail::enum_name(kQuantizeKinds, k); }
std::optional<QuantizeKind> parse_quantize_kind(std::string_view s) noexcept {
  return detail::enum_parse(kQuantizeKinds, s);
}

namespace {
constexpr detail::LabelSyntax kSyntax{QuantizeConfig::kFamily, "quantize variant label",
                                      "quant.KIND.tT.vN.uU.kK.bB, e.g. quant.keep.t512.v8.u4.k4.buncapped"};
constexpr std::uint32_t kMaxKeep = 16;
// Registers a thread needs: the kept vectors and the loads in flight (4-byte words each), plus
// about 40 for indices, pointers, the scale, the cast and the barrier.
std::uint32_t registers_needed(const QuantizeConfig& c, DType dtype) {
  const std::uint32_t vec_words = std::max<std::uint32_t>(1, c.nvec * info(dtype).bytes / 4);
  return (c.unroll + c.keep) * vec_words + 40;
}
}  // namespace

std::string QuantizeConfig::label() const { return detail::make_label(*this, kFamily, false); }
std::string QuantizeConfig::kernel_label() const { return detail::make_label(*this, kFamily, true); }
QuantizeConfig QuantizeConfig::compile_time_part() const { return detail::compile_time_part(*this); }
std::string QuantizeConfig::compile_time_defines() const { return detail::compile_time_defines(*this); }
QuantizeConfig QuantizeConfig::parse(std::string_view label) {
  return detail::parse_label<QuantizeConfig>(label, kSyntax);
}

bool QuantizeConfig::is_quantize_label(std::string_view label) noexcept {
  return label.size() > kFamily.size() && label.starts_with(kFamily) && label[kFamily.size()] == '.';
}

std::optional<std::string> QuantizeConfig::validate(const ArchInfo& arch, DType dtype) const {
  // threads, nvec, unroll and the grid cap obey the single-tensor rules (the same loads run them).
  if (auto why = KernelConfig{Strategy::one_pass, threads, nvec, unroll, max_blocks}.validate(arch, dtype))
    return label() + ": " + why->substr(why->find(": ") + 2);
  if (static_cast<std::size_t>(kind) >= std::size(kQuantizeKinds))
    return label() + ": unknown kind " + std::to_string(static_cast<int>(kind));
  if (kind == QuantizeKind::keep && (keep < 1 || keep > kMaxKeep))
    return label() + ": keep " + std::to_string(keep) + " is not in 1.." + std::to_string(kMaxKeep) +
           " vectors per thread";
  if (kind != QuantizeKind::keep && keep != 0)
    return label() + ": keep " + std::to_string(keep) + " with kind " + std::string(to_string(kind)) +
           " (only keep holds vectors: 0)";
  // The kept vectors and the loads in flight must fit the registers a block's thread can have (a
  // 64 Ki-entry register file per SM / CU SIMD set; more would spill to memory).
  if (registers_needed(*this, dtype) > 65536 / threads)
    return label() + ": " + std::to_string(keep) + " kept and " + std::to_string(unroll) +
           " in-flight vectors need about " + std::to_string(registers_needed(*this, dtype)) +
           " registers per thread; " + std::to_string(threads) + " threads per block leave " +
           std::to_string(65536 / threads);
  return std::nullopt;
}

namespace {
constexpr Fp8Format kOcpFormats[] = {Fp8Format::e4m3, Fp8Format::e5m2};
constexpr Fp8Format kFnuzFormats[] = {Fp8Format::e4m3fnuz, Fp8Format::e5m2fnuz};
}  // namespace

std::span<const Fp8Format> quantize_formats(const ArchInfo& arch) noexcept {
  if (arch.processor == "gfx942") return kFnuzFormats;
  return kOcpFormats;
}

Fp8Format tuned_fp8_format(const ArchInfo& arch) noexcept { return quantize_formats(arch).front(); }

std::vector<QuantizeConfig> enumerate_quantize_space(const ArchInfo& arch, DType dtype, SpaceKind kind) {
  std::vector<QuantizeConfig> out;
  auto add = [&](const QuantizeConfig& c) {
    if (!c.validate(arch, dtype)) out.push_back(c);
  };
  const std::uint32_t wide = 16 / info(dtype).bytes;
  if (kind == SpaceKind::pruned) {
    using K = QuantizeKind;
    add({K::cast, 256, wide, 4, 0, BlockCap::per_cu(8)});
    add({K::cast, 512, wide, 2, 0, BlockCap::uncapped()});
    add({K::cast, 512, wide, 4, 0, BlockCap::per_cu(4)});
    const std::pair<std::uint32_t, std::uint32_t> kept[] = {{256, 2}, {256, 4}, {256, 8}, {256, 16}, {512, 1},
                                                             {512, 2}, {512, 4}, {512, 8}, {1024, 1}, {1024, 2}};
    for (const auto& [t, k] : kept) add({K::keep, t, wide, 4, k, BlockCap::uncapped()});
    add({K::reread, 256, wide, 4, 0, BlockCap::uncapped()});
    add({K::reread, 512, wide, 2, 0, BlockCap::uncapped()});
    add({K::reread, 512, wide, 4, 0, BlockCap::uncapped()});
    add({K::reread, 1024, wide, 4, 0, BlockCap::uncapped()});
    return out;
  }
  for (const QuantizeKindInfo& ki : kQuantizeKinds)
    for (std::uint32_t t = static_cast<std::uint32_t>(arch.wave_size); t <= 1024; t *= 2)
      for (std::uint32_t v = 1; v <= wide; v *= 2)
        for (std::uint32_t u = 1; u <= 8; u *= 2) {
          if (ki.value == QuantizeKind::cast) {
            for (std::uint32_t b = 1; b <= 16; b *= 2) add({ki.value, t, v, u, 0, BlockCap::per_cu(b)});
            add({ki.value, t, v, u, 0, BlockCap::uncapped()});
          } else if (ki.value == QuantizeKind::keep) {
            for (std::uint32_t k = 1; k <= kMaxKeep; k *= 2) add({ki.value, t, v, u, k, BlockCap::uncapped()});
          } else {
            add({ki.value, t, v, u, 0, BlockCap::uncapped()});
          }
        }
  return out;
}

QuantizeConfig builtin_quantize_default(const ArchInfo&, DType dtype, std::uint64_t n) {
  const std::uint32_t wide = 16 / info(dtype).bytes;
  if (n <= kQuantizeOneLaunchMaxBytes / info(dtype).bytes)
    return {QuantizeKind::keep, 256, wide, 4, 8, BlockCap::uncapped()};
  return {QuantizeKind::cast, 512, wide, 4, 0, BlockCap::per_cu(4)};
}

std::uint32_t quantize_grid(const QuantizeConfig& c, DType, std::uint64_t n, std::uint32_t cu_count,
                            std::uint32_t resident_per_cu) noexcept {
  const std::uint64_t vectors = n / c.nvec + 1;  // the body's, and the head and tail's elements
  const std::uint64_t per_block = std::uint64_t{c.threads} * (c.kind == QuantizeKind::keep ? c.keep : c.unroll);
  std::uint64_t grid = std::min<std::uint64_t>((vectors + per_block - 1) / per_block, c.max_blocks.max_blocks(cu_count));
  if (c.one_launch() && resident_per_cu > 0)
    grid = std::min<std::uint64_t>(grid, std::uint64_t{resident_per_cu} * std::max(1u, cu_count));
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(grid, 1));
}

std::string quantize_kernel_name(const QuantizeConfig& c, DType dtype, Fp8Format format) {
  std::string name = "amax_" + c.kernel_label() + "_" + std::string(to_string(dtype)) + "_" +
                     std::string(info(format).name);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

std::uint32_t quantize_min_blocks_per_sm(const QuantizeConfig& c, DType dtype) {
  // As min_blocks_per_sm (render.cpp), with the kept vectors live besides the loads in flight.
  const std::uint32_t by_registers = 65536 / (c.threads * registers_needed(c, dtype));
  const std::uint32_t by_threads = 2048 / c.threads;
  return std::max<std::uint32_t>(1, std::min(by_registers, by_threads));
}

const std::string& quantize_template_hash() {
  static const std::string hash = detail::hash_templates({"amax_multi_kernels.h"});
  return hash;
}

bool quantize_uses_fp8_instruction(const ArchInfo& arch, Fp8Format format) noexcept {
  return !encoding(format).fnuz && compute_capability(arch) >= 89;
}

std::string render_quantize_source(const QuantizeConfig& c, DType dtype, Fp8Format format, const ArchInfo& arch) {
  const Vendor vendor = arch.vendor;
  const Fp8Encoding e = encoding(format);
  std::string s;
  s.reserve(32768);
  s += "// amax-tune generated quantize kernel: " + c.kernel_label() + " " + std::string(to_string(dtype)) + " -> " +
       std::string(info(format).name) + " (" + arch.name + "; the grid cap is not compiled in)\n";
  s += "// template hash " + quantize_template_hash() + ", generator version " + std::string(generator_version()) +
       "\n";
  // amax_kernels.h's helpers only: its single-tensor entry points are left out where AMAX_MULTI is
  // defined (amax_quantize_kernels.h says why).
  s += "#define AMAX_MULTI 1\n";
  detail::append_value_macros(s, kQuantizeKinds);
  s += epilogue_defines(Epilogue::amax);
  s += c.compile_time_defines();
  s += dtype_defines(dtype);
  s += "#define AMAX_MIN_BLOCKS " + std::to_string(quantize_min_blocks_per_sm(c, dtype)) + "\n";
  s += "#define AMAX_FP8_MANT_BITS " + std::to_string(e.mantissa_bits) + "u\n";
  s += "#define AMAX_FP8_BIAS " + std::to_string(e.bias) + "u\n";
  s += "#define AMAX_FP8_MAX_CODE " + std::to_string(e.max_code) + "u\n";
  s += "#define AMAX_FP8_NAN_CODE " + std::to_string(e.nan_code) + "u\n";
  s += std::string("#define AMAX_FP8_FNUZ ") + (e.fnuz ? "1" : "0") + "\n";
  s += "#define AMAX_QUANT_FLAG_TORCHAO " + std::to_string(kQuantizeFlagTorchao) + "u\n";
  s += "#define AMAX_QUANT_KERNEL_NAME " + quantize_kernel_name(c, dtype, format) + "\n";
  s += host_device_defines();
  s += vendor_prelude(vendor);
  detail::append_template(s, "amax_kernels.h");
  detail::append_template(s, "amax_fp8_cast.h");
  if (quantize_uses_fp8_instruction(arch, format)) detail::append_template(s, "amax_fp8_cvt_cuda.h");
  detail::append_template(s, "amax_quantize_kernels.h");
  return s;
}

}  // namespace amax
