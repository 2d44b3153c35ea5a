#include "amax/measure.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace amax::tune {

std::string TimingProtocol::describe() const {
  return fmt::format("device events; batches >= {:g} us (<= {} calls); warmup {}; screen {} (stop at {:g}x best); "
                     "final {} interleaved rounds x {} finalists + baselines; {}",
                     batch_target_us, max_batch, warmup_batches, screen_batches, early_stop, final_rounds,
                     finalists, warm_cache ? "warm L2 (same input)" : "cold (rotating over largest input + 5x L2)");
}

Stats Stats::of(std::vector<double> v) {
  Stats s;
  s.samples = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {  // linear interpolation between closest ranks
    const double x = p * (v.size() - 1);
    const std::size_t i = static_cast<std::size_t>(x);
    return i + 1 < v.size() ? v[i] + (x - i) * (v[i + 1] - v[i]) : v[i];
  };
  s.median_us = q(0.5);
  s.spread_us = q(0.75) - q(0.25);
  return s;
}

InputRegion::InputRegion(Backend& b, std::uint64_t max_input_bytes) : b_(b) {
  const std::uint64_t mib = 1ull << 20;
  bytes_ = (max_input_bytes + 5 * b.device().l2_bytes + mib - 1) / mib * mib + mib;
  base_ = b.allocate(bytes_);
  // Fill in 64 MiB host chunks, generated in parallel with xorshift64.
  const std::uint64_t chunk = 64 * mib;
  std::vector<std::uint32_t> host(chunk / 4);
  for (std::uint64_t off = 0; off < bytes_; off += chunk) {
    const std::uint64_t len = std::min(chunk, bytes_ - off);
    const unsigned T = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < T; ++t)
      pool.emplace_back([&, t] {
        std::uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ull + t * 0xbf58476d1ce4e5b9ull + 1;
        for (std::uint64_t i = len / 4 * t / T; i < len / 4 * (t + 1) / T; ++i) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          host[i] = static_cast<std::uint32_t>(x >> 16) & 0xbfffbfffu;  // |x| < 2 in every dtype
        }
      });
    for (auto& th : pool) th.join();
    b.copy_to_device(static_cast<char*>(base_) + off, host.data(), len);
  }
}

InputRegion::~InputRegion() { b_.release(base_); }

const void* InputRegion::next(std::uint64_t bytes, bool warm) {
  if (warm || bytes >= bytes_) return base_;
  const std::uint64_t stride = (bytes + 511) / 256 * 256;
  const std::uint64_t slices = (bytes_ - bytes - 256) / stride + 1;
  const std::uint64_t k = cursor_++ % slices;
  return static_cast<char*>(base_) + k * stride;
}

std::vector<double> time_batches(Backend& b, StreamHandle stream, InputRegion& inputs, std::uint64_t bytes,
                                 bool warm, int batch, int batches,
                                 const std::function<void(const void*)>& call) {
  EventHandle start = b.create_event(), stop = b.create_event();
  std::vector<double> out;
  try {
    for (int k = 0; k < batches; ++k) {
      b.record(start, stream);
      for (int j = 0; j < batch; ++j) call(inputs.next(bytes, warm));
      b.record(stop, stream);
      out.push_back(1000.0 * b.elapsed_ms(start, stop) / batch);
    }
  } catch (...) {
    b.destroy_event(start);
    b.destroy_event(stop);
    throw;
  }
  b.destroy_event(start);
  b.destroy_event(stop);
  return out;
}

std::uint64_t max_input_elements(const DeviceInfo& d, DType dtype) {
  const std::uint64_t reserved = std::min<std::uint64_t>(d.memory_bytes, 5 * d.l2_bytes + (1ull << 30));
  return (d.memory_bytes - reserved) / info(dtype).bytes;
}

int batch_size(const TimingProtocol& p, double per_call_us) {
  if (!(per_call_us > 0)) return p.max_batch;
  return std::clamp(static_cast<int>(std::ceil(p.batch_target_us / per_call_us)), 1, p.max_batch);
}

Verifier::Verifier(Backend& b, StreamHandle stream, std::size_t max_variants, std::uint64_t max_workspace)
    : b_(b), stream_(stream), max_variants_(max_variants), max_workspace_(std::max<std::uint64_t>(max_workspace, 4)) {
  outputs_ = static_cast<float*>(b.allocate(4 * max_variants));
  workspace_ = b.allocate(max_workspace_);
  counter_ = static_cast<std::uint32_t*>(b.allocate(4));
  b.memset32_async(workspace_, 0xabababab, max_workspace_ / 4, stream);  // arbitrary bytes
  b.memset32_async(counter_, 0, 1, stream);
  b.synchronize(stream);
}

Verifier::~Verifier() {
  b_.release(outputs_);
  b_.release(workspace_);
  b_.release(counter_);
}

std::vector<std::uint32_t> Verifier::run(const std::vector<const LoadedKernel*>& kernels,
                                         const std::vector<KernelConfig>& configs, const void* in, std::uint64_t n,
                                         NanMode mode) {
  if (kernels.size() > max_variants_ || kernels.size() != configs.size())
    throw std::invalid_argument("Verifier::run: too many variants or mismatched lists");
  static const std::uint32_t kGarbage[] = {0x7f800000u, 0x7fc00000u, 0x4b000000u, 0xffffffffu, 0x00000001u};
  b_.memset32_async(outputs_, kGarbage[calls_++ % 5], kernels.size(), stream_);
  const auto cu = static_cast<std::uint32_t>(b_.device().cu_count);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (!kernels[i]) continue;
    const LaunchShape shape = launch_shape(configs[i], n, cu);
    if (shape.workspace_bytes > max_workspace_)
      throw std::logic_error("Verifier workspace too small for " + configs[i].label());
    launch_amax(b_, *kernels[i], shape, in, n, outputs_ + i, workspace_, counter_, mode, stream_);
  }
  b_.synchronize(stream_);
  std::vector<std::uint32_t> got(kernels.size());
  b_.copy_to_host(got.data(), outputs_, 4 * kernels.size());
  std::uint32_t counter = 0;
  b_.copy_to_host(&counter, counter_, 4);
  if (counter != 0) throw std::runtime_error("a one_pass variant left its counter at " + std::to_string(counter));
  return got;
}

}  // namespace amax::tune
