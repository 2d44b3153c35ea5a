#include "dynlib.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace amax::detail {

DynamicLibrary open_first(const char* what, const char* override_env, std::initializer_list<const char*> candidates,
                          const char* required_symbol) {
  std::vector<std::string> names;
  const char* forced = override_env ? std::getenv(override_env) : nullptr;
  if (forced && *forced)
    names.emplace_back(forced);
  else
    names.assign(candidates.begin(), candidates.end());
  DynamicLibrary out;
  std::string tried;
  for (const auto& n : names) {
    dlerror();
    void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why;
    if (!h) {
      const char* e = dlerror();
      why = e ? e : "dlopen failed";
    } else if (!dlsym(h, required_symbol)) {
      why = std::string("it does not export ") + required_symbol;
      dlclose(h);
      h = nullptr;
    }
    if (h) {
      out.handle = h;
      out.name = n;
      return out;
    }
    tried += (tried.empty() ? "" : "; ") + n + ": " + why;
  }
  out.error = std::string(what) + " could not be loaded (tried " + tried + ")" +
              (forced && *forced ? std::string(" [") + override_env + " is set]"
                                 : std::string("; set ") + override_env + " to the library's path");
  return out;
}

void* symbol(const DynamicLibrary& lib, const char* name) noexcept {
  return lib.handle ? dlsym(lib.handle, name) : nullptr;
}

}  // namespace amax::detail
