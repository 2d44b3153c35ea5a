#pragma once
// Tuning the multi-tensor family (DESIGN.md section 6, "Many tensors per launch"): group shapes
// instead of sizes. For each group (a number of tensors of one element count and dtype) every
// variant of the multi-tensor space is verified bit-exactly per tensor, screened, the finalists
// re-timed in interleaved rounds and the winner chosen and confirmed with the single-tensor
// search's rules (search.hpp); the result is keyed in the database by the group's shape.
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

/// The device-side parts a group tune needs, owned by the caller (the tuner's session).
struct GroupTuneContext {
  Backend& backend;
  KernelCache& kernels;
  const ArchInfo& arch;
  const TimingProtocol& protocol;
  SpaceKind space;
  const ReferenceKernels& reference;     ///< the streaming read (the ceiling)
  std::function<void(const std::string&)> progress;
};

/// One multi-tensor kernel a tune needs, and what building it gave.
struct MultiKernelBuild {
  MultiConfig config;  ///< the compile-time part
  DType dtype{};
  std::uint32_t capacity = 0;  ///< descriptors per launch
  std::optional<CachedBinary> binary;  ///< set once built
  ResourceUsage usage;
  bool from_cache = false;
  BuildOutcome outcome;  ///< built (then loaded), or why not
  /// multi_kernel_name() of the kernel.
  std::string name() const { return multi_kernel_name(config, dtype, capacity); }
};

/// The kernels the group_candidates() of `groups` need on the device of `ctx`, each once: per
/// group, the compile-time part of each candidate at the descriptor capacity of the group's tensor
/// count, in first-use order. Thread-safe (pure).
std::vector<MultiKernelBuild> multi_kernels_needed(const GroupTuneContext& ctx, std::span<const GroupSpec> groups);

/// Compiles `k` through the kernel cache's binary cache (a CompileError is kept in k.outcome); reads
/// the code object's resource usage on AMD. Needs no GPU. Thread-safe for distinct `k` (a compile
/// pool calls it from many threads). Errors: what the binary cache throws besides CompileError.
void compile_multi_kernel(const GroupTuneContext& ctx, MultiKernelBuild& k);

/// Loads each built kernel of `builds` into ctx.kernels (a load failure becomes the kernel's
/// outcome, BuildOutcome::load_failure), counting each as compiled or from the cache. Returns kernel
/// name -> outcome, what tune_group() takes. Calling thread only.
std::map<std::string, BuildOutcome> load_multi_kernels(const GroupTuneContext& ctx, std::vector<MultiKernelBuild>& builds,
                                                      int* compiled, int* cached);

/// Tunes one group: candidates, both verification passes (verify_small's result for the dtype is
/// passed in), screening, finalists, the final pass, the winner confirmed, and the streaming read
/// of its bytes as the ceiling. Expected failures are recorded in the variants, never thrown.
/// Errors: BackendError (the device failed).
GroupResult tune_group(const GroupTuneContext& ctx, const GroupSpec& group, MultiVerifier& verifier,
                       InputRegion& inputs, StreamHandle stream, const std::map<std::string, BuildOutcome>& builds,
                       const std::map<std::string, std::string>& small_failures);

/// The database key of a tuned group.
db::GroupKey group_key(const std::string& arch, const GroupSpec& group);

/// Commits the group's trials and winner with `provenance` (its template hash the multi-tensor
/// family's, multi_template_hash()) stamped now, in one transaction. Errors: db::DbError.
void record_group(db::TuningDb& db, const std::string& arch, const GroupResult& group, db::Provenance provenance);

}  // namespace amax::tune
