#include "amax/arch.hpp"

#include <algorithm>
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
    if (!all_digits(cc)) throw bad("compute capability must be digits");
    if (cc.size() < 2) throw bad("compute capability '" + std::string(cc) + "' needs a major and a minor digit (sm_90 is 9.0)");
    return ArchInfo{Vendor::nvidia, std::string(arch), std::string(arch), 32, 1024};
  }
  if (arch.starts_with("gfx")) {
    const std::size_t colon = arch.find(':');
    const std::string_view proc = arch.substr(0, colon);
    if (!all_alnum(proc.substr(3))) throw bad("processor must be gfx followed by letters/digits");
    if (colon != std::string_view::npos) {
      // Target ID features (LLVM AMDGPUUsage, "Target ID"): sramecc and xnack, each at most once,
      // each with + or -, in that (alphabetical) order, the one spelling hipRTC and the keys use.
      std::string_view feats = arch.substr(colon + 1);
      std::string last;
      for (;;) {
        const std::size_t next = feats.find(':');
        const std::string_view f = feats.substr(0, next);
        if (f.empty()) throw bad("empty target feature");
        const std::string_view feature = f.substr(0, f.size() - 1);
        if (f.back() != '+' && f.back() != '-')
          throw bad("target feature '" + std::string(f) + "' must end in + or -");
        if (feature != "sramecc" && feature != "xnack")
          throw bad("unknown target feature '" + std::string(f) + "' (AMD target IDs know sramecc and xnack)");
        if (std::string(feature) == last) throw bad("target feature '" + std::string(feature) + "' given twice");
        if (!last.empty() && std::string(feature) < last)
          throw bad("target features must come in the order sramecc, xnack (" + std::string(proc) +
                    ":sramecc+:xnack-, say)");
        last = std::string(feature);
        if (next == std::string_view::npos) break;
        feats = feats.substr(next + 1);
      }
    }
    // gfx9xx is GCN/CDNA (wave64); gfx10xx and later are RDNA (wave32 by default).
    const bool rdna = proc.size() >= 5 && proc[3] != '9' && proc[3] != '8' && proc[3] != '7' &&
                      proc[3] != '6';
    return ArchInfo{Vendor::amd, std::string(arch), std::string(proc), rdna ? 32 : 64, 1024};
  }
  if (arch.empty()) throw bad("the name is empty");
  throw bad("unknown vendor prefix");
}

const std::vector<std::string_view>& known_processors() {
  static const std::vector<std::string_view> known = {
      "sm_50",  "sm_52",  "sm_53",  "sm_60",  "sm_61",   "sm_62",   "sm_70",   "sm_72",   "sm_75",
      "sm_80",  "sm_86",  "sm_87",  "sm_89",  "sm_90",   "sm_100",  "sm_101",  "sm_103",  "sm_110",
      "sm_120", "sm_121", "gfx906", "gfx908", "gfx90a",  "gfx940",  "gfx941",  "gfx942",  "gfx950",
      "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201"};
  return known;
}

int compute_capability(const ArchInfo& arch) noexcept {
  if (arch.vendor != Vendor::nvidia) return 0;
  int cc = 0;  // "sm_XY[a|f]"
  for (char ch : std::string_view(arch.processor).substr(3)) {
    if (ch < '0' || ch > '9') break;
    cc = cc * 10 + (ch - '0');
  }
  return cc;
}

std::string known_processors_list() {
  std::string out;
  for (std::string_view p : known_processors()) out += (out.empty() ? "" : ", ") + std::string(p);
  return out;
}

ArchInfo ArchInfo::parse_known(std::string_view arch) {
  ArchInfo a = parse(arch);
  std::string_view proc = a.processor;
  if (a.vendor == Vendor::nvidia && (proc.back() == 'a' || proc.back() == 'f')) proc.remove_suffix(1);
  const auto& known = known_processors();
  if (std::find(known.begin(), known.end(), proc) == known.end())
    throw std::invalid_argument("unknown arch '" + std::string(arch) + "': amax-tune knows " + known_processors_list() +
                                (a.vendor == Vendor::amd ? " (an AMD target ID may add :sramecc+/- and :xnack+/-)" : ""));
  return a;
}

std::optional<bool> ArchInfo::feature(std::string_view f) const {
  for (std::size_t at = name.find(':'); at != std::string::npos; at = name.find(':', at + 1)) {
    const std::size_t end = name.find(':', at + 1);
    const std::string_view tok = std::string_view(name).substr(at + 1, (end == std::string::npos ? name.size() : end) - at - 1);
    if (tok.size() == f.size() + 1 && tok.substr(0, f.size()) == f) return tok.back() == '+';
  }
  return std::nullopt;
}

bool ArchInfo::accepts(const ArchInfo& device) const {
  if (vendor != device.vendor || processor != device.processor) return false;
  if (vendor == Vendor::nvidia) return name == device.name;
  for (const char* f : {"sramecc", "xnack"})
    if (auto want = feature(f); want && device.feature(f) != want) return false;
  return true;
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

std::uint64_t last_level_cache_bytes(const ArchInfo& arch, std::uint64_t reported_l2_bytes) noexcept {
  const AmdArchFacts* f = arch.vendor == Vendor::amd ? amd_arch_facts(arch.processor) : nullptr;
  return std::max(reported_l2_bytes, f ? f->last_level_cache_bytes : 0);
}

}  // namespace amax
