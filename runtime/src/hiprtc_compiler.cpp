// hipRTC: HIP C++ -> AMD code object (ELF) for a target ID such as gfx90a or
// gfx942:sramecc+:xnack-. Resource usage is read from the code object by the tuner's
// code-object reader (LLVM), which stays out of this runtime library.
#include <hip/hip_version.h>
#include <hip/hiprtc.h>

#include <chrono>
#include <string>

#include "amax/compiler.hpp"
#include "compilers.hpp"

namespace amax::detail {
namespace {

void check(hiprtcResult r, const char* call) {
  if (r != HIPRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + hiprtcGetErrorString(r) + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
}

class HiprtcCompiler final : public JitCompiler {
 public:
  HiprtcCompiler()
      : version_("hiprtc " + std::to_string(HIP_VERSION_MAJOR) + "." +
                 std::to_string(HIP_VERSION_MINOR) + "." + std::to_string(HIP_VERSION_PATCH)) {}
  Vendor vendor() const noexcept override { return Vendor::amd; }
  const std::string& version() const noexcept override { return version_; }

  CompiledProgram compile(std::string_view source, std::string_view program_name,
                          const ArchInfo& arch) const override {
    if (arch.vendor != Vendor::amd)
      throw std::invalid_argument("hipRTC cannot compile for " + arch.name);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string src(source), name(program_name);
    hiprtcProgram prog = nullptr;
    check(hiprtcCreateProgram(&prog, src.c_str(), name.c_str(), 0, nullptr, nullptr),
          "hiprtcCreateProgram");
    struct Guard {
      hiprtcProgram* p;
      ~Guard() { hiprtcDestroyProgram(p); }
    } guard{&prog};
    // The full target ID (with its features) selects the code object's target; -O3, no
    // fast math, denormals kept (hipRTC's defaults do not flush).
    const std::string arch_opt = "--offload-arch=" + arch.name;
    const char* opts[] = {arch_opt.c_str(), "-O3", "-std=c++17"};
    const hiprtcResult r = hiprtcCompileProgram(prog, 3, opts);
    std::size_t log_size = 0;
    check(hiprtcGetProgramLogSize(prog, &log_size), "hiprtcGetProgramLogSize");
    std::string log(log_size, '\0');
    if (log_size > 1) check(hiprtcGetProgramLog(prog, log.data()), "hiprtcGetProgramLog");
    while (!log.empty() && log.back() == '\0') log.pop_back();
    if (r != HIPRTC_SUCCESS)
      throw CompileError("hipRTC failed to compile " + name + " for " + arch.name + ": " +
                             hiprtcGetErrorString(r) + "\n" + log,
                         log);
    CompiledProgram out;
    std::size_t size = 0;
    check(hiprtcGetCodeSize(prog, &size), "hiprtcGetCodeSize");
    out.binary.resize(size);
    check(hiprtcGetCode(prog, out.binary.data()), "hiprtcGetCode");
    out.log = std::move(log);
    out.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

 private:
  std::string version_;
};

}  // namespace

std::unique_ptr<JitCompiler> make_hiprtc_compiler() { return std::make_unique<HiprtcCompiler>(); }

}  // namespace amax::detail
