#pragma once
// The one compile-fallback rule of both kernel families (single tensors: the plans of plans.cpp;
// lists of tensors: the groups of multi_group.cpp): a chosen variant whose kernel fails to compile
// is replaced by the family's built-in default, with one warning per variant and context, and the
// context does not compile it again.
#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>

#include "amax/compiler.hpp"
#include "amax/log.hpp"

namespace amax {

/// The kernels of one context that failed to compile, by kernel name (kernel_name or
/// multi_kernel_name). Thread-safe: failed() takes no lock while nothing has failed.
class CompileFailures {
 public:
  /// Whether `kernel` failed to compile before.
  bool failed(const std::string& kernel) const {
    if (!any_.load(std::memory_order_acquire)) return false;
    std::lock_guard lock(mu_);
    return kernels_.count(kernel) != 0;
  }
  /// Records that `kernel` failed to compile; true the first time (the caller warns then).
  bool add(const std::string& kernel) {
    std::lock_guard lock(mu_);
    const bool first = kernels_.insert(kernel).second;
    any_.store(true, std::memory_order_release);
    return first;
  }

 private:
  std::atomic<bool> any_{false};
  mutable std::mutex mu_;
  std::set<std::string> kernels_;
};

/// What load_or_fall_back loaded: the kernel, and whether it is the fallback's.
template <class Kernel>
struct FallbackLoad {
  Kernel* kernel = nullptr;
  bool fell_back = false;
};

/// The rule, for a Config with label() and ==: `get(chosen)` (the kernel cache: bundle, kernel
/// cache, JIT), unless `chosen_kernel` failed before; when it throws CompileError and `fallback`
/// is another variant, `chosen_kernel` is recorded in `failures` (the first time with one warning:
/// "<chosen> failed to compile; using the built-in default <fallback>: <error>") and
/// `get(fallback)` is returned. Errors: the CompileError itself when `chosen` is the fallback (the
/// C API's AMAX_STATUS_COMPILE_FAILED with the compiler's message); whatever `get` throws else.
/// Thread-safe where `get` is.
template <class Config, class Get>
auto load_or_fall_back(CompileFailures& failures, const std::string& chosen_kernel, const Config& chosen,
                       const Config& fallback, Get&& get)
    -> FallbackLoad<std::remove_reference_t<decltype(get(chosen))>> {
  if (!failures.failed(chosen_kernel)) {
    try {
      return {&get(chosen), false};
    } catch (const CompileError& e) {
      if (chosen == fallback) throw;
      if (failures.add(chosen_kernel))
        log().warn("{} failed to compile; using the built-in default {}: {}", chosen.label(), fallback.label(),
                   e.what());
    }
  }
  return {&get(fallback), true};
}

}  // namespace amax
