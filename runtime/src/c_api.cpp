// The C ABI's error handling (a thrown Failure, CompileError, BackendError or other exception
// becomes a status and the thread's amax_last_error) and the context's creation and destruction.
#include "amax/log.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "amax/paths.hpp"
#include "context.hpp"

namespace amax::capi {

namespace {
thread_local std::string g_last_error;
}  // namespace

std::uint64_t next_context_id() {
  static std::atomic<std::uint64_t> next{1};
  return next++;
}

void clear_last_error() noexcept { g_last_error.clear(); }

NanMode nan_mode_of(amax_nan_mode_t m, const char* name) {
  if (m != AMAX_NAN_PROPAGATE && m != AMAX_NAN_IGNORE)
    fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("{} is {} (expected 0 or 1)", name, static_cast<int>(m)));
  return m == AMAX_NAN_IGNORE ? NanMode::ignore : NanMode::propagate;
}

amax_status_t status_of_current_exception() {
  try {
    throw;
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

}  // namespace amax::capi

using namespace amax;
using namespace amax::capi;

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
    const NanMode nan_mode = nan_mode_of(o->nan_mode, "options.nan_mode");
    if (o->device < 0) fail(AMAX_STATUS_INVALID_ARGUMENT, fmt::format("options.device is {}", o->device));
    Vendor vendor{};
    if (!first_available_vendor(vendor, o->device))
      fail(AMAX_STATUS_NO_DEVICE, fmt::format("no GPU device {} (NVIDIA: {}; AMD: {})", o->device,
                                              no_device_reason(Vendor::nvidia), no_device_reason(Vendor::amd)));
    auto c = std::make_shared<ContextState>();
    c->backend = make_backend(vendor, o->device);
    c->compiler = make_compiler(vendor);
    c->arch = ArchInfo::parse(c->backend->device().arch);
    c->cu = static_cast<std::uint32_t>(c->backend->device().cu_count);
    c->check_pointers = device_count(vendor) > 1;
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
    c->tables->load(Source::user_db, c->user_db);
    c->tables->load(Source::system_db, c->system_db);
    c->slot_words = slot_words(c->arch);
    c->slots = DeviceBuffer(*c->backend, 4 * c->slot_words * ContextState::kSlots);
    c->backend->memset32_async(c->slots.get(), 0, c->slot_words * ContextState::kSlots, nullptr);
    c->backend->synchronize(nullptr);
    auto ctx = std::make_unique<amax_context>();
    ctx->state = std::move(c);
    ctx->nan_mode = nan_mode;
    *out = ctx.release();
  });
}

AMAX_API amax_status_t amax_context_create_sibling(amax_context_t base, amax_nan_mode_t nan_mode,
                                                   amax_context_t* out) {
  return guarded([&] {
    need(base, "base context");
    need(out, "context (out-parameter)");
    *out = nullptr;
    auto ctx = std::make_unique<amax_context>();
    ctx->nan_mode = nan_mode_of(nan_mode, "nan_mode");
    ctx->state = base->state;
    *out = ctx.release();
  });
}

AMAX_API amax_status_t amax_context_destroy(amax_context_t c) {
  return guarded([&] { delete c; });
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
