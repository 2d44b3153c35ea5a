// Shared by the reliability worker program and the reliability tests: what a "tuner key" looks
// like (240 trials of the pruned sm_90 space, like a real key), the provenance of each simulated
// device, and the deterministic values that let a test check that a key was stored completely.
#pragma once

#include <amax/db/db.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "amax/arch.hpp"
#include "amax/kernel_config.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"

namespace amax::reliability {

inline constexpr const char* kArch = "sm_90";
inline constexpr int kCuCount = 132;
inline constexpr const char* kCompiler = "nvrtc 13.0";

/// The provenance a simulated tuner on device @p device records. By default it is fresh for this
/// build (template hash and tool version of the running generator), so that the runtime's
/// DispatchTables use the rows.
inline db::Provenance provenance(const std::string& device, const std::string& hash = template_hash(),
                                 const std::string& compiler = kCompiler,
                                 const std::string& tool = std::string(generator_version())) {
  db::Provenance p;
  p.device_name = device;
  p.arch = kArch;
  p.cu_count = kCuCount;
  p.driver_version = "CUDA driver 13.0 (580.65)";
  p.compiler = compiler;
  p.template_hash = hash;
  p.tool_version = tool;
  p.timing_protocol = "warmup=10 batches=25x20 rotate=4xL2";
  p.timestamp = "2026-11-30T02:51:00Z";
  return p;
}

/// The 240 variant labels of the pruned fp32 space on sm_90, as the tuner measures them.
inline const std::vector<std::string>& space_labels() {
  static const std::vector<std::string> labels = [] {
    std::vector<std::string> out;
    for (const auto& c : enumerate_space(ArchInfo::parse(kArch), DType::fp32, SpaceKind::pruned))
      out.push_back(c.label());
    return out;
  }();
  return labels;
}

/// Deterministic median of trial @p i of key @p n for @p device (microseconds, > 0).
inline double trial_time(const std::string& device, std::uint64_t n, std::size_t i) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : device) h = (h ^ c) * 1099511628211ull;
  h = (h ^ n) * 1099511628211ull;
  h = (h ^ i) * 1099511628211ull;
  return 1.0 + static_cast<double>(h % 100000) / 1000.0;
}

/// What a tuner records for one key: @p count trials (the first labels of the pruned space), all
/// ok, with deterministic times; the winner is the fastest.
struct KeyRecord {
  std::vector<db::Trial> trials;
  db::Winner winner;
};

inline KeyRecord make_key_record(const std::string& device, std::uint64_t n, std::size_t count) {
  const auto& labels = space_labels();
  KeyRecord r;
  for (std::size_t i = 0; i < count; ++i) {
    db::Trial t;
    t.label = i < labels.size() ? labels[i] : "extra." + std::to_string(i);
    t.status = db::TrialStatus::ok;
    t.median_us = trial_time(device, n, i);
    t.spread_us = t.median_us / 50.0;
    t.samples = 25;
    t.gbps = static_cast<double>(n) * 4.0 / (t.median_us * 1e3);
    t.registers = 32;
    t.spill_bytes = 0;
    r.trials.push_back(std::move(t));
  }
  const auto best = std::min_element(r.trials.begin(), r.trials.end(), [](const db::Trial& a, const db::Trial& b) {
    return a.median_us < b.median_us;
  });
  r.winner = db::Winner{best->label, best->median_us, best->gbps};
  return r;
}

/// The key sizes a simulated tuner works through: @p count keys starting at @p first (n = first,
/// first + 1, ...), fp32 on sm_90.
inline db::TuningKey key_at(std::uint64_t n) { return db::TuningKey{kArch, DType::fp32, n}; }

}  // namespace amax::reliability
