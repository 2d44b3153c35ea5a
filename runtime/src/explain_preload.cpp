// What a call would run and why (amax_explain, amax_explain_scale, amax_multi_explain), and the
// loading of kernels ahead of graph capture (amax_preload*, amax_multi_preload*).
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "amax/search_space.hpp"
#include "context.hpp"

using namespace amax;
using namespace amax::capi;

namespace {

// amax_preload and amax_preload_scale: the kernels of the built-in defaults and of every (dtype, size).
void preload(ContextState& c, const amax_dtype_t* dtypes, size_t num_dtypes, const uint64_t* sizes, size_t num_sizes,
             Epilogue e) {
  if (num_dtypes) need(dtypes, "dtypes");
  if (num_sizes) need(sizes, "sizes");
  for (std::size_t i = 0; i < num_dtypes; ++i) {
    const DType d = need_dtype(dtypes[i]);
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1} << 30}) {
      KernelConfig def = builtin_default(c.arch, d, n);
      def.epilogue = e;
      c.kernels->get(def, d);
    }
    for (std::size_t j = 0; j < num_sizes; ++j)
      if (sizes[j]) c.ready(c.plan(d, sizes[j], e), d, sizes[j], nullptr);
  }
}

/// amax_multi_preload and amax_multi_preload_scale: the chosen and the default kernels of each group.
void preload_multi(ContextState& c, const amax_tensor_t* tensors, std::size_t count, Epilogue e) {
  MultiCall& t_call = thread_call();
  group_multi(c, tensors, count, false, e, t_call);
  for (const DTypeInfo& di : all_dtypes()) {
    const std::size_t i = index(di.dtype);
    if (t_call.groups[i].launches.empty()) continue;
    ready_multi(c, t_call, di.dtype, nullptr);
    MultiConfig def = builtin_multi_default(c.arch, di.dtype, t_call.list.shapes[i]);
    def.epilogue = e;
    c.kernels->get(def, di.dtype, t_call.groups[i].capacity);
  }
}

// What amax_explain_scale adds where the fused plan runs `fused` for the table's amax-only choice
// (make_plan's fused_variant changed its strategy).
std::string fused_note(const KernelConfig& amax_only, const KernelConfig& fused) {
  return fused.strategy == amax_only.strategy
             ? std::string()
             : !info(amax_only.strategy).scale_epilogue
                   ? fmt::format("; fused as {} ({}, the amax-only {}, has no scale epilogue)", fused.label(),
                                 to_string(amax_only.strategy), amax_only.label())
                   : fmt::format("; fused as {} (the amax-only {} without its memset launch)", fused.label(),
                                 amax_only.label());
}

// amax_explain (Epilogue::amax) and amax_explain_scale: the plan of (dtype, n) and where it came from.
void explain(amax_context_t ctx, amax_dtype_t dtype, uint64_t n, Epilogue epilogue, amax_explanation_t* e) {
  need(ctx, "context");
  ContextState* c = ctx->state.get();
  need(e, "explanation (out-parameter)");
  const DType d = need_dtype(dtype);
  std::memset(e, 0, sizeof *e);
  const bool fused = epilogue == Epilogue::scale;
  if (n == 0) {
    e->source = AMAX_SOURCE_DEFAULT;
    e->workspace_bytes = 4;
    std::snprintf(e->detail, sizeof e->detail, "%s",
                  fused ? "n = 0: amax +0.0 and the rule's scale and scale_inv for it are written with memsets; no "
                          "kernel is launched"
                        : "n = 0: +0.0 is written with a memset; no kernel is launched");
    e->launches = fused ? 3 : 1;
    return;
  }
  const Plan& planned = c->plan(d, n, epilogue);
  const Plan* replaced = planned.replaced.load(std::memory_order_acquire);
  const Plan& p = replaced ? *replaced : planned;
  e->source = p.source;
  std::snprintf(e->label, sizeof e->label, "%s", p.config.label().c_str());
  e->grid = p.shape.grid;
  e->launches = static_cast<std::uint32_t>(p.shape.launches());
  e->workspace_bytes = p.workspace_bytes;
  std::string detail, note;  // note: where the fused call runs another strategy than the table's choice
  if (replaced) {
    detail = fmt::format("the chosen variant {} failed to compile; the built-in default of the arch family is used",
                         planned.config.label());
  } else if (p.entry) {
    e->tuned_n = p.entry->n;
    e->expected_us = p.entry->median_us;
    e->expected_gbps = p.entry->gbps;
    detail = fmt::format("{} database {}: winner for {} n={} (the nearest tuned size in log2 to n={}), {}: "
                         "{:.2f} us, {:.0f} GB/s",
                         p.source == AMAX_SOURCE_USER_DB ? "user" : "system",
                         p.source == AMAX_SOURCE_USER_DB ? c->user_db : c->system_db, to_string(d), p.entry->n, n,
                         p.entry->where, p.entry->median_us, p.entry->gbps);
    if (fused) note = fused_note(p.entry->config, p.config);
  } else if (p.source == AMAX_SOURCE_OVERRIDE) {
    detail = p.why.empty() && c->tables->forced_label<KernelConfig>()  // a forced label not used says why
                 ? "forced by AMAX_TUNE_FORCE_LABEL"
                 : "forced strategy (AMAX_TUNE_FORCE_STRATEGY or NVTE_USE_ATOMIC_AMAX=1) on the built-in default";
    if (fused) detail += " (a forced variant runs fused as forced: an atomic one keeps its memset launch)";
  } else {
    detail = fmt::format("no tuned entry for {} {} in the user ({}) or system ({}) database: built-in default, {}",
                         c->arch.name, to_string(d), c->user_db.empty() ? "disabled" : c->user_db,
                         c->system_db.empty() ? "disabled" : c->system_db, builtin_default_source(c->arch));
    if (fused) note = fused_note(builtin_default(c->arch, d, n), p.config);
  }
  if (!replaced) detail = p.why + detail;  // why a forced label is not used, as amax_multi_explain says it
  const std::string origin = code_object_origin(p.kernel.load(std::memory_order_acquire));
  std::snprintf(e->detail, sizeof e->detail, "%s%s; %s", origin.c_str(), note.c_str(), detail.c_str());
}

}  // namespace

extern "C" {

AMAX_API amax_status_t amax_preload(amax_context_t c, const amax_dtype_t* dtypes, size_t num_dtypes,
                                    const uint64_t* sizes, size_t num_sizes) {
  return guarded([&] {
    need(c, "context");
    preload(*c->state, dtypes, num_dtypes, sizes, num_sizes, Epilogue::amax);
  });
}

AMAX_API amax_status_t amax_preload_scale(amax_context_t c, const amax_dtype_t* dtypes, size_t num_dtypes,
                                          const uint64_t* sizes, size_t num_sizes) {
  return guarded([&] {
    need(c, "context");
    preload(*c->state, dtypes, num_dtypes, sizes, num_sizes, Epilogue::scale);
  });
}

AMAX_API amax_status_t amax_explain(amax_context_t c, amax_dtype_t dtype, uint64_t n, amax_explanation_t* e) {
  return guarded([&] { explain(c, dtype, n, Epilogue::amax, e); });
}

AMAX_API amax_status_t amax_explain_scale(amax_context_t c, amax_dtype_t dtype, uint64_t n, amax_explanation_t* e) {
  return guarded([&] { explain(c, dtype, n, Epilogue::scale, e); });
}

AMAX_API amax_status_t amax_multi_preload(amax_context_t c, const amax_tensor_t* tensors, size_t count) {
  return guarded([&] {
    need(c, "context");
    preload_multi(*c->state, tensors, count, Epilogue::amax);
  });
}

AMAX_API amax_status_t amax_multi_preload_scale(amax_context_t c, const amax_tensor_t* tensors, size_t count) {
  return guarded([&] {
    need(c, "context");
    preload_multi(*c->state, tensors, count, Epilogue::scale);
  });
}

AMAX_API amax_status_t amax_multi_explain(amax_context_t c, const amax_tensor_t* tensors, size_t count,
                                          amax_dtype_t dtype, amax_multi_explanation_t* e) {
  return guarded([&] {
    need(c, "context");
    need(e, "explanation (out-parameter)");
    const DType d = need_dtype(dtype);
    MultiCall& t_call = thread_call();
    group_multi(*c->state, tensors, count, false, Epilogue::amax, t_call);
    std::memset(e, 0, sizeof *e);
    const MultiGroup& x = t_call.groups[index(d)];
    const GroupShape& shape = t_call.list.shapes[index(d)];
    e->source = AMAX_SOURCE_DEFAULT;
    if (x.launches.empty()) {
      std::snprintf(e->detail, sizeof e->detail, "the list holds no %s tensor", std::string(to_string(d)).c_str());
      return;
    }
    e->source = x.source;
    std::snprintf(e->label, sizeof e->label, "%s", x.config.label().c_str());
    e->tensors = shape.tensors;
    e->total_bytes = shape.total_bytes;
    e->largest_bytes = shape.largest_bytes;
    e->launches = static_cast<std::uint32_t>(x.launches.size());
    e->tensors_per_launch = x.capacity;
    e->workspace_bytes = x.workspace_bytes;
    const std::string detail =
        x.source == AMAX_SOURCE_OVERRIDE ? std::string("forced by AMAX_TUNE_FORCE_MULTI_LABEL")
        : x.entry
            ? fmt::format("{} database {}: winner for {} x {} B tensors ({} B in all, the largest {} B; this list: {} "
                          "tensors, {} B, the largest {} B; nearest group bucket), {}: {:.2f} us, {:.0f} GB/s",
                          x.source == AMAX_SOURCE_USER_DB ? "user" : "system",
                          x.source == AMAX_SOURCE_USER_DB ? c->state->user_db : c->state->system_db, x.entry->shape.tensors,
                          x.entry->shape.largest_bytes, x.entry->shape.total_bytes, x.entry->shape.largest_bytes,
                          shape.tensors, shape.total_bytes, shape.largest_bytes, x.entry->where, x.entry->median_us,
                          x.entry->gbps)
            : x.why + fmt::format("built-in multi-tensor default of the arch family for {} tensors, {} bytes, the "
                                  "largest {} bytes", shape.tensors, shape.total_bytes, shape.largest_bytes);
    std::snprintf(e->detail, sizeof e->detail, "%s", detail.c_str());
  });
}

}  // extern "C"
