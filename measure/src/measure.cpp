#include "amax/measure.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace amax::tune {

namespace {
std::string timing_method(const TimingProtocol& p) {
  return p.gated ? fmt::format("GPU time: device events around batches held behind a gate kernel (timeout {:g} ms)",
                               p.gate_timeout_ms)
                 : std::string("host-inclusive: device events around batches enqueued back to back");
}
// How the cold regime picks each call's input (InputRegion::next), for the protocol descriptions.
std::string cold_walk() {
  return fmt::format("each call the next {}-byte-aligned input, walking over", kInputAlignment);
}
}  // namespace

bool measured_in_gpu_time(const std::string& timing_protocol) noexcept {
  return timing_protocol.starts_with("GPU time");
}

std::string TimingProtocol::describe() const {
  return fmt::format("{}; batches >= {:g} us (<= {} calls); warmup {}; screen {} (stop at {:g}x best); "
                     "final {} interleaved rounds x {} finalists + baselines; ties: medians within max({:g}%, {:g} "
                     "SE), fewest launches, then least host cost, then least spread; confirmed in {} more rounds; {}",
                     timing_method(*this), batch_target_us, max_batch, warmup_batches, screen_batches, early_stop,
                     final_rounds, finalists, 100 * tie_margin, tie_z, confirm_rounds,
                     warm_cache ? std::string("warm L2 (same input)")
                                : fmt::format("cold ({} largest input + 5x last-level cache)", cold_walk()));
}

std::string TimingProtocol::describe_interleaved(int rounds) const {
  return fmt::format("{}; batches >= {:g} us (<= {} calls); warmup {} batch; median of {} interleaved rounds; "
                     "cold: {} the largest input + 5x the last-level cache; warm: same input",
                     timing_method(*this), batch_target_us, max_batch, warmup_batches, rounds, cold_walk());
}

double gbps(std::uint64_t bytes, double us) noexcept { return us > 0 ? static_cast<double>(bytes) / us / 1e3 : 0; }

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

InputRegion::InputRegion(Backend& b, std::uint64_t max_input_bytes)
    : bytes_(rotation_region_bytes(b.device(), max_input_bytes)), buf_(b, bytes_) {
  const std::uint64_t mib = 1ull << 20;
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
    b.copy_to_device(buf_.get(off), host.data(), len);
  }
}

std::uint64_t next_input_offset(std::uint64_t& cursor, std::uint64_t bytes, std::uint64_t region_bytes) noexcept {
  std::uint64_t at = (cursor + kInputAlignment - 1) / kInputAlignment * kInputAlignment;
  if (at > region_bytes || region_bytes - at < bytes) at = 0;
  cursor = at + bytes;
  return at;
}

const void* InputRegion::next(std::uint64_t bytes, bool warm) {
  if (warm || bytes >= bytes_) return buf_.get();
  return buf_.get(next_input_offset(cursor_, bytes, bytes_));
}

std::uint64_t InputRegion::slices(std::uint64_t bytes) const noexcept {
  if (bytes == 0 || bytes >= bytes_) return 1;  // every call the same address
  const std::uint64_t stride = (bytes + kInputAlignment - 1) / kInputAlignment * kInputAlignment;
  return (bytes_ - bytes) / stride + 1;
}

Gate::Gate(Backend& b, FunctionHandle kernel, double timeout_ms)
    : b_(b), kernel_(kernel), timeout_ms_(timeout_ms), words_(b, 2 * kGateSlots * sizeof(unsigned)) {}

void Gate::close(StreamHandle stream, int slot) {
  auto* w = static_cast<volatile unsigned*>(words_.host()) + 2 * slot;
  w[0] = 0u;
  w[1] = 0u;
  // The device's constant-rate clock: %globaltimer in ns on NVIDIA, the 100 MHz wall clock on AMD.
  unsigned long long ticks =
      static_cast<unsigned long long>(timeout_ms_ * (b_.vendor() == Vendor::nvidia ? 1e6 : 1e5));
  void* dev = static_cast<unsigned*>(words_.device()) + 2 * slot;
  void* args[] = {&dev, &ticks};
  b_.launch(kernel_, 1, 1, stream, args);
}

void Gate::release(int slot) noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  static_cast<volatile unsigned*>(words_.host())[2 * slot] = 1u;
}

bool Gate::timed_out(int slot) const noexcept {
  return static_cast<volatile unsigned*>(words_.host())[2 * slot + 1] != 0u;
}

TimingSpent& TimingSpent::operator+=(const TimingSpent& o) {
  batches += o.batches;
  calls += o.calls;
  gpu_s += o.gpu_s;
  enqueue_s += o.enqueue_s;
  wall_s += o.wall_s;
  gate_timeouts += o.gate_timeouts;
  return *this;
}

TimingSpent TimingSpent::since(const TimingSpent& e) const {
  return {batches - e.batches, calls - e.calls,          gpu_s - e.gpu_s,
          enqueue_s - e.enqueue_s, wall_s - e.wall_s, gate_timeouts - e.gate_timeouts};
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// A start and a stop event per gate slot, for the batches in flight; destroyed with it.
class SlotEvents {
 public:
  explicit SlotEvents(Backend& b) : b_(b) {
    try {
      for (auto& e : events_) e = b.create_event();
    } catch (...) {
      destroy();
      throw;
    }
  }
  SlotEvents(const SlotEvents&) = delete;
  SlotEvents& operator=(const SlotEvents&) = delete;
  ~SlotEvents() { destroy(); }
  EventHandle start(int slot) const { return events_[2 * slot]; }
  EventHandle stop(int slot) const { return events_[2 * slot + 1]; }

 private:
  void destroy() noexcept {
    for (auto& e : events_)
      if (e) b_.destroy_event(e), e = nullptr;
  }
  Backend& b_;
  std::array<EventHandle, 2 * Gate::kGateSlots> events_{};
};

// One attempt at a batch, `calls` calls of it: behind gate slot `slot` (when gated), between the
// slot's events; the gate is released once the batch is enqueued, or when enqueueing it throws.
struct Enqueued {
  int slot = 0;
  int calls = 0;
  double enqueue_s = 0;
};
Enqueued enqueue(Backend& b, StreamHandle stream, InputRegion& inputs, const BatchSpec& s, int calls, Gate* gate,
                 const SlotEvents& ev, int slot) {
  if (gate) gate->close(stream, slot);
  Clock::time_point t0, t1;
  try {
    b.record(ev.start(slot), stream);
    t0 = Clock::now();
    for (int j = 0; j < calls; ++j) (*s.call)(inputs.next(s.bytes, s.warm));
    t1 = Clock::now();
    b.record(ev.stop(slot), stream);
  } catch (...) {
    if (gate) gate->release(slot);
    throw;
  }
  if (gate) gate->release(slot);
  return {slot, calls, seconds(t0, t1)};
}

}  // namespace

bool may_overlap(const BatchSpec& running, const BatchSpec& next) noexcept {
  const auto entries = [](const BatchSpec& s) { return static_cast<long>(s.calls) * s.launches + 3; };
  return running.launches > 0 && next.launches > 0 && entries(running) + entries(next) <= kLaunchQueueDepth;
}

std::vector<BatchResult> run_batches(Backend& b, StreamHandle stream, InputRegion& inputs,
                                     const std::vector<BatchSpec>& specs, Gate* gate,
                                     const std::function<bool(std::size_t, const BatchResult&)>& stop) {
  std::vector<BatchResult> out(specs.size());
  const SlotEvents ev(b);
  auto last = Clock::now();
  // Waits for batch j (attempt e) and takes its time unless its gate timed out; its share of the
  // wall time is what passed since the previous batch's result. Returns whether it timed out.
  const auto finish = [&](std::size_t j, const Enqueued& e) {
    const double ms = b.elapsed_ms(ev.start(e.slot), ev.stop(e.slot));
    BatchResult& r = out[j];
    const bool late = gate && gate->timed_out(e.slot);
    if (late) {
      ++r.spent.gate_timeouts;
    } else {
      r.us = 1000.0 * ms / e.calls;
      r.host_us = 1e6 * e.enqueue_s / e.calls;
      r.calls = e.calls;
      r.timed = true;
      ++r.spent.batches;
      r.spent.calls += e.calls;
      r.spent.gpu_s += ms / 1000.0;
      r.spent.enqueue_s += e.enqueue_s;
    }
    const auto now = Clock::now();
    r.spent.wall_s += seconds(last, now);
    last = now;
    return late;
  };
  std::vector<std::size_t> again;  // timed batches whose gate timed out
  bool stopped = false;             // `stop` ended the run
  // Finishes the running batch k: a late one is timed again later; a timed one may end the run.
  const auto done = [&](std::size_t k, const Enqueued& e) {
    if (finish(k, e)) {
      if (specs[k].timed) again.push_back(k);
    } else if (stop && out[k].timed && stop(k, out[k])) {
      stopped = true;
    }
  };
  std::optional<std::pair<std::size_t, Enqueued>> running;
  for (std::size_t j = 0, slot = 0; j < specs.size() && !stopped; ++j, slot ^= 1) {
    if (running && !(gate && may_overlap(specs[running->first], specs[j]))) {
      done(running->first, running->second);
      running.reset();
      if (stopped) break;
    }
    const Enqueued e = enqueue(b, stream, inputs, specs[j], specs[j].calls, gate, ev, static_cast<int>(slot));
    if (running) done(running->first, running->second);
    running.emplace(j, e);
  }
  if (running) {
    if (stopped) {  // enqueued before the run was stopped: waited for, its time not used
      finish(running->first, running->second);
      out[running->first].timed = false;
      out[running->first].us = 0;
    } else {
      done(running->first, running->second);
    }
  }
  // Each late batch alone again, with half as many calls each time: four attempts in all.
  for (std::size_t j : again)
    for (int calls = specs[j].calls, attempt = 1;; ++attempt) {
      if (calls == 1)  // one call that cannot be queued behind the gate: halving cannot help
        throw GateTimeout(fmt::format("the timing gate timed out ({:g} ms) while the host enqueued one call: "
                                      "the call enqueues more work than the stream queues while it is held",
                                      gate->timeout_ms()));
      if (attempt == 4)
        throw GateTimeout(fmt::format("the timing gate timed out 4 times ({:g} ms each, batches of {} down to {} "
                                      "calls): the host could not enqueue a batch in time",
                                      gate->timeout_ms(), specs[j].calls, std::max(1, specs[j].calls / 8)));
      calls = std::max(1, calls / 2);
      if (!finish(j, enqueue(b, stream, inputs, specs[j], calls, gate, ev, 0))) break;
    }
  return out;
}

BatchTimes time_batches(Backend& b, StreamHandle stream, InputRegion& inputs, std::uint64_t bytes, bool warm, int batch,
                        int batches, const std::function<void(const void*)>& call, Gate* gate) {
  const std::vector<BatchSpec> specs(static_cast<std::size_t>(std::max(0, batches)),
                                     BatchSpec{&call, bytes, warm, batch, 0, true});
  BatchTimes out;
  for (const BatchResult& r : run_batches(b, stream, inputs, specs, gate)) {
    out.us.push_back(r.us);
    out.host_us.push_back(r.host_us);
    out.spent += r.spent;
  }
  return out;
}

namespace {
// A device whose arch does not parse (never one a backend made) counts its reported L2 only.
std::uint64_t last_level_cache(const DeviceInfo& d) {
  try {
    return last_level_cache_bytes(ArchInfo::parse(d.arch), d.l2_bytes);
  } catch (const std::invalid_argument&) {
    return d.l2_bytes;
  }
}
}  // namespace

std::uint64_t rotation_region_bytes(const DeviceInfo& d, std::uint64_t max_input_bytes) {
  const std::uint64_t mib = 1ull << 20;
  return (max_input_bytes + 5 * last_level_cache(d) + mib - 1) / mib * mib + mib;
}

std::uint64_t max_input_elements(const DeviceInfo& d, DType dtype) {
  const std::uint64_t reserved = std::min<std::uint64_t>(d.memory_bytes, 5 * last_level_cache(d) + (1ull << 30));
  return (d.memory_bytes - reserved) / info(dtype).bytes;
}

std::string fit_error(const DeviceInfo& d, DType dtype, std::uint64_t n) {
  if (n <= max_input_elements(d, dtype)) return {};
  return fmt::format("{} n={} ({} GiB) does not fit in the {} GiB of {} with room for rotating inputs; choose "
                     "smaller --sizes",
                     to_string(dtype), n, static_cast<double>(n) * info(dtype).bytes / (1ull << 30),
                     d.memory_bytes >> 30, d.name);
}

int batch_size(const TimingProtocol& p, double per_call_us) {
  if (!(per_call_us > 0)) return p.max_batch;
  return std::clamp(static_cast<int>(std::ceil(p.batch_target_us / per_call_us)), 1, p.max_batch);
}

}  // namespace amax::tune
