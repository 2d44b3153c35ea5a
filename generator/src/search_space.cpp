#include "amax/search_space.hpp"

#include "amax/launch_plan.hpp"

#include <algorithm>
#include <span>

namespace amax {

namespace {
// Every config of the grid that passes validate(), recorded exclusions included.
std::vector<KernelConfig> candidates(const ArchInfo& arch, DType dtype, SpaceKind kind) {
  const std::uint32_t elem = info(dtype).bytes;
  const bool full = kind == SpaceKind::full;
  std::vector<std::uint32_t> threads;
  for (std::uint32_t t = full ? static_cast<std::uint32_t>(arch.wave_size) : 128;
       t <= static_cast<std::uint32_t>(arch.max_threads_per_block); t *= 2)
    threads.push_back(t);
  std::vector<std::uint32_t> nvecs;
  for (std::uint32_t v = full ? 1 : 16 / elem; v * elem <= 16; v *= 2) nvecs.push_back(v);
  const std::vector<std::uint32_t> unrolls{1, 2, 4, 8};
  std::vector<BlockCap> caps;
  for (std::uint32_t b : full ? std::vector<std::uint32_t>{1, 2, 4, 8, 16, 32}
                              : std::vector<std::uint32_t>{2, 4, 8, 16})
    caps.push_back(BlockCap::per_cu(b));
  caps.push_back(BlockCap::uncapped());

  std::vector<KernelConfig> out;
  for (const StrategyInfo& si : kStrategies) {
    if (!full && !si.in_pruned) continue;
    for (auto t : threads)
      for (auto v : nvecs)
        for (auto u : unrolls)
          for (std::size_t ci = 0; ci < caps.size(); ++ci) {
            const BlockCap b = caps[ci];
            // The strategy's pruned shape (its row): e.g. self_reset serves the launch-bound band
            // (up to a few MiB), which wants blocks of >= 256 threads and >= 4 blocks per SM/CU.
            if (!full && (t < si.pruned_min_threads || u > si.pruned_max_unroll || !(si.pruned_caps >> ci & 1u)))
              continue;
            KernelConfig c{si.value, t, v, u, b};
            if (!c.validate(arch, dtype)) out.push_back(c);
          }
  }
  return out;
}
}  // namespace

std::vector<KernelConfig> enumerate_space(const ArchInfo& arch, DType dtype, SpaceKind kind) {
  std::vector<KernelConfig> out;
  for (const auto& c : candidates(arch, dtype, kind))
    if (!recorded_exclusion(arch, dtype, c)) out.push_back(c);
  return out;
}

KernelConfig fused_variant(const KernelConfig& amax_only, const ArchInfo& arch, DType dtype) {
  KernelConfig f = amax_only;
  f.epilogue = Epilogue::amax;
  const FusedAs as = info(f.strategy).fused;
  if (as != FusedAs::itself) {
    // self_reset's cost grows with its grid (one arrival count per block, serialized on one word),
    // so its grid cap is at most kFusedSelfResetBlocksPerCu blocks per CU (search_space.hpp).
    KernelConfig s = f;
    s.strategy = Strategy::self_reset;
    const BlockCap& cap = s.max_blocks;
    if (as == FusedAs::self_reset_in_space && cap.kind != BlockCap::Kind::per_cu)
      s.unroll = std::max(s.unroll, kFusedSelfResetUnroll);
    if (cap.kind != BlockCap::Kind::per_cu || cap.value > kFusedSelfResetBlocksPerCu)
      s.max_blocks = BlockCap::per_cu(kFusedSelfResetBlocksPerCu);
    const auto space = enumerate_space(arch, dtype, SpaceKind::pruned);
    const bool in_space = std::find(space.begin(), space.end(), s) != space.end();
    // A strategy without the scale epilogue becomes self_reset even outside the pruned space, at
    // kFusedSelfResetBlocksPerCu blocks per CU where its own smaller cap is not in that space.
    if (as == FusedAs::self_reset && !in_space) s.max_blocks = BlockCap::per_cu(kFusedSelfResetBlocksPerCu);
    if (as == FusedAs::self_reset || in_space) f = s;
  }
  f.epilogue = Epilogue::scale;
  return f;
}

std::vector<std::pair<KernelConfig, std::string>> space_exclusions(const ArchInfo& arch, DType dtype,
                                                                   SpaceKind kind) {
  std::vector<std::pair<KernelConfig, std::string>> out;
  for (const auto& c : candidates(arch, dtype, kind))
    if (auto why = recorded_exclusion(arch, dtype, c)) out.emplace_back(c, *why);
  return out;
}

std::vector<std::string> space_notes(const ArchInfo& arch, SpaceKind kind) {
  std::vector<std::string> out;
  for (const StrategyInfo& si : kStrategies)
    if (kind == SpaceKind::pruned && !si.in_pruned)
      out.push_back(std::string(si.name) + " variants are not in the pruned space (in_pruned of its row in "
                    "kStrategies, generator/include/amax/kernel_config.hpp); the full space (--full) has them where "
                    "the arch can run them");
    else if (auto why = strategy_unsupported_reason(si.value, arch))
      out.push_back(*why);
  return out;
}

std::vector<KernelConfig> distinct_kernels(const std::vector<KernelConfig>& configs) {
  std::vector<KernelConfig> out;
  for (const KernelConfig& config : configs) {
    const KernelConfig c = config.compile_time_part();
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

KernelConfig transformer_engine_config(DType dtype, Strategy strategy) {
  // 32 bytes per thread per iteration = two 16-byte vector loads.
  return KernelConfig{strategy, 512, 16 / info(dtype).bytes, 2, BlockCap::absolute(65535)};
}

KernelConfig builtin_default(const ArchInfo& arch, DType d, std::uint64_t n) {
  // AMD: ROCm TransformerEngine's shipped amax, every size (builtin_default_source cites it).
  if (arch.vendor == Vendor::amd) return transformer_engine_config(d, Strategy::two_stage);
  const std::uint32_t nvec = 16 / info(d).bytes;
  if (n <= (1ull << 21)) return {Strategy::one_pass, 512, nvec, 2, BlockCap::uncapped()};
  return {Strategy::atomic, 512, nvec, 4, BlockCap::uncapped()};
}

KernelConfig compile_fallback(const KernelConfig& chosen, const ArchInfo& arch, DType d, std::uint64_t n,
                              std::uint32_t cu_count) {
  KernelConfig def = builtin_default(arch, d, n);
  def.epilogue = chosen.epilogue;
  if (launch_shape(def, n, cu_count).workspace_bytes > launch_shape(chosen, n, cu_count).workspace_bytes)
    def.strategy = Strategy::atomic;
  return def;
}

std::string builtin_default_source(const ArchInfo& arch) {
  // Kept short: amax_explain's detail holds 512 bytes with the database paths before this.
  if (arch.vendor == Vendor::amd)
    return "ROCm TransformerEngine's two-stage amax as shipped for AMD (512 threads, 32 bytes per thread per "
           "iteration, <= 65535 blocks, block maxima to a workspace, a one-block second stage: ROCm/"
           "TransformerEngine common/recipe/current_scaling.cu @01b61b5), not tuned on an AMD GPU";
  return "the H200 winners of a default tune (one_pass.t512 u2 up to 2^21 elements, atomic.t512 u4 above)";
}

}  // namespace amax
