#pragma once
// Executing launch plans (launch_plan.hpp: built by the generator from the strategy's row) on a
// backend, written once for both vendors and every family. Building and loading kernels is
// kernel_cache.hpp.
#include <cstddef>
#include <cstdint>

#include "amax/backend.hpp"
#include "amax/kernel_config.hpp"
#include "amax/fp8_cast.hpp"
#include "amax/launch_plan.hpp"
#include "amax/quantize_config.hpp"

namespace amax {

template <class Config>
struct Loaded;  // kernel_cache.hpp
using LoadedKernel = Loaded<KernelConfig>;
using LoadedQuantizeKernel = Loaded<QuantizeConfig>;

/// Enqueues one operation of a launch plan on `stream`: the one place the launches of every kernel
/// family reach the backend. memset_output: +0.0 into `out`; main and finish: `fn` with `args` on
/// op.grid blocks of op.block threads (one wave more where op.extra_wave), cooperatively or as a
/// programmatic dependent launch (an ordinary one while the stream is being captured) as the op
/// says; `wave_size`: the extra wave's threads (0: the device's wave). Errors: BackendError;
/// std::logic_error for an extra wave with no wave size (the device reports none).
void enqueue(Backend& backend, const LaunchOp& op, FunctionHandle fn, void** args, float* out, StreamHandle stream,
             std::uint32_t wave_size = 0);

/// Enqueues amax of `n` elements at `in` into the fp32 at `out` on `stream`: n == 0 writes +0.0
/// with a memset and launches nothing; otherwise the operations of `shape` in order (enqueue),
/// with the arguments of kMainArgs and kFinishArgs (a cooperative launch stays cooperative under
/// graph capture, where it is expected to become a kernel node with the cooperative attribute:
/// tests/gpu check it).
/// workspace: at least shape.workspace_bytes bytes (any content); slot: kSlotWords 32-bit words
/// that are 0 (the kernels leave them 0), needed when shape.uses_slot; no two launches that may
/// run at the same time may share a slot. Never synchronises or allocates.
/// `scale`: required exactly when the kernel's config has the scale epilogue; the kernels then
/// write scale and scale_inv in the same launch. With n == 0 the amax 0 and the rule's scale and
/// scale_inv for it (reference_scale_bits) are written with memsets.
/// Errors: BackendError from the launch; std::logic_error when a cooperative shape has more blocks
/// than kernel.resident_per_cu x the device's CUs (a shape not made with kernel.resident_per_cu):
/// its polling could wait for a block that is never resident.
/// `wave_size`: the wave the kernel was compiled for (an extra wave's threads), 0 for the device's:
/// a kernel rendered for another vendor's wave runs in the wave-64 model (tests/wave64).
void launch_amax(Backend& backend, const LoadedKernel& kernel, const LaunchShape& shape, const void* in,
                 std::uint64_t n, float* out, void* workspace, std::uint32_t* slot, NanMode nan_mode,
                 StreamHandle stream, const ScaleArgs* scale = nullptr, std::uint32_t wave_size = 0);

/// Enqueues the quantize kernel `kernel` on n > 0 elements at `in` (the operations of `shape`, a
/// launch_shape of its config made with kernel.resident_per_cu): the n FP8 bytes at `out` with
/// the cast rule. cast: reads the scale at scale.scale (written by an earlier launch on the
/// stream) and writes nothing else. keep, reread: amax into amax_out, scale and scale_inv into
/// scale.scale / scale.scale_inv by scale's rule, with the context's `nan_mode`; `slot`: the
/// stream's slot (kSlotWords words, its kQuantize*Word words as launch_plan.hpp states them),
/// needed when shape.uses_slot. Never synchronises or allocates.
/// Errors: BackendError from the launch; std::logic_error for a cooperative shape larger than the
/// kernel's resident blocks.
void launch_quantize(Backend& backend, const LoadedQuantizeKernel& kernel, const LaunchShape& shape, const void* in,
                     std::uint64_t n, std::uint8_t* out, float* amax_out, std::uint32_t* slot, NanMode nan_mode,
                     CastRule cast_rule, const ScaleArgs& scale, StreamHandle stream, std::uint32_t wave_size = 0);

}  // namespace amax
