// Shared helpers of the tuning_db tests: a fresh temporary directory per test, sample rows,
// raw file access, fork helpers and a spdlog capture.
#pragma once

#include <amax/db/db.hpp>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace amax::db::test {

namespace fs = std::filesystem;

/// A fresh directory under $TMPDIR (or /tmp) per test, removed (after restoring write
/// permission) at the end.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/amax_db_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << "mkdtemp " << tmpl;
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);  // traversable by the unprivileged child of the read-only tests
  }
  void TearDown() override {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_directory(ec)) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  [[nodiscard]] const fs::path& dir() const { return dir_; }
  [[nodiscard]] fs::path file(const std::string& name) const { return dir_ / name; }

 private:
  fs::path dir_;
};

/// TempDirTest with a ReadWrite database "t.db" open in it for the test.
class OpenDbTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    db_ = std::make_unique<TuningDb>(TuningDb::open(file("t.db")));
  }
  void TearDown() override {
    db_.reset();
    TempDirTest::TearDown();
  }
  TuningDb& db() { return *db_; }

 private:
  std::unique_ptr<TuningDb> db_;
};

inline Provenance h200(std::string hash = "a1b2c3d4") {
  Provenance p;
  p.device_name = "NVIDIA H200";
  p.arch = "sm_90";
  p.cu_count = 132;
  p.driver_version = "580.65.06";
  p.compiler = "nvrtc 13.0";
  p.template_hash = std::move(hash);
  p.tool_version = "0.1.0";
  p.timing_protocol = "warmup=10 batches=25 rotate=4xL2";
  p.timestamp = "2026-11-30T02:51:00Z";
  return p;
}

inline Provenance h100() {
  Provenance p = h200();
  p.device_name = "NVIDIA H100 80GB HBM3";
  p.timestamp = "2026-11-29T10:00:00Z";
  return p;
}

inline Trial ok_trial(std::string label, double median_us, double gbps = 100.0) {
  Trial t;
  t.label = std::move(label);
  t.status = TrialStatus::ok;
  t.median_us = median_us;
  t.spread_us = median_us / 10.0;
  t.samples = 25;
  t.gbps = gbps;
  t.registers = 32;
  t.spill_bytes = 0;
  return t;
}

inline Trial failed_trial(std::string label, TrialStatus status, std::string reason) {
  Trial t;
  t.label = std::move(label);
  t.status = status;
  t.reason = std::move(reason);
  return t;
}

inline TuningKey key(std::uint64_t n, DType dtype = DType::fp32, std::string arch = "sm_90") {
  return TuningKey{std::move(arch), dtype, n};
}

inline GroupKey gkey(std::uint64_t tensors, std::uint64_t total_bytes, std::uint64_t largest_bytes,
                     DType dtype = DType::bf16, std::string arch = "sm_90") {
  return GroupKey{std::move(arch), dtype, tensors, total_bytes, largest_bytes};
}

/// Records one ok trial (label) as winner of group key @p k.
inline void record_group_simple(TuningDb& db, const GroupKey& k, const Provenance& p, const std::string& label,
                                double median_us) {
  const std::vector<Trial> trials{ok_trial(label, median_us)};
  db.record<MultiFamily>(k, p, trials, Winner{label, median_us, 100.0});
}

/// Records one ok trial (label) as winner of @p k.
inline void record_simple(TuningDb& db, const TuningKey& k, const Provenance& p, const std::string& label,
                          double median_us) {
  const std::vector<Trial> trials{ok_trial(label, median_us)};
  db.record<SingleFamily>(k, p, trials, Winner{label, median_us, 100.0});
}

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// Names in @p dir, sorted.
inline std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// Runs @p body in a forked child and returns its exit status (body's return value; 99 if it
/// threw). The child never returns into the test framework.
template <class F>
int run_in_child(F&& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 99;
    try {
      rc = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    std::fflush(stderr);
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Captures spdlog output of the default logger and of the runtime's named "amax-tune" logger
/// (runtime/src/log.cpp; created here when it does not exist yet, and the runtime then reuses it)
/// for the lifetime of the object, as "<level>: <message>" lines.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("%l: %v");
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
    named_ = spdlog::get("amax-tune");
    if (!named_) {
      try {
        named_ = spdlog::stderr_color_mt("amax-tune");
      } catch (const spdlog::spdlog_ex&) {  // registered meanwhile
        named_ = spdlog::get("amax-tune");
      }
    }
    named_sinks_ = named_->sinks();
    named_->sinks() = {sink};
  }
  ~LogCapture() {
    named_->sinks() = named_sinks_;
    spdlog::set_default_logger(previous_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  [[nodiscard]] std::string text() const { return stream_.str(); }
  [[nodiscard]] int count(const std::string& needle) const {
    const std::string s = stream_.str();
    int n = 0;
    for (auto pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_, named_;
  std::vector<spdlog::sink_ptr> named_sinks_;
};

/// Expects @p f to throw DbError of @p kind and returns its message.
template <class F>
std::string expect_db_error(ErrorKind kind, F&& f) {
  try {
    f();
  } catch (const DbError& e) {
    EXPECT_EQ(to_string(e.kind()), to_string(kind)) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected DbError(" << to_string(kind) << "), got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected DbError(" << to_string(kind) << "), nothing was thrown";
  return {};
}

}  // namespace amax::db::test
