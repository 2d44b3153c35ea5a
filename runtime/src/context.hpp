#pragma once
// The API's implementation (amax_context, behind amax_tune.h), private to runtime/src. One file per
// job:
//   c_api.cpp           the C ABI's error handling (guarded, amax_last_error), context creation
//   checks.cpp          argument checks (dtype, NULL, alignment, device of streams and pointers,
//                       scale options)
//   plans.cpp           the single-tensor plan cache and its compile fallback; amax_compute,
//                       amax_and_scale
//   stream_slots.cpp    the per-stream slots of the strategies whose rows use one
//   multi_group.cpp     multi-tensor grouping (a list sorted into dtype groups, each with its
//                       variant); amax_multi_workspace_size
//   prepared_lists.cpp  the per-thread cache of prepared lists; amax_multi_compute,
//                       amax_multi_and_scale
//   explain_preload.cpp amax_explain*, amax_multi_explain, amax_preload*, amax_multi_preload*
//   quantize.cpp        the quantize plan cache and its compile fallback; amax_quantize*,
//                       amax_multi_quantize*
// Everything here has hidden visibility (the target's preset): libamax_tune exports AMAX_API only.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amax/amax_tune.h"
#include "amax/backend.hpp"
#include "amax/compile_fallback.hpp"
#include "amax/device_buffer.hpp"
#include "amax/dispatch.hpp"
#include "amax/fp8_cast.hpp"
#include "amax/family.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/launch.hpp"
#include "amax/multi_launch.hpp"
#include "amax/plan_cache.hpp"
#include "amax/scale_rule.hpp"

namespace amax::capi {

/// Thrown inside the library and turned into a status + message at the C boundary.
struct Failure {
  amax_status_t status;
  std::string message;
};
[[noreturn]] inline void fail(amax_status_t s, std::string m) { throw Failure{s, std::move(m)}; }

/// The status of the exception being handled (Failure: its own; CompileError, BackendError,
/// std::bad_alloc, any other), with its message stored as the thread's amax_last_error.
amax_status_t status_of_current_exception();
/// Clears the thread's amax_last_error (a call that succeeded).
void clear_last_error() noexcept;

/// Runs `fn` and returns AMAX_STATUS_SUCCESS, or the status of what it threw (the message goes to
/// amax_last_error).
template <class F>
amax_status_t guarded(F&& fn) {
  try {
    fn();
    clear_last_error();
    return AMAX_STATUS_SUCCESS;
  } catch (...) {
    return status_of_current_exception();
  }
}

/// What a call of either family runs and why (Plan: one tensor; MultiGroup: one dtype group of a
/// list): the variant with the call's epilogue, where it came from, the table entry used and, for
/// amax_explain / amax_multi_explain, why a forced label or the chosen variant is not used ("" when
/// nothing was passed over).
template <class Config>
struct Decision {
  Config config;
  amax_source_t source = AMAX_SOURCE_DEFAULT;
  const EntryOf<Config>* entry = nullptr;
  std::string why;
};

/// A dispatch decision for one (dtype, n).
struct Plan : Decision<KernelConfig> {
  LaunchShape shape;
  std::uint64_t workspace_bytes = 4;  // what amax_workspace_size reports (covers the fallback too)
  std::atomic<const LoadedKernel*> kernel{nullptr};
  /// Set (once) when this plan's variant failed to compile: the built-in default's plan to launch
  /// instead. Plans are never modified after publication, so readers need no lock.
  std::atomic<const Plan*> replaced{nullptr};
};

/// A quantize decision for one (dtype, n, format): the variant, its launch (sized; a one-launch
/// kind's grid is capped at its kernel's resident blocks when it runs) and the workspace, which
/// covers the compile fallback: the `cast` kind's is the fused amax plan's (it runs first).
struct QuantizePlan : Decision<QuantizeConfig> {
  Fp8Format format{};
  LaunchShape shape;
  std::uint64_t workspace_bytes = 4;
  std::atomic<const LoadedQuantizeKernel*> kernel{nullptr};
  /// Set (once) when the variant failed to compile: the built-in default's plan to launch instead.
  std::atomic<const QuantizePlan*> replaced{nullptr};
};

/// The arguments of one quantize call after their checks (checks.cpp: quantize_args_of).
struct QuantizeArgs {
  DType dtype{};
  Fp8Format format{};
  CastRule cast_rule{};
  ScaleArgs scale;  // scale and scale_inv outputs and the rule
};

std::uint64_t next_context_id();

/// What the contexts made from one amax_context_create share (amax_context_create_sibling): the
/// device, its JIT compiler and kernel cache, the dispatch tables, the plan caches, the compile
/// failures and the stream slots. Everything but the NaN mode, which the kernels take per launch.
/// Thread-safe as a context is (amax_tune.h, "Threads and streams").
struct ContextState {
  std::unique_ptr<amax::Backend> backend;
  std::shared_ptr<const amax::JitCompiler> compiler;
  std::unique_ptr<amax::KernelCache> kernels;
  amax::ArchInfo arch;
  std::uint32_t cu = 1;
  bool check_pointers = true;  // false where the process sees one GPU: no other device's memory exists
  std::string user_db, system_db;
  std::unique_ptr<amax::DispatchTables> tables;

  amax::PlanCache<Plan> plans;        // amax_compute's
  amax::PlanCache<Plan> scale_plans;  // amax_and_scale's: the same choice as fused_variant maps it
  std::array<amax::PlanCache<QuantizePlan>, amax::kFp8Formats.size()> quantize_plans;  // per format
  std::mutex fallback_mu;                                         // guards the fallback plans
  std::vector<std::unique_ptr<Plan>> fallback_plans;                 // default plans replacing failed variants
  std::vector<std::unique_ptr<QuantizePlan>> fallback_quantize_plans;
  amax::CompileFailures compile_failures;  // kernels of both families that failed to compile (not tried again)

  // Stream slots of the strategies whose rows use one: slot_words zeroed words per stream (the
  // words of the strategies the arch runs, launch_plan.hpp; the bytes: docs/api.md, held to these
  // constants by tests/runtime/test_stream_slots_doc.cpp), claimed lock-free (open addressing).
  static constexpr std::size_t kSlots = 4096;
  std::size_t slot_words = amax::kSlotWords;
  amax::DeviceBuffer slots;  // declared after backend: released before it
  std::array<std::atomic<std::uintptr_t>, kSlots> slot_keys{};

  // ---- plans (plans.cpp) ----
  std::unique_ptr<Plan> make_plan(amax::DType d, std::uint64_t n, amax::Epilogue epilogue) const;
  /// The variant that replaces `chosen` when it fails to compile (plans.cpp).
  amax::KernelConfig fallback_for(const amax::KernelConfig& chosen, amax::DType d, std::uint64_t n) const;
  Plan& plan(amax::DType d, std::uint64_t n, amax::Epilogue e = amax::Epilogue::amax);
  /// The plan to launch for p, with its kernel loaded (plans.cpp).
  const Plan& ready(Plan& p, amax::DType d, std::uint64_t n, amax::StreamHandle stream);

  /// Enqueues plan `p` (loaded) on n elements: its shape for the loaded kernel, the stream's slot
  /// where it uses one (plans.cpp). The caller checked every argument.
  void launch(const Plan& p, const void* input, std::uint64_t n, float* output, void* workspace,
              amax::NanMode nan_mode, amax::StreamHandle stream, const amax::ScaleArgs* scale);

  // ---- quantize plans (quantize.cpp) ----
  QuantizePlan& quantize_plan(amax::DType d, std::uint64_t n, amax::Fp8Format f);
  /// The plan to launch for p, with its kernel loaded (load_for_call; the built-in default's plan
  /// when p's variant fails to compile).
  const QuantizePlan& ready(QuantizePlan& p, amax::DType d, std::uint64_t n, amax::StreamHandle stream);

  /// Publishes `fb` (loaded) as the replacement of plan `p` whose variant failed to compile, kept in
  /// `store`: the one published first when threads race. Thread-safe (fallback_mu).
  template <class P>
  const P& publish_replacement(P& p, std::unique_ptr<P> fb, std::vector<std::unique_ptr<P>>& store) {
    std::lock_guard lock(fallback_mu);
    if (const P* r = p.replaced.load(std::memory_order_acquire)) return *r;  // another thread won
    store.push_back(std::move(fb));
    p.replaced.store(store.back().get(), std::memory_order_release);
    return *store.back();
  }

  /// This stream's slot of slot_words words (stream_slots.cpp).
  std::uint32_t* slot_for(amax::StreamHandle s);
};

}  // namespace amax::capi

/// A handle of the C API: a NaN mode over a shared ContextState (one per amax_context_create; a
/// sibling shares its creator's).
struct amax_context {
  /// Unique over the process's contexts (never reused, unlike addresses): what prepared multi-tensor
  /// lists are keyed by (their packed launches hold the NaN mode).
  const std::uint64_t id = amax::capi::next_context_id();
  std::shared_ptr<amax::capi::ContextState> state;
  amax::NanMode nan_mode = amax::NanMode::propagate;
};

namespace amax::capi {

/// The decision of c's tables for a call of either family on `query` (n, or the dtype group's
/// shape) with `epilogue`, the one place both families take it: DispatchTables::choose with the
/// call's epilogue set. A fused single-tensor call runs a table's or the default's choice as
/// fused_variant maps it (the scale epilogue; atomic's memset dropped by running it as self_reset:
/// the tables hold amax-only winners), and a forced variant as forced unless it cannot carry the
/// epilogue (KernelConfig::validate, e.g. first_reset), which fused_variant then maps too.
template <class Config>
Decision<Config> decide(const ContextState& c, DType d, const typename DispatchRow<Config>::Query& query,
                        Epilogue epilogue);

/// The one path by which a call of either family gets its kernel on `stream`: the kernel already
/// loaded, else, while the stream is being captured, the bundle's (loading is not a stream
/// operation), else during capture AMAX_STATUS_NOT_PRELOADED with `message()`; else loaded now by
/// the compile-fallback rule (load_or_fall_back: the kernel cache, and `fallback` when `chosen`
/// fails to compile, recorded in c.compile_failures). `capacity`: the list kernel's descriptors
/// per launch (0 for one tensor).
template <class Config, class Message>
FallbackLoad<const Loaded<Config>> load_for_call(ContextState& c, const Config& chosen, const Config& fallback,
                                                 DType d, std::uint32_t capacity, StreamHandle stream,
                                                 Message&& message) {
  const Loaded<Config>* k = c.kernels->find(chosen, d, capacity);
  if (!k && c.backend->is_capturing(stream)) {
    if (!(k = c.kernels->get_bundled(chosen, d, capacity))) fail(AMAX_STATUS_NOT_PRELOADED, message());
  }
  if (k) return {k, false};
  return load_or_fall_back(c.compile_failures, family_of_t<Config>::kernel_name(chosen, d, capacity), chosen, fallback,
                           [&](const Config& v) -> const Loaded<Config>& { return c.kernels->get(v, d, capacity); });
}

/// "code object: bundle" | "kernel cache" | "JIT (<ms> ms)" | "not loaded yet" (k null): the start
/// of every explanation's detail.
template <class Config>
std::string code_object_origin(const Loaded<Config>* k) {
  if (!k) return "code object: not loaded yet";
  if (k->origin == KernelOrigin::jit) return "code object: JIT (" + fmt::format("{:.1f}", k->compile_ms) + " ms)";
  return std::string("code object: ") + to_string(k->origin);
}

// ---- argument checks (checks.cpp; nan_mode_of: c_api.cpp) ----
/// The NaN mode `m`, or INVALID_ARGUMENT naming the argument `name` and its value.
NanMode nan_mode_of(amax_nan_mode_t m, const char* name);
DType need_dtype(amax_dtype_t d);
void need(const void* p, const char* name);
// The wrong-device checks of amax_compute (amax_tune.h "Several GPUs"): a stream or a pointer of
// another device or context is refused before anything is enqueued.
void need_own_stream(ContextState& c, StreamHandle s);
void need_own_memory(ContextState& c, const void* p, const char* name);
void need_aligned_output(const float* p, const char* name);
/// INVALID_ARGUMENT unless amax_out, scale_out and scale_inv_out are three distinct words.
void need_distinct_outputs(const float* amax_out, const float* scale_out, const float* scale_inv_out);
// The rule of amax_scale_options_t, validated (amax_tune.h, amax_scale_options_check).
ScaleRule scale_rule_of(const amax_scale_options_t* o);
/// amax_quantize's options, validated (amax_quantize_options_check; the format's device support is
/// the caller's check): the format, the cast rule and the scale rule (scale outputs left null).
QuantizeArgs quantize_options_of(const amax_quantize_options_t* o);
/// amax_quantize's arguments that need no device, in the order the call checks them (options,
/// the three fp32 outputs: NULL, alignment, distinct; dtype; input and output: NULL where n > 0,
/// alignment, overlap): Failure naming the first bad one and its value.
QuantizeArgs quantize_args_of(const void* input, amax_dtype_t dtype, std::uint64_t n,
                              const amax_quantize_options_t* options, const std::uint8_t* output, float* amax_out,
                              float* scale_out, float* scale_inv_out);
/// INVALID_ARGUMENT when `arch` cannot take format f (fnuz outside gfx942), naming both.
void need_format_on(const ArchInfo& arch, Fp8Format f);

// ---- many tensors per call (multi_group.cpp) ----

/// How the tensors of one dtype of a multi-tensor call are launched.
struct MultiGroup : Decision<MultiConfig> {
  std::uint32_t capacity = 0;
  std::vector<MultiLaunch> launches;
  std::uint64_t workspace_bytes = 0;    // covers the built-in default too (the compile fallback)
};
struct MultiCall {
  MultiList list;
  std::array<MultiGroup, kDTypeCount> groups;
};

void check(const std::optional<MultiListError>& e);

/// Validates the list (pointers too when `check_pointers`) and sorts it into one group per dtype,
/// each with its variant (with `epilogue`), launches and workspace. Reuses `m`'s storage. Throws
/// Failure naming the first bad tensor's index and value.
void group_multi(ContextState& c, const amax_tensor_t* t, std::size_t count, bool check_pointers, Epilogue epilogue,
                 MultiCall& m);

/// The loaded kernel of the group of dtype `d` (load_for_call); when its variant fails to compile,
/// the built-in default (use_multi_fallback rewrites the group for it).
const LoadedMultiKernel& ready_multi(ContextState& c, MultiCall& m, DType d, StreamHandle stream);

/// Runs group `d` of `m` as the built-in multi-tensor default (with its epilogue) because its
/// chosen variant failed to compile: source default, the reason for amax_multi_explain, its
/// launches split again.
void use_multi_fallback(ContextState& c, MultiCall& m, DType d);

/// This thread's MultiCall, reused by every multi-tensor call of the thread.
MultiCall& thread_call();

}  // namespace amax::capi
