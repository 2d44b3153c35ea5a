#pragma once
// Opening a vendor library at run time (dlopen), for the JIT compilers that the runtime library
// does not link: the first candidate that loads and exports a required symbol wins.
#include <initializer_list>
#include <string>

namespace amax::detail {

/// A library opened with dlopen (never closed: its functions are used until the process ends).
struct DynamicLibrary {
  void* handle = nullptr;  ///< nullptr when none of the candidates could be used
  std::string name;        ///< the candidate that was opened
  std::string error;       ///< when handle is nullptr: every candidate tried and why it failed
};

/// Opens the first of `candidates` (dlopen names or paths) that loads and exports
/// `required_symbol`. When the environment variable `override_env` is set and not empty, its value
/// is the only candidate. `what` names the library in the error ("NVRTC"), which lists each
/// candidate with dlerror()'s message. Thread-safe (dlopen is); never throws beyond bad_alloc.
DynamicLibrary open_first(const char* what, const char* override_env, std::initializer_list<const char*> candidates,
                          const char* required_symbol);

/// The symbol `name` of `lib`, or nullptr.
void* symbol(const DynamicLibrary& lib, const char* name) noexcept;

}  // namespace amax::detail
