// Multi-tensor calls on the CPU: the list's checks (statuses and messages naming the tensor's index
// and value), the split into launches, the kernel-parameter layout and the workspace size.
#include <gtest/gtest.h>

#include <cstring>

#include "amax/multi_launch.hpp"

using namespace amax;

namespace {
std::optional<MultiListError> sort(std::vector<amax_tensor_t> t, bool pointers = true) {
  MultiList l;
  return sort_multi_list(t.data(), t.size(), pointers, l);
}
const void* at(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }
}  // namespace

// The check every multi-tensor entry point makes before anything reads an entry (a prepared-list
// lookup included): it looks at the array pointer and the count only.
TEST(MultiList, TheArrayIsCheckedBeforeAnyEntryIsRead) {
  auto e = check_multi_list_array(nullptr, 8);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(e->message, "tensors is NULL with count = 8");
  EXPECT_FALSE(check_multi_list_array(nullptr, 0));
  // One real entry and a count past the limit: refused without reading past the entry.
  const amax_tensor_t one{at(0x1000), 4, AMAX_DTYPE_FP32};
  e = check_multi_list_array(&one, kMultiMaxTensors + 1);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(e->message, "count = 16777216 tensors exceeds the limit of 16777215 (2^24 - 1) per call");
  EXPECT_FALSE(check_multi_list_array(&one, 1));
}

TEST(MultiList, EachBadInputHasItsStatusAndAMessageNamingIndexAndValue) {
  MultiList l;
  auto e = sort_multi_list(nullptr, 5, true, l);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(e->message, "tensors is NULL with count = 5");
  EXPECT_FALSE(sort_multi_list(nullptr, 0, true, l));  // an empty list may be NULL

  e = sort({{at(0x1000), 4, AMAX_DTYPE_FP32}, {nullptr, 0, AMAX_DTYPE_BF16}, {nullptr, 100, AMAX_DTYPE_FP16}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(e->message, "tensors[2].data is NULL with n = 100");

  e = sort({{at(0x1000), 4, AMAX_DTYPE_FP32}, {at(0x1002), 3, AMAX_DTYPE_FP32}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_EQ(e->message, "tensors[1].data 0x1002 is not aligned to the 4-byte elements of fp32");
  EXPECT_FALSE(sort({{at(0x1002), 3, AMAX_DTYPE_BF16}, {at(0x1001), 0, AMAX_DTYPE_FP32}}));  // element-aligned; n == 0 unread

  e = sort({{at(0x1000), 4, AMAX_DTYPE_FP32}, {at(0x1000), 4, static_cast<amax_dtype_t>(7)}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_UNKNOWN_DTYPE);
  EXPECT_EQ(e->message, "tensors[1].dtype is 7 (expected AMAX_DTYPE_FP32 = 0, AMAX_DTYPE_FP16 = 1 or AMAX_DTYPE_BF16 = 2)");
  e = sort({{at(0x1000), 4, static_cast<amax_dtype_t>(-1)}}, false);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "tensors[0].dtype is -1 (expected AMAX_DTYPE_FP32 = 0, AMAX_DTYPE_FP16 = 1 or AMAX_DTYPE_BF16 = 2)");

  e = sort({{at(0x1000), 1ull << 40, AMAX_DTYPE_BF16}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(e->message, "tensors[0].n is 1099511627776, above the limit of 2^40 - 1 elements");

  std::vector<amax_tensor_t> many(kMultiMaxTensors + 1, amax_tensor_t{nullptr, 0, AMAX_DTYPE_FP32});
  e = sort(many);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(e->message, "count = 16777216 tensors exceeds the limit of 16777215 (2^24 - 1) per call");

  // Without pointer checks (workspace size, preload) only counts and dtypes are read.
  EXPECT_FALSE(sort({{nullptr, 100, AMAX_DTYPE_FP16}, {at(0x1003), 7, AMAX_DTYPE_FP32}}, false));

  e = check_multi_output(nullptr, 3);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(e->message, "output is NULL with count = 3");
  e = check_multi_output(reinterpret_cast<const float*>(0x1002), 3);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_EQ(e->message, "output 0x1002 is not aligned to 4 bytes");
  EXPECT_FALSE(check_multi_output(nullptr, 0));
}

TEST(MultiList, SortsByDtypeInListOrderWithShapes) {
  MultiList l;
  const std::vector<amax_tensor_t> t = {{at(0x100), 10, AMAX_DTYPE_BF16}, {at(0x200), 3, AMAX_DTYPE_FP32},
                                        {nullptr, 0, AMAX_DTYPE_BF16}, {at(0x300), 1000, AMAX_DTYPE_BF16}};
  ASSERT_FALSE(sort_multi_list(t.data(), t.size(), true, l));
  const auto& bf = l.tensors[index(DType::bf16)];
  ASSERT_EQ(bf.size(), 3u);
  EXPECT_EQ(bf[0].index, 0u);
  EXPECT_EQ(bf[1].index, 2u);
  EXPECT_EQ(bf[2].index, 3u);
  EXPECT_EQ(l.tensors[index(DType::fp32)].size(), 1u);
  EXPECT_EQ(l.tensors[index(DType::fp32)][0].index, 1u);
  EXPECT_TRUE(l.tensors[index(DType::fp16)].empty());
  EXPECT_EQ(l.shapes[index(DType::bf16)], (GroupShape{3, 2020, 2000}));
  EXPECT_EQ(l.shapes[index(DType::fp32)], (GroupShape{1, 12, 12}));
}

// A config whose chunks are `chunk_elems` fp32 elements and whose grid cap is `cap` blocks.
MultiConfig fp32_config(std::uint64_t chunk_elems, BlockCap cap) {
  MultiConfig c{512, 4, 4, static_cast<std::uint32_t>(chunk_elems * 4 / 1024), cap, Combine::thread};
  return c;
}

TEST(MultiLaunch, SplitsByCapacityAndGridLimit) {
  std::vector<MultiTensor> t;
  for (std::uint32_t i = 0; i < 10000; ++i) t.push_back({nullptr, i % 3 == 0 ? 0u : 5000u, i});
  // chunk 4096 elements: n == 0 -> 1 chunk, 5000 -> 2 chunks; uncapped: one chunk per block.
  const auto ls = split_multi_launches(t, fp32_config(4096, BlockCap::uncapped()), DType::fp32, 132, 1600);
  ASSERT_EQ(ls.size(), 7u);  // ceil(10000 / 1600)
  std::size_t next = 0;
  for (const auto& l : ls) {
    EXPECT_EQ(l.first, next);
    next += l.count;
    std::uint32_t chunks = 0, spanning = 0;
    for (std::size_t i = l.first; i < l.first + l.count; ++i) {
      const auto c = multi_chunks_of(t[i].n, 12);
      chunks += static_cast<std::uint32_t>(c);
      if (c > 1) ++spanning;  // one chunk per block: every tensor of two chunks spans two blocks
    }
    EXPECT_EQ(l.chunks, chunks);
    EXPECT_EQ(l.chunks_per_block, 1u);
    EXPECT_EQ(l.grid, chunks);
    EXPECT_EQ(l.spanning, spanning);
    EXPECT_EQ(l.workspace_bytes(), 4ull * (4 * l.grid + l.chunks));
  }
  EXPECT_EQ(next, 10000u);
  EXPECT_EQ(ls[0].count, 1600u);
  EXPECT_EQ(ls.back().count, 400u);
  // A grid limit of 5 chunks: tensors of 2 chunks pair up (2 + 2, then a third does not fit).
  const std::vector<MultiTensor> two = {{nullptr, 5000, 0}, {nullptr, 5000, 1}, {nullptr, 5000, 2}};
  const auto g = split_multi_launches(two, fp32_config(4096, BlockCap::uncapped()), DType::fp32, 132, 1600, 5);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].count, 2u);
  EXPECT_EQ(g[0].chunks, 4u);
  EXPECT_EQ(g[1].first, 2u);
  EXPECT_EQ(multi_workspace_bytes(g), 4u * (4 * 4 + 4));  // the first launch: 4 blocks, 4 chunks
  EXPECT_EQ(multi_workspace_bytes({}), 4u);
  EXPECT_EQ(multi_chunks_of((1ull << 31) + 1, 14), 131073u);
  EXPECT_EQ(multi_chunks_of(0, 14), 1u);
  EXPECT_EQ(multi_chunks_of(16384, 14), 1u);
  EXPECT_EQ(multi_chunks_of(16385, 14), 2u);
}

TEST(MultiLaunch, GridCapGivesRunsOfChunksAndCountsSpanningTensors) {
  // Chunks of 1024 fp32 elements (4 KiB); tensors of 3, 1, 4, 2 and 1 chunks (11 in all).
  const std::vector<MultiTensor> t = {{nullptr, 3000, 0}, {nullptr, 1, 1}, {nullptr, 4096, 2},
                                      {nullptr, 1025, 3}, {nullptr, 0, 4}};
  // An absolute cap of 4 blocks: ceil(11 / 4) = 3 chunks per block, blocks [0,3) [3,6) [6,9) [9,11):
  // tensor 0 = [0,3) inside block 0; 1 = [3,4) inside; 2 = [4,8) spans blocks 1 and 2;
  // 3 = [8,10) spans blocks 2 and 3; 4 = [10,11) inside block 3.
  const auto ls = split_multi_launches(t, fp32_config(1024, BlockCap::absolute(4)), DType::fp32, 132, 1600);
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(ls[0].chunks, 11u);
  EXPECT_EQ(ls[0].chunks_per_block, 3u);
  EXPECT_EQ(ls[0].grid, 4u);
  EXPECT_EQ(ls[0].spanning, 2u);
  // Per CU: 1 block per CU on 2 CUs -> 6 chunks per block: [0,6) [6,11): tensor 2 = [4,8) spans.
  const auto per_cu = split_multi_launches(t, fp32_config(1024, BlockCap::per_cu(1)), DType::fp32, 2, 1600);
  EXPECT_EQ(per_cu[0].chunks_per_block, 6u);
  EXPECT_EQ(per_cu[0].grid, 2u);
  EXPECT_EQ(per_cu[0].spanning, 1u);
  // A cap above the chunk count: one chunk per block, every multi-chunk tensor spans.
  const auto wide = split_multi_launches(t, fp32_config(1024, BlockCap::per_cu(8)), DType::fp32, 132, 1600);
  EXPECT_EQ(wide[0].chunks_per_block, 1u);
  EXPECT_EQ(wide[0].grid, 11u);
  EXPECT_EQ(wide[0].spanning, 3u);
  EXPECT_EQ(multi_chunks_per_block(fp32_config(1024, BlockCap::per_cu(4)), 1u << 20, 132), 1986u);  // ceil(2^20 / 528)
}

TEST(MultiLaunch, PackedArgumentsFollowTheKernelsLayout) {
  const std::vector<MultiTensor> t = {{at(0x1000), 0, 7}, {at(0x2000), 9000, 3}, {at(0x3002), 100, 16777215}};
  MultiLaunch l;
  l.first = 0;
  l.count = 3;
  l.chunks = 1 + 3 + 1;
  l.chunks_per_block = 2;
  l.grid = 3;
  l.spanning = 1;
  std::vector<unsigned char> a(multi_args_layout(192).bytes, 0xEE);  // what a previous call left
  float* out = reinterpret_cast<float*>(0xAA00);
  void* ws = reinterpret_cast<void*>(0xBB00);
  std::uint32_t* ctr = reinterpret_cast<std::uint32_t*>(0xCC00);
  const MultiScaleArgs sa{reinterpret_cast<float*>(0xDD00), reinterpret_cast<float*>(0xEE00), 448.0f, 0.5f,
                          kRuleForcePow2};
  MultiConfig warp = fp32_config(4096, BlockCap::per_cu(4));
  warp.combine = Combine::warp;
  pack_multi_args(a, 192, t, l, warp, DType::fp32, out, ws, ctr, NanMode::ignore, &sa);
  const MultiArgsLayout lay = multi_args_layout(192);
  ASSERT_EQ(a.size(), lay.bytes);
  auto u32 = [&](std::size_t off) { std::uint32_t v; std::memcpy(&v, a.data() + off, 4); return v; };
  auto u64 = [&](std::size_t off) { std::uint64_t v; std::memcpy(&v, a.data() + off, 8); return v; };
  auto f32 = [&](std::size_t off) { float v; std::memcpy(&v, a.data() + off, 4); return v; };
  EXPECT_EQ(u32(0), 3u);   // count
  EXPECT_EQ(u32(4), 1u);   // spanning
  EXPECT_EQ(u32(8), 1u | 1u << 1 | 12u << 8);  // flags: ignore NaN, the warp combine, chunks of 2^12 elements
  EXPECT_EQ(u32(12), 2u);  // chunks per block
  EXPECT_EQ(u64(16), 0xAA00u);
  EXPECT_EQ(u64(24), 0xBB00u);
  EXPECT_EQ(u64(32), 0xCC00u);
  EXPECT_EQ(u64(40), 0xDD00u);  // scale
  EXPECT_EQ(u64(48), 0xEE00u);  // scale_inv
  EXPECT_EQ(f32(56), 448.0f);
  EXPECT_EQ(f32(60), 0.5f);
  EXPECT_EQ(u32(64), kRuleForcePow2);
  EXPECT_EQ(lay.ptr_offset, 72u);
  EXPECT_EQ(u64(lay.ptr_offset + 8), 0x2000u);
  EXPECT_EQ(u64(lay.n_offset + 0), 7ull << 40);
  EXPECT_EQ(u64(lay.n_offset + 8), 9000u | (3ull << 40));
  EXPECT_EQ(u64(lay.n_offset + 16), 100u | (16777215ull << 40));
  EXPECT_EQ(u32(lay.chunk_offset + 0), 0u);
  EXPECT_EQ(u32(lay.chunk_offset + 4), 1u);
  EXPECT_EQ(u32(lay.chunk_offset + 8), 4u);
  EXPECT_EQ(u32(lay.chunk_offset + 12), 5u);
  // Without the epilogue the scale fields are zero.
  pack_multi_args(a, 192, t, l, fp32_config(65536, BlockCap::per_cu(4)), DType::fp32, out, ws, ctr,
                  NanMode::propagate);
  EXPECT_EQ(u32(8), 16u << 8);  // propagate NaN, the thread combine, chunks of 2^16 elements
  EXPECT_EQ(u64(40), 0u);
  EXPECT_EQ(u64(48), 0u);
  EXPECT_EQ(f32(56), 0.0f);
  EXPECT_EQ(u32(64), 0u);
}

TEST(MultiLaunch, FusedOutputArraysMustBeDisjoint) {
  const float* base = reinterpret_cast<const float*>(0x10000);
  EXPECT_FALSE(check_multi_outputs_disjoint({base, base + 4, base + 8}, 4));
  const auto e = check_multi_outputs_disjoint({base, base + 3, base + 8}, 4);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(e->message, "amax_out 0x10000 and scale_out 0x1000c overlap: with count = 4 each holds 16 bytes and the "
                        "three arrays must be disjoint");
  const auto f = check_multi_outputs_disjoint({base, base + 8, base + 11}, 4);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->message.substr(0, 35), "scale_out 0x10020 and scale_inv_out");
  const auto n = check_multi_output(nullptr, 3, "scale_inv_out");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->message, "scale_inv_out is NULL with count = 3");
}
