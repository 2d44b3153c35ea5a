#include "amax/launch_plan.hpp"

#include <algorithm>

namespace amax {

std::string host_device_defines() {
  std::string s = "#define AMAX_FLAG_IGNORE_NAN " + std::to_string(kFlagIgnoreNan) + "u\n";
  s += "#define AMAX_RULE_FORCE_POW2 " + std::to_string(kRuleForcePow2) + "u\n";
  s += "#define AMAX_RULE_NAN_PROPAGATES " + std::to_string(kRuleNanPropagates) + "u\n";
  s += "#define AMAX_SCALE_ARGS_BYTES " + std::to_string(sizeof(ScaleArgs)) + "\n";
  s += "#define AMAX_QUANT_SYNC_ARRIVALS " + std::to_string(kQuantizeArrivalWord) + "u\n";
  s += "#define AMAX_QUANT_SYNC_ACCUMULATOR " + std::to_string(kQuantizeAccumulatorWord) + "u\n";
  s += "#define AMAX_QUANT_SYNC_PUBLISHED " + std::to_string(kQuantizePublishedWord) + "u\n";
  std::string_view last;  // rows sharing their words share their macro: one line for them
  for (const StrategyInfo& r : kStrategies)
    if (!r.slot_macro.empty() && r.slot_macro != last) {
      s += "#define " + std::string(r.slot_macro) + " " + std::to_string(r.slot_first) + "u\n";
      last = r.slot_macro;
    }
  return s;
}

LaunchShape launch_shape(const KernelConfig& c, std::uint64_t n, std::uint32_t cu_count,
                         std::uint32_t resident_per_cu) {
  const StrategyInfo& row = info(c.strategy);
  LaunchShape s;
  s.block = c.threads;
  s.resident_grid = row.resident_grid;
  s.extra_wave = row.extra_wave;
  if (n == 0) return s;
  const std::uint64_t vectors = (n + c.nvec - 1) / c.nvec;
  const std::uint64_t per_block = std::uint64_t{c.threads} * c.unroll;
  std::uint64_t grid = (vectors + per_block - 1) / per_block;
  grid = std::max<std::uint64_t>(1, std::min(grid, c.max_blocks.max_blocks(cu_count)));
  if (row.max_grid) grid = std::min<std::uint64_t>(grid, row.max_grid);
  if (row.resident_grid && resident_per_cu > 0)  // one wave: every block resident at once
    grid = std::max<std::uint64_t>(
        1, std::min<std::uint64_t>(grid, std::uint64_t{resident_per_cu} * std::max(1u, cu_count)));
  s.grid = static_cast<std::uint32_t>(grid);
  s.parts = s.grid;
  const bool many = s.parts > 1;
  s.memset_output = row.memset_output;
  if (row.workspace && many) s.workspace_bytes = 4ull * s.parts;
  s.uses_slot = many && (row.slot == SlotUse::participants ||
                         (row.slot == SlotUse::scale_participants && c.epilogue == Epilogue::scale));
  s.finish_kernel = row.finish_kernel && many;
  s.dependent_finish = s.finish_kernel;
  s.cooperative = row.resident_grid && many;
  auto add = [&](LaunchOp op) { s.ops_storage[s.op_count++] = op; };
  if (s.memset_output) add({LaunchOp::Kind::memset_output});
  add({LaunchOp::Kind::main, s.grid, s.block, s.extra_wave, s.cooperative, false});
  if (s.finish_kernel) add({LaunchOp::Kind::finish, 1, s.block, false, false, s.dependent_finish});
  return s;
}

LaunchShape launch_shape(const QuantizeConfig& c, DType dtype, std::uint64_t n, std::uint32_t cu_count,
                         std::uint32_t resident_per_cu) {
  LaunchShape s;
  s.block = c.threads;
  s.resident_grid = c.one_launch();
  if (n == 0) return s;
  s.grid = quantize_grid(c, dtype, n, cu_count, resident_per_cu);
  s.parts = s.grid;
  const bool many = s.grid > 1;
  s.uses_slot = c.one_launch() && many;
  s.cooperative = c.one_launch() && many;
  s.ops_storage[s.op_count++] = {LaunchOp::Kind::main, s.grid, s.block, false, s.cooperative, false};
  return s;
}

}  // namespace amax
