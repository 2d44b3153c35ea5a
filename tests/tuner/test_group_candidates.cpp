// The variants a group tune times (group_candidates, tuner/include/amax/multi_tune.hpp): the
// multi-tensor space less the variants whose launches repeat an earlier one's work, exact for
// groups of the default grid on an H200's 132 SMs, and the rule's invariants over the whole grid.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "amax/multi_launch.hpp"
#include "amax/multi_tune.hpp"

using namespace amax;
using namespace amax::tune;

namespace {

const ArchInfo kSm90 = ArchInfo::parse("sm_90");
constexpr std::uint32_t kH200Sms = 132;

std::vector<std::string> labels(const std::vector<MultiConfig>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(c.label());
  return out;
}

// What decides the work of `c` on `g`: its launches as comparable values, and whether one cuts a
// tensor between blocks.
struct Work {
  std::vector<std::vector<std::uint64_t>> launches;
  bool cut = false;
};

Work work_of(const MultiConfig& c, const GroupSpec& g) {
  const std::vector<MultiTensor> list(g.tensors, MultiTensor{nullptr, g.n, 0});
  Work w;
  for (const MultiLaunch& l : split_multi_launches(list, c, g.dtype, kH200Sms, multi_capacity_for(kSm90, g.tensors))) {
    w.launches.push_back({l.first, l.count, l.chunks, l.chunks_per_block, l.grid});
    w.cut = w.cut || l.spanning > 0;
  }
  return w;
}

// True when `a` and `b` (with their work on `g`) do the same work, as the function under test
// documents it.
bool same_work(const MultiConfig& a, const Work& wa, const MultiConfig& b, const Work& wb, const GroupSpec& g) {
  if (wa.launches != wb.launches) return false;
  if (a.threads != b.threads || a.nvec != b.nvec || a.unroll != b.unroll || a.epilogue != b.epilogue) return false;
  if (a.combine != b.combine && wa.cut) return false;
  const bool one_chunk = g.n <= a.chunk_elems(g.dtype) && g.n <= b.chunk_elems(g.dtype);
  return a.chunk_kib == b.chunk_kib || one_chunk;
}

}  // namespace

TEST(GroupCandidates, SmallTensorsKeepOneVariantPerThreadCountAndUnroll) {
  // 64 x 16 KiB: every chunk size (16-256 KiB) holds a tensor, every grid cap (>= 264 blocks) gives
  // each of the 64 chunks its own block, no tensor is cut: the combine never runs.
  const auto cs = group_candidates(kSm90, SpaceKind::pruned, {64, 4096, DType::fp32}, kH200Sms);
  EXPECT_EQ(labels(cs), (std::vector<std::string>{
                            "multi.t256.v4.u2.c16k.b2cu.thread", "multi.t256.v4.u4.c16k.b2cu.thread",
                            "multi.t256.v4.u8.c16k.b2cu.thread", "multi.t512.v4.u2.c16k.b2cu.thread",
                            "multi.t512.v4.u4.c32k.b4cu.thread",  // the built-in default stands for its class
                            "multi.t512.v4.u8.c16k.b2cu.thread", "multi.t1024.v4.u2.c16k.b2cu.thread",
                            "multi.t1024.v4.u4.c16k.b2cu.thread", "multi.t1024.v4.u8.c16k.b2cu.thread"}));
}

TEST(GroupCandidates, LargeTensorsKeepTheWholeSpace) {
  // 32 x 16 Mi bf16: every chunk size, cap and combine gives other launches.
  const GroupSpec g{32, 1u << 24, DType::bf16};
  EXPECT_EQ(group_candidates(kSm90, SpaceKind::pruned, g, kH200Sms),
            multi_candidates(kSm90, g.dtype, SpaceKind::pruned, g.shape()));
}

TEST(GroupCandidates, CountsOverTheDefaultGroupsOfAnH200) {
  const DType all[] = {DType::fp32, DType::fp16, DType::bf16};
  std::size_t timed = 0, space = 0;
  for (const GroupSpec& g : default_groups(all)) {
    timed += group_candidates(kSm90, SpaceKind::pruned, g, kH200Sms).size();
    space += multi_candidates(kSm90, g.dtype, SpaceKind::pruned, g.shape()).size();
  }
  EXPECT_EQ(space, 39u * 360);
  EXPECT_EQ(timed, 6165u);
  EXPECT_EQ(group_candidates(kSm90, SpaceKind::pruned, {64, 16384, DType::fp32}, kH200Sms).size(), 45u);
  EXPECT_EQ(group_candidates(kSm90, SpaceKind::pruned, {4096, 65536, DType::fp32}, kH200Sms).size(), 315u);
  EXPECT_EQ(group_candidates(kSm90, SpaceKind::pruned, {8, 1u << 20, DType::bf16}, kH200Sms).size(), 144u);
}

TEST(GroupCandidates, EveryLeftOutVariantRepeatsTheWorkOfExactlyOneKeptOne) {
  const DType all[] = {DType::fp32, DType::bf16};
  for (const GroupSpec& g : default_groups(all)) {
    if (g.tensors * g.n > (1u << 26)) continue;  // the large groups keep (nearly) everything
    const auto space = multi_candidates(kSm90, g.dtype, SpaceKind::pruned, g.shape());
    const auto kept = group_candidates(kSm90, SpaceKind::pruned, g, kH200Sms);
    const MultiConfig def = builtin_multi_default(kSm90, g.dtype, g.shape());
    EXPECT_NE(std::find(kept.begin(), kept.end(), def), kept.end()) << g.name();
    std::vector<Work> space_work, kept_work;
    for (const MultiConfig& c : space) space_work.push_back(work_of(c, g));
    for (const MultiConfig& c : kept) kept_work.push_back(work_of(c, g));
    // Kept variants are of the space, in its order (the default in its class's place), and no two
    // do the same work.
    std::size_t at = 0;
    for (std::size_t i = 0; i < kept.size(); ++i) {
      const auto it = std::find(space.begin(), space.end(), kept[i]);
      ASSERT_NE(it, space.end()) << kept[i].label();
      if (kept[i] != def) {
        EXPECT_GE(static_cast<std::size_t>(it - space.begin()), at) << g.name() << " " << kept[i].label();
        at = static_cast<std::size_t>(it - space.begin());
      }
      for (std::size_t j = 0; j < i; ++j)
        EXPECT_FALSE(same_work(kept[i], kept_work[i], kept[j], kept_work[j], g))
            << g.name() << ": " << kept[i].label() << " " << kept[j].label();
    }
    // Every variant of the space does the work of exactly one kept variant.
    for (std::size_t i = 0; i < space.size(); ++i) {
      int n = 0;
      for (std::size_t j = 0; j < kept.size(); ++j) n += same_work(space[i], space_work[i], kept[j], kept_work[j], g);
      EXPECT_EQ(n, 1) << g.name() << ": " << space[i].label();
    }
  }
}
