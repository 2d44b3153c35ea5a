// The quantize plan cache (one immutable QuantizePlan per format, dtype and size, published once)
// and its compile fallback, and the calls over it: amax_quantize_workspace_size, amax_quantize,
// amax_multi_quantize(_workspace_size), amax_preload_quantize, amax_explain_quantize.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "amax/dtype_c.hpp"
#include "amax/family.hpp"
#include "amax/search_space.hpp"
#include "context.hpp"

using namespace amax;
using namespace amax::capi;

namespace {

// The workspace a quantize variant needs for n elements: the fused amax plan's for `cast` (it runs
// first, with that workspace), none for the one-launch kinds.
std::uint64_t quantize_workspace(ContextState& c, const QuantizeConfig& q, DType d, std::uint64_t n) {
  return q.one_launch() ? 0 : c.plan(d, n, Epilogue::scale).workspace_bytes;
}

}  // namespace

QuantizePlan& ContextState::quantize_plan(DType d, std::uint64_t n, Fp8Format f) {
  return quantize_plans[static_cast<std::size_t>(f)].get(d, n, [&] {
    auto p = std::make_unique<QuantizePlan>();
    Choice<QuantizeConfig> choice = tables->choose_quantize(d, n);
    p->config = choice.config;
    p->source = static_cast<amax_source_t>(choice.source);
    p->entry = choice.entry;
    p->why = std::move(choice.why);
    p->format = f;
    p->shape = launch_shape(p->config, d, n, cu);
    const QuantizeConfig def = QuantizeFamily::fallback(p->config, arch, d, n, cu);
    p->workspace_bytes =
        std::max<std::uint64_t>({4, quantize_workspace(*this, p->config, d, n), quantize_workspace(*this, def, d, n)});
    return p;
  });
}

const QuantizePlan& ContextState::ready(QuantizePlan& p, DType d, std::uint64_t n, StreamHandle stream) {
  if (const QuantizePlan* r = p.replaced.load(std::memory_order_acquire)) return *r;
  if (p.kernel.load(std::memory_order_acquire)) return p;
  const QuantizeConfig def = QuantizeFamily::fallback(p.config, arch, d, n, cu);
  const auto format = static_cast<std::uint32_t>(p.format);
  const auto got = load_for_call(*this, p.config, def, d, format, stream, [&] {
    return fmt::format("kernel {} for {} -> {} n={} is not loaded and the stream is being captured: JIT compilation "
                       "is not allowed during graph capture; call amax_preload_quantize for this dtype, size and "
                       "format first",
                       p.config.label(), to_string(d), info(p.format).name, n);
  });
  if (got.fell_back) {
    auto fb = std::make_unique<QuantizePlan>();
    fb->config = def;
    fb->format = p.format;
    fb->shape = launch_shape(def, d, n, cu);
    fb->workspace_bytes = p.workspace_bytes;  // covers the fallback by construction (quantize_plan)
    fb->kernel.store(got.kernel, std::memory_order_relaxed);
    return publish_replacement(p, std::move(fb), fallback_quantize_plans);
  }
  p.kernel.store(got.kernel, std::memory_order_release);
  return p;
}

namespace {

// What one quantize call launches, every kernel loaded and every argument checked: nothing is
// enqueued before all of it is known.
struct QuantizeCall {
  const QuantizePlan* plan = nullptr;
  const Plan* fused = nullptr;  // `cast`: the fused amax + scale before it
  std::uint64_t workspace_bytes = 4;
};

// The checks of one tensor that need the context (device of the stream and pointers, the format
// on this device, the kernels, the workspace), then its plan: Failure naming `what` (the argument
// names, with the tensor's index for a list) before anything is enqueued.
QuantizeCall prepare(ContextState& c, const QuantizeArgs& a, const void* input, std::uint64_t n,
                     const std::uint8_t* output, void* workspace, std::size_t workspace_bytes, StreamHandle stream,
                     const std::string& of) {
  need_format_on(c.arch, a.format);
  QuantizeCall call;
  if (n == 0) return call;
  need_own_memory(c, input, ("input" + of).c_str());
  need_own_memory(c, output, ("output" + of).c_str());
  QuantizePlan& planned = c.quantize_plan(a.dtype, n, a.format);
  call.plan = &c.ready(planned, a.dtype, n, stream);
  if (!call.plan->config.one_launch()) call.fused = &c.ready(c.plan(a.dtype, n, Epilogue::scale), a.dtype, n, stream);
  call.workspace_bytes = planned.workspace_bytes;
  const bool needs = call.fused && call.fused->shape.workspace_bytes;
  if (workspace_bytes < planned.workspace_bytes || (!workspace && needs))
    fail(AMAX_STATUS_WORKSPACE_TOO_SMALL,
         fmt::format("workspace of {} bytes{} is too small for quantizing {} n={}{}: amax_quantize_workspace_size "
                     "gives {} bytes", workspace_bytes, workspace ? "" : " (NULL)", to_string(a.dtype), n, of,
                     planned.workspace_bytes));
  return call;
}

// Enqueues a prepared call: n == 0 the memsets of amax_and_scale's n == 0; `cast` the fused plan
// then the cast kernel (reading the scale the fused plan wrote); a one-launch kind its launch.
void launch(ContextState& c, const QuantizeCall& call, const QuantizeArgs& a, const void* input, std::uint64_t n,
            std::uint8_t* output, float* amax_out, void* workspace, NanMode mode, StreamHandle stream) {
  if (n == 0) {
    launch_amax(*c.backend, LoadedKernel{}, LaunchShape{}, input, 0, amax_out, workspace, nullptr, mode, stream,
                &a.scale);
    return;
  }
  const QuantizePlan& p = *call.plan;
  const LoadedQuantizeKernel& k = *p.kernel.load(std::memory_order_acquire);
  if (call.fused) c.launch(*call.fused, input, n, amax_out, workspace, mode, stream, &a.scale);
  const LaunchShape shape =
      p.config.one_launch() ? launch_shape(p.config, a.dtype, n, c.cu, k.resident_per_cu) : p.shape;
  std::uint32_t* slot = shape.uses_slot ? c.slot_for(stream) : nullptr;
  launch_quantize(*c.backend, k, shape, input, n, output, amax_out, slot, mode, a.cast_rule, a.scale, stream);
}

// amax_multi_quantize's list: every tensor's checks (index named) and plans, then the workspace.
std::vector<QuantizeCall> prepare_list(ContextState& c, const amax_tensor_t* tensors, std::size_t count,
                                       const QuantizeArgs& common, std::uint8_t* const* outputs, void* workspace,
                                       std::size_t workspace_bytes, StreamHandle stream,
                                       std::vector<QuantizeArgs>& args, bool check_workspace) {
  need_format_on(c.arch, common.format);
  std::vector<QuantizeCall> calls(count);
  args.assign(count, common);
  std::uint64_t need_bytes = 4;
  for (std::size_t i = 0; i < count; ++i) {
    const amax_tensor_t& t = tensors[i];
    const std::string of = fmt::format(" of tensors[{}]", i);
    const auto d = from_c(t.dtype);
    if (!d)
      fail(AMAX_STATUS_UNKNOWN_DTYPE, fmt::format("tensors[{}].dtype is {} (expected AMAX_DTYPE_FP32 = 0, "
                                                  "AMAX_DTYPE_FP16 = 1 or AMAX_DTYPE_BF16 = 2)", i,
                                                  static_cast<int>(t.dtype)));
    args[i].dtype = *d;
    args[i].scale.scale = common.scale.scale + i;
    args[i].scale.scale_inv = common.scale.scale_inv + i;
    if (t.n == 0) continue;
    if (!t.data) fail(AMAX_STATUS_NULL_POINTER, fmt::format("tensors[{}].data is NULL with n = {}", i, t.n));
    if (outputs && !outputs[i]) fail(AMAX_STATUS_NULL_POINTER, fmt::format("outputs[{}] is NULL with n = {}", i, t.n));
    const std::uint32_t bytes = info(*d).bytes;
    if (reinterpret_cast<std::uintptr_t>(t.data) % bytes)
      fail(AMAX_STATUS_MISALIGNED_POINTER, fmt::format("tensors[{}].data {} is not aligned to the {}-byte elements of "
                                                       "{}", i, t.data, bytes, to_string(*d)));
    const std::uint8_t* out = outputs ? outputs[i] : nullptr;
    if (out) {
      const auto in0 = reinterpret_cast<std::uintptr_t>(t.data), out0 = reinterpret_cast<std::uintptr_t>(out);
      if (out0 < in0 + t.n * bytes && in0 < out0 + t.n)
        fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("outputs[{}] {} ({} bytes) overlaps tensors[{}].data {} ({} "
                                                       "bytes)", i, static_cast<const void*>(out), t.n, i, t.data,
                                                       t.n * bytes));
    }
    if (check_workspace) {
      calls[i] = prepare(c, args[i], t.data, t.n, out, workspace, SIZE_MAX, stream, of);
    } else {
      calls[i].workspace_bytes = c.quantize_plan(*d, t.n, common.format).workspace_bytes;
    }
    need_bytes = std::max(need_bytes, calls[i].workspace_bytes);
  }
  if (check_workspace && (workspace_bytes < need_bytes || (!workspace && need_bytes > 4)))
    fail(AMAX_STATUS_WORKSPACE_TOO_SMALL,
         fmt::format("workspace of {} bytes{} is too small for this list: amax_multi_quantize_workspace_size gives {} "
                     "bytes", workspace_bytes, workspace ? "" : " (NULL)", need_bytes));
  if (!check_workspace) calls.assign(1, QuantizeCall{nullptr, nullptr, need_bytes});
  return calls;
}

// The three fp32 output arrays of a list: count entries each, 4-byte aligned, disjoint.
void need_output_arrays(float* amax_out, float* scale_out, float* scale_inv_out, std::size_t count) {
  need(amax_out, "amax_out");
  need(scale_out, "scale_out");
  need(scale_inv_out, "scale_inv_out");
  need_aligned_output(amax_out, "amax_out");
  need_aligned_output(scale_out, "scale_out");
  need_aligned_output(scale_inv_out, "scale_inv_out");
  const float* arrays[] = {amax_out, scale_out, scale_inv_out};
  const char* names[] = {"amax_out", "scale_out", "scale_inv_out"};
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j)
      if (arrays[i] < arrays[j] + count && arrays[j] < arrays[i] + count)
        fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("{} {} and {} {} overlap ({} entries each)", names[i],
                                                       static_cast<const void*>(arrays[i]), names[j],
                                                       static_cast<const void*>(arrays[j]), count));
}

// The device checks of a quantize call's stream, fp32 outputs and workspace (WRONG_DEVICE).
void need_own_stream_and_outputs(ContextState& s, StreamHandle stream, const float* amax_out, const float* scale_out,
                                 const float* scale_inv_out, const void* workspace) {
  need_own_stream(s, stream);
  need_own_memory(s, amax_out, "amax_out");
  need_own_memory(s, scale_out, "scale_out");
  need_own_memory(s, scale_inv_out, "scale_inv_out");
  if (workspace) need_own_memory(s, workspace, "workspace");
}

// The list checks that need no context: the tensors array and its count, the option and output arrays.
QuantizeArgs list_args_of(const amax_tensor_t* tensors, std::size_t count, const amax_quantize_options_t* options) {
  QuantizeArgs a = quantize_options_of(options);
  if (count) need(tensors, "tensors");
  return a;
}

}  // namespace

extern "C" {

AMAX_API amax_status_t amax_quantize_workspace_size(amax_context_t c, amax_dtype_t dtype, uint64_t n,
                                                    const amax_quantize_options_t* options, size_t* bytes) {
  return guarded([&] {
    need(c, "context");
    const QuantizeArgs a = quantize_options_of(options);
    need(bytes, "bytes (out-parameter)");
    const DType d = need_dtype(dtype);
    need_format_on(c->state->arch, a.format);
    *bytes = n == 0 ? 4 : c->state->quantize_plan(d, n, a.format).workspace_bytes;
  });
}

AMAX_API amax_status_t amax_quantize(amax_context_t c, const void* input, amax_dtype_t dtype, uint64_t n,
                                     const amax_quantize_options_t* options, uint8_t* output, float* amax_out,
                                     float* scale_out, float* scale_inv_out, void* workspace, size_t workspace_bytes,
                                     void* stream) {
  return guarded([&] {
    need(c, "context");
    const QuantizeArgs a = quantize_args_of(input, dtype, n, options, output, amax_out, scale_out, scale_inv_out);
    ContextState& s = *c->state;
    need_own_stream_and_outputs(s, stream, amax_out, scale_out, scale_inv_out, workspace);
    const QuantizeCall call = prepare(s, a, input, n, output, workspace, workspace_bytes, stream, "");
    launch(s, call, a, input, n, output, amax_out, workspace, c->nan_mode, stream);
  });
}

AMAX_API amax_status_t amax_multi_quantize_workspace_size(amax_context_t c, const amax_tensor_t* tensors,
                                                          size_t count, const amax_quantize_options_t* options,
                                                          size_t* bytes) {
  return guarded([&] {
    need(c, "context");
    const QuantizeArgs a = list_args_of(tensors, count, options);
    need(bytes, "bytes (out-parameter)");
    std::vector<QuantizeArgs> args;
    *bytes = prepare_list(*c->state, tensors, count, a, nullptr, nullptr, 0, nullptr, args, false)[0].workspace_bytes;
  });
}

AMAX_API amax_status_t amax_multi_quantize(amax_context_t c, const amax_tensor_t* tensors, size_t count,
                                           const amax_quantize_options_t* options, uint8_t* const* outputs,
                                           float* amax_out, float* scale_out, float* scale_inv_out, void* workspace,
                                           size_t workspace_bytes, void* stream) {
  return guarded([&] {
    need(c, "context");
    QuantizeArgs a = list_args_of(tensors, count, options);
    if (count == 0) return;
    need(outputs, "outputs");
    need_output_arrays(amax_out, scale_out, scale_inv_out, count);
    a.scale.scale = scale_out;
    a.scale.scale_inv = scale_inv_out;
    ContextState& s = *c->state;
    need_own_stream_and_outputs(s, stream, amax_out, scale_out, scale_inv_out, workspace);
    std::vector<QuantizeArgs> args;
    const std::vector<QuantizeCall> calls =
        prepare_list(s, tensors, count, a, outputs, workspace, workspace_bytes, stream, args, true);
    for (std::size_t i = 0; i < count; ++i)
      launch(s, calls[i], args[i], tensors[i].data, tensors[i].n, outputs[i], amax_out + i, workspace, c->nan_mode,
             stream);
  });
}

AMAX_API amax_status_t amax_preload_quantize(amax_context_t c, const amax_dtype_t* dtypes, size_t num_dtypes,
                                             const uint64_t* sizes, size_t num_sizes,
                                             const amax_quantize_options_t* options) {
  return guarded([&] {
    need(c, "context");
    const QuantizeArgs a = quantize_options_of(options);
    if (num_dtypes) need(dtypes, "dtypes");
    if (num_sizes) need(sizes, "sizes");
    ContextState& s = *c->state;
    need_format_on(s.arch, a.format);
    const auto format = static_cast<std::uint32_t>(a.format);
    for (std::size_t i = 0; i < num_dtypes; ++i) {
      const DType d = need_dtype(dtypes[i]);
      for (std::size_t j = 0; j < num_sizes; ++j) {
        const std::uint64_t n = sizes[j];
        if (!n) continue;
        QuantizePlan& p = s.quantize_plan(d, n, a.format);
        const QuantizePlan& r = s.ready(p, d, n, nullptr);
        s.kernels->get(QuantizeFamily::fallback(p.config, s.arch, d, n, s.cu), d, format);
        // The fused amax + scale of the cast path, for the chosen variant or the fallback.
        if (!r.config.one_launch() ||
            !QuantizeFamily::fallback(p.config, s.arch, d, n, s.cu).one_launch())
          s.ready(s.plan(d, n, Epilogue::scale), d, n, nullptr);
      }
    }
  });
}

AMAX_API amax_status_t amax_explain_quantize(amax_context_t c, amax_dtype_t dtype, uint64_t n,
                                             const amax_quantize_options_t* options, amax_explanation_t* e) {
  return guarded([&] {
    need(c, "context");
    const QuantizeArgs a = quantize_options_of(options);
    need(e, "explanation (out-parameter)");
    const DType d = need_dtype(dtype);
    ContextState& s = *c->state;
    need_format_on(s.arch, a.format);
    std::memset(e, 0, sizeof *e);
    if (n == 0) {
      e->source = AMAX_SOURCE_DEFAULT;
      e->workspace_bytes = 4;
      e->launches = 3;
      std::snprintf(e->detail, sizeof e->detail, "%s",
                    "n = 0: amax +0.0 and the rule's scale and scale_inv for it are written with memsets; no byte, no "
                    "kernel");
      return;
    }
    const QuantizePlan& planned = s.quantize_plan(d, n, a.format);
    const QuantizePlan* replaced = planned.replaced.load(std::memory_order_acquire);
    const QuantizePlan& p = replaced ? *replaced : planned;
    e->source = p.source;
    std::snprintf(e->label, sizeof e->label, "%s", p.config.label().c_str());
    e->workspace_bytes = planned.workspace_bytes;
    const LoadedQuantizeKernel* k = p.kernel.load(std::memory_order_acquire);
    const LaunchShape shape =
        k && p.config.one_launch() ? launch_shape(p.config, d, n, s.cu, k->resident_per_cu) : p.shape;
    e->grid = shape.grid;
    std::string detail;
    if (replaced) {
      detail = fmt::format("the chosen variant {} failed to compile; the built-in default is used",
                           planned.config.label());
    } else if (p.entry) {
      e->tuned_n = p.entry->n;
      e->expected_us = p.entry->median_us;
      e->expected_gbps = p.entry->gbps;
      detail = fmt::format("{} database: winner for {} -> {} n={} (the nearest tuned size in log2 to n={}), {}: "
                           "{:.2f} us", p.source == AMAX_SOURCE_USER_DB ? "user" : "system", to_string(d),
                           info(a.format).name, p.entry->n, n, p.entry->where, p.entry->median_us);
    } else if (p.source == AMAX_SOURCE_OVERRIDE) {
      detail = fmt::format("forced by {}", QuantizeFamily::kForceLabelEnv);
    } else {
      detail = p.why + fmt::format("no tuned quantize entry for {} {} -> {}: the built-in default", s.arch.name,
                                   to_string(d), info(a.format).name);
    }
    if (p.config.one_launch()) {
      e->launches = 1;
      detail += k ? fmt::format("; one cooperative launch of {} blocks (at most the {} per CU the device holds)",
                                shape.grid, k->resident_per_cu)
                  : std::string("; one cooperative launch (its grid is capped once the kernel is loaded)");
    } else {
      const Plan& fp = s.plan(d, n, Epilogue::scale);
      const Plan* fr = fp.replaced.load(std::memory_order_acquire);
      const Plan& f = fr ? *fr : fp;
      e->launches = static_cast<std::uint32_t>(f.shape.launches()) + 1;
      detail += fmt::format("; two-launch path: the fused {} (as amax_explain_scale), then the cast kernel",
                            f.config.label());
    }
    const std::string origin = code_object_origin(k);
    std::snprintf(e->detail, sizeof e->detail, "%s; %s", origin.c_str(), detail.c_str());
  });
}

}  // extern "C"
