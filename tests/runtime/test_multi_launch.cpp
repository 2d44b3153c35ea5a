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

TEST(MultiLaunch, SplitsByCapacityAndGridLimit) {
  std::vector<MultiTensor> t;
  for (std::uint32_t i = 0; i < 10000; ++i) t.push_back({nullptr, i % 3 == 0 ? 0u : 5000u, i});
  // chunk 4096 elements: n == 0 -> 1 chunk, 5000 -> 2 chunks
  const auto ls = split_multi_launches(t, 4096, 1600);
  ASSERT_EQ(ls.size(), 7u);  // ceil(10000 / 1600)
  std::size_t next = 0;
  for (const auto& l : ls) {
    EXPECT_EQ(l.first, next);
    next += l.count;
    std::uint32_t chunks = 0, multi = 0;
    for (std::size_t i = l.first; i < l.first + l.count; ++i) {
      const auto c = multi_chunks_of(t[i].n, 4096);
      chunks += static_cast<std::uint32_t>(c);
      if (c > 1) multi += static_cast<std::uint32_t>(c);
    }
    EXPECT_EQ(l.chunks, chunks);
    EXPECT_EQ(l.multi_chunks, multi);
  }
  EXPECT_EQ(next, 10000u);
  EXPECT_EQ(ls[0].count, 1600u);
  EXPECT_EQ(ls.back().count, 400u);
  // A grid limit of 5 chunks: tensors of 2 chunks pair up (2 + 2, then a third does not fit).
  const std::vector<MultiTensor> two = {{nullptr, 5000, 0}, {nullptr, 5000, 1}, {nullptr, 5000, 2}};
  const auto g = split_multi_launches(two, 4096, 1600, 5);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].count, 2u);
  EXPECT_EQ(g[0].chunks, 4u);
  EXPECT_EQ(g[1].first, 2u);
  EXPECT_EQ(multi_workspace_bytes(g), 16u);
  EXPECT_EQ(multi_workspace_bytes({}), 4u);
  EXPECT_EQ(multi_chunks_of((1ull << 31) + 1, 16384), 131073u);
}

TEST(MultiLaunch, PackedArgumentsFollowTheKernelsLayout) {
  const std::vector<MultiTensor> t = {{at(0x1000), 0, 7}, {at(0x2000), 9000, 3}, {at(0x3002), 100, 16777215}};
  const MultiLaunch l{0, 3, 1 + 3 + 1, 3};
  std::vector<unsigned char> a;
  float* out = reinterpret_cast<float*>(0xAA00);
  void* ws = reinterpret_cast<void*>(0xBB00);
  std::uint32_t* ctr = reinterpret_cast<std::uint32_t*>(0xCC00);
  pack_multi_args(a, 192, t, l, 4096, out, ws, ctr, NanMode::ignore);
  const MultiArgsLayout lay = multi_args_layout(192);
  ASSERT_EQ(a.size(), lay.bytes);
  auto u32 = [&](std::size_t off) { std::uint32_t v; std::memcpy(&v, a.data() + off, 4); return v; };
  auto u64 = [&](std::size_t off) { std::uint64_t v; std::memcpy(&v, a.data() + off, 8); return v; };
  EXPECT_EQ(u32(0), 3u);   // count
  EXPECT_EQ(u32(4), 3u);   // multi_chunks
  EXPECT_EQ(u32(8), 1u);   // flags: ignore NaN
  EXPECT_EQ(u64(16), 0xAA00u);
  EXPECT_EQ(u64(24), 0xBB00u);
  EXPECT_EQ(u64(32), 0xCC00u);
  EXPECT_EQ(u64(lay.ptr_offset + 8), 0x2000u);
  EXPECT_EQ(u64(lay.n_offset + 0), 7ull << 40);
  EXPECT_EQ(u64(lay.n_offset + 8), 9000u | (3ull << 40));
  EXPECT_EQ(u64(lay.n_offset + 16), 100u | (16777215ull << 40));
  EXPECT_EQ(u32(lay.chunk_offset + 0), 0u);
  EXPECT_EQ(u32(lay.chunk_offset + 4), 1u);
  EXPECT_EQ(u32(lay.chunk_offset + 8), 4u);
  EXPECT_EQ(u32(lay.chunk_offset + 12), 5u);
  EXPECT_EQ(u64(lay.ptr_offset + 8 * 3), 0u);  // unused descriptors are zero
}
