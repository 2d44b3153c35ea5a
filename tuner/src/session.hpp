#pragma once
// The tune session (private to tuner/src): one run of run_tuning(), written once over the kernel
// family (tune_family.hpp: TuneFamily<F>). tuner.cpp has the run and its planning (device and
// database checks, the work of each family to tune); tune_session.cpp the compile pool, the
// verification passes, the search per work item and the recording.
#include "amax/tuner.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <future>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "amax/code_object.hpp"
#include "amax/dispatch.hpp"
#include "amax/log.hpp"
#include "amax/reference.hpp"
#include "amax/render.hpp"
#include "amax/trust.hpp"
#include "tune_family.hpp"

namespace amax::tune::detail {

/// One family's part of a run: its provenance (the run's with the family's template hash), the
/// work items left to tune, the kernels they need and what became of each (by kernel name).
template <class F>
struct FamilyRun {
  using Family = F;
  db::Provenance current;
  std::vector<typename TuneFamily<F>::Work> work;
  std::vector<KernelBuild<F>> builds;
  std::map<std::string, Built> built;
  /// The full verification pass's failures per dtype (label -> reason), once it ran.
  std::map<DType, std::map<std::string, std::string>> small;
  /// Per work item (index into `work`): its variants with both verification passes done, where
  /// they ran beside the compile pool (verify_ahead); tune_one takes it from here.
  std::vector<std::optional<typename TuneFamily<F>::Result>> verified;
};

// Orchestration of a run: device and database checks, the work of each family, the compile pool,
// then per work item the verification passes (verify.hpp), the search (search.hpp) over samples
// the runner takes (runner.hpp), and the recording (record.hpp).
class Session {
 public:
  Session(const TuneOptions& o, TuneReport& report) : o_(o), report_(report) {}

  void run();

 private:
  // Read-only checks of the database: nothing is created, moved or written (an existing file is
  // read as immutable where it has no -wal/-shm beside it, so that none appear). A damaged file
  // is refused unless --rebuild (then open_db moves it aside), as are a newer schema and, unless
  // db_in_memory, a file or directory this process cannot write.
  void check_db();

  // Opens the database for the run (after check_db and the device checks): creates or migrates
  // it, or moves a damaged one aside (--rebuild); with db_in_memory an in-memory copy.
  void open_db();

  // Which work items of family F to measure, and which are already done (resumed).
  template <class F>
  void plan();

  // Compiles (or reads from the disk cache) every kernel the families' work needs in one pool (the
  // longer multi-tensor compiles first), reporting progress on stderr, then loads them on this
  // thread.
  void build_kernels();

  // One step of verification beside the compile pool, for family F (its builds are pool jobs
  // first.. of `done`): where every kernel of one of its dtypes is compiled, loads them, then runs
  // that dtype's full pass or else the pass of its next work item not yet verified (that one needs
  // the input region: only once the fill is done). Returns whether it did a step.
  template <class F>
  bool verify_ahead(std::size_t first, const std::vector<std::atomic<bool>>& done, Verifier& verifier);

  // Tunes, records and reports every work item of family F in turn, within the time budget.
  template <class F>
  void tune_all(Clock::time_point t0);

  // The largest input of family F's work items, bytes (0 without work).
  template <class F>
  std::uint64_t max_input_bytes();

  // One work item: its variants, both verification passes (`small`: the full pass's failures for
  // its dtype), screening, finalists, the final pass, the winner confirmed, and the streaming read
  // of its bytes as the ceiling. Expected failures are recorded in the variants, never thrown.
  template <class F>
  typename TuneFamily<F>::Result tune_one(std::size_t i, Lane& lane, Verifier& verifier);

  // Work item w's variants with what their builds, the full pass (`small`) and the pass at its own
  // size or shape (on `inputs`) found: the variants tune_one times are those still ok.
  template <class F>
  typename TuneFamily<F>::Result verified(const typename TuneFamily<F>::Work& w, Verifier& verifier,
                                          InputRegion& inputs, const std::map<std::string, std::string>& small);

  template <class F>
  FamilyRun<F>& family() {
    return std::get<FamilyRun<F>>(runs_);
  }
  TuneContext context() { return {*backend_, *kernels_, arch_, o_}; }

  void progress(const std::string& line) const {
    if (o_.progress) std::fprintf(stderr, "%s\n", line.c_str());
  }

  const TuneOptions& o_;
  TuneReport& report_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<const JitCompiler> compiler_;
  std::unique_ptr<KernelCache> kernels_;
  ReferenceKernels reference_;
  ArchInfo arch_;
  std::optional<db::TuningDb> db_;
  bool rebuild_ = false;  // check_db found the file damaged and --rebuild was given
  std::tuple<FamilyRun<SingleFamily>, FamilyRun<MultiFamily>> runs_;
  // The run's input region, filled on a thread of its own while the kernels compile (fill_), taken
  // by the first family's tune_all.
  std::future<std::unique_ptr<InputRegion>> fill_;
  std::unique_ptr<InputRegion> inputs_;
};

}  // namespace amax::tune::detail
