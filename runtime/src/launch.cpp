#include "amax/launch.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "amax/scale_rule.hpp"

#include "amax/kernel_cache.hpp"

namespace amax {

LaunchShape launch_shape(const KernelConfig& c, std::uint64_t n, std::uint32_t cu_count,
                         std::uint32_t resident_per_cu) {
  LaunchShape s;
  s.block = c.threads;
  if (n == 0) return s;
  const std::uint64_t vectors = (n + c.nvec - 1) / c.nvec;
  const std::uint64_t per_block = std::uint64_t{c.threads} * c.unroll;
  std::uint64_t grid = (vectors + per_block - 1) / per_block;
  grid = std::max<std::uint64_t>(1, std::min(grid, c.max_blocks.max_blocks(cu_count)));
  if (c.strategy == Strategy::spin) {  // one wave: every block resident at once
    grid = std::min<std::uint64_t>(grid, kSpinMaxBlocks);
    if (resident_per_cu > 0)
      grid = std::max<std::uint64_t>(
          1, std::min<std::uint64_t>(grid, std::uint64_t{resident_per_cu} * std::max(1u, cu_count)));
  }
  // A clustered kernel runs whole clusters: the grid rounds up to a multiple of the cluster (the
  // extra blocks find no vector of their own and contribute +0.0), and the cross-block step has
  // one participant per cluster.
  const std::uint64_t k = std::max<std::uint32_t>(1, c.cluster);
  grid = (grid + k - 1) / k * k;
  s.grid = static_cast<std::uint32_t>(grid);
  s.parts = static_cast<std::uint32_t>(grid / k);
  s.memset_output = c.strategy == Strategy::atomic;
  if ((c.strategy == Strategy::two_stage || c.strategy == Strategy::one_pass) && s.parts > 1)
    s.workspace_bytes = 4ull * s.parts;
  // atomic with the scale epilogue counts its participants in the slot to find the last one.
  s.uses_slot = (c.strategy == Strategy::one_pass || c.strategy == Strategy::self_reset || c.strategy == Strategy::spin ||
                 resets_first(c.strategy) || (c.strategy == Strategy::atomic && c.epilogue == Epilogue::scale)) &&
                s.parts > 1;
  s.finish_kernel = c.strategy == Strategy::two_stage && s.parts > 1;
  s.dependent_finish = s.finish_kernel;
  s.cooperative = c.strategy == Strategy::spin && s.parts > 1;
  return s;
}

void launch_amax(Backend& backend, const LoadedKernel& k, const LaunchShape& shape, const void* in,
                 std::uint64_t n, float* out, void* workspace, std::uint32_t* slot, NanMode nan_mode,
                 StreamHandle stream, const ScaleArgs* scale, std::uint32_t wave_size) {
  if (n == 0 || shape.grid == 0) {  // +0.0 without a zero-sized launch
    backend.memset32_async(out, 0u, 1, stream);
    if (scale) {
      const ScaleBits b = reference_scale_bits(0u, ScaleRule{scale->max, scale->epsilon,
                                                             (scale->rule_flags & kRuleForcePow2) != 0,
                                                             (scale->rule_flags & kRuleNanPropagates) != 0});
      backend.memset32_async(scale->scale, b.scale, 1, stream);
      backend.memset32_async(scale->scale_inv, b.scale_inv, 1, stream);
    }
    return;
  }
  if ((scale != nullptr) != (k.config.epilogue == Epilogue::scale))
    throw std::logic_error("launch_amax: scale arguments " + std::string(scale ? "given" : "missing") +
                           " for kernel " + k.config.label());
  if (shape.memset_output) backend.memset32_async(out, 0u, 1, stream);
  unsigned long long count = n;
  unsigned flags = nan_mode == NanMode::ignore ? 1u : 0u;
  ScaleArgs sa = scale ? *scale : ScaleArgs{};
  void* args[] = {&in, &count, &out, &workspace, &slot, &flags, &sa};
  const auto wave = wave_size ? wave_size : static_cast<std::uint32_t>(backend.device().wave_size);
  if (wave == 0 && k.config.strategy == Strategy::first_reset_warp)
    throw std::logic_error("launch_amax: the device reports no wave size for " + k.config.label() + "'s ticket wave");
  const std::uint32_t block = block_threads(k.config.strategy, shape.block, wave);
  if (shape.cooperative) {
    const std::uint64_t resident =
        std::uint64_t{k.resident_per_cu} * static_cast<std::uint32_t>(std::max(1, backend.device().cu_count));
    if (shape.grid > resident)
      throw std::logic_error("launch_amax: spin grid of " + std::to_string(shape.grid) + " blocks exceeds the " +
                             std::to_string(resident) + " blocks of " + k.config.label() +
                             " the device holds at once (pass its resident_per_cu to launch_shape)");
    backend.launch_cooperative(k.main, shape.grid, block, stream, args);
  } else {
    backend.launch(k.main, shape.grid, block, stream, args);
  }
  if (shape.finish_kernel) {
    unsigned parts = shape.parts;
    void* fargs[] = {&workspace, &parts, &out, &sa};
    if (shape.dependent_finish && !backend.is_capturing(stream))
      backend.launch_dependent(k.finish, 1, shape.block, stream, fargs);
    else
      backend.launch(k.finish, 1, shape.block, stream, fargs);
  }
}

}  // namespace amax
