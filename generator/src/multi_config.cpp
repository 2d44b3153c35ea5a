#include "amax/multi_config.hpp"

#include "amax/launch_plan.hpp"

#include <algorithm>
#include <stdexcept>

#include "amax/kernel_config.hpp"
#include "amax/render.hpp"
#include "label_codec.hpp"
#include "template_data.hpp"

namespace amax {

std::string_view to_string(Combine c) noexcept { return detail::enum_name(kCombines, c); }
std::optional<Combine> parse_combine(std::string_view s) noexcept { return detail::enum_parse(kCombines, s); }

namespace {
constexpr detail::LabelSyntax kSyntax{MultiConfig::kFamily, "multi-tensor variant label",
                                      "multi.tT.vN.uU.cCk.bB.COMBINE[.scale], e.g. multi.t512.v8.u4.c32k.b4cu.thread"};
bool pow2(std::uint32_t v) { return v && (v & (v - 1)) == 0; }
}  // namespace

std::string MultiConfig::label() const { return detail::make_label(*this, kFamily, false); }
std::string MultiConfig::kernel_label() const { return detail::make_label(*this, kFamily, true); }
MultiConfig MultiConfig::compile_time_part() const { return detail::compile_time_part(*this); }
std::string MultiConfig::compile_time_defines() const { return detail::compile_time_defines(*this); }
MultiConfig MultiConfig::parse(std::string_view label) { return detail::parse_label<MultiConfig>(label, kSyntax); }

bool MultiConfig::is_multi_label(std::string_view label) noexcept {
  return label.size() > kFamily.size() && label.starts_with(kFamily) && label[kFamily.size()] == '.';
}

std::optional<std::string> MultiConfig::validate(const ArchInfo& arch, DType dtype) const {
  // threads, nvec, unroll and the grid cap obey the single-tensor rules (the same code runs them).
  if (auto why = KernelConfig{Strategy::one_pass, threads, nvec, unroll, max_blocks}.validate(arch, dtype))
    return label() + ": " + why->substr(why->find(": ") + 2);
  if (!pow2(chunk_kib) || chunk_kib < 4 || chunk_kib > 4096)
    return label() + ": chunk of " + std::to_string(chunk_kib) + " KiB is not a power of two in 4..4096 KiB";
  if (static_cast<std::size_t>(combine) >= std::size(kCombines))
    return label() + ": unknown combine " + std::to_string(static_cast<int>(combine));
  if (static_cast<std::size_t>(epilogue) >= std::size(kEpilogues))
    return label() + ": unknown epilogue " + std::to_string(static_cast<int>(epilogue));
  return std::nullopt;
}

std::string multi_kernel_name(const MultiConfig& c, DType dtype, std::uint32_t max_tensors) {
  std::string name = "amax_" + c.kernel_label() + "_" + std::string(to_string(dtype)) + "_k" + std::to_string(max_tensors);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

std::uint32_t multi_max_tensors(const ArchInfo& arch) noexcept {
  // 32764-byte parameters need NVIDIA sm_70+ (CUDA 12.1 release notes).
  if (compute_capability(arch) >= 70) return 1600;  // 40 + 20 x 1600 + 4 = 32044 bytes
  return 192;  // 40 + 20 x 192 + 4 = 3884 bytes within 4 KiB
}

std::vector<std::uint32_t> multi_capacities(const ArchInfo& arch) {
  const std::uint32_t most = multi_max_tensors(arch);
  if (most <= 192) return {most};
  return {192, 512, most};
}

std::uint32_t multi_capacity_for(const ArchInfo& arch, std::uint64_t tensors) {
  const std::vector<std::uint32_t> caps = multi_capacities(arch);
  for (std::uint32_t k : caps)
    if (tensors <= k) return k;
  return caps.back();
}

MultiArgsLayout multi_args_layout(std::uint32_t k) noexcept {
  MultiArgsLayout l{};
  l.ptr_offset = kMultiArgsHeaderBytes;
  l.n_offset = l.ptr_offset + 8ull * k;
  l.chunk_offset = l.n_offset + 8ull * k;
  l.bytes = (l.chunk_offset + 4ull * (k + 1) + 7) / 8 * 8;
  return l;
}

const std::string& multi_template_hash() {
  static const std::string hash = detail::hash_templates({"amax_fp8_cast.h", "amax_fp8_cvt_cuda.h", "amax_quantize_kernels.h"});
  return hash;
}

std::uint32_t multi_min_blocks_per_sm(const MultiConfig& c, DType dtype) {
  // The single-tensor rule for the loads in flight, with a floor of 48 registers per thread: the
  // walk over a block's tensors, its record and the combines need more registers than the
  // single-tensor body. Measured with nvcc/ptxas 13.0 for sm_90 (fp32, fp16, bf16; threads
  // 256-1024 x unroll 2-8 x both combines x both epilogues): at caps of 32 and 40 registers some
  // kernels spilled 4-52 bytes (which ones moved with small changes of the code); at 48 none did.
  constexpr std::uint32_t kMinRegisters = 48;
  return std::max<std::uint32_t>(
      1, std::min(min_blocks_per_sm(KernelConfig{Strategy::one_pass, c.threads, c.nvec, c.unroll, {}}, dtype),
                  65536 / (c.threads * kMinRegisters)));
}

std::string render_multi_source(const MultiConfig& c, DType dtype, const ArchInfo& arch, std::uint32_t k) {
  std::string s;
  s.reserve(24000);
  s += "// amax-tune generated multi-tensor kernel: " + c.kernel_label() + " " + std::string(to_string(dtype)) + " (" +
       arch.name + ", " + std::to_string(k) + " tensors per launch; the chunk size, grid cap and combine are not compiled in)\n";
  s += "// template hash " + multi_template_hash() + ", generator version " + std::string(generator_version()) + "\n";
  s += "#define AMAX_MULTI 1\n";
  // The value macros of the combines and epilogues, then the compile-time fields from MultiConfig::fields().
  detail::append_value_macros(s, kCombines);
  detail::append_value_macros(s, kEpilogues);
  s += c.compile_time_defines();
  s += dtype_defines(dtype);
  s += "#define AMAX_MIN_BLOCKS " + std::to_string(multi_min_blocks_per_sm(c, dtype)) + "\n";
  s += "#define AMAX_MULTI_MAX_TENSORS " + std::to_string(k) + "\n";
  s += "#define AMAX_MULTI_ARGS_BYTES " + std::to_string(multi_args_layout(k).bytes) + "\n";
  s += "#define AMAX_MULTI_CHUNK_SHIFT_BIT " + std::to_string(kMultiChunkShiftBit) + "\n";
  s += "#define AMAX_MULTI_COMBINE_BIT " + std::to_string(kMultiCombineBit) + "\n";
  s += "#define AMAX_MULTI_KERNEL_NAME " + multi_kernel_name(c, dtype, k) + "\n";
  s += host_device_defines();
  s += vendor_prelude(arch.vendor);
  detail::append_template(s, "amax_kernels.h");
  detail::append_template(s, "amax_multi_kernels.h");
  return s;
}

std::vector<MultiConfig> enumerate_multi_space(const ArchInfo& arch, DType dtype, SpaceKind kind) {
  const std::uint32_t elem = info(dtype).bytes;
  const bool full = kind == SpaceKind::full;
  std::vector<std::uint32_t> threads, unrolls, chunks;
  std::vector<BlockCap> caps;
  if (full) {
    for (std::uint32_t t = static_cast<std::uint32_t>(arch.wave_size); t <= static_cast<std::uint32_t>(arch.max_threads_per_block); t *= 2)
      threads.push_back(t);
    unrolls = {1, 2, 4, 8};
    for (std::uint32_t ck = 4; ck <= 4096; ck *= 2) chunks.push_back(ck);
    caps = {BlockCap::per_cu(1), BlockCap::per_cu(2), BlockCap::per_cu(4), BlockCap::per_cu(8), BlockCap::per_cu(16),
            BlockCap::uncapped()};
  } else {
    threads = arch.vendor == Vendor::amd ? std::vector<std::uint32_t>{256, 512}  // 1024 x unroll 8 spills on gfx90a
                                         : std::vector<std::uint32_t>{256, 512, 1024};
    unrolls = {2, 4, 8};
    chunks = {16, 32, 64, 128, 256};
    caps = {BlockCap::per_cu(2), BlockCap::per_cu(4), BlockCap::per_cu(8), BlockCap::uncapped()};
  }
  std::vector<MultiConfig> out;
  for (auto t : threads)
    for (std::uint32_t v = full ? 1 : 16 / elem; v * elem <= 16; v *= 2)
      for (std::uint32_t u : unrolls)
        for (std::uint32_t ck : chunks)
          for (const BlockCap& cap : caps)
            for (const CombineInfo& cb : kCombines) {
              if (std::uint64_t{ck} * 1024 < std::uint64_t{t} * v * elem) continue;  // a vector per thread at least
              MultiConfig c{t, v, u, ck, cap, cb.value};
              if (!c.validate(arch, dtype)) out.push_back(c);
            }
  return out;
}

MultiConfig builtin_multi_default(const ArchInfo& arch, DType dtype, const GroupShape& shape) {
  MultiConfig c;
  c.threads = std::min<std::uint32_t>(512, static_cast<std::uint32_t>(arch.max_threads_per_block));
  c.nvec = 16 / info(dtype).bytes;
  c.unroll = 4;
  c.chunk_kib = 32;
  c.max_blocks = BlockCap::per_cu(4);
  c.combine = shape.tensors > 32 ? Combine::thread : Combine::warp;
  return c;
}

std::uint32_t multi_chunks_per_block(const MultiConfig& c, std::uint64_t chunks, std::uint32_t cu_count) noexcept {
  const std::uint64_t cap = std::max<std::uint64_t>(1, c.max_blocks.max_blocks(cu_count));
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (chunks + cap - 1) / cap));
}

}  // namespace amax
