#include "amax/multi_config.hpp"

#include <algorithm>
#include <stdexcept>

#include "amax/kernel_config.hpp"
#include "amax/render.hpp"
#include "template_data.hpp"

namespace amax {

std::string_view to_string(Combine c) noexcept { return c == Combine::warp ? "warp" : c == Combine::block ? "block" : "?"; }

std::optional<Combine> parse_combine(std::string_view s) noexcept {
  for (Combine c : {Combine::warp, Combine::block})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

namespace {
std::string format_value(std::uint32_t v) { return std::to_string(v); }
std::string format_value(Combine c) { return std::string(to_string(c)); }
std::string define_value(std::uint32_t v) { return std::to_string(v); }
std::string define_value(Combine c) { return c == Combine::warp ? "AMAX_COMBINE_WARP" : "AMAX_COMBINE_BLOCK"; }
bool parse_value(std::string_view s, std::uint32_t& out) {
  auto v = detail::parse_u32(s);
  if (v) out = *v;
  return v.has_value();
}
bool parse_value(std::string_view s, Combine& out) {
  auto v = parse_combine(s);
  if (v) out = *v;
  return v.has_value();
}
bool pow2(std::uint32_t v) { return v && (v & (v - 1)) == 0; }
}  // namespace

std::string MultiConfig::label() const {
  std::string out(kFamily);
  std::apply([&](const auto&... f) { ((out += ".", out += f.prefix, out += format_value(this->*(f.member)), out += f.suffix), ...); },
             fields());
  return out;
}

bool MultiConfig::is_multi_label(std::string_view label) noexcept {
  return label.size() > kFamily.size() && label.starts_with(kFamily) && label[kFamily.size()] == '.';
}

MultiConfig MultiConfig::parse(std::string_view label) {
  constexpr std::size_t kFields = std::tuple_size_v<decltype(fields())>;
  const auto parts = detail::split(label, '.');
  if (parts.size() != kFields + 1 || parts[0] != kFamily)
    throw std::invalid_argument("invalid multi-tensor variant label '" + std::string(label) + "': expected " +
                                std::string(kFamily) + ".tT.vN.uU.cCk.COMBINE (e.g. multi.t512.v8.u4.c32k.warp), got " +
                                std::to_string(parts.size()) + " '.'-separated tokens");
  MultiConfig c;
  std::size_t i = 1;
  std::apply(
      [&](const auto&... f) {
        (
            [&] {
              std::string_view tok = parts[i++];
              if (tok.size() < f.prefix.size() + f.suffix.size() || !tok.starts_with(f.prefix) ||
                  !tok.ends_with(f.suffix) ||
                  !parse_value(tok.substr(f.prefix.size(), tok.size() - f.prefix.size() - f.suffix.size()),
                               c.*(f.member)))
                throw std::invalid_argument("invalid multi-tensor variant label '" + std::string(label) + "': bad " +
                                            std::string(f.name) + " field '" + std::string(tok) + "'");
            }(),
            ...);
      },
      fields());
  return c;
}

std::string MultiConfig::defines() const {
  std::string out;
  std::apply([&](const auto&... f) { ((out += "#define " + std::string(f.macro) + " " + define_value(this->*(f.member)) + "\n"), ...); },
             fields());
  return out;
}

std::optional<std::string> MultiConfig::validate(const ArchInfo& arch, DType dtype) const {
  // threads, nvec and unroll obey the single-tensor rules (the same helpers run them).
  if (auto why = KernelConfig{Strategy::one_pass, threads, nvec, unroll, BlockCap::uncapped()}.validate(arch, dtype))
    return label() + ": " + why->substr(why->find(": ") + 2);
  if (!pow2(chunk_kib) || chunk_kib < 4 || chunk_kib > 4096)
    return label() + ": chunk of " + std::to_string(chunk_kib) + " KiB is not a power of two in 4..4096 KiB";
  if (combine != Combine::warp && combine != Combine::block)
    return label() + ": unknown combine " + std::to_string(static_cast<int>(combine));
  return std::nullopt;
}

std::string multi_kernel_name(const MultiConfig& c, DType dtype, std::uint32_t max_tensors) {
  std::string name = "amax_" + c.label() + "_" + std::string(to_string(dtype)) + "_k" + std::to_string(max_tensors);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

std::uint32_t multi_max_tensors(const ArchInfo& arch) noexcept {
  if (arch.vendor == Vendor::nvidia) {
    // "sm_XY": compute capability X.Y; 32764-byte parameters need sm_70+ (CUDA 12.1 release notes).
    int cc = 0;
    for (char ch : arch.processor.substr(3)) {
      if (ch < '0' || ch > '9') break;
      cc = cc * 10 + (ch - '0');
    }
    if (cc >= 70) return 1600;  // 40 + 20 x 1600 + 4 = 32044 bytes
  }
  return 192;  // 40 + 20 x 192 + 4 = 3884 bytes within 4 KiB
}

std::vector<std::uint32_t> multi_capacities(const ArchInfo& arch) {
  const std::uint32_t most = multi_max_tensors(arch);
  if (most <= 192) return {most};
  return {192, most};
}

MultiArgsLayout multi_args_layout(std::uint32_t k) noexcept {
  MultiArgsLayout l{};
  l.ptr_offset = 40;
  l.n_offset = l.ptr_offset + 8ull * k;
  l.chunk_offset = l.n_offset + 8ull * k;
  l.bytes = (l.chunk_offset + 4ull * (k + 1) + 7) / 8 * 8;
  return l;
}

const std::string& multi_template_hash() {
  static const std::string hash = detail::hash_templates({});  // every embedded template
  return hash;
}

std::string render_multi_source(const MultiConfig& c, DType dtype, const ArchInfo& arch, std::uint32_t k) {
  std::string s;
  s.reserve(20000);
  s += "// amax-tune generated multi-tensor kernel: " + c.label() + " " + std::string(to_string(dtype)) + " (" +
       arch.name + ", " + std::to_string(k) + " tensors per launch)\n";
  s += "// template hash " + multi_template_hash() + ", generator version " + std::string(generator_version()) + "\n";
  s += "#define AMAX_MULTI 1\n";
  s += c.defines();
  s += dtype_defines(dtype);
  s += epilogue_defines(Epilogue::amax);  // amax only so far; scale per tensor is a follow-up
  s += "#define AMAX_MIN_BLOCKS " +
       std::to_string(min_blocks_per_sm(KernelConfig{Strategy::one_pass, c.threads, c.nvec, c.unroll, {}}, dtype)) + "\n";
  s += "#define AMAX_MULTI_MAX_TENSORS " + std::to_string(k) + "\n";
  s += "#define AMAX_MULTI_ARGS_BYTES " + std::to_string(multi_args_layout(k).bytes) + "\n";
  s += "#define AMAX_MULTI_KERNEL_NAME " + multi_kernel_name(c, dtype, k) + "\n";
  s += detail::template_text(arch.vendor == Vendor::nvidia ? "prelude_cuda.h" : "prelude_hip.h");
  s += detail::template_text("amax_kernels.h");
  s += detail::template_text("amax_multi_kernels.h");
  return s;
}

std::vector<MultiConfig> enumerate_multi_space(const ArchInfo& arch, DType dtype, SpaceKind kind) {
  const std::uint32_t elem = info(dtype).bytes;
  const bool full = kind == SpaceKind::full;
  std::vector<std::uint32_t> threads;
  if (full)
    for (std::uint32_t t = static_cast<std::uint32_t>(arch.wave_size); t <= static_cast<std::uint32_t>(arch.max_threads_per_block); t *= 2)
      threads.push_back(t);
  else if (arch.vendor == Vendor::amd)
    threads = {256, 512};  // 1024 threads x unroll 8 spill 60 VGPRs on gfx90a (hipRTC 5.2, fp32)
  else
    threads = {256, 512, 1024};
  std::vector<MultiConfig> out;
  for (auto t : threads)
    for (std::uint32_t v = full ? 1 : 16 / elem; v * elem <= 16; v *= 2)
      for (std::uint32_t u : {1u, 2u, 4u, 8u})
        for (std::uint32_t ck = full ? 4 : 8; ck <= (full ? 4096u : 512u); ck *= 2)
          for (Combine cb : {Combine::warp, Combine::block}) {
            if (std::uint64_t{ck} * 1024 < std::uint64_t{t} * v * elem) continue;  // a vector per thread at least
            MultiConfig c{t, v, u, ck, cb};
            if (!c.validate(arch, dtype)) out.push_back(c);
          }
  return out;
}

MultiConfig builtin_multi_default(const ArchInfo& arch, DType dtype, const GroupShape& shape) {
  MultiConfig c;
  c.threads = std::min<std::uint32_t>(512, static_cast<std::uint32_t>(arch.max_threads_per_block));
  c.nvec = 16 / info(dtype).bytes;
  c.unroll = 4;
  c.chunk_kib = shape.largest_bytes <= (4ull << 20) ? 32 : 256;
  c.combine = shape.tensors > 32 ? Combine::warp : Combine::block;
  return c;
}

}  // namespace amax
