#include "amax/runner.hpp"

#include <stdexcept>

namespace amax::tune {

Timed variant_timed(Backend& b, const LoadedKernel& k, const LaunchShape& shape, std::uint64_t n, LaunchBuffers buf,
                    StreamHandle stream) {
  Timed t{[&b, &k, shape, n, buf, stream](const void* in) {
    launch_amax(b, k, shape, in, n, buf.out, buf.workspace, buf.counter, NanMode::propagate, stream);
  }};
  t.launches = shape.launches();
  return t;
}

Runner::Runner(Backend& backend, StreamHandle stream, InputRegion& inputs, TimingProtocol protocol, Gate* gate)
    : b_(backend), stream_(stream), inputs_(inputs), protocol_(protocol), gate_(protocol.gated ? gate : nullptr) {
  if (protocol.gated && !gate) throw std::invalid_argument("Runner: a gated timing protocol needs a Gate");
}

std::vector<BatchResult> Runner::run(const std::vector<std::pair<Timed*, BatchSpec>>& batches,
                                     const std::function<bool(std::size_t, const BatchResult&)>& stop) {
  std::vector<std::pair<Timed*, BatchSpec>> all;
  all.swap(warmups_);
  const std::size_t first = all.size();
  all.insert(all.end(), batches.begin(), batches.end());
  std::vector<BatchSpec> specs;
  for (const auto& [t, s] : all) specs.push_back(s);
  std::function<bool(std::size_t, const BatchResult&)> ask;
  if (stop) ask = [&](std::size_t k, const BatchResult& r) { return k >= first && stop(k - first, r); };
  std::vector<BatchResult> r = run_batches(b_, stream_, inputs_, specs, gate_, ask);
  for (std::size_t i = 0; i < all.size(); ++i) {
    all[i].first->spent += r[i].spent;
    spent_ += r[i].spent;
  }
  r.erase(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(first));
  return r;
}

void Runner::prepare(Timed& t, std::uint64_t bytes, bool warm_up) {
  int probed = 0;  // calls of t the probe just ran
  if (t.batch == 0) {
    t.batch = batch_size(protocol_, run({{&t, spec(t, bytes, 1)}, {&t, spec(t, bytes, 1)}}).back().us);
    probed = 2;
  }
  // The probe's calls warm up (module, clocks, TLB) as a warm-up of as many calls would: where they
  // are at least the warm-up's calls (batches of one or two calls), a warm-up would only repeat them.
  if (warm_up && probed < protocol_.warmup_batches * t.batch)
    for (int k = 0; k < protocol_.warmup_batches; ++k) warmups_.push_back({&t, spec(t, bytes, t.batch, false)});
}

std::vector<double> Runner::measure(Timed& t, std::uint64_t bytes, int batches) {
  std::vector<double> us;
  for (const BatchResult& r : run(std::vector(static_cast<std::size_t>(std::max(0, batches)),
                                              std::pair{&t, spec(t, bytes, t.batch)}))) {
    us.push_back(r.us);
    t.host_us.push_back(r.host_us);
  }
  return us;
}

std::vector<double> Runner::measure_unless(Timed& t, std::uint64_t bytes, int more, double stop_above) {
  std::vector<double> us;
  const std::vector<std::pair<Timed*, BatchSpec>> batches(1 + static_cast<std::size_t>(std::max(0, more)),
                                                          std::pair{&t, spec(t, bytes, t.batch)});
  for (const BatchResult& r :
       run(batches, [stop_above](std::size_t k, const BatchResult& b) { return k == 0 && b.us > stop_above; }))
    if (r.timed) {
      us.push_back(r.us);
      t.host_us.push_back(r.host_us);
    }
  return us;
}

std::vector<std::vector<double>> Runner::interleaved(std::vector<Timed>& entries, std::uint64_t bytes, int rounds,
                                                     InterleaveOrder order) {
  for (auto& e : entries) prepare(e, bytes);
  const std::size_t m = entries.size();
  std::vector<std::pair<Timed*, BatchSpec>> batches;
  for (int r = 0; r < rounds; ++r)
    for (std::size_t j = 0; j < m; ++j) {
      const std::size_t i = order.reverse ? (order.offset + m - j % m) % m : (order.offset + j) % m;
      batches.push_back({&entries[i], spec(entries[i], bytes, entries[i].batch)});
    }
  const std::vector<BatchResult> r = run(batches);
  std::vector<std::vector<double>> samples(m);
  for (std::size_t k = 0; k < r.size(); ++k) {
    Timed& t = *batches[k].first;
    samples[static_cast<std::size_t>(&t - entries.data())].push_back(r[k].us);
    t.host_us.push_back(r[k].host_us);
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
