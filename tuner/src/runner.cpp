#include "amax/runner.hpp"

namespace amax::tune {

Timed variant_timed(Backend& b, const LoadedKernel& k, const LaunchShape& shape, std::uint64_t n, LaunchBuffers buf,
                    StreamHandle stream) {
  return Timed{[&b, &k, shape, n, buf, stream](const void* in) {
    launch_amax(b, k, shape, in, n, buf.out, buf.workspace, buf.counter, NanMode::propagate, stream);
  }};
}

void Runner::prepare(Timed& t, std::uint64_t bytes, bool warm_up) {
  const bool warm = protocol_.warm_cache;
  if (t.batch == 0) t.batch = batch_size(protocol_, time_batches(b_, stream_, inputs_, bytes, warm, 1, 2, t.call).back());
  if (warm_up) time_batches(b_, stream_, inputs_, bytes, warm, t.batch, protocol_.warmup_batches, t.call);
}

std::vector<double> Runner::measure(const Timed& t, std::uint64_t bytes, int batches) {
  return time_batches(b_, stream_, inputs_, bytes, protocol_.warm_cache, t.batch, batches, t.call);
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

}  // namespace amax::tune
