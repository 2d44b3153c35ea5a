#include "amax/search_space.hpp"

#include <algorithm>
#include <span>

namespace amax {

namespace {
// Thread-block cluster sizes (KernelConfig::cluster) besides 1, per space, where the arch has
// clusters (cluster_unsupported_reason): with 16-byte vectors and 256-1024 threads only (the
// shapes of the sizes the clusters are for, issue 27). The pruned space holds none until an H200
// run shows a clustered variant winning; adding them to the tuner's default is this one line
// (e.g. {8}). Keep it in step with space_notes below, which reads these lists.
constexpr std::uint32_t kFullClusters[] = {2, 4, 8};
constexpr std::span<const std::uint32_t> kPrunedClusters{};

bool spin_in(SpaceKind kind) { return kind == SpaceKind::full || kPrunedSpin; }

std::span<const std::uint32_t> cluster_sizes(SpaceKind kind) {
  return kind == SpaceKind::full ? std::span<const std::uint32_t>(kFullClusters) : kPrunedClusters;
}

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

  std::vector<std::uint32_t> clusters{1};
  if (!cluster_unsupported_reason(arch))
    for (std::uint32_t k : cluster_sizes(kind)) clusters.push_back(k);

  std::vector<KernelConfig> out;
  for (std::uint32_t k : clusters)
    for (const StrategyInfo& si : kStrategies) {
      const Strategy s = si.value;
      if (s == Strategy::spin && !spin_in(kind)) continue;
      for (auto t : threads)
        for (auto v : nvecs)
          for (auto u : unrolls)
            for (auto b : caps) {
              // Pruned self_reset: the launch-bound band it is for (up to a few MiB) wants blocks of
              // >= 256 threads and grids of >= 4 blocks per SM/CU; at large sizes it ties atomic.
              if (!full && s == Strategy::self_reset && (t < 256 || b == BlockCap::per_cu(2))) continue;
              // Pruned spin (kPrunedSpin): threads >= 256 and caps of 2, 4 and 8 blocks per CU (its
              // grid is capped at the resident blocks, at most 1024, so larger caps repeat 8's grid).
              if (!full && s == Strategy::spin &&
                  (t < 256 || b.kind != BlockCap::Kind::per_cu || b.value > 8))
                continue;
              // Pruned first_reset and first_reset_warp: threads 256-1024 (first_reset_warp: up to
              // the block limit less its ticket wave), unroll 1-4, max blocks 2, 4 or 8 per CU or
              // uncapped (the shapes that won the tail probe's sweep from 64 KiB to 16 MiB).
              if (!full && resets_first(s) &&
                  (t < 256 || u > 4 || b == BlockCap::per_cu(16)))
                continue;
              if (k > 1 && (t < 256 || v * elem != 16)) continue;
              KernelConfig c{s, t, v, u, b};
              c.cluster = k;
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
  if (f.strategy == Strategy::atomic || resets_first(f.strategy)) {
    // self_reset's cost grows with its grid (one arrival count per block, serialized on one word),
    // so its grid cap is at most kFusedSelfResetBlocksPerCu blocks per CU (search_space.hpp).
    KernelConfig s = f;
    s.strategy = Strategy::self_reset;
    const BlockCap& cap = s.max_blocks;
    if (f.strategy == Strategy::atomic && cap.kind != BlockCap::Kind::per_cu)
      s.unroll = std::max(s.unroll, kFusedSelfResetUnroll);
    if (cap.kind != BlockCap::Kind::per_cu || cap.value > kFusedSelfResetBlocksPerCu)
      s.max_blocks = BlockCap::per_cu(kFusedSelfResetBlocksPerCu);
    const auto space = enumerate_space(arch, dtype, SpaceKind::pruned);
    const bool in_space = std::find(space.begin(), space.end(), s) != space.end();
    // first_reset(_warp) has no scale epilogue at all: it becomes self_reset even outside the pruned
    // space, at kFusedSelfResetBlocksPerCu blocks per CU where its own smaller cap is not in that space.
    if (resets_first(f.strategy) && !in_space) s.max_blocks = BlockCap::per_cu(kFusedSelfResetBlocksPerCu);
    if (resets_first(f.strategy) || in_space) f = s;
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
  const auto sizes = cluster_sizes(kind);
  std::string spelled;
  for (std::uint32_t k : sizes) spelled += (spelled.empty() ? ".c" : "/.c") + std::to_string(k);
  if (sizes.empty())
    out.push_back("clustered variants (the cluster field, .c2/.c4/.c8) are not in the pruned space; "
                  "the full space (--full) has them where the arch has thread-block clusters");
  else if (auto why = cluster_unsupported_reason(arch))
    out.push_back("clustered variants (" + spelled + "): " + *why);
  if (!spin_in(kind))
    out.push_back("spin variants are not in the pruned space (kPrunedSpin in generator/include/amax/search_space.hpp); "
                  "the full space (--full) has them where the arch can run them");
  else if (auto why = spin_unsupported_reason(arch))
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

}  // namespace amax
