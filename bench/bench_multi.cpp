#include "amax/bench_multi.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "amax/amax_tune.hpp"
#include "amax/device_buffer.hpp"
#include "amax/dtype_c.hpp"
#include "amax/reference.hpp"
#include "amax/te_contenders.hpp"
#include "bench_driver.hpp"

namespace amax::bench {

std::vector<MultiGroupSpec> default_multi_groups() {
  return {{500, 4096, DType::fp32},       {4096, 16384, DType::bf16},     {64, 4096, DType::fp32},
          {512, 65536, DType::bf16},      {64, 1u << 20, DType::bf16},    {128, 1u << 20, DType::bf16},
          {8, 1u << 24, DType::bf16}};
}

namespace detail {

/// `amax-tune bench-multi`: one group of `tensors` tensors of n elements per call, cold.
template <>
struct BenchFamily<MultiFamily> {
  using Options = MultiBenchOptions;
  using Row = MultiRow;
  using Report = MultiBenchReport;

  static std::vector<Workload> workloads(const Options& o, const DeviceInfo&) {
    std::vector<Workload> out;
    for (const auto& g : o.groups) out.push_back({g.dtype, g.tensors, g.n});
    return out;
  }

  static std::string wrong(const Workload& w, const Contender& c, const char* what, std::size_t i, std::uint32_t got,
                           std::uint32_t want) {
    return fmt::format("{} ({}) gives {} bits {:#010x} for tensor {} of group {} where the CPU reference gives "
                       "{:#010x}: not timed",
                       c.name, c.detail, what, got, i, MultiGroupSpec{w.tensors, w.n, w.dtype}.name(), want);
  }

  static Row row(const Workload& w) {
    Row r;
    r.group = {w.tensors, w.n, w.dtype};
    return r;
  }

  static void progress(const Report& rep, const Workload& w, std::size_t, std::size_t, std::size_t) {
    const MultiGroupSpec g{w.tensors, w.n, w.dtype};
    auto us = [&](const char* c) {  // GPU time, or host-inclusive where it was not timed behind the gate
      const MultiRow* row = rep.find(g, c);
      return row->stats.samples > 0 ? row->stats.median_us : row->host_inclusive.median_us;
    };
    const MultiRow& m = *rep.find(g, kMulti);
    std::fprintf(stderr,
                 "%-22s GPU: multi %9.2f us (host %7.2f us/call, host-incl. %9.2f us)  graph %9.2f us  fused %9.2f us  "
                 "per tensor %10.2f us  TE step per tensor %10.2f us  stream read %9.2f us (%s)\n",
                 g.name().c_str(), us(kMulti), m.host_us, m.host_inclusive.median_us, us(kMultiGraph), us(kMultiScale),
                 us(kPerTensor), us(kTeStepPerTensor), us(kStreamRead), m.detail.c_str());
  }

  static std::vector<TargetCheck> targets(const std::vector<Row>& rows) { return check_multi_targets(rows); }
  static void write(const Report& rep, const std::filesystem::path& dir) {
    write_csv_file(dir / "bench_multi.csv",
                   "device,arch,group,tensors,n,dtype,bytes,contender,detail,median_us,spread_us,samples,gbps,host_us,"
                   "host_inclusive_us\n",
                   rep.rows, [&](const MultiRow& r) {
                     return fmt::format("\"{}\",{},{},{},{},{},{},\"{}\",\"{}\",{:.4f},{:.4f},{},{:.2f},{:.2f},{:.4f}\n",
                                        rep.device.name, rep.device.arch, r.group.name(), r.group.tensors, r.group.n,
                                        to_string(r.group.dtype), r.group.bytes(), r.contender, r.detail,
                                        r.stats.median_us, r.stats.spread_us, r.stats.samples,
                                        tune::gbps(r.group.bytes(), r.stats.median_us), r.host_us,
                                        r.host_inclusive.median_us);
                   });
  }

  // The device buffers of a run and each group's contenders (kMultiContenders, in that order).
  // out_: the amaxes of the multi call, of the per-tensor calls and of TE's step, then the fused
  // call's amax, scale and scale_inv arrays.
  class Contenders {
   public:
    Contenders(BenchDevice& dev, StreamHandle stream, tune::InputRegion& inputs, const std::vector<Workload>& work)
        : dev_(dev), b_(*dev.backend), stream_(stream), inputs_(inputs) {
      for (const auto& w : work) max_tensors_ = std::max(max_tensors_, w.tensors);
      out_ = DeviceBuffer(b_, 4 * 6 * max_tensors_ + 64);
    }

    std::string protocol_note() const {
      return "; host-inclusive: the same rounds without the gate; every tensor's result checked bit-exact first";
    }

    std::vector<Contender> of(const Workload& w) {
      const MultiGroupSpec g{w.tensors, w.n, w.dtype};
      amax_tune::Context& ctx = dev_.ctx;
      list_.assign(g.tensors, amax_tensor_t{nullptr, g.n, to_c(g.dtype)});
      ws_bytes_ = ctx.multi_workspace_size(list_);
      const std::size_t single_ws = ctx.workspace_size(to_c(g.dtype), g.n);
      ws_.reset();
      ws_ = DeviceBuffer(b_, std::max<std::size_t>(ws_bytes_, single_ws));
      float* out = out_.get<float>();
      float* single_out = out + max_tensors_;
      float* te_out = out + 2 * max_tensors_;  // TE's amax per tensor; its scales all land in one word after them
      float* scale_out = out + 3 * max_tensors_ + 16;
      const auto e = ctx.multi_explain(list_, to_c(g.dtype));
      tensor_bytes_ = g.n * info(g.dtype).bytes;
      const std::uint64_t mt = max_tensors_;
      auto at = [tb = tensor_bytes_](const void* in, std::uint64_t i) { return static_cast<const char*>(in) + i * tb; };
      const TeKernels& te = dev_.te;
      const ReferenceKernels& ref = dev_.ref;
      return {
          {kMulti, fmt::format("{} ({} launches)", e.label, e.launches),
           [this](const void* in) {
             fill(in);
             dev_.ctx.multi_compute(list_, out_.get<float>(), ws_.get(), ws_bytes_, stream_);
           },
           out},
          {kMultiGraph, fmt::format("{}, one graph per input slice", e.label),
           [this](const void* in) { b_.launch_graph(graph_for(in), stream_); }, out},
          {kMultiScale, fmt::format("{}.scale, e4m3", e.label),
           [this, scale_out, mt](const void* in) {
             fill(in);
             dev_.ctx.multi_and_scale(list_, amax_tune::ScaleOptions{}, scale_out, scale_out + mt, scale_out + 2 * mt,
                                      ws_.get(), ws_bytes_, stream_);
           },
           scale_out, scale_out + mt, scale_out + 2 * mt},
          {kPerTensor, ctx.explain(to_c(g.dtype), g.n).label,
           [this, g, at, single_out, single_ws](const void* in) {
             for (std::uint64_t i = 0; i < g.tensors; ++i)
               dev_.ctx.compute(at(in, i), to_c(g.dtype), g.n, single_out + i, ws_.get(), single_ws, stream_);
           },
           single_out},
          {kTeStepPerTensor, "zero kernel, amax_kernel, compute_scale_from_amax_kernel (e4m3) per tensor",
           [this, &te, g, at, te_out, mt](const void* in) {
             for (std::uint64_t i = 0; i < g.tensors; ++i) {
               te.launch(b_, TeSequence::zero_kernel, g.dtype, at(in, i), g.n, te_out + i, te_ws_.get<float>(), stream_);
               te.launch_scale(b_, te_out + i, out_.get<float>() + 3 * mt, 448.f, false, 0.f, stream_);
             }
           }},
          {kStreamRead, "",
           [this, &ref, bytes = g.bytes()](const void* in) { ref.launch_stream_read(b_, in, bytes, sink_.get(), stream_); }},
          {kEmptyLaunch, "", [this, &ref](const void*) { b_.launch(ref.empty, 1, 32, stream_, nullptr); }},
      };
    }

    // Every slice the rotation will give gets its graph now, outside the timed batches; capturing
    // the multi call also prepares that slice's list for the eager multi call (a repeated list is
    // served prepared), and one fused call per slice prepares its fused list, so both eager
    // contenders are timed as a training step repeats its list (the first call of a list also
    // validates, splits and packs it: docs/api.md "Repeated lists are served prepared").
    void before_timing(const Workload& w, std::vector<Contender>& cs) {
      static_assert(std::size(kMultiContenders) == 7);
      const MultiGroupSpec g{w.tensors, w.n, w.dtype};
      std::set<const void*> seen;
      inputs_.restart();  // from the start the walk repeats after inputs_.slices(bytes) calls
      for (;;) {
        const void* in = inputs_.next(g.bytes(), false);
        if (!seen.insert(in).second) break;
        graph_for(in);
        cs[2].call(in);
      }
      b_.synchronize(stream_);
      // Two lists per slice (multi, fused): past the prepared-list limit the rotation evicts each
      // list before its next use, and every eager call of this group is validated and packed anew.
      if (2 * seen.size() > AMAX_MULTI_PREPARED_LISTS) {
        std::fprintf(stderr, "bench-multi: %s rotates over %zu input slices, more than the %d lists a thread keeps "
                     "prepared hold for two eager contenders: its eager calls are timed unprepared (every call "
                     "validates, splits and packs its list)\n", g.name().c_str(), seen.size(), AMAX_MULTI_PREPARED_LISTS);
        for (std::size_t i : {0, 2}) cs[i].detail += fmt::format("; unprepared: {} input slices", seen.size());
      }
      // One amax_compute per tensor (up to 2 launches each) and TE's step per tensor (3 launches
      // each): past kMaxGatedLaunches per call they are timed back to back only (no GPU time).
      for (std::size_t i : {3, 4}) cs[i].gated = 3 * g.tensors <= static_cast<std::uint64_t>(tune::kMaxGatedLaunches);
    }

    void after_timing() {
      for (auto& [in, graph] : graphs_) b_.destroy_graph(graph);
      graphs_.clear();
    }

   private:
    // Points the list's tensors at the slice `in` (tensor i at i x n elements).
    void fill(const void* in) {
      for (std::uint64_t i = 0; i < list_.size(); ++i) list_[i].data = static_cast<const char*>(in) + i * tensor_bytes_;
    }
    // The graph contender: the multi call captured once per input slice (the runner rotates over a
    // fixed set of slices), replayed on every later call with that slice.
    GraphExecHandle graph_for(const void* in) {
      if (auto it = graphs_.find(in); it != graphs_.end()) return it->second;
      fill(in);
      b_.begin_capture(stream_);
      dev_.ctx.multi_compute(list_, out_.get<float>(), ws_.get(), ws_bytes_, stream_);
      return graphs_[in] = b_.end_capture(stream_);
    }

    BenchDevice& dev_;
    Backend& b_;
    StreamHandle stream_;
    tune::InputRegion& inputs_;
    std::uint64_t max_tensors_ = 1, tensor_bytes_ = 0;
    DeviceBuffer out_, te_ws_{b_, kTeWorkspaceBytes}, sink_{b_, 4}, ws_;
    std::vector<amax_tensor_t> list_;
    std::size_t ws_bytes_ = 0;
    std::map<const void*, GraphExecHandle> graphs_;
  };
};

}  // namespace detail

MultiBenchReport run_bench_multi(const MultiBenchOptions& o) { return detail::run_family<MultiFamily>(o); }

const MultiRow* MultiBenchReport::find(const MultiGroupSpec& g, std::string_view contender) const {
  for (const MultiRow& r : rows)
    if (r.group == g && r.contender == contender) return &r;
  return nullptr;
}

std::vector<MultiTarget> check_multi_targets(const std::vector<MultiRow>& rows) {
  std::map<std::pair<std::string, std::string>, double> t;
  std::map<std::string, MultiGroupSpec> groups;
  for (const auto& r : rows) {
    t[{r.group.name(), r.contender}] = r.stats.median_us;
    groups[r.group.name()] = r.group;
  }
  std::vector<MultiTarget> out;
  for (auto [name, limit] : {std::pair<const char*, double>{"500x4096:fp32", 25}, {"4096x16384:bf16", 60}})
    if (auto it = t.find({name, kMulti}); it != t.end())
      out.push_back({fmt::format("{}: <= {:.0f} us", name, limit), fmt::format("{:.2f} us", it->second), it->second <= limit});
  double worst = NAN;
  std::string where;
  for (const auto& [name, g] : groups) {
    if (g.bytes() < 64'000'000) continue;
    const auto m = t.find({name, kMulti}), s = t.find({name, kStreamRead});
    if (m == t.end() || s == t.end() || m->second <= 0) continue;
    const double pct = s->second / m->second;
    if (std::isnan(worst) || pct < worst) worst = pct, where = name;
  }
  if (!std::isnan(worst))
    out.push_back({"groups >= 64 MB: >= 85% of the streaming read of their bytes",
                   fmt::format("worst {:.1f}% ({})", 100 * worst, where), worst >= 0.85});
  out.push_back({"vs torch._foreach_norm(xs, inf)", "measured from Python (python/bench/bench_torch.py), not here", false,
                 false});
  return out;
}

}  // namespace amax::bench
