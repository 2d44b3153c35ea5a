#include "amax/multi_launch.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "amax/dtype_c.hpp"

namespace amax {

std::optional<MultiListError> check_multi_list_array(const amax_tensor_t* t, std::size_t count) {
  if (count && !t) return MultiListError{AMAX_STATUS_NULL_POINTER, fmt::format("tensors is NULL with count = {}", count)};
  if (count > kMultiMaxTensors)
    return MultiListError{AMAX_STATUS_INVALID_ARGUMENT,
                          fmt::format("count = {} tensors exceeds the limit of {} (2^24 - 1) per call", count,
                                      kMultiMaxTensors)};
  return std::nullopt;
}

std::optional<MultiListError> sort_multi_list(const amax_tensor_t* t, std::size_t count, bool check_pointers,
                                              MultiList& out) {
  for (auto& v : out.tensors) v.clear();
  out.shapes = {};
  if (auto e = check_multi_list_array(t, count)) return e;
  for (std::size_t i = 0; i < count; ++i) {
    const auto d = from_c(t[i].dtype);
    if (!d)
      return MultiListError{AMAX_STATUS_UNKNOWN_DTYPE,
                            fmt::format("tensors[{}].dtype is {} (expected AMAX_DTYPE_FP32 = 0, AMAX_DTYPE_FP16 = 1 or "
                                        "AMAX_DTYPE_BF16 = 2)", i, static_cast<int>(t[i].dtype))};
    const std::uint64_t n = t[i].n;
    if (n > kMultiMaxElements)
      return MultiListError{AMAX_STATUS_INVALID_ARGUMENT,
                            fmt::format("tensors[{}].n is {}, above the limit of 2^40 - 1 elements", i, n)};
    const std::uint32_t eb = info(*d).bytes;
    if (check_pointers && n) {
      if (!t[i].data)
        return MultiListError{AMAX_STATUS_NULL_POINTER, fmt::format("tensors[{}].data is NULL with n = {}", i, n)};
      if (reinterpret_cast<std::uintptr_t>(t[i].data) % eb)
        return MultiListError{AMAX_STATUS_MISALIGNED_POINTER,
                              fmt::format("tensors[{}].data {} is not aligned to the {}-byte elements of {}", i,
                                          t[i].data, eb, to_string(*d))};
    }
    out.tensors[index(*d)].push_back(MultiTensor{t[i].data, n, static_cast<std::uint32_t>(i)});
    GroupShape& g = out.shapes[index(*d)];
    ++g.tensors;
    g.total_bytes += n * eb;
    g.largest_bytes = std::max<std::uint64_t>(g.largest_bytes, n * eb);
  }
  return std::nullopt;
}

std::optional<MultiListError> check_multi_output(const float* output, std::size_t count, const char* name) {
  if (!count) return std::nullopt;
  if (!output) return MultiListError{AMAX_STATUS_NULL_POINTER, fmt::format("{} is NULL with count = {}", name, count)};
  if (reinterpret_cast<std::uintptr_t>(output) % 4)
    return MultiListError{AMAX_STATUS_MISALIGNED_POINTER,
                          fmt::format("{} {} is not aligned to 4 bytes", name, static_cast<const void*>(output))};
  return std::nullopt;
}

std::optional<MultiListError> check_multi_outputs_disjoint(std::array<const float*, 3> o, std::size_t count) {
  static constexpr const char* kNames[3] = {"amax_out", "scale_out", "scale_inv_out"};
  for (int a = 0; a < 3; ++a)
    for (int b = a + 1; b < 3; ++b) {
      const auto pa = reinterpret_cast<std::uintptr_t>(o[a]), pb = reinterpret_cast<std::uintptr_t>(o[b]);
      if (pa < pb + 4 * count && pb < pa + 4 * count)
        return MultiListError{AMAX_STATUS_INVALID_ARGUMENT,
                              fmt::format("{} {} and {} {} overlap: with count = {} each holds {} bytes and the three "
                                          "arrays must be disjoint", kNames[a], static_cast<const void*>(o[a]),
                                          kNames[b], static_cast<const void*>(o[b]), count, 4 * count)};
    }
  return std::nullopt;
}

std::vector<MultiLaunch> split_multi_launches(std::span<const MultiTensor> tensors, const MultiConfig& config,
                                              DType dtype, std::uint32_t cu_count, std::uint32_t max_tensors,
                                              std::uint32_t max_chunks) {
  const unsigned shift = static_cast<unsigned>(std::countr_zero(config.chunk_elems(dtype)));
  std::vector<MultiLaunch> out;
  MultiLaunch cur;
  // The grid of a filled launch, and its spanning tensors: tensor [f, e) of chunks spans when its
  // first and last chunks fall into different blocks.
  auto close = [&](MultiLaunch& l) {
    l.chunks_per_block = multi_chunks_per_block(config, l.chunks, cu_count);
    l.grid = (l.chunks + l.chunks_per_block - 1) / l.chunks_per_block;
    // A tensor spans when it ends past the first block boundary after its first chunk; the
    // boundary moves forward with the tensors (no division per tensor).
    std::uint64_t f = 0, boundary = l.chunks_per_block;
    for (std::size_t t = l.first; t < l.first + l.count; ++t) {
      const std::uint64_t e = f + multi_chunks_of(tensors[t].n, shift);
      if (f >= boundary) {
        boundary += l.chunks_per_block;
        if (f >= boundary) boundary = (f / l.chunks_per_block + 1) * l.chunks_per_block;  // past a long tensor
      }
      if (e > boundary) ++l.spanning;
      f = e;
    }
    out.push_back(l);
  };
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::uint64_t c = multi_chunks_of(tensors[i].n, shift);
    if (cur.count && (cur.count == max_tensors || cur.chunks + c > max_chunks)) {
      close(cur);
      cur = MultiLaunch{};
    }
    if (cur.count == 0) cur.first = i;
    ++cur.count;
    cur.chunks += static_cast<std::uint32_t>(c);
  }
  if (cur.count) close(cur);
  return out;
}

void patch_multi_args(std::vector<unsigned char>& args, float* out, void* workspace, std::uint32_t* counter,
                      const MultiScaleArgs* scale) noexcept {
  unsigned char* b = args.data();
  std::memcpy(b + 16, &out, 8);
  std::memcpy(b + 24, &workspace, 8);
  std::memcpy(b + 32, &counter, 8);
  static_assert(kMultiArgsHeaderBytes == 40 + sizeof(MultiScaleArgs));
  const MultiScaleArgs none{nullptr, nullptr, 0.0f, 0.0f, 0u};
  std::memcpy(b + 40, scale ? scale : &none, sizeof(MultiScaleArgs));
}

void pack_multi_args(std::vector<unsigned char>& args, std::uint32_t capacity, std::span<const MultiTensor> tensors,
                     const MultiLaunch& l, const MultiConfig& config, DType dtype, float* out, void* workspace,
                     std::uint32_t* counter, NanMode nan_mode, const MultiScaleArgs* scale) {
  const MultiArgsLayout layout = multi_args_layout(capacity);
  args.resize(layout.bytes);
  unsigned char* b = args.data();
  const unsigned shift = static_cast<unsigned>(std::countr_zero(config.chunk_elems(dtype)));
  const std::uint32_t flags = (nan_mode == NanMode::ignore ? kFlagIgnoreNan : 0u) |
                              static_cast<std::uint32_t>(config.combine) << kMultiCombineBit |
                              shift << kMultiChunkShiftBit;
  const std::uint32_t header[4] = {l.count, l.spanning, flags, l.chunks_per_block};
  std::memcpy(b, header, sizeof header);
  patch_multi_args(args, out, workspace, counter, scale);
  unsigned char* ptrs = b + layout.ptr_offset;
  unsigned char* ns = b + layout.n_offset;
  unsigned char* begins = b + layout.chunk_offset;
  std::uint32_t chunk = 0;
  for (std::uint32_t t = 0; t < l.count; ++t) {
    const MultiTensor& x = tensors[l.first + t];
    const std::uint64_t n_out = x.n | (std::uint64_t{x.index} << 40);
    std::memcpy(ptrs + 8 * t, &x.data, 8);
    std::memcpy(ns + 8 * t, &n_out, 8);
    std::memcpy(begins + 4 * t, &chunk, 4);
    chunk += static_cast<std::uint32_t>(multi_chunks_of(x.n, shift));
  }
  std::memcpy(begins + 4 * l.count, &chunk, 4);
}

void launch_multi_group(Backend& backend, FunctionHandle kernel, const MultiConfig& config, DType dtype,
                        std::uint32_t capacity, std::span<const MultiTensor> tensors,
                        std::span<const MultiLaunch> launches, float* out, void* workspace, std::uint32_t* counter,
                        NanMode nan_mode, const MultiScaleArgs* scale, StreamHandle stream,
                        std::vector<unsigned char>& args) {
  for (const MultiLaunch& l : launches) {
    pack_multi_args(args, capacity, tensors, l, config, dtype, out, workspace, counter, nan_mode, scale);
    void* params[] = {args.data()};
    enqueue(backend, multi_launch_op(l, config), kernel, params, out, stream);
  }
}

std::uint64_t multi_workspace_bytes(std::span<const MultiLaunch> launches) noexcept {
  std::uint64_t most = 4;
  for (const MultiLaunch& l : launches) most = std::max(most, l.workspace_bytes());
  return most;
}

}  // namespace amax
