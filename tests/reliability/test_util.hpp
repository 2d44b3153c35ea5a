// Helpers of the reliability tests: a temporary directory per test, real child processes with a
// stdout pipe (so that the test learns what a child reported before it was killed), a seeded
// random source, spdlog capture, privilege dropping and the one-line scenario summaries that
// docs/reliability.md quotes.
#pragma once

#include "../tuning_db/test_util.hpp"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace amax::reliability::test {

// Raw file access, fork helpers and the spdlog capture are the tuning_db tests' own.
using amax::db::test::listing;
using amax::db::test::LogCapture;
using amax::db::test::read_bytes;
using amax::db::test::run_in_child;
using amax::db::test::write_bytes;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

#ifndef AMAX_RELIABILITY_WORKER
#error "AMAX_RELIABILITY_WORKER (path of amax-reliability-worker) must be defined"
#endif
inline const char* worker_exe() { return AMAX_RELIABILITY_WORKER; }

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// One summary line per scenario, on stdout and appended to $AMAX_RELIABILITY_SUMMARY if set.
inline void summary(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::printf("[reliability] %s\n", buf);
  std::fflush(stdout);
  if (const char* f = std::getenv("AMAX_RELIABILITY_SUMMARY"); f && *f) std::ofstream(f, std::ios::app) << buf << "\n";
}

/// The seed of a scenario's random choices: $AMAX_RELIABILITY_SEED if set (to replay a failure),
/// else fresh; printed in the summary.
inline std::uint64_t scenario_seed() {
  if (const char* s = std::getenv("AMAX_RELIABILITY_SEED"); s && *s) return std::stoull(s);
  return std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32);
}

/// A fresh directory under $TMPDIR (or /tmp) per test, mode 0755 (traversable by the unprivileged
/// children of the read-only tests), removed at the end after restoring write permission.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/amax_reliability_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << "mkdtemp " << tmpl;
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
  }
  void TearDown() override {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_directory(ec)) {
        ::chown(it->path().c_str(), ::geteuid(), ::getegid());
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
    }
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  [[nodiscard]] const fs::path& dir() const { return dir_; }
  [[nodiscard]] fs::path file(const std::string& name) const { return dir_ / name; }

 private:
  fs::path dir_;
};

/// A child process running an executable, its stdout on a pipe the test reads line by line and
/// its stderr in a file. Killed (SIGKILL) and reaped by the destructor if still running.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const fs::path& stderr_file) : stderr_file_(stderr_file) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      const int err = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (err >= 0) ::dup2(err, STDERR_FILENO);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (out_ >= 0) ::close(out_);
  }

  pid_t pid() const { return pid_; }
  void kill(int sig = SIGKILL) const {
    if (!reaped_) ::kill(pid_, sig);
  }
  /// Waits for the exit; returns the exit code, or 128 + signal.
  int wait() {
    if (!reaped_) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      rc_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      reaped_ = true;
    }
    return rc_;
  }
  /// Reads whatever is on the pipe now (without blocking unless @p until_eof) into lines().
  void drain(bool until_eof = false) {
    char buf[4096];
    for (;;) {
      pollfd p{out_, POLLIN, 0};
      if (!until_eof && ::poll(&p, 1, 0) <= 0) return;
      const ssize_t k = ::read(out_, buf, sizeof buf);
      if (k <= 0) return;
      partial_.append(buf, static_cast<std::size_t>(k));
      for (std::size_t nl; (nl = partial_.find('\n')) != std::string::npos;) {
        lines_.push_back(partial_.substr(0, nl));
        partial_.erase(0, nl + 1);
      }
    }
  }
  /// Waits for the exit and reads all of stdout.
  int finish() {
    drain(true);
    return wait();
  }
  const std::vector<std::string>& lines() const { return lines_; }
  std::string stderr_text() const { return read_bytes(stderr_file_); }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool reaped_ = false;
  int rc_ = -1;
  std::string partial_;
  std::vector<std::string> lines_;
  fs::path stderr_file_;
};

/// Drops to @p uid (group @p gid: real, effective and saved ids, no supplementary groups) when
/// running as root; false if that is impossible (not root). For forked children: "another user".
inline bool drop_privileges(uid_t uid = 65534, gid_t gid = 65534) {
  if (::geteuid() != 0) return false;
  return ::setgroups(0, nullptr) == 0 && ::setresgid(gid, gid, gid) == 0 && ::setresuid(uid, uid, uid) == 0 &&
         ::geteuid() == uid && ::getegid() == gid;
}


}  // namespace amax::reliability::test
