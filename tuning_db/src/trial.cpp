#include <amax/db/error.hpp>
#include <amax/db/trial.hpp>

namespace amax::db {

std::string_view to_string(TrialStatus status) noexcept {
  switch (status) {
    case TrialStatus::ok: return "ok";
    case TrialStatus::compile_failed: return "compile_failed";
    case TrialStatus::wrong_result: return "wrong_result";
    case TrialStatus::launch_failed: return "launch_failed";
  }
  return "invalid";
}

std::optional<TrialStatus> parse_trial_status(std::string_view text) noexcept {
  for (TrialStatus s : {TrialStatus::ok, TrialStatus::compile_failed, TrialStatus::wrong_result,
                        TrialStatus::launch_failed}) {
    if (text == to_string(s)) return s;
  }
  return std::nullopt;
}

TrialStatus trial_status_from_string(std::string_view text) {
  if (auto s = parse_trial_status(text)) return *s;
  throw DbError(ErrorKind::InvalidArgument,
                "unknown trial status '" + std::string(text) +
                    "' (expected ok, compile_failed, wrong_result or launch_failed)");
}

bool operator==(const Trial& a, const Trial& b) { return fields_equal(a, b, trial_fields); }

}  // namespace amax::db
