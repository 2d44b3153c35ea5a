#include "amax/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace amax {
spdlog::logger& log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("amax-tune")) return existing;
    try {
      return spdlog::stderr_color_mt("amax-tune");
    } catch (const spdlog::spdlog_ex&) {  // registered by another thread meanwhile
      return spdlog::get("amax-tune");
    }
  }();
  return *logger;
}
}  // namespace amax
