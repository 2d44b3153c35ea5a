// Multi-tensor grouping: a list validated and sorted into one group per dtype, each with its variant
// (override, user database, system database, built-in default), launches and workspace; the
// group's kernel loaded, with the built-in default when the chosen variant fails to compile.

#include <algorithm>

#include <fmt/format.h>

#include "amax/search_space.hpp"
#include "context.hpp"

namespace amax::capi {

void check(const std::optional<MultiListError>& e) {
  if (e) fail(e->status, e->message);
}

void group_multi(ContextState& c, const amax_tensor_t* t, std::size_t count, bool check_pointers, Epilogue epilogue,
                 MultiCall& m) {
  check(sort_multi_list(t, count, check_pointers, m.list));
  for (const DTypeInfo& di : all_dtypes()) {
    MultiGroup& x = m.groups[index(di.dtype)];
    const auto& tensors = m.list.tensors[index(di.dtype)];
    const GroupShape& shape = m.list.shapes[index(di.dtype)];
    x.launches.clear();
    if (tensors.empty()) continue;
    static_cast<Decision<MultiConfig>&>(x) = decide<MultiConfig>(c, di.dtype, shape, epilogue);
    const MultiConfig def = MultiFamily::fallback(x.config, c.arch, di.dtype, shape, c.cu);
    x.capacity = multi_capacity_for(c.arch, shape.tensors);
    // A variant that failed to compile before runs as the default, as a single tensor's plan does.
    if (!(x.config == def) && c.compile_failures.failed(multi_kernel_name(x.config, di.dtype, x.capacity)))
      use_multi_fallback(c, m, di.dtype);
    else
      x.launches = split_multi_launches(tensors, x.config, di.dtype, c.cu, x.capacity);
    x.workspace_bytes = multi_workspace_bytes(x.launches);
    if (!(x.config == def))  // the workspace covers the compile fallback too
      x.workspace_bytes = std::max(x.workspace_bytes,
                                   multi_workspace_bytes(split_multi_launches(tensors, def, di.dtype, c.cu, x.capacity)));
  }
}

void use_multi_fallback(ContextState& c, MultiCall& m, DType d) {
  MultiGroup& x = m.groups[index(d)];
  const MultiConfig def = MultiFamily::fallback(x.config, c.arch, d, m.list.shapes[index(d)], c.cu);
  x.why = fmt::format("the chosen variant {} failed to compile: ", x.config.label());
  x.config = def;
  x.source = AMAX_SOURCE_DEFAULT;
  x.entry = nullptr;
  x.launches = split_multi_launches(m.list.tensors[index(d)], def, d, c.cu, x.capacity);
}

const LoadedMultiKernel& ready_multi(ContextState& c, MultiCall& m, DType d, StreamHandle stream) {
  MultiGroup& x = m.groups[index(d)];
  const MultiConfig def = MultiFamily::fallback(x.config, c.arch, d, m.list.shapes[index(d)], c.cu);
  const auto got = load_for_call(c, x.config, def, d, x.capacity, stream, [&] {
    return fmt::format("multi-tensor kernel {} for {} ({} descriptors per launch) is not loaded and the stream is "
                       "being captured: JIT compilation is not allowed during graph capture; call {} with a list of "
                       "this shape first",
                       x.config.kernel_label(), to_string(d), x.capacity,
                       x.config.epilogue == Epilogue::scale ? "amax_multi_preload_scale" : "amax_multi_preload");
  });
  if (got.fell_back) use_multi_fallback(c, m, d);
  return *got.kernel;
}

MultiCall& thread_call() {
  thread_local MultiCall call;
  return call;
}

}  // namespace amax::capi

using namespace amax;
using namespace amax::capi;

extern "C" {

AMAX_API amax_status_t amax_multi_workspace_size(amax_context_t c, const amax_tensor_t* tensors, size_t count,
                                                 size_t* bytes) {
  return guarded([&] {
    need(c, "context");
    need(bytes, "bytes (out-parameter)");
    MultiCall& t_call = thread_call();
    group_multi(*c->state, tensors, count, false, Epilogue::amax, t_call);
    std::uint64_t b = 4;
    for (const MultiGroup& x : t_call.groups)
      if (!x.launches.empty()) b = std::max(b, x.workspace_bytes);
    *bytes = b;
  });
}

}  // extern "C"
