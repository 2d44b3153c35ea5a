#pragma once
// The runtime's logger: named "amax-tune", writing to stderr, so that a framework's own default
// logger and its stdout are left alone. Thread-safe.
#include <memory>

#include <spdlog/logger.h>

namespace amax {
/// The "amax-tune" logger (created on first use; reused if the application registered one).
spdlog::logger& log();
}  // namespace amax
