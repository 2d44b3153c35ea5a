#include "amax/launch.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "amax/scale_rule.hpp"

#include "amax/kernel_cache.hpp"

namespace amax {

void enqueue(Backend& backend, const LaunchOp& op, FunctionHandle fn, void** args, float* out, StreamHandle stream,
             std::uint32_t wave_size) {
  if (op.kind == LaunchOp::Kind::memset_output) return backend.memset32_async(out, 0u, 1, stream);
  const auto wave = wave_size ? wave_size : static_cast<std::uint32_t>(backend.device().wave_size);
  if (op.extra_wave && wave == 0)
    throw std::logic_error("enqueue: the device reports no wave size for the block's extra wave");
  const std::uint32_t block = op.block + (op.extra_wave ? wave : 0u);
  if (op.cooperative)
    backend.launch_cooperative(fn, op.grid, block, stream, args);
  else if (op.dependent && !backend.is_capturing(stream))
    backend.launch_dependent(fn, op.grid, block, stream, args);
  else
    backend.launch(fn, op.grid, block, stream, args);
}

namespace {
// A cooperative shape must not have more blocks than the kernel's resident ones: its polling could
// wait for a block that is never resident.
// `caller` and `kind` name the call and the kernel's kind ("launch_quantize", "keep"); `config` its label.
template <class Config>
void need_resident(Backend& backend, const LaunchShape& shape, std::uint32_t resident_per_cu, const char* caller,
                   std::string_view kind, const Config& config) {
  if (!shape.cooperative) return;
  const std::uint64_t resident =
      std::uint64_t{resident_per_cu} * static_cast<std::uint32_t>(std::max(1, backend.device().cu_count));
  if (shape.grid > resident)
    throw std::logic_error(std::string(caller) + ": " + std::string(kind) + " grid of " + std::to_string(shape.grid) +
                           " blocks exceeds the " + std::to_string(resident) + " blocks of " + config.label() +
                           " the device holds at once (pass its resident_per_cu to launch_shape)");
}
}  // namespace

void launch_amax(Backend& backend, const LoadedKernel& k, const LaunchShape& shape, const void* in,
                 std::uint64_t n, float* out, void* workspace, std::uint32_t* slot, NanMode nan_mode,
                 StreamHandle stream, const ScaleArgs* scale, std::uint32_t wave_size) {
  if (n == 0 || shape.grid == 0) {  // +0.0 without a zero-sized launch
    backend.memset32_async(out, 0u, 1, stream);
    if (scale) {
      const ScaleBits b = reference_scale_bits(0u, ScaleRule{scale->max, scale->epsilon,
                                                             (scale->rule_flags & kRuleForcePow2) != 0,
                                                             (scale->rule_flags & kRuleNanPropagates) != 0});
      backend.memset32_async(scale->scale, b.scale, 1, stream);
      backend.memset32_async(scale->scale_inv, b.scale_inv, 1, stream);
    }
    return;
  }
  if ((scale != nullptr) != (k.config.epilogue == Epilogue::scale))
    throw std::logic_error("launch_amax: scale arguments " + std::string(scale ? "given" : "missing") +
                           " for kernel " + k.config.label());
  need_resident(backend, shape, k.resident_per_cu, "launch_amax", to_string(k.config.strategy), k.config);
  if (shape.extra_wave && !wave_size && backend.device().wave_size == 0)
    throw std::logic_error("launch_amax: the device reports no wave size for " + k.config.label() + "'s extra wave");
  unsigned long long count = n;
  unsigned flags = nan_mode == NanMode::ignore ? kFlagIgnoreNan : 0u;
  unsigned parts = shape.parts;
  ScaleArgs sa = scale ? *scale : ScaleArgs{};
  auto arg = [&](KernelArg a) -> void* {
    switch (a) {
      case KernelArg::input: return &in;
      case KernelArg::count: return &count;
      case KernelArg::output: return &out;
      case KernelArg::workspace: return &workspace;
      case KernelArg::slot: return &slot;
      case KernelArg::flags: return &flags;
      case KernelArg::scale: return &sa;
      case KernelArg::parts: return &parts;
    }
    return nullptr;
  };
  void* args[kMainArgs.size()];
  std::transform(kMainArgs.begin(), kMainArgs.end(), args, arg);
  void* fargs[kFinishArgs.size()];
  std::transform(kFinishArgs.begin(), kFinishArgs.end(), fargs, arg);
  for (const LaunchOp& op : shape)
    enqueue(backend, op, op.kind == LaunchOp::Kind::finish ? k.finish : k.main,
            op.kind == LaunchOp::Kind::finish ? fargs : args, out, stream, wave_size);
}

void launch_quantize(Backend& backend, const LoadedQuantizeKernel& k, const LaunchShape& shape, const void* in,
                     std::uint64_t n, std::uint8_t* out, float* amax_out, std::uint32_t* slot, NanMode nan_mode,
                     CastRule cast_rule, const ScaleArgs& scale, StreamHandle stream, std::uint32_t wave_size) {
  need_resident(backend, shape, k.resident_per_cu, "launch_quantize", to_string(k.config.kind), k.config);
  unsigned long long count = n;
  unsigned flags = (nan_mode == NanMode::ignore ? kFlagIgnoreNan : 0u) |
                   (cast_rule == CastRule::torchao ? kQuantizeFlagTorchao : 0u);
  ScaleArgs sa = scale;
  const float* scale_in = scale.scale;
  // The parameters of templates/amax_quantize_kernels.h's entry points, in order.
  void* cast_args[] = {&in, &count, &out, &scale_in, &flags};
  void* one_launch_args[] = {&in, &count, &out, &amax_out, &slot, &flags, &sa};
  for (const LaunchOp& op : shape)
    enqueue(backend, op, k.main, k.config.one_launch() ? one_launch_args : cast_args, amax_out, stream, wave_size);
}

}  // namespace amax
