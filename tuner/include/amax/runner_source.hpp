#pragma once
// The search's SampleSource (search.hpp) over the measuring layer's Runner (runner.hpp): how the
// tuner's search takes its samples.
#include <cstdint>
#include <map>
#include <vector>

#include "amax/runner.hpp"
#include "amax/search.hpp"

namespace amax::tune {

/// The search's SampleSource over a Runner: variant i is the Timed that timed(i) returns (made
/// once per variant by the subclass), each call reading `bytes` bytes; every timed batch's host
/// cost is kept per variant, and host_us(i) is their median, and what its batches cost (spent(i)). recover() waits for the runner's
/// stream. Not thread-safe.
class RunnerSource : public SampleSource {
 public:
  RunnerSource(Runner& runner, std::uint64_t bytes) : runner_(runner), bytes_(bytes) {}
  std::vector<double> sample(std::size_t i, int batches, bool prepare) override;
  /// Through Runner::measure_unless: the second batch is enqueued while the first one runs.
  std::vector<double> screen_sample(std::size_t i, int more, double stop_above) override;
  /// A fresh probe per pass: each entry is a copy of timed(i)'s call (and launch count) with no
  /// batch size yet.
  std::vector<std::vector<double>> rounds(const std::vector<std::size_t>& which, int rounds, bool second) override;
  void recover() override { runner_.synchronize(); }
  double host_us(std::size_t i) const override;
  /// What the batches of variant i cost so far (sample() and rounds(), probes and warm-ups included).
  TimingSpent spent(std::size_t i) const;

 protected:
  /// Variant i's call, made on first use and kept (its batch size too).
  virtual Timed& timed(std::size_t i) = 0;

 private:
  Runner& runner_;
  std::uint64_t bytes_;
  std::map<std::size_t, std::vector<double>> host_;
  std::map<std::size_t, TimingSpent> spent_;
};

}  // namespace amax::tune
