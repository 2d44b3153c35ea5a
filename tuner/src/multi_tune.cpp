#include "amax/multi_tune.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "amax/code_object.hpp"
#include "amax/record.hpp"
#include "amax/reference.hpp"
#include "amax/runner_source.hpp"

namespace amax::tune {

std::vector<GroupSpec> default_groups(std::span<const DType> dtypes) {
  std::vector<GroupSpec> out;
  for (DType d : dtypes) {
    for (std::uint64_t t : {64u, 512u, 4096u})
      for (std::uint64_t n : {4096u, 16384u, 65536u}) out.push_back({t, n, d});
    for (auto [t, n] : {std::pair<std::uint64_t, std::uint64_t>{8, 1u << 20}, {128, 1u << 20}, {8, 1u << 24},
                        {32, 1u << 24}})
      out.push_back({t, n, d});
  }
  return out;
}

std::vector<MultiConfig> multi_candidates(const ArchInfo& arch, DType d, SpaceKind kind, const GroupShape& shape) {
  auto v = enumerate_multi_space(arch, d, kind);
  const MultiConfig def = builtin_multi_default(arch, d, shape);
  if (std::find(v.begin(), v.end(), def) == v.end()) v.push_back(def);
  return v;
}

std::vector<MultiConfig> group_candidates(const ArchInfo& arch, SpaceKind kind, const GroupSpec& group,
                                          std::uint32_t cu_count) {
  const GroupShape shape = group.shape();
  const MultiConfig def = builtin_multi_default(arch, group.dtype, shape);
  const std::uint32_t capacity = multi_capacity_for(arch, group.tensors);
  const std::vector<MultiTensor> list(group.tensors, MultiTensor{nullptr, group.n, 0});
  // What decides the work of a variant on this group: its launches, and its fields with the grid
  // cap (the launches say what it does) and those that change nothing here (the combine without
  // cut tensors, the chunk size when every tensor is one chunk) at a fixed value.
  using Launches = std::vector<std::tuple<std::size_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>>;
  std::map<std::pair<MultiConfig, Launches>, std::size_t> classes;  // -> index in `out`
  std::vector<MultiConfig> out;
  for (const MultiConfig& c : multi_candidates(arch, group.dtype, kind, shape)) {
    bool cut = false;
    Launches launches;
    for (const MultiLaunch& l : split_multi_launches(list, c, group.dtype, cu_count, capacity)) {
      cut = cut || l.spanning > 0;
      launches.emplace_back(l.first, l.count, l.chunks, l.chunks_per_block, l.grid);
    }
    MultiConfig work = c;
    work.max_blocks = BlockCap::uncapped();
    if (!cut) work.combine = Combine::thread;
    if (group.n <= c.chunk_elems(group.dtype)) work.chunk_kib = 0;
    const auto [it, added] = classes.try_emplace({work, std::move(launches)}, out.size());
    if (added)
      out.push_back(c);
    else if (c == def)
      out[it->second] = c;  // the default stands for its class, at the class's place
  }
  return out;
}

std::set<std::size_t> multi_finalists(const std::vector<VariantResult>& variants, const TimingProtocol& protocol,
                                      std::size_t baseline) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (variants[i].status == db::TrialStatus::ok && variants[i].stats.samples > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return variants[a].stats.median_us < variants[b].stats.median_us; });
  std::set<std::size_t> fin(order.begin(), order.begin() + std::min<std::size_t>(order.size(), protocol.finalists));
  for (const CombineInfo& c : kCombines)
    for (std::size_t i : order)
      if (variants[i].multi->combine == c.value) {
        fin.insert(i);
        break;
      }
  if (std::find(order.begin(), order.end(), baseline) != order.end()) fin.insert(baseline);
  return fin;
}

// ---- verification ----

MultiVerifier::MultiVerifier(Backend& b, StreamHandle stream) : b_(b), stream_(stream), counter_(b, 4 * kSlotWords) {
  b.memset32_async(counter_.get(), 0, kSlotWords, stream);
  b.synchronize(stream);
}

void MultiVerifier::reserve(std::uint64_t out_words, std::uint64_t workspace_bytes) {
  if (out_words > out_words_) {
    out_.reset();  // before the larger one is allocated
    out_ = DeviceBuffer(b_, 4 * out_words);
    out_words_ = out_words;
  }
  if (workspace_bytes > workspace_bytes_) {
    workspace_.reset();
    workspace_ = DeviceBuffer(b_, workspace_bytes);
    workspace_bytes_ = workspace_bytes;
    b_.memset32_async(workspace_.get(), 0xabababab, workspace_bytes / 4, stream_);  // arbitrary bytes
  }
}

std::vector<std::vector<std::uint32_t>> MultiVerifier::run(const std::vector<MultiConfig>& cs,
                                                           const std::vector<const LoadedMultiKernel*>& ks,
                                                           std::span<const MultiTensor> tensors, DType d, NanMode mode,
                                                           std::uint32_t cu) {
  static const std::uint32_t kGarbage[] = {0x7f800000u, 0x7fc00000u, 0x4b000000u, 0xffffffffu, 0x00000001u};
  std::vector<std::vector<MultiLaunch>> plans(cs.size());
  std::uint64_t ws = 4;
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (ks[i]) {
      plans[i] = split_multi_launches(tensors, cs[i], d, cu, ks[i]->capacity);
      ws = std::max(ws, multi_workspace_bytes(plans[i]));
    }
  reserve(tensors.size() * cs.size(), ws);
  b_.memset32_async(out_.get(), kGarbage[calls_++ % 5], tensors.size() * cs.size(), stream_);
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (ks[i])
      launch_multi_group(b_, ks[i]->main, cs[i], d, ks[i]->capacity, tensors, plans[i],
                         out_.get<float>() + i * tensors.size(), workspace_.get(), counter_.get<std::uint32_t>(), mode,
                         nullptr, stream_, args_);
  b_.synchronize(stream_);
  std::vector<std::uint32_t> all(tensors.size() * cs.size());
  b_.copy_to_host(all.data(), out_.get(), 4 * all.size());
  std::uint32_t slot[kSlotWords] = {};
  b_.copy_to_host(slot, counter_.get(), sizeof slot);
  if (slot[0] != 0)
    throw std::runtime_error("a multi-tensor variant left the stream slot's arrival count at " + std::to_string(slot[0]));
  std::vector<std::vector<std::uint32_t>> out(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i)
    out[i].assign(all.begin() + static_cast<std::ptrdiff_t>(i * tensors.size()),
                  all.begin() + static_cast<std::ptrdiff_t>((i + 1) * tensors.size()));
  return out;
}

namespace {
const char* nan_name(NanMode m) { return m == NanMode::ignore ? "ignore" : "propagate"; }
// The dtype's largest finite power of two (above every region value, all < 2) and a negative
// quiet NaN with payload 1, in the dtype's own format.
std::uint32_t big_bits(DType d) { return info(d).max_pow2_bits(); }
std::uint32_t nan_bits(DType d) { return info(d).sign_bit() | info(d).quiet_nan_bits() | 1u; }
}  // namespace

std::map<std::string, std::string> MultiVerifier::verify_small(DType d, const std::vector<MultiConfig>& cs,
                                                               const std::vector<const LoadedMultiKernel*>& ks) {
  static constexpr std::uint64_t kSizes[] = {0, 1, 33, 4097, 70001, 300007, (1u << 20) + 3};
  std::map<std::string, std::string> failed;
  const std::uint32_t eb = info(d).bytes;
  std::vector<std::uint64_t> at;
  std::uint64_t bytes = 0;
  for (std::uint64_t n : kSizes) {
    at.push_back(bytes);
    bytes += (n + 16) * eb + 256 - (n + 16) * eb % 256;
  }
  const DeviceBuffer buf(b_, bytes);
  const auto cu = static_cast<std::uint32_t>(b_.device().cu_count);
  std::uint64_t seed = 1;
  const auto kinds = all_input_kinds();
  for (std::size_t round = 0; round < kinds.size(); ++round)
    for (NanMode mode : {NanMode::propagate, NanMode::ignore}) {
      std::vector<MultiTensor> list;
      std::vector<std::uint32_t> expect;
      std::vector<std::string> what;
      for (std::size_t i = 0; i < std::size(kSizes); ++i) {
        const std::uint64_t n = kSizes[i], off = (round + i) % 3;
        const InputKind kind = kinds[(round + i) % kinds.size()];
        const auto host = make_input(kind, d, n, seed++);
        char* p = buf.get<char>(at[i] + off * eb);
        if (n) b_.copy_to_device(p, host.data(), host.size());
        list.push_back({n ? p : nullptr, n, static_cast<std::uint32_t>(i)});
        expect.push_back(reference_amax_bits(host.data(), d, n, mode));
        what.push_back(fmt::format("{} n={} offset={}", to_string(kind), n, off));
      }
      for (std::uint32_t cus : {cu, 1u}) {
        const auto got = run(cs, ks, list, d, mode, cus);
        for (std::size_t v = 0; v < cs.size(); ++v)
          for (std::size_t i = 0; ks[v] && i < list.size(); ++i)
            if (got[v][i] != expect[i] && !failed.count(cs[v].label()))
              failed[cs[v].label()] =
                  fmt::format("tensor {} of {} ({}), nan={}, grid for {} CUs: got 0x{:08x}, expected 0x{:08x}", i,
                              list.size(), what[i], nan_name(mode), cus, got[v][i], expect[i]);
      }
    }
  return failed;
}

std::vector<std::string> MultiVerifier::verify_at_shape(InputRegion& inputs, const GroupSpec& g,
                                                        const std::vector<MultiConfig>& cs,
                                                        const std::vector<const LoadedMultiKernel*>& ks) {
  std::vector<std::string> reasons(cs.size());
  const std::uint32_t eb = info(g.dtype).bytes;
  char* in = static_cast<char*>(inputs.base()) + eb;  // every tensor offset by one element
  std::vector<MultiTensor> list;
  std::vector<std::uint64_t> pos;  // the planted element's byte offset from `in`
  for (std::uint64_t i = 0; i < g.tensors; ++i) {
    list.push_back({in + i * g.n * eb, g.n, static_cast<std::uint32_t>(i)});
    const std::uint64_t at = i % 3 == 0 ? g.n - 1 : i % 3 == 1 ? 0 : g.n / 2;
    pos.push_back((i * g.n + at) * eb);
  }
  const std::uint64_t nan_tensor = g.tensors / 2, nan_at = (nan_tensor * g.n + g.n / 2 + (g.n > 2 ? 1 : 0)) * eb;
  std::vector<std::uint32_t> orig(pos.size() + 1);
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_host(&orig[i], in + pos[i], eb);
  b_.copy_to_host(&orig.back(), in + nan_at, eb);
  const std::uint32_t big = big_bits(g.dtype), nan = nan_bits(g.dtype);
  const std::uint32_t expect_big = reference_amax_bits(&big, g.dtype, 1, NanMode::propagate);
  auto check = [&](const char* what, NanMode mode, bool nan_planted) {
    const auto got = run(cs, ks, list, g.dtype, mode, static_cast<std::uint32_t>(b_.device().cu_count));
    for (std::size_t v = 0; v < cs.size(); ++v)
      for (std::size_t i = 0; ks[v] && reasons[v].empty() && i < list.size(); ++i) {
        const std::uint32_t want = nan_planted && i == nan_tensor && mode == NanMode::propagate ? 0x7fc00000u : expect_big;
        if (got[v][i] != want)
          reasons[v] = fmt::format("{} ({}, offset 1, nan={}): tensor {} got 0x{:08x}, expected 0x{:08x}", what,
                                   g.name(), nan_name(mode), i, got[v][i], want);
      }
  };
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_device(in + pos[i], &big, eb);
  check("maximum at the last, first or middle element of each tensor", NanMode::propagate, false);
  if (g.n >= 3) {
    b_.copy_to_device(in + nan_at, &nan, eb);
    check("NaN in the middle of one tensor", NanMode::propagate, true);
    check("NaN in the middle of one tensor, NaN ignored", NanMode::ignore, true);
  }
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_device(in + pos[i], &orig[i], eb);
  b_.copy_to_device(in + nan_at, &orig.back(), eb);
  return reasons;
}

// ---- compiling ----

std::map<std::string, BuildOutcome> load_multi_kernels(const GroupTuneContext& ctx, std::vector<MultiKernelBuild>& builds,
                                                       int* compiled, int* cached) {
  std::map<std::string, BuildOutcome> outcomes;
  for (MultiKernelBuild& k : builds) {
    if (k.binary) {
      ++*(k.from_cache ? cached : compiled);
      try {
        ctx.kernels.load_multi(k.config, k.dtype, k.capacity, std::move(*k.binary), k.usage,
                               k.from_cache ? KernelOrigin::kernel_cache : KernelOrigin::jit);
      } catch (const BackendError& e) {
        k.outcome = BuildOutcome::load_failure(e.what());
      }
      k.binary.reset();
    }
    outcomes[k.name()] = k.outcome;
  }
  return outcomes;
}

void compile_multi_kernel(const GroupTuneContext& ctx, MultiKernelBuild& k) {
  try {
    k.binary = build_multi_kernel(ctx.kernels.compiler(), ctx.kernels.binaries(), ctx.arch, k.config, k.dtype,
                                  k.capacity, &k.usage, &k.from_cache);
    if (ctx.arch.vendor == Vendor::amd && can_read_amdgpu_code_objects()) {
      const auto u = amdgpu_resource_usage(k.binary->binary);
      if (auto it = u.find(k.name()); it != u.end()) k.usage = it->second;
    }
  } catch (const CompileError& e) {
    k.outcome = BuildOutcome::compile_failure(e.what());
  }
}

std::vector<MultiKernelBuild> multi_kernels_needed(const GroupTuneContext& ctx, std::span<const GroupSpec> groups) {
  const auto cu = static_cast<std::uint32_t>(ctx.backend.device().cu_count);
  std::vector<MultiKernelBuild> out;
  std::set<std::string> names;
  for (const GroupSpec& g : groups) {
    const std::uint32_t k = multi_capacity_for(ctx.arch, g.tensors);
    for (const MultiConfig& c : group_candidates(ctx.arch, ctx.space, g, cu))
      if (names.insert(multi_kernel_name(c, g.dtype, k)).second)
        out.push_back(MultiKernelBuild{c.compile_time_part(), g.dtype, k});
  }
  return out;
}

// ---- tuning one group ----

namespace {

// The search's samples for one group: variant i launched on the list laid out in the slice the
// runner rotates to (tensor j at j x n elements), its arguments packed on every call as
// amax_multi_compute does.
class GroupSource : public RunnerSource {
 public:
  GroupSource(const GroupTuneContext& ctx, Runner& runner, StreamHandle stream, const GroupResult& g,
              void* workspace, std::uint32_t* counter, float* out)
      : RunnerSource(runner, g.bytes()), ctx_(ctx), stream_(stream), g_(g), ws_(workspace), counter_(counter), out_(out) {
    list_.resize(g.spec.tensors);
    for (std::uint32_t i = 0; i < list_.size(); ++i) list_[i] = {nullptr, g.spec.n, i};
  }

 private:
  Timed& timed(std::size_t i) override {
    if (auto it = timed_.find(i); it != timed_.end()) return it->second;
    const MultiConfig& c = *g_.variants[i].multi;
    const LoadedMultiKernel* k = ctx_.kernels.find_multi(c, g_.spec.dtype, g_.capacity);
    plans_[i] = split_multi_launches(list_, c, g_.spec.dtype, static_cast<std::uint32_t>(ctx_.backend.device().cu_count),
                                     g_.capacity);
    const std::uint64_t tensor_bytes = g_.spec.n * info(g_.spec.dtype).bytes;
    return timed_[i] = Timed{[this, i, c, k, tensor_bytes](const void* in) {
             for (std::size_t j = 0; j < list_.size(); ++j) list_[j].data = static_cast<const char*>(in) + j * tensor_bytes;
             launch_multi_group(ctx_.backend, k->main, c, g_.spec.dtype, g_.capacity, list_, plans_[i], out_, ws_,
                                counter_, NanMode::propagate, nullptr, stream_, args_);
           }};
  }
  const GroupTuneContext& ctx_;
  StreamHandle stream_;
  const GroupResult& g_;
  void* ws_;
  std::uint32_t* counter_;
  float* out_;
  std::vector<MultiTensor> list_;
  std::vector<unsigned char> args_;
  std::map<std::size_t, std::vector<MultiLaunch>> plans_;
  std::map<std::size_t, Timed> timed_;
};

}  // namespace

GroupResult tune_group(const GroupTuneContext& ctx, const GroupSpec& spec, MultiVerifier& verifier, InputRegion& inputs,
                       StreamHandle stream, const std::map<std::string, BuildOutcome>& builds,
                       const std::map<std::string, std::string>& small) {
  GroupResult g;
  g.spec = spec;
  g.dtype = spec.dtype;
  g.n = spec.tensors * spec.n;
  g.capacity = multi_capacity_for(ctx.arch, spec.tensors);
  const auto cu = static_cast<std::uint32_t>(ctx.backend.device().cu_count);
  const MultiConfig def = builtin_multi_default(ctx.arch, spec.dtype, spec.shape());
  std::vector<MultiTensor> shape_list(spec.tensors, MultiTensor{nullptr, spec.n, 0});
  std::uint64_t max_ws = 4;
  for (const MultiConfig& c : group_candidates(ctx.arch, ctx.space, spec, cu)) {
    VariantResult r;
    r.multi = c;
    if (c == def) g.baseline = g.variants.size();
    const std::string name = multi_kernel_name(c, spec.dtype, g.capacity);
    const auto plan = split_multi_launches(shape_list, c, spec.dtype, cu, g.capacity);
    r.launches = static_cast<int>(plan.size());
    max_ws = std::max(max_ws, multi_workspace_bytes(plan));
    const auto built = builds.find(name);
    if (built == builds.end()) {
      r.status = db::TrialStatus::compile_failed;
      r.reason = "not built";
    } else if (!built->second.ok()) {
      r.status = built->second.stage == BuildOutcome::Stage::load_failed ? db::TrialStatus::launch_failed
                                                                         : db::TrialStatus::compile_failed;
      r.reason = built->second.error;
    } else if (auto it = small.find(c.label()); it != small.end()) {
      r.status = db::TrialStatus::wrong_result;
      r.reason = it->second;
    }
    if (const LoadedMultiKernel* k = ctx.kernels.find_multi(c, spec.dtype, g.capacity)) r.usage = k->usage;
    g.variants.push_back(std::move(r));
  }
  {  // verification at the group's own shape
    std::vector<MultiConfig> cs;
    std::vector<const LoadedMultiKernel*> ks;
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < g.variants.size(); ++i)
      if (g.variants[i].status == db::TrialStatus::ok) {
        cs.push_back(*g.variants[i].multi);
        ks.push_back(ctx.kernels.find_multi(cs.back(), spec.dtype, g.capacity));
        idx.push_back(i);
      }
    const auto reasons = verifier.verify_at_shape(inputs, spec, cs, ks);
    for (std::size_t j = 0; j < idx.size(); ++j)
      if (!reasons[j].empty()) {
        g.variants[idx[j]].status = db::TrialStatus::wrong_result;
        g.variants[idx[j]].reason = reasons[j];
      }
  }
  Backend& b = ctx.backend;
  const DeviceBuffer ws(b, max_ws), counter(b, 4 * kSlotWords), out(b, 4 * spec.tensors), sink(b, 4);
  b.memset32_async(counter.get(), 0, kSlotWords, stream);
  {
    Gate gate(b, ctx.reference.gate, ctx.protocol.gate_timeout_ms);
    Runner runner(b, stream, inputs, ctx.protocol, &gate);
    GroupSource source(ctx, runner, stream, g, ws.get(), counter.get<std::uint32_t>(), out.get<float>());
    screen(g.variants, ctx.protocol, source);
    const auto fin = multi_finalists(g.variants, ctx.protocol, g.baseline);
    const auto samples = final_pass(g.variants, fin, ctx.protocol, source);
    select_winner(g, fin, samples, ctx.protocol, source);
    if (g.confirmation == Confirmation::pooled) ctx.progress(fmt::format("{}: {}", spec.name(), g.confirmation_note));
    Timed t{[&](const void* in) { ctx.reference.launch_stream_read(b, in, spec.bytes(), sink.get(), stream); }};
    runner.prepare(t, spec.bytes(), /*warm_up=*/false);
    g.ceiling = Stats::of(runner.measure(t, spec.bytes(), ctx.protocol.final_rounds));
  }
  return g;
}

db::GroupKey group_key(const std::string& arch, const GroupSpec& g) {
  const GroupShape s = g.shape();
  return db::GroupKey{arch, g.dtype, s.tensors, s.total_bytes, s.largest_bytes};
}

void record_group(db::TuningDb& db, const std::string& arch, const GroupResult& g, db::Provenance p) {
  p.timestamp = db::utc_timestamp_now();
  db.record_group_key(group_key(arch, g.spec), p, trials_of(g), winner_of(g));
}

}  // namespace amax::tune
