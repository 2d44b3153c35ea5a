// The per-thread cache of prepared multi-tensor lists (a list enqueued again is served without its
// validation, split and packing), and the calls over it: amax_multi_compute, amax_multi_and_scale.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "context.hpp"

using namespace amax;
using namespace amax::capi;

namespace {

/// A list this thread enqueued before on one context, prepared: its groups and one packed
/// parameter struct per launch (the per-call pointers are rewritten on every use). A training step
/// takes the amax of the same tensors every step, so the list (pointers, counts, dtypes, order)
/// repeats and its validation, split and packing are done once.
struct PreparedList {
  std::uint64_t context_id = 0;
  Epilogue epilogue{};
  std::vector<amax_tensor_t> list;
  std::array<MultiGroup, kDTypeCount> groups;
  std::array<const LoadedMultiKernel*, kDTypeCount> kernels{};
  std::array<std::vector<std::vector<unsigned char>>, kDTypeCount> args;  // one packed struct per launch
  std::uint64_t need_ws = 4;
  bool slot = false;
  std::uint64_t used = 0;  // this thread's use clock, for the least-recently-used eviction
  std::size_t bytes = 0;   // host memory it holds
};
/// At most this many prepared lists, and this many bytes of them, per thread.
constexpr std::size_t kPreparedLists = AMAX_MULTI_PREPARED_LISTS;
constexpr std::size_t kPreparedBytes = 64u << 20;
thread_local std::vector<std::unique_ptr<PreparedList>> t_prepared;
thread_local std::uint64_t t_prepared_clock = 0;

PreparedList* find_prepared(std::uint64_t context_id, Epilogue e, const amax_tensor_t* t, std::size_t count) {
  for (auto& p : t_prepared) {
    if (p->context_id != context_id || p->epilogue != e || p->list.size() != count) continue;
    std::size_t i = 0;
    for (; i < count; ++i)  // field by field: the struct's padding may hold anything
      if (t[i].data != p->list[i].data || t[i].n != p->list[i].n || t[i].dtype != p->list[i].dtype) break;
    if (i == count) {
      p->used = ++t_prepared_clock;
      return p.get();
    }
  }
  return nullptr;
}

/// Readies the kernels of the list that group_multi just sorted into the thread's MultiCall (ready_multi), packs
/// its launches and keeps it prepared, dropping the least recently used lists beyond
/// kPreparedLists or kPreparedBytes.
PreparedList& prepare_list(const amax_context& ctx, const amax_tensor_t* tensors, std::size_t count, Epilogue e,
                           StreamHandle stream) {
  ContextState& c = *ctx.state;
  MultiCall& t_call = thread_call();
  auto p = std::make_unique<PreparedList>();
  for (const DTypeInfo& di : all_dtypes()) {
    const std::size_t i = index(di.dtype);
    if (t_call.groups[i].launches.empty()) continue;
    p->kernels[i] = &ready_multi(c, t_call, di.dtype, stream);  // may replace the variant by the default
    const MultiGroup& x = t_call.groups[i];
    for (const MultiLaunch& l : x.launches) {
      p->slot = p->slot || l.spanning;
      p->args[i].emplace_back();
      pack_multi_args(p->args[i].back(), x.capacity, t_call.list.tensors[i], l, x.config, di.dtype, nullptr,
                      nullptr, nullptr, ctx.nan_mode, nullptr);
      p->bytes += p->args[i].back().size();
    }
    // What its launches need: its kernels are loaded (a variant that failed to compile is already
    // replaced by the default), so no fallback remains to cover. amax_multi_workspace_size of the
    // same list, asked after the failure, gives the default's workspace: a list prepared before
    // must not ask for more (its pointers may come back from the allocator for another list).
    p->need_ws = std::max(p->need_ws, multi_workspace_bytes(x.launches));
  }
  p->groups = t_call.groups;
  p->context_id = ctx.id;
  p->epilogue = e;
  p->list.assign(tensors, tensors + count);
  p->bytes += count * sizeof(amax_tensor_t);
  p->used = ++t_prepared_clock;
  std::size_t total = p->bytes;
  for (const auto& q : t_prepared) total += q->bytes;
  while (!t_prepared.empty() && (t_prepared.size() >= kPreparedLists || total > kPreparedBytes)) {
    auto lru = std::min_element(t_prepared.begin(), t_prepared.end(),
                                [](const auto& a, const auto& b) { return a->used < b->used; });
    total -= (*lru)->bytes;
    t_prepared.erase(lru);
  }
  t_prepared.push_back(std::move(p));
  return *t_prepared.back();
}

/// amax_multi_compute (scale == nullptr) and amax_multi_and_scale: validates everything, then
/// enqueues every launch of every dtype group. A list this thread enqueued before on this context
/// is served prepared (find_prepared); only the outputs, workspace and stream are checked again
/// (and each tensor's device where the process sees several GPUs).
void enqueue_multi(const amax_context& ctx, const amax_tensor_t* tensors, std::size_t count, float* output,
                   const MultiScaleArgs* scale, void* workspace, std::size_t workspace_bytes, void* stream) {
  ContextState& c = *ctx.state;
  const Epilogue e = scale ? Epilogue::scale : Epilogue::amax;
  // The array itself first: the lookup reads tensors[i]. An entry the lookup matches equals one
  // of a list validated when it was prepared, so the entries need no second check.
  check(check_multi_list_array(tensors, count));
  PreparedList* p = count ? find_prepared(ctx.id, e, tensors, count) : nullptr;
  MultiCall& t_call = thread_call();
  if (!p) group_multi(c, tensors, count, true, e, t_call);  // the list's own errors come first
  const char* out_name = scale ? "amax_out" : "output";
  check(check_multi_output(output, count, out_name));
  if (scale) {
    check(check_multi_output(scale->scale, count, "scale_out"));
    check(check_multi_output(scale->scale_inv, count, "scale_inv_out"));
    check(check_multi_outputs_disjoint({output, scale->scale, scale->scale_inv}, count));
  }
  if (count == 0) return;
  need_own_stream(c, stream);
  need_own_memory(c, output, out_name);
  if (scale) {
    need_own_memory(c, scale->scale, "scale_out");
    need_own_memory(c, scale->scale_inv, "scale_inv_out");
  }
  if (workspace) need_own_memory(c, workspace, "workspace");
  if (c.check_pointers)
    for (std::size_t i = 0; i < count; ++i)
      if (tensors[i].n) need_own_memory(c, tensors[i].data, fmt::format("tensors[{}].data", i).c_str());
  // Everything that can fail before a launch is done for every group first: a call that fails
  // writes no output.
  if (!p) {
    std::uint64_t need_ws = 4;
    for (const MultiGroup& x : t_call.groups)
      if (!x.launches.empty()) need_ws = std::max(need_ws, x.workspace_bytes);  // covers the fallback too
    if (workspace_bytes < need_ws || !workspace)
      fail(AMAX_STATUS_WORKSPACE_TOO_SMALL,
           fmt::format("workspace of {} bytes{} is too small for this list of {} tensors: amax_multi_workspace_size "
                       "gives {} bytes", workspace_bytes, workspace ? "" : " (NULL)", count, need_ws));
    p = &prepare_list(ctx, tensors, count, e, stream);
  }
  if (workspace_bytes < p->need_ws || !workspace)
    fail(AMAX_STATUS_WORKSPACE_TOO_SMALL,
         fmt::format("workspace of {} bytes{} is too small for this list of {} tensors: amax_multi_workspace_size "
                     "gives {} bytes", workspace_bytes, workspace ? "" : " (NULL)", count, p->need_ws));
  std::uint32_t* counter = p->slot ? c.slot_for(stream) : nullptr;
  for (const DTypeInfo& di : all_dtypes()) {
    const std::size_t i = index(di.dtype);
    if (!p->kernels[i]) continue;
    const MultiGroup& x = p->groups[i];
    for (std::size_t j = 0; j < x.launches.size(); ++j) {
      patch_multi_args(p->args[i][j], output, workspace, counter, scale);
      void* params[] = {p->args[i][j].data()};
      enqueue(*c.backend, multi_launch_op(x.launches[j], x.config), p->kernels[i]->main, params, output, stream);
    }
  }
}

}  // namespace

extern "C" {

AMAX_API amax_status_t amax_multi_compute(amax_context_t c, const amax_tensor_t* tensors, size_t count, float* output,
                                          void* workspace, size_t workspace_bytes, void* stream) {
  return guarded([&] {
    need(c, "context");
    enqueue_multi(*c, tensors, count, output, nullptr, workspace, workspace_bytes, stream);
  });
}

AMAX_API amax_status_t amax_multi_and_scale(amax_context_t c, const amax_tensor_t* tensors, size_t count,
                                            const amax_scale_options_t* options, float* amax_out, float* scale_out,
                                            float* scale_inv_out, void* workspace, size_t workspace_bytes,
                                            void* stream) {
  return guarded([&] {
    need(c, "context");
    const ScaleRule rule = scale_rule_of(options);
    const MultiScaleArgs sa{scale_out, scale_inv_out, rule.max, rule.epsilon,
                            (rule.force_pow2 ? kRuleForcePow2 : 0u) | (rule.nan_propagates ? kRuleNanPropagates : 0u)};
    enqueue_multi(*c, tensors, count, amax_out, &sa, workspace, workspace_bytes, stream);
  });
}

}  // extern "C"
