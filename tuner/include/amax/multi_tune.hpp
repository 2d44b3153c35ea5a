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

/// The database key of a tuned group.
db::GroupKey group_key(const std::string& arch, const GroupSpec& group);

/// Commits the group's trials and winner with `provenance` (its template hash the multi-tensor
/// family's, multi_template_hash()) stamped now, in one transaction. Errors: db::DbError.
void record_group(db::TuningDb& db, const std::string& arch, const GroupResult& group, db::Provenance provenance);

}  // namespace amax::tune
