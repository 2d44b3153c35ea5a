#include "amax/compiler.hpp"

#include <atomic>
#include <regex>

#include "compilers.hpp"

namespace amax {

std::map<std::string, ResourceUsage> parse_ptxas_report(const std::string& log) {
  std::map<std::string, ResourceUsage> out;
  static const std::regex props(R"(Function properties for (\w+))");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::string current;
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::size_t eol = log.find('\n', pos);
    if (eol == std::string::npos) eol = log.size();
    const std::string line = log.substr(pos, eol - pos);
    pos = eol + 1;
    std::smatch m;
    if (std::regex_search(line, m, props)) {
      current = m[1];
      out[current];
    } else if (!current.empty() && std::regex_search(line, m, frame)) {
      auto& u = out[current];
      u.stack_bytes = std::stoi(m[1]);
      u.spill_stores = std::stoi(m[2]);
      u.spill_loads = std::stoi(m[3]);
    } else if (!current.empty() && std::regex_search(line, m, used)) {
      auto& u = out[current];
      u.registers = std::stoi(m[1]);
      std::smatch sm;
      u.shared_bytes = std::regex_search(line, sm, smem) ? std::stoi(sm[1]) : 0;
    }
  }
  return out;
}

namespace {
std::atomic<std::uint64_t> g_compiles{0};
}

void detail::count_compile() noexcept { g_compiles.fetch_add(1, std::memory_order_relaxed); }
std::uint64_t jit_compile_count() noexcept { return g_compiles.load(std::memory_order_relaxed); }

bool have_compiler(Vendor vendor) noexcept {
  return vendor == Vendor::nvidia ? AMAX_HAVE_CUDA : AMAX_HAVE_HIP;
}

std::unique_ptr<JitCompiler> make_compiler(Vendor vendor) {
#if AMAX_HAVE_CUDA
  if (vendor == Vendor::nvidia) return detail::make_nvrtc_compiler();
#endif
#if AMAX_HAVE_HIP
  if (vendor == Vendor::amd) return detail::make_hiprtc_compiler();
#endif
  throw std::runtime_error("this build of amax-tune has no " + std::string(to_string(vendor)) +
                           " backend (configure with the " +
                           (vendor == Vendor::nvidia ? "CUDA toolkit" : "HIP runtime") +
                           " present)");
}

}  // namespace amax
