#include "amax/tune_times.hpp"

#include <fmt/format.h>

namespace amax::tune {

namespace {

nlohmann::json spent_json(const TimingSpent& s) {
  return {{"batches", s.batches},   {"calls", s.calls},          {"gpu_s", s.gpu_s},
          {"enqueue_s", s.enqueue_s}, {"timing_wall_s", s.wall_s}, {"gate_timeouts", s.gate_timeouts}};
}

double phases_s(const FamilyTimes& f) {
  double s = 0;
  for (const PhaseTime& p : f.phases) s += p.wall_s;
  return s;
}

TimingSpent timed(const FamilyTimes& f) {
  TimingSpent s;
  for (const PhaseTime& p : f.phases) s += p.timed;
  return s;
}

nlohmann::json family_json(const FamilyTimes& f) {
  nlohmann::json phases = nlohmann::json::object();
  for (std::size_t i = 0; i < kPhaseNames.size(); ++i) {
    nlohmann::json p = spent_json(f.phases[i].timed);
    p["wall_s"] = f.phases[i].wall_s;
    phases[std::string(kPhaseNames[i])] = std::move(p);
  }
  return {{"items", f.items}, {"wall_s", f.wall_s}, {"other_s", f.wall_s - phases_s(f)}, {"phases", std::move(phases)}};
}

std::string family_text(const char* name, const FamilyTimes& f) {
  std::string s = fmt::format(" + {} {:.1f} ({}:", name, f.wall_s, f.items);
  for (std::size_t i = 0; i < kPhaseNames.size(); ++i)
    s += fmt::format(" {} {:.1f},", kPhaseNames[i], f.phases[i].wall_s);
  const TimingSpent t = timed(f);
  return s + fmt::format(" other {:.1f}; batches {:.1f} s, GPU {:.1f} s, enqueue {:.1f} s)", f.wall_s - phases_s(f),
                         t.wall_s, t.gpu_s, t.enqueue_s);
}

}  // namespace

nlohmann::json to_json(const TuneTimes& t, double wall_s, double compile_s) {
  nlohmann::json kinds = nlohmann::json::object();
  for (const auto& [name, k] : t.kinds) {
    nlohmann::json e = spent_json(k.timed);
    e["variants"] = k.variants;
    kinds[name] = std::move(e);
  }
  return {{"wall_s", wall_s},
          {"startup_s", t.startup_s},
          {"device_s", t.device_s},
          {"compile_s", compile_s},
          {"load_s", t.load_s},
          {"fill_s", t.fill_s},
          {"verify_beside_s", t.verify_beside_s},
          {"verified_beside", t.verified_beside},
          {"keys", family_json(t.keys)},
          {"groups", family_json(t.groups)},
          {"other_s", wall_s - t.startup_s - compile_s - t.keys.wall_s - t.groups.wall_s},
          {"kinds", std::move(kinds)}};
}

std::string summary_line(const TuneTimes& t, double wall_s, double compile_s) {
  std::string s = fmt::format("time: {:.1f} s = startup {:.1f} (device {:.1f}) + compile {:.1f} (load {:.1f}, fill {:.1f} "
                              "beside it",
                              wall_s, t.startup_s, t.device_s, compile_s, t.load_s, t.fill_s);
  if (t.verified_beside) s += fmt::format(", verify {:.1f} of {} work items beside it", t.verify_beside_s, t.verified_beside);
  s += ")";
  if (t.keys.items) s += family_text("keys", t.keys);
  if (t.groups.items) s += family_text("groups", t.groups);
  s += fmt::format(" + other {:.1f}", wall_s - t.startup_s - compile_s - t.keys.wall_s - t.groups.wall_s);
  if (!t.kinds.empty()) {
    s += "; by kind (batches s/GPU s):";
    for (const auto& [name, k] : t.kinds) s += fmt::format(" {} {:.1f}/{:.1f},", name, k.timed.wall_s, k.timed.gpu_s);
    s.pop_back();
  }
  return s;
}

}  // namespace amax::tune
