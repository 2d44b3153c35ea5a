#pragma once
// The multi-tensor family's part of the tuner (DESIGN.md section 6, "Many tensors per launch"):
// group shapes instead of sizes, their candidates, finalists and verification, and the group's
// database key. The tune session (tuner/src, over TuneFamily<MultiFamily>) verifies every variant
// bit-exactly per tensor, screens them, re-times the finalists in interleaved rounds and chooses
// and confirms the winner with the single-tensor search's rules (search.hpp).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/compile_pool.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/device_buffer.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/measure.hpp"
#include "amax/multi_config.hpp"
#include "amax/multi_launch.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/search.hpp"
#include "amax/workload.hpp"

namespace amax::tune {

/// The tuner's default group grid, per dtype of `dtypes`: 64, 512 and 4096 tensors of 4 Ki, 16 Ki
/// and 64 Ki elements (parameters of a layer, experts of an MoE layer), and 8 and 128 tensors of
/// 1 Mi elements, 8 and 32 tensors of 16 Mi elements (the weights of a transformer block): 13
/// groups per dtype, the largest 32 x 16 Mi (2 GiB of fp32).
std::vector<GroupSpec> default_groups(std::span<const DType> dtypes);

/// One tuned group: a KeyResult whose n is the group's total element count (so bytes() is the
/// group's bytes), with its spec, the descriptor capacity of its kernels and its launches.
struct GroupResult : KeyResult {
  GroupSpec spec;
  std::uint32_t capacity = 0;
  std::size_t baseline = 0;  ///< index of the built-in default among variants (always tried)
};

/// Every variant of the multi-tensor space of `kind` for `dtype` on `arch`, then the built-in
/// default for `shape` when it is not in it. Thread-safe.
std::vector<MultiConfig> multi_candidates(const ArchInfo& arch, DType dtype, SpaceKind kind, const GroupShape& shape);

/// The variants a tune of `group` times on a device of `cu_count` CUs/SMs: multi_candidates() of
/// the group's shape, less every variant whose launches on this group do the same work as an
/// earlier one's. Two variants do the same work when split_multi_launches() gives them the same
/// launches (tensors, chunks, chunks per block and grid of each) and they differ in no field but
/// the grid cap, the combine where no launch has a tensor cut between blocks (it never runs then),
/// and the chunk size where every tensor is one chunk at both (it then changes no segment). Of each such class the built-in default is
/// kept where it is a member, else the first in multi_candidates() order, at the place of that
/// first member. Example (H200, 132 SMs): 64 x 4096 fp32 keeps 9 of 360 (every chunk size and grid
/// cap gives one block per tensor, none cut: the 9 thread counts x unrolls remain); 32 x 16 Mi keeps
/// all 360. Thread-safe (pure).
std::vector<MultiConfig> group_candidates(const ArchInfo& arch, SpaceKind kind, const GroupSpec& group,
                                          std::uint32_t cu_count);

/// The finalists of a group after screening: the protocol.finalists fastest ok variants, the
/// fastest of each combine and the built-in default (`baseline`) when ok. Indices, ascending.
std::set<std::size_t> multi_finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                      std::size_t baseline);

/// Runs multi-tensor variants on lists and checks every tensor against the CPU reference. Owns
/// device buffers for outputs and a workspace; one stream; not thread-safe.
class MultiVerifier {
 public:
  MultiVerifier(Backend& backend, StreamHandle stream);
  MultiVerifier(const MultiVerifier&) = delete;
  MultiVerifier& operator=(const MultiVerifier&) = delete;

  /// The full adversarial pass of each of `configs` (kernels[i] loaded, or nullptr: skipped): a
  /// list of tensors of 0, 1, 33, 4097, 70001, 300007 and 2^20 + 3 elements at element offsets
  /// 0-2, each input kind of reference.hpp in turn, both NaN modes, planned for the device's CU
  /// count and for one CU (so that blocks take runs of many chunks and tensors are cut between
  /// them). Returns label -> the first failure; variants absent passed. Errors: BackendError.
  std::map<std::string, std::string> verify_small(DType dtype, const std::vector<MultiConfig>& configs,
                                                  const std::vector<const LoadedMultiKernel*>& kernels);

  /// The pass at the group's own shape on slice 0 of `inputs` (values < 2): tensor i, offset by one
  /// element, gets the dtype's largest power of two at its last, first or middle element (i mod
  /// 3); then a NaN in the middle of tensor tensors / 2 (propagate: NaN there; ignore: the maximum
  /// still). Slice 0 is restored. Returns one reason per config, empty where it passed.
  std::vector<std::string> verify_at_shape(InputRegion& inputs, const GroupSpec& group,
                                           const std::vector<MultiConfig>& configs,
                                           const std::vector<const LoadedMultiKernel*>& kernels);

 private:
  // Runs every kernel on `tensors` (the device pointers of one list) and returns each one's
  // outputs (tensors.size() words per kernel); checks the stream slot is back at 0.
  std::vector<std::vector<std::uint32_t>> run(const std::vector<MultiConfig>& configs,
                                              const std::vector<const LoadedMultiKernel*>& kernels,
                                              std::span<const MultiTensor> tensors, DType dtype, NanMode mode,
                                              std::uint32_t cu_count);
  Backend& b_;
  StreamHandle stream_;
  DeviceBuffer out_;
  std::uint64_t out_words_ = 0;
  DeviceBuffer workspace_;
  std::uint64_t workspace_bytes_ = 0;
  DeviceBuffer counter_;
  std::vector<unsigned char> args_;
  std::uint32_t calls_ = 0;
  void reserve(std::uint64_t out_words, std::uint64_t workspace_bytes);
};

/// The database key of a tuned group.
db::GroupKey group_key(const std::string& arch, const GroupSpec& group);

/// Commits the group's trials and winner with `provenance` (its template hash the multi-tensor
/// family's, multi_template_hash()) stamped now, in one transaction. Errors: db::DbError.
void record_group(db::TuningDb& db, const std::string& arch, const GroupResult& group, db::Provenance provenance);

}  // namespace amax::tune
