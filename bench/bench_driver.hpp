#pragma once
// The bench driver (internal to amax_bench), written once over the kernel family: `amax-tune bench`
// is run_family<SingleFamily>, `bench-multi` run_family<MultiFamily>. The driver opens the device,
// lays out the rotated input region over the largest workload, and per workload builds the
// family's contenders, checks their results bit for bit against the CPU reference on the first
// input slice, times them in both views (tune::measure_both: GPU time behind the gate, then host-
// inclusive) and keeps one row per contender; then the targets and the CSV. What differs per family
// is a specialisation of BenchFamily<F> (bench.cpp, bench_multi.cpp): its Options, Row and Report
// types, its workloads in timing order (workloads(options, device); errors: one that cannot fit),
// the message of a result that is not the reference's (wrong), a row's key (row), the progress
// line, the targets, the CSV (write) and its Contenders: the device buffers of a run and each
// workload's contenders (of), with what is done before and after timing them.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "amax/family.hpp"
#include "amax/fp8_cast.hpp"
#include "amax/reference.hpp"
#include "amax/runner.hpp"
#include "amax/scale_rule.hpp"
#include "bench_device.hpp"

namespace amax::bench::detail {

/// One measured case: `tensors` tensors of `n` elements of `dtype` per call (1 for the single-tensor
/// bench) in the warm or cold regime; `check`: its results are verified before it is timed;
/// `format`: the FP8 format whose scale rule (and, for the quantize, cast) the results follow.
struct Workload {
  DType dtype{};
  std::uint64_t tensors = 1, n = 0;
  bool warm = false, check = true;
  Fp8Format format = Fp8Format::e4m3;
  std::uint64_t bytes() const { return tensors * n * info(dtype).bytes; }
};

/// One contender of a workload: its name and detail (as in the rows), its call on an input slice,
/// and where its results land on the device (`tensors` words each; null: not produced, not
/// checked): the amax, and for the fused amax + scale contenders the scale and scale_inv of the
/// workload's format; for a quantize, the n FP8 bytes (one tensor).
struct Contender {
  std::string name;
  std::string detail;
  std::function<void(const void* in)> call;
  float* amax = nullptr;
  float* scale = nullptr;
  float* scale_inv = nullptr;
  unsigned char* fp8 = nullptr;
  bool gated = true;  ///< timed behind the gate (tune::Timed::gated)
};

/// A family's facts for the bench driver (the members listed at the top of this file).
template <class F>
struct BenchFamily;

/// The CPU reference of every tensor of `w` (tensor i at i x n elements of `host`), each split into
/// chunks computed in parallel. A chunk's result is +0.0, a positive finite value, +Inf or the
/// canonical NaN, so the largest bit pattern of a tensor's chunks is the tensor's.
inline std::vector<std::uint32_t> reference(const std::uint8_t* host, const Workload& w) {
  const unsigned T = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const std::uint64_t eb = info(w.dtype).bytes;
  std::vector<std::uint32_t> part(T * w.tensors, 0), out(w.tensors, 0);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < T; ++t)
    pool.emplace_back([&, t] {
      const std::uint64_t lo = w.n * t / T, hi = w.n * (t + 1) / T;
      for (std::uint64_t i = 0; i < w.tensors; ++i)
        part[t * w.tensors + i] = reference_amax_bits(host + (i * w.n + lo) * eb, w.dtype, hi - lo, NanMode::propagate);
    });
  for (auto& th : pool) th.join();
  for (unsigned t = 0; t < T; ++t)
    for (std::uint64_t i = 0; i < w.tensors; ++i) out[i] = std::max(out[i], part[t * w.tensors + i]);
  return out;
}

/// The FP8 bytes of the first tensor of `w` (at `host`) quantized with the scale whose bits are
/// `scale` under TransformerEngine's rule, computed in parallel chunks.
inline std::vector<std::uint8_t> reference_fp8(const std::uint8_t* host, const Workload& w, std::uint32_t scale) {
  const unsigned T = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const std::uint64_t eb = info(w.dtype).bytes;
  std::vector<std::uint8_t> out(w.n);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < T; ++t)
    pool.emplace_back([&, t] {
      const std::uint64_t lo = w.n * t / T, hi = w.n * (t + 1) / T;
      reference_quantize(host + lo * eb, w.dtype, hi - lo, scale, w.format, CastRule::transformer_engine,
                         out.data() + lo);
    });
  for (auto& th : pool) th.join();
  return out;
}

/// Runs every contender with a result once on `in` (its outputs pre-filled with a NaN pattern no
/// amax produces, its FP8 bytes with 0xa5) and compares each tensor's amax with `amax` (the CPU
/// reference's bits), then its scale and scale_inv with the FP8 rule's (w.format's max, epsilon 0),
/// then its FP8 bytes with reference_fp8 of `host` (the input's first bytes, on the host) at the
/// reference scale. Throws std::runtime_error with `wrong(contender, what, index, got, want)` at
/// the first mismatch.
template <class Wrong>
void verify(Backend& b, StreamHandle stream, const std::vector<Contender>& cs, const void* in, const Workload& w,
            const std::uint8_t* host, const std::vector<std::uint32_t>& amax, Wrong wrong) {
  const std::size_t count = amax.size();
  std::vector<std::uint32_t> scale(count), scale_inv(count), got(count);
  const ScaleRule rule{info(w.format).max_finite};
  for (std::size_t i = 0; i < count; ++i) {
    const ScaleBits s = reference_scale_bits(amax[i], rule);
    scale[i] = s.scale;
    scale_inv[i] = s.scale_inv;
  }
  std::vector<std::uint8_t> fp8_want, fp8_got;
  for (const Contender& c : cs) {
    if (!c.amax && !c.fp8) continue;
    const std::tuple<float*, const std::vector<std::uint32_t>*, const char*> outputs[] = {
        {c.amax, &amax, "amax"}, {c.scale, &scale, "scale"}, {c.scale_inv, &scale_inv, "scale_inv"}};
    for (const auto& [dst, want, what] : outputs)
      if (dst) b.memset32_async(dst, 0x7fc0deadu, count, stream);
    if (c.fp8) b.memset32_async(c.fp8, 0xa5a5a5a5u, (w.n + 3) / 4, stream);
    c.call(in);
    b.synchronize(stream);
    for (const auto& [dst, want, what] : outputs) {
      if (!dst) continue;
      b.copy_to_host(got.data(), dst, 4 * count);
      for (std::size_t i = 0; i < count; ++i)
        if (got[i] != (*want)[i]) throw std::runtime_error(wrong(c, what, i, got[i], (*want)[i]));
    }
    if (!c.fp8) continue;
    if (fp8_want.empty()) fp8_want = reference_fp8(host, w, scale[0]);
    fp8_got.resize(w.n);
    b.copy_to_host(fp8_got.data(), c.fp8, w.n);
    const auto [g, r] = std::mismatch(fp8_got.begin(), fp8_got.end(), fp8_want.begin());
    if (g != fp8_got.end())
      throw std::runtime_error(wrong(c, "FP8 byte", static_cast<std::size_t>(g - fp8_got.begin()), *g, *r));
  }
}

/// Writes `header` and line(row) for each of `rows` to `path`. Errors: std::runtime_error
/// "cannot write PATH".
template <class Rows, class Line>
void write_csv_file(const std::filesystem::path& path, std::string_view header, const Rows& rows, Line line) {
  std::ofstream csv(path);
  if (!csv) throw std::runtime_error("cannot write " + path.string());
  csv << header;
  for (const auto& r : rows) csv << line(r);
  if (!csv.flush()) throw std::runtime_error("cannot write " + path.string());
}

/// The bench of family F (run_bench, run_bench_multi). Errors: std::runtime_error (no device, a
/// workload that does not fit, a result that is not the reference's, the CSV not written),
/// BackendError, CompileError, amax_tune::Error.
template <class F>
typename BenchFamily<F>::Report run_family(const typename BenchFamily<F>::Options& o) {
  using Family = BenchFamily<F>;
  const auto t0 = std::chrono::steady_clock::now();
  typename Family::Report rep;
  BenchDevice opened(o.device, o.user_db, o.system_db);
  Backend& b = *opened.backend;
  rep.device = b.device();
  const std::vector<Workload> work = Family::workloads(o, rep.device);
  std::uint64_t max_bytes = 0, check_bytes = 0;
  for (const Workload& w : work) {
    max_bytes = std::max(max_bytes, w.bytes());
    if (w.check) check_bytes = std::max(check_bytes, w.bytes());
  }
  tune::InputRegion inputs(b, max_bytes + 64);
  StreamHandle stream = b.create_stream();
  typename Family::Contenders contenders(opened, stream, inputs, work);
  tune::Gate gate(b, opened.ref.gate);
  tune::TimingProtocol proto;
  rep.protocol = proto.describe_interleaved(o.rounds) + contenders.protocol_note();
  std::vector<std::uint8_t> host;  // the first input slice, copied at the first check
  for (std::size_t step = 0; step < work.size(); ++step) {
    const Workload& w = work[step];
    std::vector<Contender> cs = contenders.of(w);
    if (w.check) {
      if (host.empty()) {
        host.resize(check_bytes);
        b.copy_to_host(host.data(), inputs.base(), host.size());
      }
      verify(b, stream, cs, inputs.base(), w, host.data(), reference(host.data(), w),
             [&](const Contender& c, const char* what, std::size_t i, std::uint32_t got, std::uint32_t want) {
               return Family::wrong(w, c, what, i, got, want);
             });
    }
    contenders.before_timing(w, cs);
    std::vector<tune::Timed> timed;
    for (const auto& c : cs) timed.push_back({c.call, 0, {}, c.gated});
    const auto m = tune::measure_both(b, stream, inputs, gate, proto, w.warm, timed, w.bytes(), o.rounds);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      typename Family::Row row = Family::row(w);
      static_cast<Measurement&>(row) = {cs[i].name, m[i].gpu, cs[i].detail, m[i].host_inclusive, m[i].host_us};
      rep.rows.push_back(std::move(row));
    }
    contenders.after_timing();
    if (o.progress) Family::progress(rep, w, step + 1, work.size(), cs.size());
  }
  b.destroy_stream(stream);
  rep.targets = Family::targets(rep.rows);
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::create_directories(o.out_dir);
  Family::write(rep, o.out_dir);
  return rep;
}

}  // namespace amax::bench::detail
