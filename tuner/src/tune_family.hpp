#pragma once
// The tune session's facts about each kernel family (private to tuner/src; DESIGN.md, "Kernel
// families"): what the family tunes (a work item: a size of one tensor, or a group shape), its
// candidates and kernels, its verification passes, the Timed call of a variant, its finalists, its
// database key and the words of its progress lines. The session (session.hpp) is written once
// over TuneFamily<F>; each specialisation below is one family's row.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amax/compile_pool.hpp"
#include "amax/device_buffer.hpp"
#include "amax/family.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/multi_launch.hpp"
#include "amax/record.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/runner_source.hpp"
#include "amax/tuner.hpp"
#include "amax/verify.hpp"

namespace amax::tune::detail {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Seconds as m:ss.
inline std::string fmt_duration(double s) {
  const int t = static_cast<int>(std::lround(s));
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

/// What a family's facts need of the session: the device, its kernel cache, the arch and options.
struct TuneContext {
  Backend& backend;
  KernelCache& kernels;
  const ArchInfo& arch;
  const TuneOptions& options;
  std::uint32_t cu_count() const { return static_cast<std::uint32_t>(backend.device().cu_count); }
};

/// The device state of one family's tune (tune_all): the run's input region (shared by the
/// families, over the largest work item of either), a stream, the timing gate and the runner, and
/// the buffers every variant's timed calls write (`out_words` output words, the workspace, the
/// stream slot at 0, the streaming read's sink).
struct Lane {
  Lane(Backend& b, const ReferenceKernels& ref, const TimingProtocol& protocol, InputRegion& region,
       std::uint64_t out_words, std::uint64_t workspace_bytes)
      : backend(b),
        inputs(region),
        stream(b.create_stream()),
        gate(b, ref.gate, protocol.gate_timeout_ms),
        runner(b, stream, inputs, protocol, &gate),
        out(b, 4 * out_words),
        workspace(b, workspace_bytes),
        counter(b, 4 * kSlotWords),
        sink(b, 4) {
    b.memset32_async(counter.get(), 0, kSlotWords, stream);
  }
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  ~Lane() { backend.destroy_stream(stream); }

  Backend& backend;
  InputRegion& inputs;
  StreamHandle stream;
  Gate gate;
  Runner runner;
  DeviceBuffer out, workspace, counter, sink;
};

template <class F>
struct TuneFamily;

/// One kernel of family F that a tune builds (in the compile pool) and then loads.
template <class F>
struct KernelBuild {
  typename F::Config config;   ///< the compile-time part
  DType dtype{};
  std::uint32_t capacity = 0;  ///< descriptors per launch (multi-tensor kernels); 0 for one tensor
  std::optional<CompiledKernel<typename F::Config>> binary;  ///< set once built, until loaded
  ResourceUsage usage;         ///< the compiler's report, or the AMD code object's
  BuildOutcome outcome;        ///< built (then loaded), or why not
};

/// What became of a kernel, by its name: outcome and resource usage (a variant's trial records both).
struct Built {
  BuildOutcome outcome;
  ResourceUsage usage;
};

/// One size of one tensor: a single-tensor key.
struct SizeWork {
  DType dtype{};
  std::uint64_t n = 0;
  bool operator==(const SizeWork&) const = default;
};

template <>
struct TuneFamily<SingleFamily> {
  using Work = SizeWork;
  using Result = KeyResult;
  /// Each call's buffers and scratch: none beyond the lane's.
  struct Scratch {};
  static constexpr const char* kKeys = "keys";  ///< what the resume line counts
  static constexpr const char* kUnits = "keys";  ///< what the time budget line counts
  static constexpr const char* kPrefix = "";     ///< before name() in the not-done list and failure line

  static std::vector<KeyResult>& results(TuneReport& r) { return r.keys; }
  static FamilyTimes& times(TuneReport& r) { return r.times.keys; }
  /// The kind a variant's timing counts under in the breakdown (TuneTimes::kinds): its strategy.
  static std::string kind(const VariantResult& v) { return std::string(to_string(v.config.strategy)); }
  static int& compiled(TuneReport& r) { return r.kernels_compiled; }
  static int& cached(TuneReport& r) { return r.kernels_cached; }
  static std::string name(const Work& w) { return fmt::format("{} n={}", to_string(w.dtype), w.n); }

  // ---- planning
  static std::vector<Work> wanted(const TuneOptions& o, std::span<const DType> dtypes) {
    std::vector<Work> out;
    if (!o.tune_sizes) return out;
    const auto sizes = o.sizes.empty() ? default_sizes() : o.sizes;
    for (DType d : dtypes)
      for (auto n : sizes) out.push_back({d, n});
    return out;
  }
  /// The work item of a stored key (`uniform`: only where the stored shape is one the tuner makes).
  static std::optional<Work> work_of(const db::TuningKey& k, bool /*uniform*/) { return Work{k.dtype, k.n}; }
  static db::TuningKey key(const std::string& arch, const Work& w) { return {arch, w.dtype, w.n}; }
  static std::string fit_problem(const DeviceInfo& dev, const Work& w) { return fit_error(dev, w.dtype, w.n); }
  static Result resumed(const Work& w, const db::TuningDb& db, const std::string& arch, const db::Provenance& p) {
    KeyResult k;
    k.dtype = w.dtype;
    k.n = w.n;
    k.resumed = true;
    for (auto& row : db.winners<SingleFamily>(db::WinnerFilter{arch, w.dtype}))
      if (row.key.n == w.n && db::same_identity(row.provenance, p)) k.stored = row;
    return k;
  }
  static void record(db::TuningDb& db, const std::string& arch, const Result& r, const db::Provenance& p) {
    record_key(db, arch, r, p);
  }

  // ---- kernels
  /// Every variant tuned for `d` (candidates() of the space, less the strategies not asked for).
  static std::vector<KernelConfig> space(const TuneContext& ctx, DType d) {
    auto cs = candidates(ctx.arch, d, ctx.options.space);
    const auto& only = ctx.options.strategies;
    if (!only.empty())
      std::erase_if(cs, [&](const KernelConfig& c) { return std::find(only.begin(), only.end(), c.strategy) == only.end(); });
    return cs;
  }
  static std::vector<KernelBuild<SingleFamily>> kernels(const TuneContext& ctx, const std::vector<Work>& work,
                                                        const std::function<void(const std::string&)>&) {
    std::set<DType> dtypes;
    for (const Work& w : work) dtypes.insert(w.dtype);
    std::vector<KernelBuild<SingleFamily>> out;
    for (DType d : dtypes)
      for (const auto& c : distinct_kernels(space(ctx, d))) out.push_back({c, d});
    return out;
  }
  static std::uint32_t capacity(const Result&) { return 0; }

  // ---- tuning one key
  static Result result(const TuneContext&, const Work& w) {
    KeyResult k;
    k.dtype = w.dtype;
    k.n = w.n;
    return k;
  }
  /// The variants timed at the key: one per distinct launch at its n (variants differing only in a
  /// grid cap that gives the same grid do the same work: the others are neither timed nor recorded).
  static std::vector<KernelConfig> timed_candidates(const TuneContext& ctx, const Work& w) {
    const auto cs = space(ctx, w.dtype);
    std::vector<KernelConfig> out;
    for (std::size_t i : distinct_launches(cs, w.dtype, w.n, ctx.cu_count())) out.push_back(cs[i]);
    return out;
  }
  static VariantResult variant(const TuneContext& ctx, Result& r, const KernelConfig& c) {
    VariantResult v;
    v.config = c;
    v.launches = launch_shape(c, r.n, ctx.cu_count()).launches();
    return v;
  }
  static const KernelConfig& config(const VariantResult& v) { return v.config; }
  static std::uint64_t out_words(const Work&) { return 1; }
  /// The largest workspace of the key's variants at n.
  static std::uint64_t workspace_bytes(const TuneContext& ctx, const Work& w) {
    std::uint64_t ws = 4;
    for (const auto& c : space(ctx, w.dtype)) ws = std::max(ws, launch_shape(c, w.n, ctx.cu_count()).workspace_bytes);
    return ws;
  }
  /// The full pass over every loaded variant of the space of `d`.
  static std::map<std::string, std::string> verify_small(const TuneContext& ctx, Verifier& v, const std::vector<Work>&,
                                                         DType d) {
    const auto cs = space(ctx, d);
    std::vector<const LoadedKernel*> ks;
    for (const auto& c : cs) ks.push_back(ctx.kernels.find(c, d));
    return v.verify_small(d, cs, ks);
  }
  static GroupSpec shape(const Result& r) { return GroupSpec{1, r.n, r.dtype}; }
  static Timed timed(const TuneContext& ctx, Lane& lane, const Result& r, const VariantResult& v, Scratch&) {
    const LoadedKernel& k = *ctx.kernels.find(v.config, r.dtype);
    const LaunchShape shape = launch_shape(v.config, r.n, ctx.cu_count(), k.resident_per_cu);
    const LaunchBuffers buffers{lane.out.get<float>(), lane.workspace.get(), lane.counter.get<std::uint32_t>()};
    return variant_timed(ctx.backend, k, shape, r.n, buffers, lane.stream);
  }
  /// The fastest few, TransformerEngine's configs and the best of each strategy.
  static std::set<std::size_t> finalists(const Result& r, const TimingProtocol& p) {
    return tune::finalists(r.variants, p, r.dtype);
  }
  static std::string progress(std::size_t i, std::size_t count, const Work& w, const Result& r, double elapsed,
                              double, double eta) {
    const auto& v = r.variants[static_cast<std::size_t>(r.winner)];
    return fmt::format("[{:>3}/{}] {} n={:<11} {:<28} {:>9.2f} us {:>7.0f} GB/s   elapsed {} ETA {}", i, count,
                       to_string(w.dtype), w.n, v.config.label(), v.stats.median_us, gbps(r.bytes(), v.stats.median_us),
                       fmt_duration(elapsed), fmt_duration(eta));
  }
};

template <>
struct TuneFamily<MultiFamily> {
  using Work = GroupSpec;
  using Result = GroupResult;
  /// The list a timed call launches on (its tensors pointed at the slice of the call) and the
  /// packed arguments, reused by every call.
  struct Scratch {
    std::vector<MultiTensor> list;
    std::vector<unsigned char> args;
  };
  static constexpr const char* kKeys = "multi-tensor groups";
  static constexpr const char* kUnits = "groups";
  static constexpr const char* kPrefix = "group ";

  static std::vector<GroupResult>& results(TuneReport& r) { return r.groups; }
  static FamilyTimes& times(TuneReport& r) { return r.times.groups; }
  /// The kind a variant's timing counts under in the breakdown (TuneTimes::kinds): its combine.
  static std::string kind(const VariantResult& v) { return fmt::format("multi.{}", to_string(v.multi->combine)); }
  static int& compiled(TuneReport& r) { return r.multi_kernels_compiled; }
  static int& cached(TuneReport& r) { return r.multi_kernels_cached; }
  static std::string name(const Work& g) { return g.name(); }

  // ---- planning
  static std::vector<Work> wanted(const TuneOptions& o, std::span<const DType> dtypes) {
    return o.groups ? *o.groups : default_groups(dtypes);
  }
  /// A stored shape as a group of equal tensors: none where the largest tensor is not whole
  /// elements, or (`uniform`) where the total is not tensors x the largest.
  static std::optional<Work> work_of(const db::GroupKey& k, bool uniform) {
    const std::uint64_t eb = info(k.dtype).bytes;
    if (k.largest_bytes % eb != 0 || (uniform && k.total_bytes != k.tensors * k.largest_bytes)) return std::nullopt;
    return Work{k.tensors, k.largest_bytes / eb, k.dtype};
  }
  static db::GroupKey key(const std::string& arch, const Work& g) { return group_key(arch, g); }
  static std::string fit_problem(const DeviceInfo& dev, const Work& g) {
    const auto why = fit_error(dev, g.dtype, g.tensors * g.n);
    return why.empty() ? why : fmt::format("group {}: {}", g.name(), why);
  }
  static Result resumed(const Work& g, const db::TuningDb&, const std::string&, const db::Provenance&) {
    GroupResult r;
    r.spec = g, r.dtype = g.dtype, r.n = g.tensors * g.n, r.resumed = true;
    return r;
  }
  static void record(db::TuningDb& db, const std::string& arch, const Result& r, const db::Provenance& p) {
    record_group(db, arch, r, p);
  }

  // ---- kernels
  /// The kernels the group_candidates() of `groups` need, each once: per group, the compile-time
  /// part of each candidate at the descriptor capacity of the group's tensor count, in first-use
  /// order. Reports the variants to time.
  static std::vector<KernelBuild<MultiFamily>> kernels(const TuneContext& ctx, const std::vector<Work>& groups,
                                                       const std::function<void(const std::string&)>& progress) {
    std::vector<KernelBuild<MultiFamily>> out;
    std::set<std::string> names;
    std::size_t timed = 0, all = 0;
    for (const GroupSpec& g : groups) {
      const std::uint32_t k = multi_capacity_for(ctx.arch, g.tensors);
      const auto cs = group_candidates(ctx.arch, ctx.options.space, g, ctx.cu_count());
      for (const MultiConfig& c : cs)
        if (names.insert(MultiFamily::kernel_name(c, g.dtype, k)).second) out.push_back({c.compile_time_part(), g.dtype, k});
      timed += cs.size();
      all += multi_candidates(ctx.arch, g.dtype, ctx.options.space, g.shape()).size();
    }
    if (!groups.empty())
      progress(fmt::format("multi-tensor groups: {} variants to time over {} groups ({} others left out: their "
                           "launches repeat a timed variant's work)", timed, groups.size(), all - timed));
    return out;
  }
  static std::uint32_t capacity(const Result& r) { return r.capacity; }

  // ---- tuning one group
  static Result result(const TuneContext& ctx, const Work& g) {
    GroupResult r;
    r.spec = g;
    r.dtype = g.dtype;
    r.n = g.tensors * g.n;
    r.capacity = multi_capacity_for(ctx.arch, g.tensors);
    return r;
  }
  static std::vector<MultiConfig> timed_candidates(const TuneContext& ctx, const Work& g) {
    return group_candidates(ctx.arch, ctx.options.space, g, ctx.cu_count());
  }
  /// The variant of `c`; the built-in default for the group's shape (always tried) is r.baseline.
  static VariantResult variant(const TuneContext& ctx, Result& r, const MultiConfig& c) {
    VariantResult v;
    v.multi = c;
    if (c == builtin_multi_default(ctx.arch, r.dtype, r.spec.shape())) r.baseline = r.variants.size();
    v.launches = static_cast<int>(plan(ctx, r.spec, c, r.capacity).size());
    return v;
  }
  static const MultiConfig& config(const VariantResult& v) { return *v.multi; }
  static std::uint64_t out_words(const Work& g) { return g.tensors; }
  static std::uint64_t workspace_bytes(const TuneContext& ctx, const Work& g) {
    std::uint64_t ws = 4;
    const std::uint32_t capacity = multi_capacity_for(ctx.arch, g.tensors);
    for (const MultiConfig& c : timed_candidates(ctx, g))
      ws = std::max(ws, multi_workspace_bytes(plan(ctx, g, c, capacity)));
    return ws;
  }
  /// The full pass over every loaded candidate of the groups of `d` (multi_candidates of each shape).
  static std::map<std::string, std::string> verify_small(const TuneContext& ctx, Verifier& v,
                                                         const std::vector<Work>& groups, DType d) {
    std::vector<MultiConfig> cs;
    std::vector<const LoadedMultiKernel*> ks;
    for (const GroupSpec& h : groups)
      if (h.dtype == d)
        for (const MultiConfig& c : multi_candidates(ctx.arch, d, ctx.options.space, h.shape()))
          if (const LoadedMultiKernel* k = ctx.kernels.find(c, d, multi_capacity_for(ctx.arch, h.tensors));
              k && std::find(cs.begin(), cs.end(), c) == cs.end()) {
            cs.push_back(c);
            ks.push_back(k);
          }
    return v.verify_small(d, cs, ks);
  }
  static GroupSpec shape(const Result& r) { return r.spec; }
  /// Variant launched on the list laid out in the slice the runner rotates to (tensor j at j x n
  /// elements), its arguments packed on every call as amax_multi_compute does.
  static Timed timed(const TuneContext& ctx, Lane& lane, const Result& r, const VariantResult& v, Scratch& s) {
    const MultiConfig c = *v.multi;
    const LoadedMultiKernel* k = ctx.kernels.find(c, r.dtype, r.capacity);
    const GroupSpec g = r.spec;
    if (s.list.empty())
      for (std::uint32_t i = 0; i < g.tensors; ++i) s.list.push_back({nullptr, g.n, i});
    const std::uint64_t tensor_bytes = g.n * info(g.dtype).bytes;
    Timed t{[&ctx, &lane, &s, c, k, g, capacity = r.capacity, launches = plan(ctx, g, c, r.capacity),
             tensor_bytes](const void* in) {
      for (std::size_t j = 0; j < s.list.size(); ++j) s.list[j].data = static_cast<const char*>(in) + j * tensor_bytes;
      launch_multi_group(ctx.backend, k->main, c, g.dtype, capacity, s.list, launches, lane.out.get<float>(),
                         lane.workspace.get(), lane.counter.get<std::uint32_t>(), NanMode::propagate, nullptr,
                         lane.stream, s.args);
    }};
    t.launches = v.launches;
    return t;
  }
  static std::set<std::size_t> finalists(const Result& r, const TimingProtocol& p) {
    return multi_finalists(r.variants, p, r.baseline);
  }
  static std::string progress(std::size_t i, std::size_t count, const Work& g, const Result& r, double elapsed,
                              double family_elapsed, double) {
    const auto& v = r.variants[static_cast<std::size_t>(r.winner)];
    return fmt::format("[{:>3}/{}] group {:<18} {:<36} {:>9.2f} us {:>7.0f} GB/s   elapsed {} (groups {})", i, count,
                       g.name(), v.label(), v.stats.median_us, gbps(r.bytes(), v.stats.median_us),
                       fmt_duration(elapsed), fmt_duration(family_elapsed));
  }

 private:
  // The launches of `c` on the group (its list's shape, pointers not yet set).
  static std::vector<MultiLaunch> plan(const TuneContext& ctx, const GroupSpec& g, const MultiConfig& c,
                                       std::uint32_t capacity) {
    const std::vector<MultiTensor> list(g.tensors, MultiTensor{nullptr, g.n, 0});
    return split_multi_launches(list, c, g.dtype, ctx.cu_count(), capacity);
  }
};

/// The search's samples of a family's work item: variant i's Timed call (TuneFamily<F>::timed),
/// made once per variant.
template <class F>
class FamilySource : public RunnerSource {
 public:
  FamilySource(const TuneContext& ctx, Lane& lane, const typename TuneFamily<F>::Result& r)
      : RunnerSource(lane.runner, r.bytes()), ctx_(ctx), lane_(lane), r_(r) {}

 private:
  Timed& timed(std::size_t i) override {
    if (auto it = timed_.find(i); it != timed_.end()) return it->second;
    return timed_[i] = TuneFamily<F>::timed(ctx_, lane_, r_, r_.variants[i], scratch_);
  }
  const TuneContext& ctx_;
  Lane& lane_;
  const typename TuneFamily<F>::Result& r_;
  typename TuneFamily<F>::Scratch scratch_;
  std::map<std::size_t, Timed> timed_;
};

}  // namespace amax::tune::detail
