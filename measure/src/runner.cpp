#include "amax/runner.hpp"

#include <stdexcept>

namespace amax::tune {

Timed variant_timed(Backend& b, const LoadedKernel& k, const LaunchShape& shape, std::uint64_t n, LaunchBuffers buf,
                    StreamHandle stream) {
  return Timed{[&b, &k, shape, n, buf, stream](const void* in) {
    launch_amax(b, k, shape, in, n, buf.out, buf.workspace, buf.counter, NanMode::propagate, stream);
  }};
}

Runner::Runner(Backend& backend, StreamHandle stream, InputRegion& inputs, TimingProtocol protocol, Gate* gate)
    : b_(backend), stream_(stream), inputs_(inputs), protocol_(protocol), gate_(protocol.gated ? gate : nullptr) {
  if (protocol.gated && !gate) throw std::invalid_argument("Runner: a gated timing protocol needs a Gate");
}

BatchTimes Runner::run(Timed& t, std::uint64_t bytes, int batch, int batches) {
  BatchTimes r = time_batches(b_, stream_, inputs_, bytes, protocol_.warm_cache, batch, batches, t.call, gate_);
  t.spent += r.spent;
  spent_ += r.spent;
  return r;
}

void Runner::prepare(Timed& t, std::uint64_t bytes, bool warm_up) {
  if (t.batch == 0) t.batch = batch_size(protocol_, run(t, bytes, 1, 2).us.back());
  if (warm_up) run(t, bytes, t.batch, protocol_.warmup_batches);
}

std::vector<double> Runner::measure(Timed& t, std::uint64_t bytes, int batches) {
  BatchTimes r = run(t, bytes, t.batch, batches);
  t.host_us.insert(t.host_us.end(), r.host_us.begin(), r.host_us.end());
  return std::move(r.us);
}

std::vector<std::vector<double>> Runner::interleaved(std::vector<Timed>& entries, std::uint64_t bytes, int rounds,
                                                     InterleaveOrder order) {
  for (auto& e : entries) prepare(e, bytes);
  std::vector<std::vector<double>> samples(entries.size());
  const std::size_t m = entries.size();
  for (int r = 0; r < rounds; ++r)
    for (std::size_t j = 0; j < m; ++j) {
      const std::size_t i = order.reverse ? (order.offset + m - j % m) % m : (order.offset + j) % m;
      samples[i].push_back(measure(entries[i], bytes, 1)[0]);
    }
  return samples;
}

std::vector<BothTimes> measure_both(Backend& b, StreamHandle stream, InputRegion& inputs, Gate& gate,
                                    TimingProtocol p, bool warm, const std::vector<Timed>& entries, std::uint64_t bytes,
                                    int rounds) {
  p.warm_cache = warm;
  std::vector<BothTimes> out(entries.size());
  for (const bool gated : {true, false}) {
    p.gated = gated;
    std::vector<Timed> ts;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (!gated || entries[i].gated) ts.push_back({entries[i].call}), which.push_back(i);
    const auto samples = Runner(b, stream, inputs, p, &gate).interleaved(ts, bytes, rounds);
    for (std::size_t j = 0; j < which.size(); ++j) {
      (gated ? out[which[j]].gpu : out[which[j]].host_inclusive) = Stats::of(samples[j]);
      if (gated) out[which[j]].host_us = Stats::of(ts[j].host_us).median_us;
    }
  }
  return out;
}

}  // namespace amax::tune
