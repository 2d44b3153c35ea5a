// Argument checks of the C API: dtypes, NULL and misaligned pointers, streams and memory of another
// device, the scale options. Each throws Failure with the status and message amax_last_error gives.
#include <cstdint>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "amax/dtype_c.hpp"
#include "context.hpp"

namespace amax::capi {

DType need_dtype(amax_dtype_t d) {
  auto t = from_c(d);
  if (!t) fail(AMAX_STATUS_UNKNOWN_DTYPE, fmt::format("unknown dtype {} (expected AMAX_DTYPE_FP32 = 0, "
                                                      "AMAX_DTYPE_FP16 = 1 or AMAX_DTYPE_BF16 = 2)", static_cast<int>(d)));
  return *t;
}

void need(const void* p, const char* name) {
  if (!p) fail(AMAX_STATUS_NULL_POINTER, fmt::format("{} is NULL", name));
}

namespace {
std::string this_device(const ContextState& c) {
  const DeviceInfo& d = c.backend->device();
  return fmt::format("device {} ({}, {})", d.ordinal, d.name, d.arch);
}
}  // namespace

void need_own_stream(ContextState& c, StreamHandle s) {
  const StreamOwner o = c.backend->stream_owner(s);
  const int own = c.backend->device().ordinal;
  if (o.device >= 0 && o.device != own)
    fail(AMAX_STATUS_WRONG_DEVICE, fmt::format("stream {} belongs to device {}, but this context is on {}: "
                                               "use a context created for device {}", s, o.device, this_device(c),
                                               o.device));
  if (!o.same_context)
    fail(AMAX_STATUS_WRONG_DEVICE, fmt::format("stream {} belongs to another CUDA context on device {}, not the "
                                               "primary context of {} that this context uses: create the stream "
                                               "in the device's primary context (as the CUDA runtime does)",
                                               s, o.device, this_device(c)));
}

void need_own_memory(ContextState& c, const void* p, const char* name) {
  if (!c.check_pointers) return;
  const int d = c.backend->memory_device(p);
  if (d >= 0 && d != c.backend->device().ordinal)
    fail(AMAX_STATUS_WRONG_DEVICE, fmt::format("{} {} is memory of device {}, but this context is on {}: use a "
                                               "context created for device {} (or copy the data)", name, p, d,
                                               this_device(c), d));
}

void need_aligned_output(const float* p, const char* name) {
  if (reinterpret_cast<std::uintptr_t>(p) % 4)
    fail(AMAX_STATUS_MISALIGNED_POINTER, fmt::format("{} {} is not aligned to 4 bytes", name, static_cast<const void*>(p)));
}

// The rule of amax_scale_options_t, validated (amax_tune.h, amax_scale_options_check).
ScaleRule scale_rule_of(const amax_scale_options_t* o) {
  need(o, "options");
  if (o->struct_size != sizeof(amax_scale_options_t))
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.struct_size is {}, expected {} (call "
                                                   "amax_scale_options_init)", o->struct_size, sizeof(amax_scale_options_t)));
  ScaleRule r;
  const int format = static_cast<int>(o->format);
  if (format == AMAX_FP8_EXPLICIT_MAX) {
    r.max = o->max;
  } else if (auto f = fp8_format_from_int(format)) {
    if (o->max != 0.0f)
      fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.max is {} with options.format {} ({}): set the format to "
                                                     "AMAX_FP8_EXPLICIT_MAX = 255 for an explicit max, else leave max 0",
                                                     o->max, format, info(*f).name));
    r.max = info(*f).max_finite;
  } else {
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.format is {} (expected AMAX_FP8_E4M3 = 0, AMAX_FP8_E5M2 = 1, "
                                                   "AMAX_FP8_E4M3FNUZ = 2, AMAX_FP8_E5M2FNUZ = 3 or "
                                                   "AMAX_FP8_EXPLICIT_MAX = 255)", format));
  }
  if (o->force_pow2 != 0 && o->force_pow2 != 1)
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.force_pow2 is {} (expected 0 or 1)", o->force_pow2));
  if (o->nan_propagates != 0 && o->nan_propagates != 1)
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.nan_propagates is {} (expected 0 or 1)", o->nan_propagates));
  r.epsilon = o->epsilon;
  r.force_pow2 = o->force_pow2 == 1;
  r.nan_propagates = o->nan_propagates == 1;
  if (auto why = validate(r))
    fail(AMAX_STATUS_INVALID_ARGUMENT, "options." + *why + (format == AMAX_FP8_EXPLICIT_MAX && why->starts_with("max")
                                                               ? " with AMAX_FP8_EXPLICIT_MAX" : ""));
  return r;
}

QuantizeArgs quantize_options_of(const amax_quantize_options_t* o) {
  need(o, "options");
  if (o->struct_size != sizeof(amax_quantize_options_t))
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.struct_size is {}, expected {} (call "
                                                   "amax_quantize_options_init)", o->struct_size,
                                                   sizeof(amax_quantize_options_t)));
  const int format = static_cast<int>(o->format);
  const auto f = fp8_format_from_int(format);
  if (!f)
    fail(AMAX_STATUS_INVALID_ARGUMENT,
         fmt::format("options.format is {} (expected AMAX_FP8_E4M3 = 0, AMAX_FP8_E5M2 = 1, AMAX_FP8_E4M3FNUZ = 2 or "
                     "AMAX_FP8_E5M2FNUZ = 3: the FP8 format of the bytes)", format));
  const int rule = static_cast<int>(o->cast_rule);
  if (rule != AMAX_CAST_TRANSFORMER_ENGINE && rule != AMAX_CAST_TORCHAO)
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.cast_rule is {} (expected AMAX_CAST_TRANSFORMER_ENGINE = 0 "
                                                   "or AMAX_CAST_TORCHAO = 1)", rule));
  // The scale rule's fields are amax_scale_options_t's, checked by its rule.
  amax_scale_options_t so;
  amax_scale_options_init(&so);
  so.format = o->format;
  so.epsilon = o->epsilon;
  so.force_pow2 = o->force_pow2;
  so.nan_propagates = o->nan_propagates;
  const ScaleRule r = scale_rule_of(&so);
  QuantizeArgs a;
  a.format = *f;
  a.cast_rule = rule == AMAX_CAST_TORCHAO ? CastRule::torchao : CastRule::transformer_engine;
  a.scale = ScaleArgs{nullptr, nullptr, r.max, r.epsilon,
                      (r.force_pow2 ? kRuleForcePow2 : 0u) | (r.nan_propagates ? kRuleNanPropagates : 0u)};
  return a;
}

void need_distinct_outputs(const float* amax_out, const float* scale_out, const float* scale_inv_out) {
  if (amax_out == scale_out || amax_out == scale_inv_out || scale_out == scale_inv_out)
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("amax_out {}, scale_out {} and scale_inv_out {} must be three "
                                                   "distinct fp32 words", static_cast<const void*>(amax_out),
                                                   static_cast<const void*>(scale_out),
                                                   static_cast<const void*>(scale_inv_out)));
}

QuantizeArgs quantize_args_of(const void* input, amax_dtype_t dtype, std::uint64_t n,
                              const amax_quantize_options_t* options, const std::uint8_t* output, float* amax_out,
                              float* scale_out, float* scale_inv_out) {
  QuantizeArgs a = quantize_options_of(options);
  need(amax_out, "amax_out");
  need(scale_out, "scale_out");
  need(scale_inv_out, "scale_inv_out");
  a.dtype = need_dtype(dtype);
  need_aligned_output(amax_out, "amax_out");
  need_aligned_output(scale_out, "scale_out");
  need_aligned_output(scale_inv_out, "scale_inv_out");
  need_distinct_outputs(amax_out, scale_out, scale_inv_out);
  a.scale.scale = scale_out;
  a.scale.scale_inv = scale_inv_out;
  if (n == 0) return a;
  need(input, "input");
  need(output, "output");
  const std::uint32_t bytes = info(a.dtype).bytes;
  if (reinterpret_cast<std::uintptr_t>(input) % bytes)
    fail(AMAX_STATUS_MISALIGNED_POINTER, fmt::format("input {} is not aligned to the {}-byte elements of {}", input,
                                                     bytes, to_string(a.dtype)));
  const auto in0 = reinterpret_cast<std::uintptr_t>(input), out0 = reinterpret_cast<std::uintptr_t>(output);
  if (out0 < in0 + n * bytes && in0 < out0 + n)
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("output {} ({} bytes) overlaps input {} ({} bytes)",
                                                   static_cast<const void*>(output), n, input, n * bytes));
  return a;
}

void need_format_on(const ArchInfo& arch, Fp8Format f) {
  if (encoding(f).fnuz && arch.processor != "gfx942")
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.format {} ({}) is the MI300's (gfx942) FP8; this device is "
                                                   "{}: use AMAX_FP8_E4M3 or AMAX_FP8_E5M2",
                                                   static_cast<int>(f), info(f).name, arch.name));
}

}  // namespace amax::capi

using namespace amax;
using namespace amax::capi;

extern "C" {

AMAX_API void amax_scale_options_init(amax_scale_options_t* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->format = AMAX_FP8_E4M3;
}

AMAX_API amax_status_t amax_scale_options_check(const amax_scale_options_t* o) {
  return guarded([&] { (void)scale_rule_of(o); });
}

AMAX_API void amax_quantize_options_init(amax_quantize_options_t* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->format = AMAX_FP8_E4M3;
  o->cast_rule = AMAX_CAST_TRANSFORMER_ENGINE;
}

AMAX_API amax_status_t amax_quantize_options_check(const amax_quantize_options_t* o) {
  return guarded([&] { (void)quantize_options_of(o); });
}

}  // extern "C"
