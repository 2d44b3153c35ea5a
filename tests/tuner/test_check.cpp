// `amax-tune check`'s decisions without a GPU: which alternatives are re-measured, and the summary.
#include <gtest/gtest.h>

#include <cmath>

#include "amax/check.hpp"

using namespace amax;
using namespace amax::tune;

namespace {

db::Provenance prov(const std::string& template_hash) {
  db::Provenance p;
  p.device_name = "NVIDIA H200";
  p.arch = "sm_90";
  p.cu_count = 132;
  p.compiler = "nvrtc 13.0";
  p.template_hash = template_hash;
  p.tool_version = "0.1.0";
  return p;
}

db::TrialRow trial(const std::string& label, double us, std::int64_t tie_rank, const std::string& hash = "h1",
                   db::TrialStatus status = db::TrialStatus::ok) {
  db::TrialRow r;
  r.key = db::TuningKey{"sm_90", DType::bf16, 1024};
  r.trial.label = label;
  r.trial.status = status;
  r.trial.median_us = status == db::TrialStatus::ok ? us : 0;
  r.trial.tie_rank = tie_rank;
  r.provenance = prov(hash);
  return r;
}

}  // namespace

TEST(Check, LabelsAreTheWinnerItsTieSetByRankThenTheFastestOthers) {
  db::WinnerRow w;
  w.key = db::TuningKey{"sm_90", DType::bf16, 1024};
  w.winner = db::Winner{"one_pass.a", 3.0, 1.0};
  w.provenance = prov("h1");
  const std::vector<db::TrialRow> trials{
      trial("one_pass.a", 3.0, 0),
      trial("atomic.c", 2.95, 2),
      trial("atomic.b", 2.97, 1),
      trial("two_stage.d", 3.5, -1),
      trial("two_stage.e", 3.4, -1),
      trial("two_stage.f", 3.3, -1, "h1", db::TrialStatus::wrong_result),  // failed: never an alternative
      trial("atomic.g", 1.0, 1, "h0"),                                    // another identity: ignored
      trial("two_stage.h", 3.6, -1),
  };
  EXPECT_EQ(check_labels(w, trials, 6, 2),
            (std::vector<std::string>{"one_pass.a", "atomic.b", "atomic.c", "two_stage.e", "two_stage.d"}));
  EXPECT_EQ(check_labels(w, trials, 1, 1), (std::vector<std::string>{"one_pass.a", "atomic.b", "two_stage.e"}));
  // A database from before schema 3 (no tie ranks): the fastest others only.
  std::vector<db::TrialRow> old = trials;
  for (auto& t : old) t.trial.tie_rank = -1;
  EXPECT_EQ(check_labels(w, old, 6, 2), (std::vector<std::string>{"one_pass.a", "atomic.c", "atomic.b"}));
}

TEST(Check, SummaryIsTheGeometricMeanAndMaximumOverMeasuredKeys) {
  CheckReport r;
  auto entry = [](DType d, std::uint64_t n, double regret, bool holds, std::string skipped = {}) {
    CheckEntry e;
    e.dtype = d;
    e.n = n;
    e.regret = regret;
    e.holds = holds;
    e.skipped = std::move(skipped);
    return e;
  };
  r.entries = {entry(DType::bf16, 1024, 1.0, true), entry(DType::fp32, 4096, 1.21, false),
               entry(DType::fp16, 8, 0, false, "tuned on 'NVIDIA H100' (sm_90, 132 CUs), this device is ..."),
               entry(DType::bf16, 2048, 0, false)};  // the winner could not be timed: no regret
  summarize(r);
  EXPECT_EQ(r.measured, 3);
  EXPECT_EQ(r.held, 1);
  EXPECT_EQ(r.skipped, 1);
  EXPECT_NEAR(r.geomean_regret, std::sqrt(1.21), 1e-12);  // over the two keys with a regret
  EXPECT_DOUBLE_EQ(r.max_regret, 1.21);
  EXPECT_EQ(r.max_at, "fp32 n=4096");
}
