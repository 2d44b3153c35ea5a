#include "amax/bench_multi.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "amax/amax_tune.hpp"
#include "amax/dtype_c.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/reference.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/runner.hpp"
#include "amax/te_contenders.hpp"
#include "bench_device.hpp"
#include "amax/tuner.hpp"

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
  float* out = static_cast<float*>(b.allocate(4 * 3 * max_tensors + 64));  // multi, per tensor, TE amax + scale
  float* te_ws = static_cast<float*>(b.allocate(kTeWorkspaceBytes));
  void* sink = b.allocate(4);
  StreamHandle stream = b.create_stream();
  tune::TimingProtocol proto;
  rep.protocol = proto.describe_interleaved(o.rounds) + "; every tensor's result checked bit-exact first";

  for (const auto& g : o.groups) {
    const std::uint64_t eb = info(g.dtype).bytes, tensor_bytes = g.n * eb;
    std::vector<amax_tensor_t> list(g.tensors, amax_tensor_t{nullptr, g.n, to_c(g.dtype)});
    auto at = [&](const void* in, std::uint64_t i) { return static_cast<const char*>(in) + i * tensor_bytes; };
    auto fill = [&](const void* in) {
      for (std::uint64_t i = 0; i < g.tensors; ++i) list[i].data = at(in, i);
    };
    const std::size_t ws_bytes = ctx.multi_workspace_size(list);
    void* ws = b.allocate(std::max<std::size_t>(ws_bytes, ctx.workspace_size(to_c(g.dtype), g.n)));
    const std::size_t single_ws = ctx.workspace_size(to_c(g.dtype), g.n);
    float* multi_out = out;
    float* single_out = out + max_tensors;
    float* te_out = out + 2 * max_tensors;  // TE's amax per tensor; its scales all land in one word after them
    const auto e = ctx.multi_explain(list, to_c(g.dtype));
    struct C {
      std::string name, detail;
      std::function<void(const void*)> call;
    };
    std::vector<C> cs = {
        {kMulti, fmt::format("{} ({} launches)", e.label, e.launches),
         [&](const void* in) {
           fill(in);
           ctx.multi_compute(list, multi_out, ws, ws_bytes, stream);
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
        {"stream read", "", [&](const void* in) { ref.launch_stream_read(b, in, g.bytes(), sink, stream); }},
        {"empty launch", "", [&](const void*) { b.launch(ref.empty, 1, 32, stream, nullptr); }},
    };
    // Bit-exact check of every tensor of the amax-tune contenders on the first slice.
    std::vector<std::uint8_t> host(g.bytes());
    b.copy_to_host(host.data(), inputs.base(), host.size());
    for (int k = 0; k < 2; ++k) {
      float* dst = k == 0 ? multi_out : single_out;
      b.memset32_async(dst, 0x7fc0deadu, g.tensors, stream);
      cs[k].call(inputs.base());
      b.synchronize(stream);
      std::vector<std::uint32_t> got(g.tensors);
      b.copy_to_host(got.data(), dst, 4 * g.tensors);
      for (std::uint64_t i = 0; i < g.tensors; ++i) {
        const std::uint32_t want = reference_amax_bits(host.data() + i * tensor_bytes, g.dtype, g.n, NanMode::propagate);
        if (got[i] != want)
          throw std::runtime_error(fmt::format("{} ({}) gives amax bits {:#010x} for tensor {} of group {} where the CPU "
                                               "reference gives {:#010x}: not timed",
                                               cs[k].name, cs[k].detail, got[i], i, g.name(), want));
      }
    }
    std::vector<tune::Timed> timed;
    for (const auto& c : cs) timed.push_back({c.call});
    const auto samples = tune::Runner(b, stream, inputs, proto).interleaved(timed, g.bytes(), o.rounds);
    for (std::size_t i = 0; i < cs.size(); ++i)
      rep.rows.push_back({g, cs[i].name, tune::Stats::of(samples[i]), cs[i].detail});
    b.release(ws);
    if (o.progress) {
      const auto& r = rep.rows[rep.rows.size() - cs.size()];
      std::fprintf(stderr, "%-22s multi %10.2f us  per tensor %10.2f us  TE step per tensor %10.2f us  stream read %9.2f us (%s)\n",
                   g.name().c_str(), r.stats.median_us, rep.rows[rep.rows.size() - 4].stats.median_us,
                   rep.rows[rep.rows.size() - 3].stats.median_us, rep.rows[rep.rows.size() - 2].stats.median_us,
                   r.detail.c_str());
    }
  }
  b.destroy_stream(stream);
  for (void* p : {static_cast<void*>(out), static_cast<void*>(te_ws), sink}) b.release(p);
  rep.targets = check_multi_targets(rep.rows);
  std::filesystem::create_directories(o.out_dir);
  const auto path = o.out_dir / "bench_multi.csv";
  std::ofstream csv(path);
  csv << "device,arch,group,tensors,n,dtype,bytes,contender,detail,median_us,spread_us,samples,gbps\n";
  for (const auto& r : rep.rows)
    csv << fmt::format("\"{}\",{},{},{},{},{},{},\"{}\",\"{}\",{:.4f},{:.4f},{},{:.2f}\n", rep.device.name,
                       rep.device.arch, r.group.name(), r.group.tensors, r.group.n, to_string(r.group.dtype),
                       r.group.bytes(), r.contender, r.detail, r.stats.median_us, r.stats.spread_us, r.stats.samples,
                       tune::gbps(r.group.bytes(), r.stats.median_us));
  if (!csv.flush()) throw std::runtime_error("cannot write " + path.string());
  return rep;
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
    const auto m = t.find({name, kMulti}), s = t.find({name, "stream read"});
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
