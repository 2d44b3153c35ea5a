#include "amax/kernel_config.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <vector>

#include "label_codec.hpp"

namespace amax {

std::string_view to_string(Strategy s) noexcept { return detail::enum_name(kStrategies, s); }
std::optional<Strategy> parse_strategy(std::string_view s) noexcept { return detail::enum_parse(kStrategies, s); }
std::string strategy_names() {
  std::string names;
  for (const StrategyInfo& i : kStrategies) names += (names.empty() ? "" : ", ") + std::string(i.name);
  return names;
}
std::string_view to_string(Epilogue e) noexcept { return detail::enum_name(kEpilogues, e); }
std::optional<Epilogue> parse_epilogue(std::string_view s) noexcept { return detail::enum_parse(kEpilogues, s); }

std::uint64_t BlockCap::max_blocks(std::uint32_t cu_count) const noexcept {
  // 2^31 - 1 is the grid.x limit on both vendors.
  constexpr std::uint64_t kGridLimit = 0x7fffffffu;
  switch (kind) {
    case Kind::per_cu: return std::min<std::uint64_t>(kGridLimit, std::uint64_t{value} * std::max(1u, cu_count));
    case Kind::absolute: return std::min<std::uint64_t>(kGridLimit, value);
    case Kind::uncapped: break;
  }
  return kGridLimit;
}

namespace detail {
std::optional<std::uint32_t> parse_u32(std::string_view s) {
  std::uint32_t v = 0;
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}
}  // namespace detail

// ---- per-type token codecs (label_codec.hpp) ----
namespace detail {
std::string format_value(std::uint32_t v) { return std::to_string(v); }
std::string format_value(const BlockCap& b) {
  switch (b.kind) {
    case BlockCap::Kind::per_cu: return std::to_string(b.value) + "cu";
    case BlockCap::Kind::absolute: return std::to_string(b.value);
    case BlockCap::Kind::uncapped: break;
  }
  return "uncapped";
}
bool parse_value(std::string_view s, std::uint32_t& out) {
  const auto v = parse_u32(s);
  if (v) out = *v;
  return v.has_value();
}
bool parse_value(std::string_view s, BlockCap& out) {
  if (s == "uncapped") { out = BlockCap::uncapped(); return true; }
  const bool cu = s.ends_with("cu");
  auto v = parse_u32(cu ? s.substr(0, s.size() - 2) : s);
  if (!v || *v == 0) return false;
  out = cu ? BlockCap::per_cu(*v) : BlockCap::absolute(*v);
  return true;
}
std::string define_value(std::uint32_t v) { return std::to_string(v); }
std::string define_value(const BlockCap&) { return {}; }
}  // namespace detail

namespace {
constexpr detail::LabelSyntax kSyntax{"", "variant label",
                                      "strategy.tT.vN.uU.bB[.scale][.cC], e.g. two_stage.t256.v8.u4.b8cu"};
static_assert(detail::required_field_count<KernelConfig>() == 5);
}  // namespace

KernelConfig KernelConfig::compile_time_part() const { return detail::compile_time_part(*this); }
std::string KernelConfig::compile_time_defines() const { return detail::compile_time_defines(*this); }
std::string KernelConfig::label() const { return detail::make_label(*this, kSyntax.family, false); }
std::string KernelConfig::kernel_label() const { return detail::make_label(*this, kSyntax.family, true); }
KernelConfig KernelConfig::parse(std::string_view label) { return detail::parse_label<KernelConfig>(label, kSyntax); }

std::optional<std::string> KernelConfig::validate(const ArchInfo& arch, DType dtype) const {
  const auto wave = static_cast<std::uint32_t>(arch.wave_size);
  const std::uint32_t elem = info(dtype).bytes;
  auto why = [&](std::string s) { return std::optional<std::string>(label() + ": " + s); };
  if (threads < wave || threads % wave != 0)
    return why("threads " + std::to_string(threads) + " is not a positive multiple of the wave size " +
               std::to_string(wave) + " of " + arch.name);
  // first_reset_warp's block holds one wave more than its loading threads.
  const std::uint32_t block = block_threads(strategy, threads, wave);
  const std::string block_is = block == threads ? "threads " + std::to_string(threads)
                                                : "threads " + std::to_string(threads) + " + the ticket wave";
  if (block > static_cast<std::uint32_t>(arch.max_threads_per_block))
    return why(block_is + " exceeds the block limit " + std::to_string(arch.max_threads_per_block) + " of " +
               arch.name);
  if (block / wave > wave)  // the block reduction finishes in one wave
    return why(block_is + " exceeds wave size squared (" + std::to_string(wave * wave) + ")");
  if (nvec == 0 || (nvec & (nvec - 1)) != 0)
    return why("nvec " + std::to_string(nvec) + " is not a power of two");
  if (nvec * elem > 16)
    return why("vector of " + std::to_string(nvec) + " x " + std::string(to_string(dtype)) + " = " +
               std::to_string(nvec * elem) + " bytes exceeds 16 bytes");
  if (unroll == 0 || unroll > 16 || (unroll & (unroll - 1)) != 0)
    return why("unroll " + std::to_string(unroll) + " is not a power of two in 1..16");
  if (max_blocks.kind == BlockCap::Kind::per_cu && (max_blocks.value == 0 || max_blocks.value > 1024))
    return why("max blocks per CU " + std::to_string(max_blocks.value) + " is outside 1..1024");
  if (max_blocks.kind == BlockCap::Kind::absolute &&
      (max_blocks.value == 0 || max_blocks.value > 0x7fffffffu))
    return why("max blocks " + std::to_string(max_blocks.value) + " is outside 1..2^31-1");
  if (max_blocks.kind == BlockCap::Kind::uncapped && max_blocks.value != 0)
    return why("uncapped grid carries a value");
  const StrategyInfo& row = info(strategy);
  if (auto no = strategy_unsupported_reason(strategy, arch)) return why(*no);
  if (epilogue == Epilogue::scale && !row.scale_epilogue)
    return why(std::string(row.name) + " has no scale epilogue: every block ends with an atomic max on the output, so "
               "no block holds the final amax to derive the scale from (amax_and_scale runs self_reset for it)");
  return std::nullopt;
}

std::optional<std::string> strategy_unsupported_reason(Strategy s, const ArchInfo& arch) {
  const StrategyInfo& row = info(s);
  if (arch.vendor == Vendor::amd && !row.amd_unsupported.empty())
    return std::string(row.name) + " is not generated for AMD (" + arch.name + "): " + std::string(row.amd_unsupported);
  return std::nullopt;
}

namespace {
std::string identifier(const KernelConfig& c, DType dtype) {
  std::string name = "amax_" + c.kernel_label() + "_" + std::string(to_string(dtype));
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}
}  // namespace

std::string kernel_name(const KernelConfig& c, DType dtype) { return identifier(c, dtype); }
std::string finish_kernel_name(const KernelConfig& c, DType dtype) {
  return identifier(c, dtype) + "_finish";
}

}  // namespace amax
