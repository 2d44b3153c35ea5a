#include "amax/compile_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace amax::tune {

void run_compile_pool(std::size_t count, unsigned jobs, const std::function<void(std::size_t)>& build,
                      std::chrono::milliseconds tick_every, const std::function<void(std::size_t)>& tick) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::size_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < std::min<std::size_t>(jobs, count); ++t)
    pool.emplace_back([&] {
      for (std::size_t i; !failed && (i = next++) < count;) {
        try {
          build(i);
        } catch (...) {
          const std::lock_guard lock(error_mutex);
          if (!first_error) first_error = std::current_exception();
          failed = true;
        }
        ++done;
      }
    });
  // The workers finish (or stop after a failure) while this thread reports; then it joins them.
  while (!failed && done < count) {
    tick(done.load());
    std::this_thread::sleep_for(tick_every);
  }
  for (auto& th : pool) th.join();
  if (first_error) std::rethrow_exception(first_error);
  tick(count);
}

CompileProgress::CompileProgress(std::size_t total, bool terminal, std::function<void(const std::string&)> print,
                                 std::chrono::milliseconds line_every)
    : total_(total),
      terminal_(terminal),
      print_(std::move(print)),
      line_every_(line_every),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void CompileProgress::update(std::size_t done, std::chrono::steady_clock::time_point now) {
  if (done >= total_) return;  // the caller's summary line reports the end
  if (terminal_) {
    print_(fmt::format("\rcompiling kernels: {}/{}", done, total_));
  } else if (now - last_ >= line_every_) {
    last_ = now;
    print_(fmt::format("compiling kernels: {}/{}, {:.1f} s\n", done, total_,
                       std::chrono::duration<double>(now - start_).count()));
  }
}

}  // namespace amax::tune
