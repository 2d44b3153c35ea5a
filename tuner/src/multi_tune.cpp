#include "amax/multi_tune.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "amax/record.hpp"

namespace amax::tune {

std::vector<GroupSpec> default_groups(std::span<const DType> dtypes) {
  std::vector<GroupSpec> out;
  for (DType d : dtypes) {
    for (std::uint64_t t : {64u, 512u, 4096u})
      for (std::uint64_t n : {4096u, 16384u, 65536u}) out.push_back({t, n, d});
    for (auto [t, n] : {std::pair<std::uint64_t, std::uint64_t>{8, 1u << 20}, {128, 1u << 20}, {8, 1u << 24},
                        {32, 1u << 24}})
      out.push_back({t, n, d});
  }
  return out;
}

std::vector<MultiConfig> multi_candidates(const ArchInfo& arch, DType d, SpaceKind kind, const GroupShape& shape) {
  auto v = enumerate_multi_space(arch, d, kind);
  const MultiConfig def = builtin_multi_default(arch, d, shape);
  if (std::find(v.begin(), v.end(), def) == v.end()) v.push_back(def);
  return v;
}

std::vector<MultiConfig> group_candidates(const ArchInfo& arch, SpaceKind kind, const GroupSpec& group,
                                          std::uint32_t cu_count) {
  const GroupShape shape = group.shape();
  const MultiConfig def = builtin_multi_default(arch, group.dtype, shape);
  const std::uint32_t capacity = multi_capacity_for(arch, group.tensors);
  const std::vector<MultiTensor> list(group.tensors, MultiTensor{nullptr, group.n, 0});
  // What decides the work of a variant on this group: its launches, and its fields with the grid
  // cap (the launches say what it does) and those that change nothing here (the combine without
  // cut tensors, the chunk size when every tensor is one chunk) at a fixed value.
  using Launches = std::vector<std::tuple<std::size_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>>;
  std::map<std::pair<MultiConfig, Launches>, std::size_t> classes;  // -> index in `out`
  std::vector<MultiConfig> out;
  for (const MultiConfig& c : multi_candidates(arch, group.dtype, kind, shape)) {
    bool cut = false;
    Launches launches;
    for (const MultiLaunch& l : split_multi_launches(list, c, group.dtype, cu_count, capacity)) {
      cut = cut || l.spanning > 0;
      launches.emplace_back(l.first, l.count, l.chunks, l.chunks_per_block, l.grid);
    }
    MultiConfig work = c;
    work.max_blocks = BlockCap::uncapped();
    if (!cut) work.combine = Combine::thread;
    if (group.n <= c.chunk_elems(group.dtype)) work.chunk_kib = 0;
    const auto [it, added] = classes.try_emplace({work, std::move(launches)}, out.size());
    if (added)
      out.push_back(c);
    else if (c == def)
      out[it->second] = c;  // the default stands for its class, at the class's place
  }
  return out;
}

std::set<std::size_t> multi_finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                      std::size_t baseline) {
  return finalists(
      variants, protocol, [](const VariantResult& v) { return static_cast<int>(v.multi->combine); },
      [baseline](std::size_t i) { return i == baseline; });
}

db::GroupKey group_key(const std::string& arch, const GroupSpec& g) {
  const GroupShape s = g.shape();
  return db::GroupKey{arch, g.dtype, s.tensors, s.total_bytes, s.largest_bytes};
}

void record_group(db::TuningDb& db, const std::string& arch, const GroupResult& g, db::Provenance p) {
  p.timestamp = db::utc_timestamp_now();
  db.record<MultiFamily>(group_key(arch, g.spec), p, trials_of(g), winner_of(g));
}

}  // namespace amax::tune
