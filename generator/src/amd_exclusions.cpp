// Kernels that leave an AMD arch's space, as measured by compiling the whole pruned space with each
// supported hipRTC (tests/jit: WholePrunedSpaceOfEveryDtypeCompilesWithinItsResources, which fails
// when a compile shows a problem this table lacks, or an entry whose kernel no longer shows one).
// The generator cannot compile, so this table is how it learns; keep it in step with that test.
#include "amax/search_space.hpp"

namespace amax {

namespace {
// No kernel of the pruned space spills or misses one block per CU on gfx90a (hipRTC 5.2),
// gfx942 (hipRTC 5.7 and 6.4) or gfx950 (hipRTC 6.4): the table is empty. A row reads
//   {"gfx942", DType::bf16, "one_pass.t1024.v8.u8", "spills 4 registers", "hipRTC 6.4.43484"},
constexpr std::span<const RecordedExclusion> kTable{};
}  // namespace

std::optional<std::string> exclusion_in(std::span<const RecordedExclusion> table, const ArchInfo& arch,
                                        DType dtype, const KernelConfig& c) {
  if (arch.vendor != Vendor::amd) return std::nullopt;
  const std::string label = c.kernel_label();
  for (const auto& e : table) {
    if (e.dtype != dtype || e.kernel_label != label) continue;
    if (e.target != arch.processor && e.target != arch.name) continue;
    return "excluded on " + std::string(e.target) + ": " + std::string(e.reason) + " (measured with " +
           std::string(e.measured_with) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> recorded_exclusion(const ArchInfo& arch, DType dtype, const KernelConfig& c) {
  return exclusion_in(kTable, arch, dtype, c);
}

}  // namespace amax
