// The runtime library: amax_context (dispatch from the tuning tables) behind the C API.
#include "amax/log.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "amax/amax_tune.h"
#include "amax/backend.hpp"
#include "amax/device_buffer.hpp"
#include "amax/dispatch.hpp"
#include "amax/dtype_c.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/launch.hpp"
#include "amax/multi_launch.hpp"
#include "amax/paths.hpp"
#include "amax/plan_cache.hpp"
#include "amax/render.hpp"
#include "amax/scale_rule.hpp"
#include "amax/search_space.hpp"

namespace {

using namespace amax;

thread_local std::string g_last_error;

/// Thrown inside the library and turned into a status + message at the C boundary.
struct Failure {
  amax_status_t status;
  std::string message;
};
[[noreturn]] void fail(amax_status_t s, std::string m) { throw Failure{s, std::move(m)}; }

DType need_dtype(amax_dtype_t d) {
  auto t = from_c(d);
  if (!t) fail(AMAX_STATUS_UNKNOWN_DTYPE, fmt::format("unknown dtype {} (expected AMAX_DTYPE_FP32 = 0, "
                                                      "AMAX_DTYPE_FP16 = 1 or AMAX_DTYPE_BF16 = 2)", static_cast<int>(d)));
  return *t;
}

/// A dispatch decision for one (dtype, n).
struct Plan {
  KernelConfig config;
  LaunchShape shape;
  std::uint64_t workspace_bytes = 4;  // what amax_workspace_size reports (covers the fallback too)
  amax_source_t source = AMAX_SOURCE_DEFAULT;
  const TableEntry* entry = nullptr;
  std::atomic<const LoadedKernel*> kernel{nullptr};
  /// Set (once) when this plan's variant failed to compile: the built-in default's plan to launch
  /// instead. Plans are never modified after publication, so readers need no lock.
  std::atomic<const Plan*> replaced{nullptr};
};

std::uint64_t next_context_id() {
  static std::atomic<std::uint64_t> next{1};
  return next++;
}

}  // namespace

struct amax_context {
  /// Unique over the process's contexts (never reused, unlike addresses): what prepared multi-tensor
  /// lists are keyed by.
  const std::uint64_t id = next_context_id();
  std::unique_ptr<Backend> backend;
  std::shared_ptr<const JitCompiler> compiler;
  std::unique_ptr<KernelCache> kernels;
  ArchInfo arch;
  NanMode nan_mode = NanMode::propagate;
  std::uint32_t cu = 1;
  bool check_pointers = true;  // false where the process sees one GPU: no other device's memory exists
  std::string user_db, system_db;
  std::unique_ptr<DispatchTables> tables;

  PlanCache<Plan> plans;        // amax_compute's
  PlanCache<Plan> scale_plans;  // amax_and_scale's: the same choice as fused_variant maps it
  std::optional<MultiConfig> force_multi;  // AMAX_TUNE_FORCE_MULTI_LABEL, when it parsed
  std::mutex fallback_mu;                             // guards fallback_plans
  std::vector<std::unique_ptr<Plan>> fallback_plans;  // default plans replacing failed variants

  // Stream slots of one_pass, self_reset and spin: slot_words zeroed words per stream (arrival
  // count, self_reset's accumulator and, where the arch runs spin, spin's per-block words:
  // kSlotWords = 4104 bytes, 16.8 MB for the 4096 slots; elsewhere kSpinFirstWord = 8 bytes,
  // 32 KiB), claimed lock-free (open addressing).
  static constexpr std::size_t kSlots = 4096;
  std::size_t slot_words = kSlotWords;
  DeviceBuffer slots;  // declared after backend: released before it
  std::array<std::atomic<std::uintptr_t>, kSlots> slot_keys{};

  // ---- plans ----
  // The fused call runs amax_compute's choice as fused_variant maps it (the scale epilogue; atomic's
  // memset dropped by running it as self_reset): the tuned tables hold amax-only winners (the
  // epilogue runs once per call, in one thread, after the reduction). A forced variant runs as
  // forced, with the epilogue of the call.
  std::unique_ptr<Plan> make_plan(DType d, std::uint64_t n, Epilogue epilogue) const {
    auto p = std::make_unique<Plan>();
    const Choice c = tables->choose(d, n);
    p->config = c.config;
    p->config.epilogue = epilogue;  // also over a forced label's
    if (epilogue == Epilogue::scale && c.source != Source::override_env) p->config = fused_variant(c.config, arch, d);
    p->source = static_cast<amax_source_t>(c.source);
    p->entry = c.entry;
    p->shape = launch_shape(p->config, n, cu);
    p->workspace_bytes = std::max<std::uint64_t>(
        {4, p->shape.workspace_bytes, launch_shape(fallback_for(p->config, d, n), n, cu).workspace_bytes});
    return p;
  }

  // The variant that replaces `chosen` when it fails to compile: the built-in default of the arch
  // family, but never one that needs more workspace than `chosen` (a workspace-free variant such
  // as self_reset or atomic falls back to the default's shape with the atomic strategy, which
  // needs none), so amax_workspace_size reports what the chosen variant needs (at least 4 bytes).
  KernelConfig fallback_for(const KernelConfig& chosen, DType d, std::uint64_t n) const {
    KernelConfig def = builtin_default(arch, d, n);
    def.epilogue = chosen.epilogue;
    if (launch_shape(def, n, cu).workspace_bytes > launch_shape(chosen, n, cu).workspace_bytes)
      def.strategy = Strategy::atomic;
    return def;
  }

  Plan& plan(DType d, std::uint64_t n, Epilogue e = Epilogue::amax) {
    return (e == Epilogue::amax ? plans : scale_plans).get(d, n, [&] { return make_plan(d, n, e); });
  }

  // The loaded kernel of a plan: compiled/loaded on first use, never during capture; when the
  // chosen variant fails to compile, the built-in default is used (one warning).
  // The plan to launch for p, with its kernel loaded: p itself, compiled or loaded on first use
  // (never during capture), or, when p's variant fails to compile, a plan of the built-in default
  // that replaces it (one warning). Thread-safe: plans are immutable once published.
  const Plan& ready(Plan& p, DType d, std::uint64_t n, StreamHandle stream) {
    if (const Plan* r = p.replaced.load(std::memory_order_acquire)) return *r;
    if (p.kernel.load(std::memory_order_acquire)) return p;
    const LoadedKernel* k = kernels->find(p.config, d);
    if (!k && backend->is_capturing(stream)) k = kernels->get_bundled(p.config, d);  // loading is not a stream operation
    if (!k && backend->is_capturing(stream))
      fail(AMAX_STATUS_NOT_PRELOADED,
           fmt::format("kernel {} for {} n={} is not loaded and the stream is being captured: JIT compilation "
                       "is not allowed during graph capture; call {} for this dtype and size first",
                       p.config.label(), to_string(d), n,
                       p.config.epilogue == Epilogue::scale ? "amax_preload_scale" : "amax_preload"));
    if (!k) {
      try {
        k = &kernels->get(p.config, d);
      } catch (const CompileError& e) {
        const KernelConfig def = fallback_for(p.config, d, n);
        if (p.config == def) fail(AMAX_STATUS_COMPILE_FAILED, e.what());
        log().warn("{} failed to compile; using the built-in default {}: {}", p.config.label(), def.label(), e.what());
        auto fb = std::make_unique<Plan>();
        fb->config = def;
        fb->shape = launch_shape(def, n, cu);
        fb->workspace_bytes = p.workspace_bytes;  // covers the fallback by construction (make_plan)
        fb->kernel.store(&kernels->get(def, d), std::memory_order_relaxed);
        std::lock_guard lock(fallback_mu);
        if (const Plan* r = p.replaced.load(std::memory_order_acquire)) return *r;  // another thread won
        fallback_plans.push_back(std::move(fb));
        p.replaced.store(fallback_plans.back().get(), std::memory_order_release);
        return *fallback_plans.back();
      }
    }
    p.kernel.store(k, std::memory_order_release);
    return p;
  }

  std::uint32_t* slot_for(StreamHandle s) {
    // Key: the stream handle (+1, so that the legacy stream NULL is a key too). The per-thread
    // default stream (cudaStreamPerThread / hipStreamPerThread, handle 2) is another stream in
    // every thread: keyed by the thread, with low bits 11 that no handle + 1 has.
    std::uintptr_t key = reinterpret_cast<std::uintptr_t>(s) + 1;
    if (reinterpret_cast<std::uintptr_t>(s) == 2)
      key = (static_cast<std::uintptr_t>(std::hash<std::thread::id>{}(std::this_thread::get_id())) << 2) | 3u;
    std::size_t i = (key * 0x9e3779b97f4a7c15ull) >> 52;  // 12 bits: 4096 slots
    for (std::size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) % kSlots) {
      std::uintptr_t cur = slot_keys[i].load(std::memory_order_acquire);
      if (cur == key) return slots.get<std::uint32_t>() + slot_words * i;
      if (cur == 0 && slot_keys[i].compare_exchange_strong(cur, key, std::memory_order_acq_rel))
        return slots.get<std::uint32_t>() + slot_words * i;
      if (cur == key) return slots.get<std::uint32_t>() + slot_words * i;
    }
    fail(AMAX_STATUS_TOO_MANY_STREAMS, fmt::format("more than {} distinct streams used one_pass, self_reset or "
                                                   "spin kernels of this context; create another context", kSlots));
  }
};

namespace {

amax_status_t guarded(auto&& fn) {
  try {
    fn();
    g_last_error.clear();
    return AMAX_STATUS_SUCCESS;
  } catch (const Failure& f) {
    g_last_error = f.message;
    return f.status;
  } catch (const CompileError& e) {
    g_last_error = e.what();
    return AMAX_STATUS_COMPILE_FAILED;
  } catch (const BackendError& e) {
    g_last_error = e.what();
    return AMAX_STATUS_DRIVER_ERROR;
  } catch (const std::bad_alloc&) {
    g_last_error = "out of host memory";
    return AMAX_STATUS_INTERNAL_ERROR;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return AMAX_STATUS_INTERNAL_ERROR;
  } catch (...) {
    g_last_error = "unknown error";
    return AMAX_STATUS_INTERNAL_ERROR;
  }
}

void need(const void* p, const char* name) {
  if (!p) fail(AMAX_STATUS_NULL_POINTER, fmt::format("{} is NULL", name));
}

// The wrong-device checks of amax_compute (amax_tune.h "Several GPUs"): a stream or a pointer of
// another device or context is refused before anything is enqueued.
std::string this_device(const amax_context& c) {
  const DeviceInfo& d = c.backend->device();
  return fmt::format("device {} ({}, {})", d.ordinal, d.name, d.arch);
}

void need_own_stream(amax_context& c, StreamHandle s) {
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

void need_own_memory(amax_context& c, const void* p, const char* name) {
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

// The body of amax_compute and amax_and_scale (scale: the fused call's outputs and rule), after
// the output pointers were checked: everything else is checked before anything is enqueued.
void enqueue(amax_context& c, const void* input, DType d, std::uint64_t n, float* output, void* workspace,
             std::size_t workspace_bytes, StreamHandle stream, const ScaleArgs* scale) {
  need_own_stream(c, stream);
  need_own_memory(c, output, scale ? "amax_out" : "output");
  if (n == 0) {  // +0.0 (and the rule's scale for it), no kernel
    launch_amax(*c.backend, LoadedKernel{}, LaunchShape{}, input, 0, output, workspace, nullptr, c.nan_mode, stream,
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
  const LoadedKernel& k = *p.kernel.load(std::memory_order_acquire);
  // spin's grid is capped at the blocks of its kernel the device holds at once, known once the
  // kernel is loaded (the plan's shape, made before, is capped at kSpinMaxBlocks only).
  const LaunchShape shape =
      p.config.strategy == Strategy::spin ? launch_shape(p.config, n, c.cu, k.resident_per_cu) : p.shape;
  std::uint32_t* slot = shape.uses_slot ? c.slot_for(stream) : nullptr;
  launch_amax(*c.backend, k, shape, input, n, output, workspace, slot, c.nan_mode, stream, scale);
}

}  // namespace


namespace {

// ---- many tensors per call ----

/// How the tensors of one dtype of a multi-tensor call are launched.
struct MultiGroup {
  MultiConfig config;
  amax_source_t source = AMAX_SOURCE_DEFAULT;
  std::string why;                      // for amax_multi_explain
  const GroupEntry* entry = nullptr;    // the database entry used (user/system), else null
  std::string from_db;                  // its database's path
  std::uint32_t capacity = 0;
  std::vector<MultiLaunch> launches;
  std::uint64_t workspace_bytes = 0;    // covers the built-in default too (the compile fallback)
};
struct MultiCall {
  MultiList list;
  std::array<MultiGroup, kDTypeCount> groups;
};

void check(const std::optional<MultiListError>& e) {
  if (e) fail(e->status, e->message);
}

/// Validates the list (pointers too when `check_pointers`) and sorts it into one group per dtype,
/// each with its variant (with `epilogue`), launches and workspace. Reuses `m`'s storage. Throws
/// Failure naming the first bad tensor's index and value.
void group_multi(amax_context& c, const amax_tensor_t* t, std::size_t count, bool check_pointers, Epilogue epilogue,
                 MultiCall& m) {
  check(sort_multi_list(t, count, check_pointers, m.list));
  for (const DTypeInfo& di : all_dtypes()) {
    MultiGroup& x = m.groups[index(di.dtype)];
    const auto& tensors = m.list.tensors[index(di.dtype)];
    const GroupShape& shape = m.list.shapes[index(di.dtype)];
    x.launches.clear();
    if (tensors.empty()) continue;
    MultiConfig def = builtin_multi_default(c.arch, di.dtype, shape);
    def.epilogue = epilogue;
    x.config = def;
    x.source = AMAX_SOURCE_DEFAULT;
    x.why.clear();
    x.entry = nullptr;
    bool forced = false;
    if (c.force_multi) {
      if (auto bad = c.force_multi->validate(c.arch, di.dtype)) {
        x.why = fmt::format("AMAX_TUNE_FORCE_MULTI_LABEL is not valid for {} {} ({}): ", c.arch.name, di.name, *bad);
      } else {
        x.config = *c.force_multi;
        x.config.epilogue = epilogue;
        x.source = AMAX_SOURCE_OVERRIDE;
        forced = true;
      }
    }
    Source from = Source::builtin_default;
    if (!forced)
      if (const GroupEntry* e = c.tables->choose_group(di.dtype, shape, &from)) {
        x.config = e->config;
        x.config.epilogue = epilogue;
        x.source = static_cast<amax_source_t>(from);
        x.entry = e;
        x.from_db = from == Source::user_db ? c.user_db : c.system_db;
      }
    x.capacity = multi_capacity_for(c.arch, shape.tensors);
    x.launches = split_multi_launches(tensors, x.config, di.dtype, c.cu, x.capacity);
    x.workspace_bytes = multi_workspace_bytes(x.launches);
    if (!(x.config == def))  // the workspace covers the compile fallback too
      x.workspace_bytes = std::max(x.workspace_bytes,
                                   multi_workspace_bytes(split_multi_launches(tensors, def, di.dtype, c.cu, x.capacity)));
  }
}

/// The loaded kernel of group `x` of dtype `d`: compiled or loaded on first use (never during
/// capture); when a chosen variant fails to compile, the built-in default (one warning; the group's
/// launches are split again for it).
const LoadedMultiKernel& ready_multi(amax_context& c, MultiCall& m, DType d, StreamHandle stream) {
  MultiGroup& x = m.groups[index(d)];
  if (const LoadedMultiKernel* k = c.kernels->find_multi(x.config, d, x.capacity)) return *k;
  if (c.backend->is_capturing(stream))
    fail(AMAX_STATUS_NOT_PRELOADED,
         fmt::format("multi-tensor kernel {} for {} ({} descriptors per launch) is not loaded and the stream is "
                     "being captured: JIT compilation is not allowed during graph capture; call {} with a list of "
                     "this shape first", x.config.kernel_label(), to_string(d), x.capacity,
                     x.config.epilogue == Epilogue::scale ? "amax_multi_preload_scale" : "amax_multi_preload"));
  try {
    return c.kernels->get_multi(x.config, d, x.capacity);
  } catch (const CompileError& e) {
    MultiConfig def = builtin_multi_default(c.arch, d, m.list.shapes[index(d)]);
    def.epilogue = x.config.epilogue;
    if (x.config == def) throw;
    log().warn("{} failed to compile; using the built-in default {}: {}", x.config.label(), def.label(), e.what());
    x.config = def;
    x.source = AMAX_SOURCE_DEFAULT;
    x.launches = split_multi_launches(m.list.tensors[index(d)], def, d, c.cu, x.capacity);
    return c.kernels->get_multi(def, d, x.capacity);
  }
}

thread_local MultiCall t_call;

/// amax_multi_preload and amax_multi_preload_scale: the chosen and the default kernels of each group.
void preload_multi(amax_context& c, const amax_tensor_t* tensors, std::size_t count, Epilogue e) {
  group_multi(c, tensors, count, false, e, t_call);
  for (const DTypeInfo& di : all_dtypes()) {
    const std::size_t i = index(di.dtype);
    if (t_call.groups[i].launches.empty()) continue;
    ready_multi(c, t_call, di.dtype, nullptr);
    MultiConfig def = builtin_multi_default(c.arch, di.dtype, t_call.list.shapes[i]);
    def.epilogue = e;
    c.kernels->get_multi(def, di.dtype, t_call.groups[i].capacity);
  }
}

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

/// Readies the kernels of the list that group_multi just sorted into t_call (ready_multi), packs
/// its launches and keeps it prepared, dropping the least recently used lists beyond
/// kPreparedLists or kPreparedBytes.
PreparedList& prepare_list(amax_context& c, const amax_tensor_t* tensors, std::size_t count, Epilogue e,
                           StreamHandle stream) {
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
                      nullptr, nullptr, c.nan_mode, nullptr);
      p->bytes += p->args[i].back().size();
    }
    p->need_ws = std::max(p->need_ws, x.workspace_bytes);  // covers the compile fallback too
  }
  p->groups = t_call.groups;
  p->context_id = c.id;
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
void enqueue_multi(amax_context& c, const amax_tensor_t* tensors, std::size_t count, float* output,
                   const MultiScaleArgs* scale, void* workspace, std::size_t workspace_bytes, void* stream) {
  const Epilogue e = scale ? Epilogue::scale : Epilogue::amax;
  // The array itself first: the lookup reads tensors[i]. An entry the lookup matches equals one
  // of a list validated when it was prepared, so the entries need no second check.
  check(check_multi_list_array(tensors, count));
  PreparedList* p = count ? find_prepared(c.id, e, tensors, count) : nullptr;
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
    p = &prepare_list(c, tensors, count, e, stream);
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
      c.backend->launch(p->kernels[i]->main, x.launches[j].grid, x.config.threads, stream, params);
    }
  }
}

}  // namespace

extern "C" {

AMAX_API void amax_context_options_init(amax_context_options_t* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->nan_mode = AMAX_NAN_PROPAGATE;
}

AMAX_API amax_status_t amax_context_create(const amax_context_options_t* o, amax_context_t* out) {
  return guarded([&] {
    need(o, "options");
    need(out, "context (out-parameter)");
    *out = nullptr;
    if (o->struct_size != sizeof(amax_context_options_t))
      fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.struct_size is {}, expected {} (call "
                                                     "amax_context_options_init)", o->struct_size,
                                                     sizeof(amax_context_options_t)));
    if (o->nan_mode != AMAX_NAN_PROPAGATE && o->nan_mode != AMAX_NAN_IGNORE)
      fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.nan_mode is {} (expected 0 or 1)", static_cast<int>(o->nan_mode)));
    if (o->device < 0) fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.device is {}", o->device));
    Vendor vendor{};
    if (!first_available_vendor(vendor, o->device))
      fail(AMAX_STATUS_NO_DEVICE, fmt::format("no GPU device {} (NVIDIA: {}; AMD: {})", o->device,
                                              no_device_reason(Vendor::nvidia), no_device_reason(Vendor::amd)));
    auto c = std::make_unique<amax_context>();
    c->backend = make_backend(vendor, o->device);
    c->compiler = make_compiler(vendor);
    c->arch = ArchInfo::parse(c->backend->device().arch);
    c->cu = static_cast<std::uint32_t>(c->backend->device().cu_count);
    c->check_pointers = device_count(vendor) > 1;
    c->nan_mode = o->nan_mode == AMAX_NAN_IGNORE ? NanMode::ignore : NanMode::propagate;
    const std::filesystem::path cache = o->kernel_cache_dir ? o->kernel_cache_dir : BinaryCache::default_dir();
    std::shared_ptr<const Bundle> bundle;
    if (const auto path = default_bundle_path()) {
      std::string warning;
      bundle = Bundle::open(*path, &warning);
      if (!warning.empty()) log().warn("{}", warning);
    }
    c->kernels = std::make_unique<KernelCache>(*c->backend, c->compiler, BinaryCache(cache), bundle);
    c->user_db = o->user_db_path ? o->user_db_path : default_user_db_path().string();
    c->system_db = o->system_db_path ? o->system_db_path : default_system_db_path().string();
    const auto& dev = c->backend->device();
    c->tables = std::make_unique<DispatchTables>(
        c->arch, running_provenance(dev, c->compiler->version()),
        bundle ? bundle->compiler_for(c->arch) : std::string());
    c->tables->read_environment();
    if (const char* f = std::getenv("AMAX_TUNE_FORCE_MULTI_LABEL"); f && *f) {
      try {
        c->force_multi = MultiConfig::parse(f);
      } catch (const std::invalid_argument& e) {
        log().warn("AMAX_TUNE_FORCE_MULTI_LABEL ignored: {}", e.what());
      }
    }
    c->tables->load(Source::user_db, c->user_db);
    c->tables->load(Source::system_db, c->system_db);
    c->slot_words = spin_unsupported_reason(c->arch) ? kSpinFirstWord : kSlotWords;
    c->slots = DeviceBuffer(*c->backend, 4 * c->slot_words * amax_context::kSlots);
    c->backend->memset32_async(c->slots.get(), 0, c->slot_words * amax_context::kSlots, nullptr);
    c->backend->synchronize(nullptr);
    *out = c.release();
  });
}

AMAX_API amax_status_t amax_context_destroy(amax_context_t c) {
  return guarded([&] { delete c; });
}

AMAX_API amax_status_t amax_workspace_size(amax_context_t c, amax_dtype_t dtype, uint64_t n, size_t* bytes) {
  return guarded([&] {
    need(c, "context");
    need(bytes, "bytes (out-parameter)");
    const DType d = need_dtype(dtype);
    *bytes = n == 0 ? 4 : c->plan(d, n).workspace_bytes;
  });
}

AMAX_API amax_status_t amax_compute(amax_context_t c, const void* input, amax_dtype_t dtype, uint64_t n, float* output,
                                    void* workspace, size_t workspace_bytes, void* stream) {
  return guarded([&] {
    need(c, "context");
    need(output, "output");
    const DType d = need_dtype(dtype);
    need_aligned_output(output, "output");
    enqueue(*c, input, d, n, output, workspace, workspace_bytes, stream, nullptr);
  });
}

AMAX_API void amax_scale_options_init(amax_scale_options_t* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->format = AMAX_FP8_E4M3;
}

AMAX_API amax_status_t amax_scale_options_check(const amax_scale_options_t* o) {
  return guarded([&] { (void)scale_rule_of(o); });
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
    if (amax_out == scale_out || amax_out == scale_inv_out || scale_out == scale_inv_out)
      fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("amax_out {}, scale_out {} and scale_inv_out {} must be three "
                                                     "distinct fp32 words", static_cast<void*>(amax_out),
                                                     static_cast<void*>(scale_out), static_cast<void*>(scale_inv_out)));
    need_own_memory(*c, scale_out, "scale_out");
    need_own_memory(*c, scale_inv_out, "scale_inv_out");
    const ScaleArgs sa{scale_out, scale_inv_out, rule.max, rule.epsilon,
                       (rule.force_pow2 ? kRuleForcePow2 : 0u) | (rule.nan_propagates ? kRuleNanPropagates : 0u)};
    enqueue(*c, input, d, n, amax_out, workspace, workspace_bytes, stream, &sa);
  });
}

namespace {
// amax_preload and amax_preload_scale: the kernels of the built-in defaults and of every (dtype, size).
void preload(amax_context& c, const amax_dtype_t* dtypes, size_t num_dtypes, const uint64_t* sizes, size_t num_sizes,
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
}  // namespace

AMAX_API amax_status_t amax_preload(amax_context_t c, const amax_dtype_t* dtypes, size_t num_dtypes,
                                    const uint64_t* sizes, size_t num_sizes) {
  return guarded([&] {
    need(c, "context");
    preload(*c, dtypes, num_dtypes, sizes, num_sizes, Epilogue::amax);
  });
}

AMAX_API amax_status_t amax_preload_scale(amax_context_t c, const amax_dtype_t* dtypes, size_t num_dtypes,
                                          const uint64_t* sizes, size_t num_sizes) {
  return guarded([&] {
    need(c, "context");
    preload(*c, dtypes, num_dtypes, sizes, num_sizes, Epilogue::scale);
  });
}

namespace {
// What amax_explain_scale adds where the fused plan runs `fused` for the table's amax-only choice
// (make_plan's fused_variant changed its strategy).
std::string fused_note(const KernelConfig& amax_only, const KernelConfig& fused) {
  return fused.strategy == amax_only.strategy
             ? std::string()
             : fmt::format("; fused as {} (the amax-only {} without its memset launch)", fused.label(), amax_only.label());
}

// amax_explain (Epilogue::amax) and amax_explain_scale: the plan of (dtype, n) and where it came from.
void explain(amax_context_t c, amax_dtype_t dtype, uint64_t n, Epilogue epilogue, amax_explanation_t* e) {
  need(c, "context");
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
    detail = c->tables->forced_label() && !c->tables->forced_label()->validate(c->arch, d)
                 ? "forced by AMAX_TUNE_FORCE_LABEL"
                 : "forced strategy (AMAX_TUNE_FORCE_STRATEGY or NVTE_USE_ATOMIC_AMAX=1) on the built-in default";
    if (fused) detail += " (a forced variant runs fused as forced: an atomic one keeps its memset launch)";
  } else {
    detail = fmt::format("no tuned entry for {} {} in the user ({}) or system ({}) database: built-in default, {}",
                         c->arch.name, to_string(d), c->user_db.empty() ? "disabled" : c->user_db,
                         c->system_db.empty() ? "disabled" : c->system_db, builtin_default_source(c->arch));
    if (fused) note = fused_note(builtin_default(c->arch, d, n), p.config);
  }
  const LoadedKernel* k = p.kernel.load(std::memory_order_acquire);
  const std::string origin =
      !k ? "code object: not loaded yet"
         : k->origin == KernelOrigin::jit ? fmt::format("code object: JIT ({:.1f} ms)", k->compile_ms)
                                          : std::string("code object: ") + to_string(k->origin);
  std::snprintf(e->detail, sizeof e->detail, "%s%s; %s", origin.c_str(), note.c_str(), detail.c_str());
}
}  // namespace

AMAX_API amax_status_t amax_explain(amax_context_t c, amax_dtype_t dtype, uint64_t n, amax_explanation_t* e) {
  return guarded([&] { explain(c, dtype, n, Epilogue::amax, e); });
}

AMAX_API amax_status_t amax_explain_scale(amax_context_t c, amax_dtype_t dtype, uint64_t n, amax_explanation_t* e) {
  return guarded([&] { explain(c, dtype, n, Epilogue::scale, e); });
}

AMAX_API amax_status_t amax_multi_workspace_size(amax_context_t c, const amax_tensor_t* tensors, size_t count,
                                                 size_t* bytes) {
  return guarded([&] {
    need(c, "context");
    need(bytes, "bytes (out-parameter)");
    group_multi(*c, tensors, count, false, Epilogue::amax, t_call);
    std::uint64_t b = 4;
    for (const MultiGroup& x : t_call.groups)
      if (!x.launches.empty()) b = std::max(b, x.workspace_bytes);
    *bytes = b;
  });
}

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


AMAX_API amax_status_t amax_multi_preload(amax_context_t c, const amax_tensor_t* tensors, size_t count) {
  return guarded([&] {
    need(c, "context");
    preload_multi(*c, tensors, count, Epilogue::amax);
  });
}

AMAX_API amax_status_t amax_multi_preload_scale(amax_context_t c, const amax_tensor_t* tensors, size_t count) {
  return guarded([&] {
    need(c, "context");
    preload_multi(*c, tensors, count, Epilogue::scale);
  });
}

AMAX_API amax_status_t amax_multi_explain(amax_context_t c, const amax_tensor_t* tensors, size_t count,
                                          amax_dtype_t dtype, amax_multi_explanation_t* e) {
  return guarded([&] {
    need(c, "context");
    need(e, "explanation (out-parameter)");
    const DType d = need_dtype(dtype);
    group_multi(*c, tensors, count, false, Epilogue::amax, t_call);
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
                          x.source == AMAX_SOURCE_USER_DB ? "user" : "system", x.from_db, x.entry->shape.tensors,
                          x.entry->shape.largest_bytes, x.entry->shape.total_bytes, x.entry->shape.largest_bytes,
                          shape.tensors, shape.total_bytes, shape.largest_bytes, x.entry->where, x.entry->median_us,
                          x.entry->gbps)
            : x.why + fmt::format("built-in multi-tensor default of the arch family for {} tensors, {} bytes, the "
                                  "largest {} bytes", shape.tensors, shape.total_bytes, shape.largest_bytes);
    std::snprintf(e->detail, sizeof e->detail, "%s", detail.c_str());
  });
}

AMAX_API const char* amax_last_error(void) { return g_last_error.c_str(); }

AMAX_API const char* amax_status_string(amax_status_t s) {
  switch (s) {
    case AMAX_STATUS_SUCCESS: return "AMAX_STATUS_SUCCESS";
    case AMAX_STATUS_INVALID_ARGUMENT: return "AMAX_STATUS_INVALID_ARGUMENT";
    case AMAX_STATUS_NULL_POINTER: return "AMAX_STATUS_NULL_POINTER";
    case AMAX_STATUS_MISALIGNED_POINTER: return "AMAX_STATUS_MISALIGNED_POINTER";
    case AMAX_STATUS_UNKNOWN_DTYPE: return "AMAX_STATUS_UNKNOWN_DTYPE";
    case AMAX_STATUS_WORKSPACE_TOO_SMALL: return "AMAX_STATUS_WORKSPACE_TOO_SMALL";
    case AMAX_STATUS_NOT_PRELOADED: return "AMAX_STATUS_NOT_PRELOADED";
    case AMAX_STATUS_NO_DEVICE: return "AMAX_STATUS_NO_DEVICE";
    case AMAX_STATUS_COMPILE_FAILED: return "AMAX_STATUS_COMPILE_FAILED";
    case AMAX_STATUS_DRIVER_ERROR: return "AMAX_STATUS_DRIVER_ERROR";
    case AMAX_STATUS_TOO_MANY_STREAMS: return "AMAX_STATUS_TOO_MANY_STREAMS";
    case AMAX_STATUS_INTERNAL_ERROR: return "AMAX_STATUS_INTERNAL_ERROR";
    case AMAX_STATUS_WRONG_DEVICE: return "AMAX_STATUS_WRONG_DEVICE";
  }
  return "AMAX_STATUS_UNKNOWN";
}

AMAX_API const char* amax_version(void) { return AMAX_VERSION; }

}  // extern "C"
