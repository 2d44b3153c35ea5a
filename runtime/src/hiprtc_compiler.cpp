// hipRTC: HIP C++ -> AMD code object (ELF) for a target ID such as gfx90a or
// gfx942:sramecc+:xnack-. Resource usage is read from the code object by the tuner's
// code-object reader (LLVM), which stays out of this runtime library.
// hipRTC is opened with dlopen the first time the compiler is used, not linked: ROCm 6 ships it
// as libhiprtc.so.6; ROCm 5 has the hiprtc functions inside libamdhip64.so.5. The first candidate
// that exports hiprtcCreateProgram is used; AMAX_TUNE_HIPRTC_LIBRARY, when set, is the only one
// tried. Without it, a compile fails with CompileError naming what is missing.
#include <dlfcn.h>
#include <hip/hiprtc.h>

#include <chrono>
#include <string>

#include "amax/compiler.hpp"
#include "compilers.hpp"
#include "dynlib.hpp"

namespace amax::detail {
namespace {

#define AMAX_HIPRTC_FUNCTIONS(X)                                                                   \
  X(hiprtcVersion) X(hiprtcGetErrorString) X(hiprtcCreateProgram) X(hiprtcDestroyProgram)         \
  X(hiprtcCompileProgram) X(hiprtcGetProgramLogSize) X(hiprtcGetProgramLog) X(hiprtcGetCodeSize)  \
  X(hiprtcGetCode)

struct Hiprtc {
#define AMAX_DECLARE(fn) decltype(&::fn) fn = nullptr;
  AMAX_HIPRTC_FUNCTIONS(AMAX_DECLARE)
#undef AMAX_DECLARE
  std::string error;    // why hipRTC is unusable; empty when usable
  std::string version;  // "hiprtc 5.2.21153" (HIP runtime version) or "hiprtc 6.4"; empty when unusable
};

const Hiprtc& hiprtc() {
  static const Hiprtc h = [] {
    Hiprtc h;
    const DynamicLibrary lib =
        open_first("hipRTC", "AMAX_TUNE_HIPRTC_LIBRARY",
                   {"libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so"},
                   "hiprtcCreateProgram");
    if (!lib.handle) {
      h.error = lib.error;
      return h;
    }
#define AMAX_LOAD(fn)                                                              \
  h.fn = reinterpret_cast<decltype(&::fn)>(symbol(lib, #fn));                       \
  if (!h.fn) {                                                                     \
    h.error = "hipRTC library " + lib.name + " lacks " #fn " (too old)";           \
    return h;                                                                      \
  }
    AMAX_HIPRTC_FUNCTIONS(AMAX_LOAD)
#undef AMAX_LOAD
    // The version with its patch level (as the HIP headers' HIP_VERSION_* spell it) where the HIP
    // runtime is reachable, else hiprtcVersion's major.minor.
    using RuntimeVersion = int (*)(int*);
    auto rv = reinterpret_cast<RuntimeVersion>(symbol(lib, "hipRuntimeGetVersion"));
    if (!rv) rv = reinterpret_cast<RuntimeVersion>(dlsym(RTLD_DEFAULT, "hipRuntimeGetVersion"));
    if (int v = 0; rv && rv(&v) == 0 && v > 0) {
      h.version = "hiprtc " + std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100) + "." +
                  std::to_string(v % 100000);
      return h;
    }
    int major = 0, minor = 0;
    if (const hiprtcResult r = h.hiprtcVersion(&major, &minor); r != HIPRTC_SUCCESS) {
      h.error = "hiprtcVersion failed in " + lib.name + " (" + std::to_string(static_cast<int>(r)) + ")";
      return h;
    }
    h.version = "hiprtc " + std::to_string(major) + "." + std::to_string(minor);
    return h;
  }();
  return h;
}

void check(hiprtcResult r, const char* call) {
  if (r != HIPRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + hiprtc().hiprtcGetErrorString(r) + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
}

class HiprtcCompiler final : public JitCompiler {
 public:
  Vendor vendor() const noexcept override { return Vendor::amd; }
  const std::string& version() const noexcept override { return hiprtc().version; }
  const std::string& unavailable_reason() const noexcept override { return hiprtc().error; }

  CompiledProgram compile(std::string_view source, std::string_view program_name,
                          const ArchInfo& arch) const override {
    if (arch.vendor != Vendor::amd)
      throw std::invalid_argument("hipRTC cannot compile for " + arch.name);
    const Hiprtc& hr = hiprtc();
    const std::string src(source), name(program_name);
    if (!hr.error.empty())
      throw CompileError("cannot compile " + name + " for " + arch.name + ": " + hr.error, "");
    count_compile();
    const auto t0 = std::chrono::steady_clock::now();
    hiprtcProgram prog = nullptr;
    check(hr.hiprtcCreateProgram(&prog, src.c_str(), name.c_str(), 0, nullptr, nullptr), "hiprtcCreateProgram");
    struct Guard {
      hiprtcProgram* p;
      ~Guard() { hiprtc().hiprtcDestroyProgram(p); }
    } guard{&prog};
    // The full target ID (with its features) selects the code object's target; -O3, no
    // fast math, denormals kept (hipRTC's defaults do not flush).
    const std::string arch_opt = "--offload-arch=" + arch.name;
    const char* opts[] = {arch_opt.c_str(), "-O3", "-std=c++17"};
    const hiprtcResult r = hr.hiprtcCompileProgram(prog, 3, opts);
    std::size_t log_size = 0;
    check(hr.hiprtcGetProgramLogSize(prog, &log_size), "hiprtcGetProgramLogSize");
    std::string log(log_size, '\0');
    if (log_size > 1) check(hr.hiprtcGetProgramLog(prog, log.data()), "hiprtcGetProgramLog");
    while (!log.empty() && log.back() == '\0') log.pop_back();
    if (r != HIPRTC_SUCCESS)
      throw CompileError("hipRTC failed to compile " + name + " for " + arch.name + ": " +
                             hr.hiprtcGetErrorString(r) + "\n" + log,
                         log);
    CompiledProgram out;
    std::size_t size = 0;
    check(hr.hiprtcGetCodeSize(prog, &size), "hiprtcGetCodeSize");
    out.binary.resize(size);
    check(hr.hiprtcGetCode(prog, out.binary.data()), "hiprtcGetCode");
    out.log = std::move(log);
    out.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }
};

}  // namespace

std::unique_ptr<JitCompiler> make_hiprtc_compiler() { return std::make_unique<HiprtcCompiler>(); }

}  // namespace amax::detail
