#include "amax/arch.hpp"

#include <cctype>
#include <stdexcept>

namespace amax {

std::string_view to_string(Vendor v) noexcept { return v == Vendor::nvidia ? "nvidia" : "amd"; }

namespace {
bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}
bool all_alnum(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  return true;
}
}  // namespace

ArchInfo ArchInfo::parse(std::string_view arch) {
  const auto bad = [&](std::string_view why) {
    return std::invalid_argument("invalid arch '" + std::string(arch) + "': " + std::string(why) +
                                 " (expected sm_XY such as sm_90, or an AMD target ID such as "
                                 "gfx90a or gfx942:sramecc+:xnack-)");
  };
  if (arch.starts_with("sm_")) {
    std::string_view cc = arch.substr(3);
    // sm_90a / sm_100a: architecture-specific feature sets are accepted as NVRTC spells them.
    if (!cc.empty() && (cc.back() == 'a' || cc.back() == 'f')) cc.remove_suffix(1);
    if (!all_digits(cc) || cc.size() < 2) throw bad("compute capability must be digits");
    return ArchInfo{Vendor::nvidia, std::string(arch), std::string(arch), 32, 1024};
  }
  if (arch.starts_with("gfx")) {
    const std::size_t colon = arch.find(':');
    const std::string_view proc = arch.substr(0, colon);
    if (!all_alnum(proc.substr(3))) throw bad("processor must be gfx followed by letters/digits");
    if (colon != std::string_view::npos) {
      std::string_view feats = arch.substr(colon + 1);
      while (!feats.empty()) {
        const std::size_t next = feats.find(':');
        const std::string_view f = feats.substr(0, next);
        if (f.size() < 2 || (f.back() != '+' && f.back() != '-'))
          throw bad("target feature '" + std::string(f) + "' must end in + or -");
        feats = next == std::string_view::npos ? std::string_view{} : feats.substr(next + 1);
      }
    }
    // gfx9xx is GCN/CDNA (wave64); gfx10xx and later are RDNA (wave32 by default).
    const bool rdna = proc.size() >= 5 && proc[3] != '9' && proc[3] != '8' && proc[3] != '7' &&
                      proc[3] != '6';
    return ArchInfo{Vendor::amd, std::string(arch), std::string(proc), rdna ? 32 : 64, 1024};
  }
  throw bad("unknown vendor prefix");
}

namespace {
// Sources:
//  CDNA3: AMD Instinct MI300 CDNA3 ISA reference guide (2024), sections 1.2 and 3.6: 4 SIMDs per
//          CU, 512 VGPRs per lane unified with the AGPRs, allocated in granules of 8, 8 waves per
//          SIMD, 64 KiB LDS per CU; AMD CDNA3 white paper: 256 MB AMD Infinity Cache (MALL) on
//          MI300X/MI325X, 4 MB L2 per XCD.
//  CDNA4: AMD CDNA4 white paper (2025): 160 KB LDS per CU, 256 MB Infinity Cache on MI350X/MI355X;
//          register file and wave slots as CDNA3 (LLVM AMDGPUUsage, gfx950).
//  CDNA2: AMD CDNA2 ISA reference guide (2022) and white paper: 512 unified VGPRs per lane, 8 waves
//          per SIMD, 64 KiB LDS; 8 MB L2 per GCD, no Infinity Cache (the L2 is the last level).
//  LLVM's AMDGPUUsage ("Processors", "Memory Model") agrees on the register file and wave slots.
constexpr AmdArchFacts kAmdFacts[] = {
    {"gfx90a", 8ull << 20, "8 MiB L2 per GCD (no Infinity Cache)", 4, 512, 8, true, 8, 64u << 10, "AMD CDNA2 ISA guide and white paper (MI200)"},
    {"gfx940", 256ull << 20, "256 MiB Infinity Cache (MALL)", 4, 512, 8, true, 8, 64u << 10, "AMD CDNA3 ISA guide 1.2, 3.6; CDNA3 white paper (MI300X)"},
    {"gfx941", 256ull << 20, "256 MiB Infinity Cache (MALL)", 4, 512, 8, true, 8, 64u << 10, "AMD CDNA3 ISA guide 1.2, 3.6; CDNA3 white paper (MI300X)"},
    {"gfx942", 256ull << 20, "256 MiB Infinity Cache (MALL)", 4, 512, 8, true, 8, 64u << 10, "AMD CDNA3 ISA guide 1.2, 3.6; CDNA3 white paper (MI300X)"},
    {"gfx950", 256ull << 20, "256 MiB Infinity Cache (MALL)", 4, 512, 8, true, 8, 160u << 10, "AMD CDNA4 white paper (MI355X); LLVM AMDGPUUsage gfx950"},
};
}  // namespace

const AmdArchFacts* amd_arch_facts(std::string_view processor) noexcept {
  for (const auto& f : kAmdFacts)
    if (f.processor == processor) return &f;
  return nullptr;
}

}  // namespace amax
