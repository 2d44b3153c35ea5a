#pragma once
// Reading AMD code objects with LLVM (tuner side only; the runtime library never links LLVM).
#include <map>
#include <span>
#include <string>

#include "amax/compiler.hpp"

namespace amax {

/// Per-kernel resource usage from an AMD code object's NT_AMDGPU_METADATA note (code object v3+,
/// msgpack): .vgpr_count, .sgpr_count, .vgpr_spill_count + .sgpr_spill_count,
/// .group_segment_fixed_size (LDS bytes), .private_segment_fixed_size (scratch bytes per lane).
/// Accepts a bare ELF or a clang offload bundle (the amdgcn entry is used). Keys are kernel names
/// (the `.name` field, without the `.kd` suffix).
/// Errors: std::runtime_error naming the problem when the bytes are not an AMD code object or its
/// metadata cannot be read. Thread-safe. Unavailable (throws) when built without LLVM.
std::map<std::string, ResourceUsage> amdgpu_resource_usage(std::span<const char> code_object);

/// True when this build can read AMD code objects (LLVM was found).
bool can_read_amdgpu_code_objects() noexcept;

}  // namespace amax
