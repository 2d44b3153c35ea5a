// The single-tensor plan cache (one immutable Plan per dtype and size bucket, per epilogue) and its
// compile fallback, and the calls over it: amax_workspace_size, amax_compute, amax_and_scale.

#include <algorithm>
#include <cstdint>
#include <mutex>

#include <fmt/format.h>

#include "amax/family.hpp"
#include "amax/search_space.hpp"
#include "context.hpp"

using namespace amax;
using namespace amax::capi;

namespace amax::capi {

template <class Config>
Decision<Config> decide(const ContextState& c, DType d, const typename DispatchRow<Config>::Query& q, Epilogue e) {
  Choice<Config> choice = c.tables->choose(d, q);
  Decision<Config> out{choice.config, static_cast<amax_source_t>(choice.source), choice.entry, std::move(choice.why)};
  out.config.epilogue = e;  // also over a forced label's
  if (e == Epilogue::scale && (choice.source != Source::override_env || out.config.validate(c.arch, d)))
    out.config = family_of_t<Config>::fused(choice.config, c.arch, d);
  return out;
}
template Decision<KernelConfig> decide(const ContextState&, DType, const std::uint64_t&, Epilogue);
template Decision<MultiConfig> decide(const ContextState&, DType, const GroupShape&, Epilogue);

}  // namespace amax::capi

std::unique_ptr<Plan> ContextState::make_plan(DType d, std::uint64_t n, Epilogue epilogue) const {
  auto p = std::make_unique<Plan>();
  static_cast<Decision<KernelConfig>&>(*p) = decide<KernelConfig>(*this, d, n, epilogue);
  p->shape = launch_shape(p->config, n, cu);
  p->workspace_bytes = std::max<std::uint64_t>(
      {4, p->shape.workspace_bytes, launch_shape(fallback_for(p->config, d, n), n, cu).workspace_bytes});
  return p;
}

KernelConfig ContextState::fallback_for(const KernelConfig& chosen, DType d, std::uint64_t n) const {
  return SingleFamily::fallback(chosen, arch, d, n, cu);
}

Plan& ContextState::plan(DType d, std::uint64_t n, Epilogue e) {
  return (e == Epilogue::amax ? plans : scale_plans).get(d, n, [&] { return make_plan(d, n, e); });
}

// The plan to launch for p, with its kernel loaded: p itself, loaded on first use (load_for_call),
// or, when p's variant fails to compile, a plan of the built-in default that replaces it.
// Thread-safe: plans are immutable once published.
const Plan& ContextState::ready(Plan& p, DType d, std::uint64_t n, StreamHandle stream) {
  if (const Plan* r = p.replaced.load(std::memory_order_acquire)) return *r;
  if (p.kernel.load(std::memory_order_acquire)) return p;
  const KernelConfig def = fallback_for(p.config, d, n);
  const auto got = load_for_call(*this, p.config, def, d, 0, stream, [&] {
    return fmt::format("kernel {} for {} n={} is not loaded and the stream is being captured: JIT compilation "
                       "is not allowed during graph capture; call {} for this dtype and size first",
                       p.config.label(), to_string(d), n,
                       p.config.epilogue == Epilogue::scale ? "amax_preload_scale" : "amax_preload");
  });
  if (got.fell_back) {
    auto fb = std::make_unique<Plan>();
    fb->config = def;
    fb->shape = launch_shape(def, n, cu);
    fb->workspace_bytes = p.workspace_bytes;  // covers the fallback by construction (make_plan)
    fb->kernel.store(got.kernel, std::memory_order_relaxed);
    return publish_replacement(p, std::move(fb), fallback_plans);
  }
  p.kernel.store(got.kernel, std::memory_order_release);
  return p;
}

namespace {

// The body of amax_compute and amax_and_scale (scale: the fused call's outputs and rule), after
// the output pointers were checked: everything else is checked before anything is enqueued.
void enqueue_call(const amax_context& ctx, const void* input, DType d, std::uint64_t n, float* output, void* workspace,
             std::size_t workspace_bytes, StreamHandle stream, const ScaleArgs* scale) {
  ContextState& c = *ctx.state;
  need_own_stream(c, stream);
  need_own_memory(c, output, scale ? "amax_out" : "output");
  if (n == 0) {  // +0.0 (and the rule's scale for it), no kernel
    launch_amax(*c.backend, LoadedKernel{}, LaunchShape{}, input, 0, output, workspace, nullptr, ctx.nan_mode, stream,
                scale);
    return;
  }
  need(input, "input");
  if (reinterpret_cast<std::uintptr_t>(input) % info(d).bytes)
    fail(AMAX_STATUS_MISALIGNED_POINTER, fmt::format("input {} is not aligned to the {}-byte elements of {}", input,
                                                     info(d).bytes, to_string(d)));
  need_own_memory(c, input, "input");
  if (workspace) need_own_memory(c, workspace, "workspace");
  Plan& planned = c.plan(d, n, scale ? Epilogue::scale : Epilogue::amax);
  const Plan& p = c.ready(planned, d, n, stream);
  if (workspace_bytes < planned.workspace_bytes || (!workspace && p.shape.workspace_bytes))
    fail(AMAX_STATUS_WORKSPACE_TOO_SMALL,
         fmt::format("workspace of {} bytes{} is too small for {} n={}: amax_workspace_size gives {} bytes",
                     workspace_bytes, workspace ? "" : " (NULL)", to_string(d), n, planned.workspace_bytes));
  c.launch(p, input, n, output, workspace, ctx.nan_mode, stream, scale);
}

}  // namespace

void ContextState::launch(const Plan& p, const void* input, std::uint64_t n, float* output, void* workspace,
                          NanMode nan_mode, StreamHandle stream, const ScaleArgs* scale) {
  const LoadedKernel& k = *p.kernel.load(std::memory_order_acquire);
  // A resident grid is capped at the blocks of its kernel the device holds at once, known once the
  // kernel is loaded (the plan's shape, made before, is capped at its row's max_grid only).
  const LaunchShape shape = p.shape.resident_grid ? launch_shape(p.config, n, cu, k.resident_per_cu) : p.shape;
  std::uint32_t* slot = shape.uses_slot ? slot_for(stream) : nullptr;
  launch_amax(*backend, k, shape, input, n, output, workspace, slot, nan_mode, stream, scale);
}

extern "C" {

AMAX_API amax_status_t amax_workspace_size(amax_context_t c, amax_dtype_t dtype, uint64_t n, size_t* bytes) {
  return guarded([&] {
    need(c, "context");
    need(bytes, "bytes (out-parameter)");
    const DType d = need_dtype(dtype);
    *bytes = n == 0 ? 4 : c->state->plan(d, n).workspace_bytes;
  });
}

AMAX_API amax_status_t amax_compute(amax_context_t c, const void* input, amax_dtype_t dtype, uint64_t n, float* output,
                                    void* workspace, size_t workspace_bytes, void* stream) {
  return guarded([&] {
    need(c, "context");
    need(output, "output");
    const DType d = need_dtype(dtype);
    need_aligned_output(output, "output");
    enqueue_call(*c, input, d, n, output, workspace, workspace_bytes, stream, nullptr);
  });
}

AMAX_API amax_status_t amax_and_scale(amax_context_t c, const void* input, amax_dtype_t dtype, uint64_t n,
                                      const amax_scale_options_t* options, float* amax_out, float* scale_out,
                                      float* scale_inv_out, void* workspace, size_t workspace_bytes, void* stream) {
  return guarded([&] {
    need(c, "context");
    const ScaleRule rule = scale_rule_of(options);
    need(amax_out, "amax_out");
    need(scale_out, "scale_out");
    need(scale_inv_out, "scale_inv_out");
    const DType d = need_dtype(dtype);
    need_aligned_output(amax_out, "amax_out");
    need_aligned_output(scale_out, "scale_out");
    need_aligned_output(scale_inv_out, "scale_inv_out");
    need_distinct_outputs(amax_out, scale_out, scale_inv_out);
    need_own_memory(*c->state, scale_out, "scale_out");
    need_own_memory(*c->state, scale_inv_out, "scale_inv_out");
    const ScaleArgs sa{scale_out, scale_inv_out, rule.max, rule.epsilon,
                       (rule.force_pow2 ? kRuleForcePow2 : 0u) | (rule.nan_propagates ? kRuleNanPropagates : 0u)};
    enqueue_call(*c, input, d, n, amax_out, workspace, workspace_bytes, stream, &sa);
  });
}

}  // extern "C"
