// NVRTC: CUDA C++ -> CUBIN for sm_XY, with ptxas' resource report parsed from the log.
#include <nvrtc.h>

#include <chrono>
#include <string>

#include "amax/compiler.hpp"
#include "compilers.hpp"

namespace amax::detail {
namespace {

void check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + nvrtcGetErrorString(r) + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
}

class NvrtcCompiler final : public JitCompiler {
 public:
  NvrtcCompiler() {
    int major = 0, minor = 0;
    check(nvrtcVersion(&major, &minor), "nvrtcVersion");
    version_ = "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
  }
  Vendor vendor() const noexcept override { return Vendor::nvidia; }
  const std::string& version() const noexcept override { return version_; }

  CompiledProgram compile(std::string_view source, std::string_view program_name,
                          const ArchInfo& arch) const override {
    if (arch.vendor != Vendor::nvidia)
      throw std::invalid_argument("NVRTC cannot compile for " + arch.name);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string src(source), name(program_name);
    nvrtcProgram prog = nullptr;
    check(nvrtcCreateProgram(&prog, src.c_str(), name.c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
    struct Guard {
      nvrtcProgram* p;
      ~Guard() { nvrtcDestroyProgram(p); }
    } guard{&prog};
    // sm_XY (not compute_XY) makes NVRTC emit a CUBIN for exactly this GPU; no --use_fast_math,
    // and --ftz=false keeps denormals (it is the default; stated for the reader).
    const std::string arch_opt = "--gpu-architecture=" + arch.name;
    const char* opts[] = {arch_opt.c_str(), "--std=c++17", "--ftz=false", "--ptxas-options=-v"};
    const nvrtcResult r = nvrtcCompileProgram(prog, 4, opts);
    std::size_t log_size = 0;
    check(nvrtcGetProgramLogSize(prog, &log_size), "nvrtcGetProgramLogSize");
    std::string log(log_size, '\0');
    if (log_size > 1) check(nvrtcGetProgramLog(prog, log.data()), "nvrtcGetProgramLog");
    while (!log.empty() && log.back() == '\0') log.pop_back();
    if (r != NVRTC_SUCCESS)
      throw CompileError("NVRTC failed to compile " + name + " for " + arch.name + ": " +
                             nvrtcGetErrorString(r) + "\n" + log,
                         log);
    CompiledProgram out;
    std::size_t size = 0;
    check(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    out.binary.resize(size);
    check(nvrtcGetCUBIN(prog, out.binary.data()), "nvrtcGetCUBIN");
    out.usage = parse_ptxas_report(log);
    out.log = std::move(log);
    out.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

 private:
  std::string version_;
};

}  // namespace

std::unique_ptr<JitCompiler> make_nvrtc_compiler() { return std::make_unique<NvrtcCompiler>(); }

}  // namespace amax::detail
