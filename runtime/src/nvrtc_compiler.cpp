// NVRTC: CUDA C++ -> CUBIN for sm_XY, with ptxas' resource report parsed from the log.
// libnvrtc is opened with dlopen the first time the compiler is used (a compile, or its version for
// the cache key and the database check), not linked: without it the library still loads and
// serves bundled kernels, and a compile fails with CompileError naming what is missing.
// AMAX_TUNE_NVRTC_LIBRARY, when set, is the only library tried (a path or a soname).
// libnvrtc finds its libnvrtc-builtins itself (same directory or the loader path); when that is
// missing, nvrtcCompileProgram fails and the error says so.
#include <nvrtc.h>

#include <chrono>
#include <string>

#include "amax/compiler.hpp"
#include "compilers.hpp"
#include "dynlib.hpp"

namespace amax::detail {
namespace {

#define AMAX_NVRTC_FUNCTIONS(X)                                                                  \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)           \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize)   \
  X(nvrtcGetCUBIN)

struct Nvrtc {
#define AMAX_DECLARE(fn) decltype(&::fn) fn = nullptr;
  AMAX_NVRTC_FUNCTIONS(AMAX_DECLARE)
#undef AMAX_DECLARE
  std::string error;    // why NVRTC is unusable; empty when usable
  std::string version;  // "nvrtc 13.0"; empty when unusable
};

const Nvrtc& nvrtc() {
  static const Nvrtc n = [] {
    Nvrtc n;
    const DynamicLibrary lib = open_first("NVRTC", "AMAX_TUNE_NVRTC_LIBRARY",
                                          {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, "nvrtcVersion");
    if (!lib.handle) {
      n.error = lib.error;
      return n;
    }
#define AMAX_LOAD(fn)                                                              \
  n.fn = reinterpret_cast<decltype(&::fn)>(symbol(lib, #fn));                       \
  if (!n.fn) {                                                                     \
    n.error = "NVRTC library " + lib.name + " lacks " #fn " (too old)";            \
    return n;                                                                      \
  }
    AMAX_NVRTC_FUNCTIONS(AMAX_LOAD)
#undef AMAX_LOAD
    int major = 0, minor = 0;
    if (const nvrtcResult r = n.nvrtcVersion(&major, &minor); r != NVRTC_SUCCESS) {
      n.error = "nvrtcVersion failed in " + lib.name + " (" + std::to_string(static_cast<int>(r)) + ")";
      return n;
    }
    n.version = "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
    return n;
  }();
  return n;
}

void check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + nvrtc().nvrtcGetErrorString(r) + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
}

class NvrtcCompiler final : public JitCompiler {
 public:
  Vendor vendor() const noexcept override { return Vendor::nvidia; }
  const std::string& version() const noexcept override { return nvrtc().version; }
  const std::string& unavailable_reason() const noexcept override { return nvrtc().error; }

  CompiledProgram compile(std::string_view source, std::string_view program_name,
                          const ArchInfo& arch) const override {
    if (arch.vendor != Vendor::nvidia)
      throw std::invalid_argument("NVRTC cannot compile for " + arch.name);
    const Nvrtc& nv = nvrtc();
    const std::string src(source), name(program_name);
    if (!nv.error.empty())
      throw CompileError("cannot compile " + name + " for " + arch.name + ": " + nv.error, "");
    count_compile();
    const auto t0 = std::chrono::steady_clock::now();
    nvrtcProgram prog = nullptr;
    check(nv.nvrtcCreateProgram(&prog, src.c_str(), name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
    struct Guard {
      nvrtcProgram* p;
      ~Guard() { nvrtc().nvrtcDestroyProgram(p); }
    } guard{&prog};
    // sm_XY (not compute_XY) makes NVRTC emit a CUBIN for exactly this GPU; no --use_fast_math,
    // and --ftz=false keeps denormals (it is the default; stated for the reader).
    const std::string arch_opt = "--gpu-architecture=" + arch.name;
    const char* opts[] = {arch_opt.c_str(), "--std=c++17", "--ftz=false", "--ptxas-options=-v"};
    const nvrtcResult r = nv.nvrtcCompileProgram(prog, 4, opts);
    std::size_t log_size = 0;
    check(nv.nvrtcGetProgramLogSize(prog, &log_size), "nvrtcGetProgramLogSize");
    std::string log(log_size, '\0');
    if (log_size > 1) check(nv.nvrtcGetProgramLog(prog, log.data()), "nvrtcGetProgramLog");
    while (!log.empty() && log.back() == '\0') log.pop_back();
    if (r != NVRTC_SUCCESS)
      throw CompileError("NVRTC failed to compile " + name + " for " + arch.name + ": " +
                             nv.nvrtcGetErrorString(r) + "\n" + log,
                         log);
    CompiledProgram out;
    std::size_t size = 0;
    check(nv.nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    out.binary.resize(size);
    check(nv.nvrtcGetCUBIN(prog, out.binary.data()), "nvrtcGetCUBIN");
    out.usage = parse_ptxas_report(log);
    out.log = std::move(log);
    out.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }
};

}  // namespace

std::unique_ptr<JitCompiler> make_nvrtc_compiler() { return std::make_unique<NvrtcCompiler>(); }

}  // namespace amax::detail
