// hipRTC: HIP C++ -> AMD code object (ELF) for a target ID such as gfx90a or
// gfx942:sramecc+:xnack-. Resource usage is read from the code object by the tuner's
// code-object reader (LLVM), which stays out of this runtime library.
// hipRTC is opened with dlopen the first time the compiler is used, not linked: ROCm 6 ships it
// as libhiprtc.so.6; ROCm 5 has the hiprtc functions inside libamdhip64.so.5. The candidates are
// tried in the order of the HIP runtime this process already runs (the one hip_backend.cpp links):
// with libamdhip64.so.5 loaded, libamdhip64.so.5 first (one ROCm per process); otherwise
// libhiprtc.so.6 first. The first candidate that exports hiprtcCreateProgram is used;
// AMAX_TUNE_HIPRTC_LIBRARY, when set, is the only one tried. Without one, a compile fails with
// CompileError naming what was tried.
#include <dlfcn.h>
#include <hip/hiprtc.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "amax/compiler.hpp"
#include "compilers.hpp"
#include "dynlib.hpp"

namespace amax::detail {
namespace {

#define AMAX_HIPRTC_FUNCTIONS(X)                                                                   \
  X(hiprtcVersion) X(hiprtcGetErrorString) X(hiprtcCreateProgram) X(hiprtcDestroyProgram)         \
  X(hiprtcCompileProgram) X(hiprtcGetProgramLogSize) X(hiprtcGetProgramLog) X(hiprtcGetCodeSize)  \
  X(hiprtcGetCode)

// The real path of the loaded library containing `address`, or "".
std::string library_at(const void* address) {
  Dl_info info{};
  if (!address || !dladdr(address, &info) || !info.dli_fname) return "";
  char* real = realpath(info.dli_fname, nullptr);
  std::string out = real ? real : info.dli_fname;
  std::free(real);
  return out;
}

// The real paths of the loaded libraries whose file names start with `stem`, in load order.
std::vector<std::string> loaded_libraries(const std::string& stem) {
  struct Search {
    const std::string* stem;
    std::vector<std::string> found;
  } s{&stem, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* i, std::size_t, void* p) {
        auto* s = static_cast<Search*>(p);
        const std::string name = i->dlpi_name ? i->dlpi_name : "";
        const std::size_t slash = name.rfind('/');
        if (name.compare(slash == std::string::npos ? 0 : slash + 1, s->stem->size(), *s->stem) != 0) return 0;
        char* real = realpath(name.c_str(), nullptr);
        s->found.push_back(real ? real : name);
        std::free(real);
        return 0;
      },
      &s);
  return s.found;
}

// "5.7.31921" from ".../libamdhip64.so.5.7.31921", "6.4.43484" from ".../libhiprtc.so.6.4.43484"
// (Debian's HIP reports 0 through hiprtcVersion and hipRuntimeGetVersion, so the file name is the
// reliable record of the library in use); "" when the name carries no version.
std::string so_version(const std::string& path) {
  const std::size_t at = path.rfind(".so.");
  return at == std::string::npos ? "" : path.substr(at + 4);
}

// The major version of the HIP runtime already loaded in this process (5 or 6), or 0.
int loaded_hip_runtime_major() {
  const std::string v = so_version(library_at(dlsym(RTLD_DEFAULT, "hipRuntimeGetVersion")));
  return v.empty() ? 0 : std::atoi(v.c_str());
}

struct Hiprtc {
#define AMAX_DECLARE(fn) decltype(&::fn) fn = nullptr;
  AMAX_HIPRTC_FUNCTIONS(AMAX_DECLARE)
#undef AMAX_DECLARE
  std::string error;    // why hipRTC is unusable; empty when usable
  std::string version;  // "hiprtc 5.7.31921"; empty when unusable
  std::string path;     // the real path of the library loaded
  int major = 0, minor = 0;
};

const Hiprtc& hiprtc() {
  static const Hiprtc h = [] {
    Hiprtc h;
    const DynamicLibrary lib =
        loaded_hip_runtime_major() == 5
            ? open_first("hipRTC", "AMAX_TUNE_HIPRTC_LIBRARY",
                         {"libamdhip64.so.5", "libhiprtc.so.5", "libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so"},
                         "hiprtcCreateProgram")
            : open_first("hipRTC", "AMAX_TUNE_HIPRTC_LIBRARY",
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
    h.path = library_at(reinterpret_cast<const void*>(h.hiprtcCreateProgram));
    // The version of the library loaded (not of the headers this file was compiled with: a build
    // made against ROCm 5.2 may run against 5.7's libraries): its file name where that carries
    // major.minor.patch, else hipRuntimeGetVersion, else hiprtcVersion's major.minor.
    if (const std::string v = so_version(h.path); std::count(v.begin(), v.end(), '.') >= 2) {
      h.version = "hiprtc " + v;
    } else {
      using RuntimeVersion = int (*)(int*);
      auto rv = reinterpret_cast<RuntimeVersion>(symbol(lib, "hipRuntimeGetVersion"));
      if (!rv) rv = reinterpret_cast<RuntimeVersion>(dlsym(RTLD_DEFAULT, "hipRuntimeGetVersion"));
      if (int n = 0; rv && rv(&n) == 0 && n > 0) {
        h.version = "hiprtc " + std::to_string(n / 10000000) + "." + std::to_string(n / 100000 % 100) + "." +
                    std::to_string(n % 100000);
      } else {
        int major = 0, minor = 0;
        if (const hiprtcResult r = h.hiprtcVersion(&major, &minor); r != HIPRTC_SUCCESS) {
          h.error = "hiprtcVersion failed in " + lib.name + " (" + std::to_string(static_cast<int>(r)) + ")";
          return h;
        }
        h.version = "hiprtc " + std::to_string(major) + "." + std::to_string(minor);
      }
    }
    std::sscanf(h.version.c_str(), "hiprtc %d.%d", &h.major, &h.minor);
    return h;
  }();
  return h;
}

void check(hiprtcResult r, const char* call) {
  if (r != HIPRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + hiprtc().hiprtcGetErrorString(r) + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
}

// Processors a hipRTC only compiles for from a given version on. comgr aborts the whole process
// (`munmap_chunk(): invalid pointer` in its error path) on a processor it does not know, instead
// of returning an error: seen with ROCm 5.2 for gfx940/gfx941/gfx942/gfx1100 and with 5.7 for
// gfx950 and gfx1200. The versions are the oldest verified to compile (../shared/amd/README.md).
struct FirstVersion {
  const char* processor;
  int major, minor;
};
constexpr FirstVersion kFirstVersion[] = {
    {"gfx940", 5, 7}, {"gfx941", 5, 7}, {"gfx942", 5, 7}, {"gfx1100", 5, 7}, {"gfx950", 6, 4}, {"gfx1200", 6, 4},
    {"gfx1201", 6, 4}};

class HiprtcCompiler final : public JitCompiler {
 public:
  Vendor vendor() const noexcept override { return Vendor::amd; }
  const std::string& version() const noexcept override { return hiprtc().version; }
  const std::string& unavailable_reason() const noexcept override { return hiprtc().error; }

  std::string toolchain() const override {
    const Hiprtc& hr = hiprtc();
    if (!hr.error.empty()) return hr.error;
    std::string out = "hipRTC " + hr.version.substr(7) + " (" + hr.path + ")";
    const auto comgrs = loaded_libraries("libamd_comgr.so");
    if (comgrs.empty()) return out + "; comgr not loaded yet";
    const std::string& comgr = comgrs.front();
    out += "; comgr ";
    if (void* h = dlopen(comgr.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      using GetVersion = void (*)(std::size_t*, std::size_t*);
      if (auto f = reinterpret_cast<GetVersion>(dlsym(h, "amd_comgr_get_version"))) {
        std::size_t major = 0, minor = 0;
        f(&major, &minor);
        out += "API " + std::to_string(major) + "." + std::to_string(minor) + " ";
      }
      dlclose(h);
    }
    out += "(" + comgr + ")";
    // comgr's own LLVM and any other in the process (the tuner's code-object reader links one).
    const auto llvms = loaded_libraries("libLLVM");
    for (std::size_t i = 0; i < llvms.size(); ++i)
      out += (i ? ", " : "; LLVM libraries loaded: ") + llvms[i].substr(llvms[i].rfind('/') + 1);
    return out;
  }

  std::optional<std::string> unsupported(const ArchInfo& arch) const override {
    if (arch.vendor != Vendor::amd) return "hipRTC cannot compile for " + arch.name;
    const Hiprtc& hr = hiprtc();
    if (!hr.error.empty()) return std::nullopt;  // compile() reports the missing library as a CompileError
    for (const auto& f : kFirstVersion)
      if (arch.processor == f.processor && (hr.major < f.major || (hr.major == f.major && hr.minor < f.minor)))
        return hr.version + " cannot compile for " + arch.processor + ": the oldest hipRTC verified for it is " +
               std::to_string(f.major) + "." + std::to_string(f.minor) +
               " (older comgr aborts the process on processors it does not know)";
    return std::nullopt;
  }

  CompiledProgram compile(std::string_view source, std::string_view program_name,
                          const ArchInfo& arch) const override {
    if (auto why = unsupported(arch)) throw std::invalid_argument(*why);
    const Hiprtc& hr = hiprtc();
    const std::string src(source), name(program_name);
    if (!hr.error.empty())
      throw CompileError("cannot compile " + name + " for " + arch.name + ": " + hr.error, "");
    count_compile();
    // ROCm 5's hipRTC is not safe to call from several threads at once: concurrent compiles with
    // Debian's ROCm 5.2 aborted at random ("LLVM ERROR: inconsistency in registered CommandLine
    // options", "double free or corruption", SIGSEGV: about half of the runs of the JIT test that
    // compiles the whole gfx90a space on two threads), comgr's LLVM command-line state being
    // process-global; https://github.com/ROCm/rocFFT/issues/422 shows a crash inside
    // hiprtcCreateProgram on 5.5.
    // So with hipRTC 5 a process's compiles run one at a time; with hipRTC 6 in parallel.
    static std::mutex rocm5_mutex;
    std::unique_lock<std::mutex> serial;
    if (hr.major < 6) serial = std::unique_lock<std::mutex>(rocm5_mutex);
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
