#include "amax/bench_multi.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "amax/amax_tune.hpp"
#include "amax/device_buffer.hpp"
#include "amax/dtype_c.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/reference.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/runner.hpp"
#include "amax/scale_rule.hpp"
#include "amax/te_contenders.hpp"
#include "bench_device.hpp"
#include "amax/workload.hpp"

namespace amax::bench {

std::vector<MultiGroupSpec> default_multi_groups() {
  return {{500, 4096, DType::fp32},       {4096, 16384, DType::bf16},     {64, 4096, DType::fp32},
          {512, 65536, DType::bf16},      {64, 1u << 20, DType::bf16},    {128, 1u << 20, DType::bf16},
          {8, 1u << 24, DType::bf16}};
}

MultiBenchReport run_bench_multi(const MultiBenchOptions& o) {
  MultiBenchReport rep;
  BenchDevice opened(o.device, o.user_db, o.system_db);
  Backend& b = *opened.backend;
  rep.device = b.device();
  const ReferenceKernels& ref = opened.ref;
  const TeKernels& te = opened.te;
  amax_tune::Context& ctx = opened.ctx;

  std::uint64_t max_bytes = 0, max_tensors = 1;
  for (const auto& g : o.groups) {
    max_bytes = std::max(max_bytes, g.bytes());
    max_tensors = std::max(max_tensors, g.tensors);
  }
  tune::InputRegion inputs(b, max_bytes + 64);
  // multi, per tensor, TE amax + scale; then the fused call's amax, scale and scale_inv arrays.
  const DeviceBuffer out_buf(b, 4 * 6 * max_tensors + 64), te_ws_buf(b, kTeWorkspaceBytes), sink_buf(b, 4);
  float* out = out_buf.get<float>();
  float* te_ws = te_ws_buf.get<float>();
  void* sink = sink_buf.get();
  StreamHandle stream = b.create_stream();
  tune::Gate gate(b, ref.gate);
  tune::TimingProtocol proto;
  rep.protocol = proto.describe_interleaved(o.rounds) +
                 "; host-inclusive: the same rounds without the gate; every tensor's result checked bit-exact first";

  for (const auto& g : o.groups) {
    const std::uint64_t eb = info(g.dtype).bytes, tensor_bytes = g.n * eb;
    std::vector<amax_tensor_t> list(g.tensors, amax_tensor_t{nullptr, g.n, to_c(g.dtype)});
    auto at = [&](const void* in, std::uint64_t i) { return static_cast<const char*>(in) + i * tensor_bytes; };
    auto fill = [&](const void* in) {
      for (std::uint64_t i = 0; i < g.tensors; ++i) list[i].data = at(in, i);
    };
    const std::size_t ws_bytes = ctx.multi_workspace_size(list);
    const DeviceBuffer ws_buf(b, std::max<std::size_t>(ws_bytes, ctx.workspace_size(to_c(g.dtype), g.n)));
    void* ws = ws_buf.get();
    const std::size_t single_ws = ctx.workspace_size(to_c(g.dtype), g.n);
    float* multi_out = out;
    float* single_out = out + max_tensors;
    float* te_out = out + 2 * max_tensors;  // TE's amax per tensor; its scales all land in one word after them
    float* scale_out = out + 3 * max_tensors + 16;
    const auto e = ctx.multi_explain(list, to_c(g.dtype));
    // The graph contender: the multi call captured once per input slice (the runner rotates over a
    // fixed set of slices), replayed on every later call with that slice.
    std::map<const void*, GraphExecHandle> graphs;
    auto graph_for = [&](const void* in) {
      if (auto it = graphs.find(in); it != graphs.end()) return it->second;
      fill(in);
      b.begin_capture(stream);
      ctx.multi_compute(list, multi_out, ws, ws_bytes, stream);
      return graphs[in] = b.end_capture(stream);
    };
    amax_tune::ScaleOptions e4m3;  // TE's default format, epsilon 0
    struct C {
      const char* name;
      std::string detail;
      std::function<void(const void*)> call;
    };
    const std::vector<C> cs = {
        {kMulti, fmt::format("{} ({} launches)", e.label, e.launches),
         [&](const void* in) {
           fill(in);
           ctx.multi_compute(list, multi_out, ws, ws_bytes, stream);
         }},
        {kMultiGraph, fmt::format("{}, one graph per input slice", e.label),
         [&](const void* in) { b.launch_graph(graph_for(in), stream); }},
        {kMultiScale, fmt::format("{}.scale, e4m3", e.label),
         [&](const void* in) {
           fill(in);
           ctx.multi_and_scale(list, e4m3, scale_out, scale_out + max_tensors, scale_out + 2 * max_tensors, ws,
                               ws_bytes, stream);
         }},
        {kPerTensor, ctx.explain(to_c(g.dtype), g.n).label,
         [&](const void* in) {
           for (std::uint64_t i = 0; i < g.tensors; ++i)
             ctx.compute(at(in, i), to_c(g.dtype), g.n, single_out + i, ws, single_ws, stream);
         }},
        {kTeStepPerTensor, "zero kernel, amax_kernel, compute_scale_from_amax_kernel (e4m3) per tensor",
         [&](const void* in) {
           for (std::uint64_t i = 0; i < g.tensors; ++i) {
             te.launch(b, TeSequence::zero_kernel, g.dtype, at(in, i), g.n, te_out + i, te_ws, stream);
             te.launch_scale(b, te_out + i, out + 3 * max_tensors, 448.f, false, 0.f, stream);
           }
         }},
        {kStreamRead, "", [&](const void* in) { ref.launch_stream_read(b, in, g.bytes(), sink, stream); }},
        {kEmptyLaunch, "", [&](const void*) { b.launch(ref.empty, 1, 32, stream, nullptr); }},
    };
    static_assert(std::size(kMultiContenders) == 7);
    // Bit-exact check of every tensor of the amax-tune contenders on the first slice: the amaxes of
    // the multi call, its graph and the per-tensor calls; amax, scale and scale_inv of the fused call.
    std::vector<std::uint8_t> host(g.bytes());
    b.copy_to_host(host.data(), inputs.base(), host.size());
    std::vector<std::uint32_t> want(g.tensors);
    for (std::uint64_t i = 0; i < g.tensors; ++i)
      want[i] = reference_amax_bits(host.data() + i * tensor_bytes, g.dtype, g.n, NanMode::propagate);
    auto check = [&](const C& c, const float* dst, std::uint32_t* expect, const char* what) {
      std::vector<std::uint32_t> got(g.tensors);
      b.copy_to_host(got.data(), dst, 4 * g.tensors);
      for (std::uint64_t i = 0; i < g.tensors; ++i)
        if (got[i] != expect[i])
          throw std::runtime_error(fmt::format("{} ({}) gives {} bits {:#010x} for tensor {} of group {} where the CPU "
                                               "reference gives {:#010x}: not timed",
                                               c.name, c.detail, what, got[i], i, g.name(), expect[i]));
    };
    for (std::size_t k : {0, 1, 3}) {
      float* dst = k == 3 ? single_out : multi_out;
      b.memset32_async(dst, 0x7fc0deadu, g.tensors, stream);
      cs[k].call(inputs.base());
      b.synchronize(stream);
      check(cs[k], dst, want.data(), "amax");
    }
    b.memset32_async(scale_out, 0x7fc0deadu, 3 * max_tensors, stream);
    cs[2].call(inputs.base());
    b.synchronize(stream);
    std::vector<std::uint32_t> want_scale(g.tensors), want_inv(g.tensors);
    for (std::uint64_t i = 0; i < g.tensors; ++i) {
      const ScaleBits sb = reference_scale_bits(want[i], ScaleRule{});
      want_scale[i] = sb.scale;
      want_inv[i] = sb.scale_inv;
    }
    check(cs[2], scale_out, want.data(), "amax");
    check(cs[2], scale_out + max_tensors, want_scale.data(), "scale");
    check(cs[2], scale_out + 2 * max_tensors, want_inv.data(), "scale_inv");
    // Every slice the rotation will give gets its graph now, outside the timed batches; capturing
    // the multi call also prepares that slice's list for the eager multi call (a repeated list is
    // served prepared), and one fused call per slice prepares its fused list, so both eager
    // contenders are timed as a training step repeats its list (the first call of a list also
    // validates, splits and packs it: docs/api.md "Repeated lists are served prepared").
    std::set<const void*> seen;
    for (;;) {
      const void* in = inputs.next(g.bytes(), false);
      if (!seen.insert(in).second) break;
      graph_for(in);
      cs[2].call(in);
    }
    b.synchronize(stream);
    // Two lists per slice (multi, fused): past the prepared-list limit the rotation evicts each
    // list before its next use, and every eager call of this group is validated and packed anew.
    const bool unprepared = 2 * seen.size() > AMAX_MULTI_PREPARED_LISTS;
    if (unprepared)
      std::fprintf(stderr, "bench-multi: %s rotates over %zu input slices, more than the %d lists a thread keeps "
                   "prepared hold for two eager contenders: its eager calls are timed unprepared (every call "
                   "validates, splits and packs its list)\n", g.name().c_str(), seen.size(), AMAX_MULTI_PREPARED_LISTS);
    std::vector<tune::Timed> timed;
    for (const auto& c : cs) timed.push_back({c.call});
    // One amax_compute per tensor (up to 2 launches each) and TE's step per tensor (3 launches each):
    // past kMaxGatedLaunches per call they are timed back to back only (their GPU time stays empty).
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (cs[i].name == std::string_view(kPerTensor) || cs[i].name == std::string_view(kTeStepPerTensor))
        timed[i].gated = 3 * g.tensors <= static_cast<std::uint64_t>(tune::kMaxGatedLaunches);
    const auto m = tune::measure_both(b, stream, inputs, gate, proto, false, timed, g.bytes(), o.rounds);
    for (std::size_t i = 0; i < cs.size(); ++i)
      rep.rows.push_back({g, cs[i].name, m[i].gpu,
                          cs[i].detail + (unprepared && (i == 0 || i == 2)
                                              ? fmt::format("; unprepared: {} input slices", seen.size())
                                              : std::string()),
                          m[i].host_us, m[i].host_inclusive});
    for (auto& [in, graph] : graphs) b.destroy_graph(graph);
    if (o.progress) {
      auto us = [&](const char* c) {  // GPU time, or host-inclusive where it was not timed behind the gate
        const MultiRow* row = rep.find(g, c);
        return row->stats.samples > 0 ? row->stats.median_us : row->host_inclusive.median_us;
      };
      std::fprintf(stderr,
                   "%-22s GPU: multi %9.2f us (host %7.2f us/call, host-incl. %9.2f us)  graph %9.2f us  fused %9.2f us  "
                   "per tensor %10.2f us  TE step per tensor %10.2f us  stream read %9.2f us (%s)\n",
                   g.name().c_str(), us(kMulti), rep.find(g, kMulti)->host_us, rep.find(g, kMulti)->host_inclusive.median_us, us(kMultiGraph), us(kMultiScale),
                   us(kPerTensor), us(kTeStepPerTensor), us(kStreamRead), rep.find(g, kMulti)->detail.c_str());
    }
  }
  b.destroy_stream(stream);
  rep.targets = check_multi_targets(rep.rows);
  std::filesystem::create_directories(o.out_dir);
  const auto path = o.out_dir / "bench_multi.csv";
  std::ofstream csv(path);
  csv << "device,arch,group,tensors,n,dtype,bytes,contender,detail,median_us,spread_us,samples,gbps,host_us,"
         "host_inclusive_us\n";
  for (const auto& r : rep.rows)
    csv << fmt::format("\"{}\",{},{},{},{},{},{},\"{}\",\"{}\",{:.4f},{:.4f},{},{:.2f},{:.2f},{:.4f}\n", rep.device.name,
                       rep.device.arch, r.group.name(), r.group.tensors, r.group.n, to_string(r.group.dtype),
                       r.group.bytes(), r.contender, r.detail, r.stats.median_us, r.stats.spread_us, r.stats.samples,
                       tune::gbps(r.group.bytes(), r.stats.median_us), r.host_us, r.host_inclusive.median_us);
  if (!csv.flush()) throw std::runtime_error("cannot write " + path.string());
  return rep;
}

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
