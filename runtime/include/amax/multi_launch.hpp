#pragma once
// Multi-tensor calls (DESIGN.md section 6): splitting a list of tensors of one dtype into launches
// of the multi-tensor kernel (templates/amax_multi_kernels.h), packing each launch's descriptors
// into the kernel-parameter struct, and enqueueing the launches. Loading the kernels is
// kernel_cache.hpp; choosing the variant is the context's (multi dispatch).
#include <cstddef>
#include <cstdint>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "amax/amax_tune.h"

#include "amax/backend.hpp"
#include "amax/multi_config.hpp"

namespace amax {

/// One tensor of a multi-tensor call: `n` elements at `data` (may be null when n == 0), its amax
/// written to out[index].
struct MultiTensor {
  const void* data = nullptr;
  std::uint64_t n = 0;
  std::uint32_t index = 0;
};

/// What is wrong with a multi-tensor list (the C API maps it to its status).
struct MultiListError {
  amax_status_t status;
  std::string message;  ///< names the tensor's index and the value, e.g. "tensors[3].data is NULL with n = 100"
};

/// A list sorted into one group per dtype (kept in list order), with each group's shape.
struct MultiList {
  std::array<std::vector<MultiTensor>, kDTypeCount> tensors;
  std::array<GroupShape, kDTypeCount> shapes;
};

/// Checks a C API list and sorts it into `out` (its storage reused): tensors NULL with count > 0
/// (NULL_POINTER), count above kMultiMaxTensors (INVALID_ARGUMENT), then per tensor in index order
/// its dtype (UNKNOWN_DTYPE), n above kMultiMaxElements (INVALID_ARGUMENT) and, when
/// `check_pointers`, data NULL with n > 0 (NULL_POINTER) or not aligned to the element size
/// (MISALIGNED_POINTER). Returns the first problem, else nullopt. Thread-safe (pure).
std::optional<MultiListError> sort_multi_list(const amax_tensor_t* tensors, std::size_t count, bool check_pointers,
                                              MultiList& out);

/// Checks the output array of a list of `count` tensors: NULL with count > 0 (NULL_POINTER), not
/// 4-byte aligned (MISALIGNED_POINTER).
std::optional<MultiListError> check_multi_output(const float* output, std::size_t count);

/// One launch: tensors [first, first + count) of the dtype's list, `chunks` blocks in all, of
/// which `multi_chunks` belong to tensors of more than one chunk (the arrival target).
struct MultiLaunch {
  std::size_t first = 0;
  std::uint32_t count = 0;
  std::uint32_t chunks = 0;
  std::uint32_t multi_chunks = 0;
};

/// Chunks of a tensor of n elements: ceil(n / chunk_elems), and 1 for n == 0 (its block writes +0.0).
inline std::uint64_t multi_chunks_of(std::uint64_t n, std::uint64_t chunk_elems) noexcept {
  return n == 0 ? 1 : (n + chunk_elems - 1) / chunk_elems;
}

/// Splits `tensors` (in order) into launches of at most `max_tensors` tensors and at most
/// `max_chunks` chunks (the grid limit, 2^31 - 1 by default) each, filling each launch as far as
/// it goes. Every tensor's chunks fit one launch (chunk_elems >= 1024 and n < 2^40 make at most
/// 2^30 chunks). Thread-safe (pure).
std::vector<MultiLaunch> split_multi_launches(std::span<const MultiTensor> tensors, std::uint64_t chunk_elems,
                                              std::uint32_t max_tensors, std::uint32_t max_chunks = 0x7fffffffu);

/// Writes the kernel-parameter struct `amax_multi_args` of launch `l` into `args` (resized to the
/// layout of `capacity` descriptors; unused descriptors zero). Thread-safe (pure).
void pack_multi_args(std::vector<unsigned char>& args, std::uint32_t capacity, std::span<const MultiTensor> tensors,
                     const MultiLaunch& l, std::uint64_t chunk_elems, float* out, void* workspace,
                     std::uint32_t* counter, NanMode nan_mode);

/// Workspace bytes for `launches`: 4 per chunk of the largest launch (the launches run one after
/// another on one stream and reuse it), at least 4.
std::uint64_t multi_workspace_bytes(std::span<const MultiLaunch> launches) noexcept;

}  // namespace amax
