#include "amax/runner_source.hpp"

namespace amax::tune {

std::vector<double> RunnerSource::sample(std::size_t i, int batches, bool prepare) {
  Timed& t = timed(i);
  const TimingSpent before = t.spent;
  if (prepare) runner_.prepare(t, bytes_);
  t.host_us.clear();
  auto us = runner_.measure(t, bytes_, batches);
  host_[i].insert(host_[i].end(), t.host_us.begin(), t.host_us.end());
  spent_[i] += t.spent.since(before);
  return us;
}

std::vector<double> RunnerSource::screen_sample(std::size_t i, int more, double stop_above) {
  Timed& t = timed(i);
  const TimingSpent before = t.spent;
  runner_.prepare(t, bytes_);
  t.host_us.clear();
  auto us = runner_.measure_unless(t, bytes_, more, stop_above);
  host_[i].insert(host_[i].end(), t.host_us.begin(), t.host_us.end());
  spent_[i] += t.spent.since(before);
  return us;
}

std::vector<std::vector<double>> RunnerSource::rounds(const std::vector<std::size_t>& which, int rounds, bool second) {
  std::vector<Timed> ts;
  for (std::size_t i : which) {
    ts.push_back({timed(i).call});
    ts.back().launches = timed(i).launches;
  }
  auto us = runner_.interleaved(ts, bytes_, rounds, second ? InterleaveOrder{1, true} : InterleaveOrder{});
  for (std::size_t j = 0; j < which.size(); ++j) {
    host_[which[j]].insert(host_[which[j]].end(), ts[j].host_us.begin(), ts[j].host_us.end());
    spent_[which[j]] += ts[j].spent;
  }
  return us;
}

TimingSpent RunnerSource::spent(std::size_t i) const {
  const auto it = spent_.find(i);
  return it == spent_.end() ? TimingSpent{} : it->second;
}

double RunnerSource::host_us(std::size_t i) const {
  const auto it = host_.find(i);
  return it == host_.end() ? 0.0 : Stats::of(it->second).median_us;
}

}  // namespace amax::tune
