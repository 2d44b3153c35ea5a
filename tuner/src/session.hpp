#pragma once
// The tune session (private to tuner/src): one run of run_tuning(). tuner.cpp has the run and its
// planning (device and database checks, the keys and groups to tune); tune_session.cpp the compile
// pool, the verification passes, the search per key and group, and the recording.
#include "amax/tuner.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "amax/code_object.hpp"
#include "amax/compile_pool.hpp"
#include "amax/device_buffer.hpp"
#include "amax/dispatch.hpp"
#include "amax/log.hpp"
#include "amax/record.hpp"
#include "amax/reference.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/render.hpp"
#include "amax/runner_source.hpp"
#include "amax/trust.hpp"
#include "amax/verify.hpp"

namespace amax::tune::detail {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline std::string fmt_duration(double s) {
  const int t = static_cast<int>(std::lround(s));
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

struct Built {
  std::optional<KernelBinary> binary;
  BuildOutcome outcome;  // compiled (then loaded), or why not
  ResourceUsage usage;
};

// Orchestration of a run: device and database checks, the keys to tune, the compile pool, then
// per key the verification passes (verify.hpp), the search (search.hpp) over samples the runner
// takes (runner.hpp), and the recording (record.hpp).
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

  // Which keys to measure, and which are already done (resumed).
  void plan_keys();

  // Which groups to measure, and which are already done (resumed).
  void plan_groups();

  // Compiles (or reads from the disk cache) every single-tensor kernel of the keys' candidates and
  // every multi-tensor kernel of the groups' candidates in one pool (the longer multi-tensor
  // compiles first), reporting progress on stderr, then loads them on this thread.
  void build_kernels();

  const LoadedKernel* kernel(const KernelConfig& c, DType d) const {
    return builds_.at(kernel_name(c, d)).ok() ? kernels_->find(c, d) : nullptr;
  }

  // The sample source of the search: variant i of the key being tuned, timed by the runner.
  class Source : public RunnerSource {
   public:
    Source(Session& s, DType d, std::uint64_t n, const std::vector<VariantResult>& vs)
        : RunnerSource(*s.runner_, n * info(d).bytes), s_(s), d_(d), n_(n), vs_(vs) {}

   private:
    Timed& timed(std::size_t i) override {
      auto it = timed_.find(i);
      if (it != timed_.end()) return it->second;
      const LoadedKernel& k = *s_.kernel(vs_[i].config, d_);
      const LaunchShape shape =
          launch_shape(vs_[i].config, n_, static_cast<std::uint32_t>(s_.backend_->device().cu_count), k.resident_per_cu);
      const LaunchBuffers buffers{s_.out_.get<float>(), s_.workspace_.get(), s_.counter_.get<std::uint32_t>()};
      return timed_[i] = variant_timed(*s_.backend_, k, shape, n_, buffers, s_.stream_);
    }
    Session& s_;
    DType d_;
    std::uint64_t n_;
    const std::vector<VariantResult>& vs_;
    std::map<std::size_t, Timed> timed_;
  };

  Stats time_ceiling(std::uint64_t n, DType d);

  std::vector<const LoadedKernel*> kernels_of(const std::vector<KernelConfig>& cs, DType d) const {
    std::vector<const LoadedKernel*> ks;
    for (const auto& c : cs) ks.push_back(kernel(c, d));
    return ks;
  }

  void tune_keys(Clock::time_point t0);

  void tune_groups(Clock::time_point t0);

  KeyResult tune_key(DType d, std::uint64_t n, Verifier& verifier, const std::map<std::string, std::string>& small);

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
  db::Provenance current_;
  db::Provenance current_multi_;  // current_ with the multi-tensor family's template hash
  std::vector<GroupSpec> group_work_;
  std::optional<GroupTuneContext> group_ctx_;
  std::map<std::string, BuildOutcome> multi_builds_;
  std::optional<db::TuningDb> db_;
  bool rebuild_ = false;  // check_db found the file damaged and --rebuild was given
  std::vector<std::pair<DType, std::uint64_t>> work_;
  std::map<DType, std::vector<KernelConfig>> cands_;
  std::map<std::string, BuildOutcome> builds_;
  std::map<std::string, ResourceUsage> usage_;
  std::unique_ptr<InputRegion> inputs_;
  std::unique_ptr<Gate> gate_;
  std::unique_ptr<Runner> runner_;
  StreamHandle stream_ = nullptr;
  DeviceBuffer out_, workspace_, counter_, sink_;  // tune_keys' outputs, workspace, stream slot, sink
};

}  // namespace amax::tune::detail
