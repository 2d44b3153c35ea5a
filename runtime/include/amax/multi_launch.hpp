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
#include "amax/launch.hpp"
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

/// Checks a C API list's array itself, before any of its entries is read: tensors NULL with
/// count > 0 (NULL_POINTER, "tensors is NULL with count = 8"), count above kMultiMaxTensors
/// (INVALID_ARGUMENT). Every multi-tensor entry point runs it first, also before a prepared-list
/// lookup compares the entries. Returns the problem, else nullopt. Thread-safe (pure).
std::optional<MultiListError> check_multi_list_array(const amax_tensor_t* tensors, std::size_t count);

/// Checks a C API list and sorts it into `out` (its storage reused): check_multi_list_array,
/// then per tensor in index order
/// its dtype (UNKNOWN_DTYPE), n above kMultiMaxElements (INVALID_ARGUMENT) and, when
/// `check_pointers`, data NULL with n > 0 (NULL_POINTER) or not aligned to the element size
/// (MISALIGNED_POINTER). Returns the first problem, else nullopt. Thread-safe (pure).
std::optional<MultiListError> sort_multi_list(const amax_tensor_t* tensors, std::size_t count, bool check_pointers,
                                              MultiList& out);

/// Checks one output array (`name`: "output", "amax_out", "scale_out", "scale_inv_out") of a list of
/// `count` tensors: NULL with count > 0 (NULL_POINTER), not 4-byte aligned (MISALIGNED_POINTER).
std::optional<MultiListError> check_multi_output(const float* output, std::size_t count,
                                                 const char* name = "output");

/// Checks that the output arrays of a fused call (amax_out, scale_out, scale_inv_out; `count` fp32
/// each) do not overlap (INVALID_ARGUMENT naming the two and their addresses). Thread-safe.
std::optional<MultiListError> check_multi_outputs_disjoint(std::array<const float*, 3> outputs, std::size_t count);

/// One launch: tensors [first, first + count) of the dtype's list, `chunks` chunks in all, cut
/// into `grid` blocks of `chunks_per_block` consecutive chunks (the last may have fewer), of which
/// `spanning` tensors are cut between blocks (combined by the last block to arrive; 0: no block
/// counts itself and the stream slot is not touched).
struct MultiLaunch {
  std::size_t first = 0;
  std::uint32_t count = 0;
  std::uint32_t chunks = 0;
  std::uint32_t chunks_per_block = 1;
  std::uint32_t grid = 0;
  std::uint32_t spanning = 0;
  /// Workspace bytes this launch uses: 4 words per block (records), then one per chunk (heads).
  std::uint64_t workspace_bytes() const noexcept { return 4ull * (4ull * grid + chunks); }
};

/// Chunks of a tensor of n elements: ceil(n / chunk_elems), and 1 for n == 0 (its block writes
/// +0.0). `chunk_shift` = log2(chunk_elems) (chunks are powers of two). Thread-safe.
inline std::uint64_t multi_chunks_of(std::uint64_t n, unsigned chunk_shift) noexcept {
  return n == 0 ? 1 : ((n - 1) >> chunk_shift) + 1;
}

/// Splits `tensors` (in order) into launches of at most `max_tensors` tensors and at most
/// `max_chunks` chunks (2^31 - 1 by default) each, filling each launch as far as it goes, then
/// gives each launch its grid under `config`'s grid cap on a device of `cu_count` CUs/SMs
/// (multi_chunks_per_block) and counts its spanning tensors. Every tensor's chunks fit one launch
/// (chunks of at least 4 KiB and n < 2^40 make at most 2^30 chunks). Thread-safe (pure).
std::vector<MultiLaunch> split_multi_launches(std::span<const MultiTensor> tensors, const MultiConfig& config,
                                              DType dtype, std::uint32_t cu_count, std::uint32_t max_tensors,
                                              std::uint32_t max_chunks = 0x7fffffffu);

/// The scale epilogue's per-call arguments of a multi-tensor launch: the scale and scale_inv
/// arrays (indexed as the output array) and the rule; the same 32 bytes as ScaleArgs (launch.hpp),
/// which the header of amax_multi_args holds at byte 40.
using MultiScaleArgs = ScaleArgs;

/// Writes the kernel-parameter struct `amax_multi_args` of launch `l` into `args` (resized to the
/// layout of `capacity` descriptors; the header is written whole, the descriptors past l.count are
/// left as they were: the kernel never reads them). The flags word holds `nan_mode` and the launch
/// parameters of `config` for `dtype` (its combine and log2 of its chunk size in elements; see
/// kMultiChunkShiftBit). `scale`: the epilogue's arguments, or nullptr for an amax-only kernel.
/// Thread-safe (pure).
void pack_multi_args(std::vector<unsigned char>& args, std::uint32_t capacity, std::span<const MultiTensor> tensors,
                     const MultiLaunch& l, const MultiConfig& config, DType dtype, float* out, void* workspace,
                     std::uint32_t* counter, NanMode nan_mode, const MultiScaleArgs* scale = nullptr);

/// Rewrites the per-call fields of a packed `amax_multi_args` (pack_multi_args): the output,
/// workspace and counter pointers and the scale epilogue's arguments (zero when `scale` is null).
/// The descriptors and the launch's shape are left as packed. Thread-safe (pure).
void patch_multi_args(std::vector<unsigned char>& args, float* out, void* workspace, std::uint32_t* counter,
                      const MultiScaleArgs* scale) noexcept;

/// Enqueues the launches of one dtype's group on `stream`: for each of `launches` (from
/// split_multi_launches over `tensors` with `config`), its arguments packed into `args` (reused
/// storage) and `kernel` launched with l.grid blocks of config.threads. `counter`: the stream slot,
/// needed when a launch has spanning tensors. Never synchronises or allocates device memory.
/// Errors: BackendError from a launch (earlier launches stay enqueued).
void launch_multi_group(Backend& backend, FunctionHandle kernel, const MultiConfig& config, DType dtype,
                        std::uint32_t capacity, std::span<const MultiTensor> tensors,
                        std::span<const MultiLaunch> launches, float* out, void* workspace, std::uint32_t* counter,
                        NanMode nan_mode, const MultiScaleArgs* scale, StreamHandle stream,
                        std::vector<unsigned char>& args);

/// The operation of launch `l` of `config` (its grid, config.threads per block), for enqueue.
inline LaunchOp multi_launch_op(const MultiLaunch& l, const MultiConfig& config) noexcept {
  return LaunchOp{LaunchOp::Kind::main, l.grid, config.threads};
}

/// Workspace bytes for `launches`: the largest launch's workspace_bytes() (the launches run one
/// after another on one stream and reuse it), at least 4.
std::uint64_t multi_workspace_bytes(std::span<const MultiLaunch> launches) noexcept;

}  // namespace amax
