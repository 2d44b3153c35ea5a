#pragma once
// Reading AMD code objects with LLVM (tuner side only; the runtime library never links LLVM).
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "amax/compiler.hpp"

namespace amax {

/// Per-kernel resource usage from an AMD code object's NT_AMDGPU_METADATA note (code object v3+,
/// msgpack): .vgpr_count, .agpr_count, .sgpr_count, .vgpr_spill_count + .sgpr_spill_count,
/// .group_segment_fixed_size (LDS bytes), .private_segment_fixed_size (scratch bytes per lane),
/// .wavefront_size and .max_flat_workgroup_size (the launch bound).
/// Accepts a bare ELF or a clang offload bundle (the amdgcn entry is used). Keys are kernel names
/// (the `.name` field, without the `.kd` suffix).
/// Errors: std::runtime_error naming the problem when the bytes are not an AMD code object or its
/// metadata cannot be read. Thread-safe. Unavailable (throws) when built without LLVM.
std::map<std::string, ResourceUsage> amdgpu_resource_usage(std::span<const char> code_object);

/// The target the code object was built for (its `amdhsa.target`), e.g.
/// "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-". Errors and availability as above.
std::string amdgpu_target(std::span<const char> code_object);

/// Why a kernel with this code-object usage, compiled for `arch` with the launch bound `threads`,
/// must leave that arch's space, or nullopt when it need not: it spills registers or uses scratch
/// (private segment) memory, its wave size is not the arch's, or one block cannot be resident on
/// one CU: ceil(threads / wave size / SIMDs per CU) waves per SIMD must fit the wave slots, the VGPR
/// file (VGPRs rounded up to 4, plus AGPRs where unified, rounded up to the allocation granule) and
/// the block's LDS the CU's LDS (AmdArchFacts). A processor without facts is checked for spills
/// and wave size only. Pure, thread-safe.
std::optional<std::string> amdgpu_resource_problem(const ResourceUsage& u, const ArchInfo& arch,
                                                   std::uint32_t threads);

/// True when this build can read AMD code objects (LLVM was found).
bool can_read_amdgpu_code_objects() noexcept;
/// The LLVM version the reader was built with ("14.0.6"), "" without LLVM.
std::string code_object_reader_llvm();

}  // namespace amax
