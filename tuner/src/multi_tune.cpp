#include "amax/multi_tune.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "amax/record.hpp"
#include "amax/reference.hpp"

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

// ---- verification ----

MultiVerifier::MultiVerifier(Backend& b, StreamHandle stream) : b_(b), stream_(stream), counter_(b, 4 * kSlotWords) {
  b.memset32_async(counter_.get(), 0, kSlotWords, stream);
  b.synchronize(stream);
}

void MultiVerifier::reserve(std::uint64_t out_words, std::uint64_t workspace_bytes) {
  if (out_words > out_words_) {
    out_.reset();  // before the larger one is allocated
    out_ = DeviceBuffer(b_, 4 * out_words);
    out_words_ = out_words;
  }
  if (workspace_bytes > workspace_bytes_) {
    workspace_.reset();
    workspace_ = DeviceBuffer(b_, workspace_bytes);
    workspace_bytes_ = workspace_bytes;
    b_.memset32_async(workspace_.get(), 0xabababab, workspace_bytes / 4, stream_);  // arbitrary bytes
  }
}

std::vector<std::vector<std::uint32_t>> MultiVerifier::run(const std::vector<MultiConfig>& cs,
                                                           const std::vector<const LoadedMultiKernel*>& ks,
                                                           std::span<const MultiTensor> tensors, DType d, NanMode mode,
                                                           std::uint32_t cu) {
  static const std::uint32_t kGarbage[] = {0x7f800000u, 0x7fc00000u, 0x4b000000u, 0xffffffffu, 0x00000001u};
  std::vector<std::vector<MultiLaunch>> plans(cs.size());
  std::uint64_t ws = 4;
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (ks[i]) {
      plans[i] = split_multi_launches(tensors, cs[i], d, cu, ks[i]->capacity);
      ws = std::max(ws, multi_workspace_bytes(plans[i]));
    }
  reserve(tensors.size() * cs.size(), ws);
  b_.memset32_async(out_.get(), kGarbage[calls_++ % 5], tensors.size() * cs.size(), stream_);
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (ks[i])
      launch_multi_group(b_, ks[i]->main, cs[i], d, ks[i]->capacity, tensors, plans[i],
                         out_.get<float>() + i * tensors.size(), workspace_.get(), counter_.get<std::uint32_t>(), mode,
                         nullptr, stream_, args_);
  b_.synchronize(stream_);
  std::vector<std::uint32_t> all(tensors.size() * cs.size());
  b_.copy_to_host(all.data(), out_.get(), 4 * all.size());
  std::uint32_t slot[kSlotWords] = {};
  b_.copy_to_host(slot, counter_.get(), sizeof slot);
  if (slot[0] != 0)
    throw std::runtime_error("a multi-tensor variant left the stream slot's arrival count at " + std::to_string(slot[0]));
  std::vector<std::vector<std::uint32_t>> out(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i)
    out[i].assign(all.begin() + static_cast<std::ptrdiff_t>(i * tensors.size()),
                  all.begin() + static_cast<std::ptrdiff_t>((i + 1) * tensors.size()));
  return out;
}

namespace {
const char* nan_name(NanMode m) { return m == NanMode::ignore ? "ignore" : "propagate"; }
// The dtype's largest finite power of two (above every region value, all < 2) and a negative
// quiet NaN with payload 1, in the dtype's own format.
std::uint32_t big_bits(DType d) { return info(d).max_pow2_bits(); }
std::uint32_t nan_bits(DType d) { return info(d).sign_bit() | info(d).quiet_nan_bits() | 1u; }
}  // namespace

std::map<std::string, std::string> MultiVerifier::verify_small(DType d, const std::vector<MultiConfig>& cs,
                                                               const std::vector<const LoadedMultiKernel*>& ks) {
  static constexpr std::uint64_t kSizes[] = {0, 1, 33, 4097, 70001, 300007, (1u << 20) + 3};
  std::map<std::string, std::string> failed;
  const std::uint32_t eb = info(d).bytes;
  std::vector<std::uint64_t> at;
  std::uint64_t bytes = 0;
  for (std::uint64_t n : kSizes) {
    at.push_back(bytes);
    bytes += (n + 16) * eb + 256 - (n + 16) * eb % 256;
  }
  const DeviceBuffer buf(b_, bytes);
  const auto cu = static_cast<std::uint32_t>(b_.device().cu_count);
  std::uint64_t seed = 1;
  const auto kinds = all_input_kinds();
  for (std::size_t round = 0; round < kinds.size(); ++round)
    for (NanMode mode : {NanMode::propagate, NanMode::ignore}) {
      std::vector<MultiTensor> list;
      std::vector<std::uint32_t> expect;
      std::vector<std::string> what;
      for (std::size_t i = 0; i < std::size(kSizes); ++i) {
        const std::uint64_t n = kSizes[i], off = (round + i) % 3;
        const InputKind kind = kinds[(round + i) % kinds.size()];
        const auto host = make_input(kind, d, n, seed++);
        char* p = buf.get<char>(at[i] + off * eb);
        if (n) b_.copy_to_device(p, host.data(), host.size());
        list.push_back({n ? p : nullptr, n, static_cast<std::uint32_t>(i)});
        expect.push_back(reference_amax_bits(host.data(), d, n, mode));
        what.push_back(fmt::format("{} n={} offset={}", to_string(kind), n, off));
      }
      for (std::uint32_t cus : {cu, 1u}) {
        const auto got = run(cs, ks, list, d, mode, cus);
        for (std::size_t v = 0; v < cs.size(); ++v)
          for (std::size_t i = 0; ks[v] && i < list.size(); ++i)
            if (got[v][i] != expect[i] && !failed.count(cs[v].label()))
              failed[cs[v].label()] =
                  fmt::format("tensor {} of {} ({}), nan={}, grid for {} CUs: got 0x{:08x}, expected 0x{:08x}", i,
                              list.size(), what[i], nan_name(mode), cus, got[v][i], expect[i]);
      }
    }
  return failed;
}

std::vector<std::string> MultiVerifier::verify_at_shape(InputRegion& inputs, const GroupSpec& g,
                                                        const std::vector<MultiConfig>& cs,
                                                        const std::vector<const LoadedMultiKernel*>& ks) {
  std::vector<std::string> reasons(cs.size());
  const std::uint32_t eb = info(g.dtype).bytes;
  char* in = static_cast<char*>(inputs.base()) + eb;  // every tensor offset by one element
  std::vector<MultiTensor> list;
  std::vector<std::uint64_t> pos;  // the planted element's byte offset from `in`
  for (std::uint64_t i = 0; i < g.tensors; ++i) {
    list.push_back({in + i * g.n * eb, g.n, static_cast<std::uint32_t>(i)});
    const std::uint64_t at = i % 3 == 0 ? g.n - 1 : i % 3 == 1 ? 0 : g.n / 2;
    pos.push_back((i * g.n + at) * eb);
  }
  const std::uint64_t nan_tensor = g.tensors / 2, nan_at = (nan_tensor * g.n + g.n / 2 + (g.n > 2 ? 1 : 0)) * eb;
  std::vector<std::uint32_t> orig(pos.size() + 1);
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_host(&orig[i], in + pos[i], eb);
  b_.copy_to_host(&orig.back(), in + nan_at, eb);
  const std::uint32_t big = big_bits(g.dtype), nan = nan_bits(g.dtype);
  const std::uint32_t expect_big = reference_amax_bits(&big, g.dtype, 1, NanMode::propagate);
  auto check = [&](const char* what, NanMode mode, bool nan_planted) {
    const auto got = run(cs, ks, list, g.dtype, mode, static_cast<std::uint32_t>(b_.device().cu_count));
    for (std::size_t v = 0; v < cs.size(); ++v)
      for (std::size_t i = 0; ks[v] && reasons[v].empty() && i < list.size(); ++i) {
        const std::uint32_t want = nan_planted && i == nan_tensor && mode == NanMode::propagate ? 0x7fc00000u : expect_big;
        if (got[v][i] != want)
          reasons[v] = fmt::format("{} ({}, offset 1, nan={}): tensor {} got 0x{:08x}, expected 0x{:08x}", what,
                                   g.name(), nan_name(mode), i, got[v][i], want);
      }
  };
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_device(in + pos[i], &big, eb);
  check("maximum at the last, first or middle element of each tensor", NanMode::propagate, false);
  if (g.n >= 3) {
    b_.copy_to_device(in + nan_at, &nan, eb);
    check("NaN in the middle of one tensor", NanMode::propagate, true);
    check("NaN in the middle of one tensor, NaN ignored", NanMode::ignore, true);
  }
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_device(in + pos[i], &orig[i], eb);
  b_.copy_to_device(in + nan_at, &orig.back(), eb);
  return reasons;
}

db::GroupKey group_key(const std::string& arch, const GroupSpec& g) {
  const GroupShape s = g.shape();
  return db::GroupKey{arch, g.dtype, s.tensors, s.total_bytes, s.largest_bytes};
}

void record_group(db::TuningDb& db, const std::string& arch, const GroupResult& g, db::Provenance p) {
  p.timestamp = db::utc_timestamp_now();
  db.record_group_key(group_key(arch, g.spec), p, trials_of(g), winner_of(g));
}

}  // namespace amax::tune
