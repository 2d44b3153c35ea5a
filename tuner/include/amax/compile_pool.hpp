#pragma once
// The compile pool of the tuner and of `amax-tune bundle`: JIT compilations (and disk-cache reads)
// of many kernels on worker threads, with the calling thread free to report progress while they run.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace amax::tune {

/// What became of one kernel the tuner builds: loaded, or why not. The stage is what a trial's
/// status follows (compile_failed: the compiler refused it; load_failed: the driver refused the
/// code object, recorded as launch_failed); `error` is the reason recorded with the trial. Plain
/// value type.
struct BuildOutcome {
  enum class Stage : std::uint8_t { loaded, compile_failed, load_failed };
  Stage stage = Stage::loaded;
  std::string error;  ///< "" when loaded

  bool ok() const noexcept { return stage == Stage::loaded; }
  /// A CompileError's message, cut to its first 2000 characters.
  static BuildOutcome compile_failure(std::string what) {
    if (what.size() > 2000) what.resize(2000);
    return {Stage::compile_failed, std::move(what)};
  }
  /// A BackendError of the module load: "module load failed: " and its message.
  static BuildOutcome load_failure(const std::string& what) {
    return {Stage::load_failed, "module load failed: " + what};
  }
};

/// Calls build(i) once for every i in [0, count), on min(jobs, count) worker threads (jobs 0: the
/// hardware threads), handing out the indices in ascending order (put the longest jobs first).
/// While they run, the calling thread calls tick(done) about every `tick_every` with the number of
/// calls finished so far, and once more with count when all have finished (also when count is 0).
/// Returns when every call has returned. If a call throws, the workers start no further calls, and
/// the first exception is rethrown here once all have stopped (the last tick is then not made).
/// `build` must be safe to call concurrently for distinct indices; `tick` runs on the calling
/// thread only.
void run_compile_pool(std::size_t count, unsigned jobs, const std::function<void(std::size_t index)>& build,
                      std::chrono::milliseconds tick_every, const std::function<void(std::size_t done)>& tick);

/// How a compile pool's progress reaches a person: on a terminal, one line rewritten in place
/// ("\rcompiling kernels: 120/342"), at most every 100 ms; elsewhere (a log file, a pipe, CI) a
/// full line "compiling kernels: 120/342, 4.0 s" every `line_every` (2 s by default, so that a
/// reader never waits 5 s for a sign of life, also while one long compile holds the count). Neither
/// prints the final count: the caller's summary line follows. Not thread-safe: the pool's tick
/// callback.
class CompileProgress {
 public:
  /// `print` receives each text to write: terminal updates start with '\r' and end without a
  /// newline; the other lines end with '\n'.
  CompileProgress(std::size_t total, bool terminal, std::function<void(const std::string&)> print,
                  std::chrono::milliseconds line_every = std::chrono::seconds(2));
  /// Reports `done` of the total finished at `now` (the steady clock when omitted).
  void update(std::size_t done, std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

 private:
  std::size_t total_;
  bool terminal_;
  std::function<void(const std::string&)> print_;
  std::chrono::milliseconds line_every_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace amax::tune
