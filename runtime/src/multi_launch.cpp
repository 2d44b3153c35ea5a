#include "amax/multi_launch.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "amax/dtype_c.hpp"

namespace amax {

std::optional<MultiListError> sort_multi_list(const amax_tensor_t* t, std::size_t count, bool check_pointers,
                                              MultiList& out) {
  for (auto& v : out.tensors) v.clear();
  out.shapes = {};
  if (count && !t) return MultiListError{AMAX_STATUS_NULL_POINTER, fmt::format("tensors is NULL with count = {}", count)};
  if (count > kMultiMaxTensors)
    return MultiListError{AMAX_STATUS_INVALID_ARGUMENT,
                          fmt::format("count = {} tensors exceeds the limit of {} (2^24 - 1) per call", count,
                                      kMultiMaxTensors)};
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

std::optional<MultiListError> check_multi_output(const float* output, std::size_t count) {
  if (!count) return std::nullopt;
  if (!output) return MultiListError{AMAX_STATUS_NULL_POINTER, fmt::format("output is NULL with count = {}", count)};
  if (reinterpret_cast<std::uintptr_t>(output) % 4)
    return MultiListError{AMAX_STATUS_MISALIGNED_POINTER,
                          fmt::format("output {} is not aligned to 4 bytes", static_cast<const void*>(output))};
  return std::nullopt;
}

std::vector<MultiLaunch> split_multi_launches(std::span<const MultiTensor> tensors, std::uint64_t chunk_elems,
                                              std::uint32_t max_tensors, std::uint32_t max_chunks) {
  std::vector<MultiLaunch> out;
  MultiLaunch cur;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::uint64_t c = multi_chunks_of(tensors[i].n, chunk_elems);
    if (cur.count && (cur.count == max_tensors || cur.chunks + c > max_chunks)) {
      out.push_back(cur);
      cur = MultiLaunch{i, 0, 0, 0};
    }
    if (cur.count == 0) cur.first = i;
    ++cur.count;
    cur.chunks += static_cast<std::uint32_t>(c);
    if (c > 1) cur.multi_chunks += static_cast<std::uint32_t>(c);
  }
  if (cur.count) out.push_back(cur);
  return out;
}

void pack_multi_args(std::vector<unsigned char>& args, std::uint32_t capacity, std::span<const MultiTensor> tensors,
                     const MultiLaunch& l, std::uint64_t chunk_elems, float* out, void* workspace,
                     std::uint32_t* counter, NanMode nan_mode) {
  const MultiArgsLayout layout = multi_args_layout(capacity);
  args.assign(layout.bytes, 0);
  unsigned char* b = args.data();
  const std::uint32_t header[4] = {l.count, l.multi_chunks, nan_mode == NanMode::ignore ? 1u : 0u, 0u};
  std::memcpy(b, header, sizeof header);
  std::memcpy(b + 16, &out, 8);
  std::memcpy(b + 24, &workspace, 8);
  std::memcpy(b + 32, &counter, 8);
  std::uint32_t chunk = 0;
  for (std::uint32_t t = 0; t < l.count; ++t) {
    const MultiTensor& x = tensors[l.first + t];
    const std::uint64_t n_out = x.n | (std::uint64_t{x.index} << 40);
    std::memcpy(b + layout.ptr_offset + 8 * t, &x.data, 8);
    std::memcpy(b + layout.n_offset + 8 * t, &n_out, 8);
    std::memcpy(b + layout.chunk_offset + 4 * t, &chunk, 4);
    chunk += static_cast<std::uint32_t>(multi_chunks_of(x.n, chunk_elems));
  }
  std::memcpy(b + layout.chunk_offset + 4 * l.count, &chunk, 4);
}

std::uint64_t multi_workspace_bytes(std::span<const MultiLaunch> launches) noexcept {
  std::uint64_t most = 1;
  for (const MultiLaunch& l : launches) most = std::max<std::uint64_t>(most, l.chunks);
  return 4 * most;
}

}  // namespace amax
