// CUDA backend: the driver API, loaded with dlopen so that a build with CUDA support starts on a
// machine without the NVIDIA driver (device_count() is then 0).
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "amax/backend.hpp"
#include "backends.hpp"

namespace amax::detail {
namespace {

#define AMAX_STR2(x) #x
#define AMAX_STR(x) AMAX_STR2(x)

// Every driver entry point amax-tune uses. The symbol looked up is the versioned name cuda.h maps
// the call to (cuMemAlloc -> cuMemAlloc_v2), obtained by stringizing the expanded macro.
#define AMAX_CUDA_FUNCTIONS(X)                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)         \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)                        \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuGetErrorName)           \
  X(cuGetErrorString) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)               \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)                   \
  X(cuMemsetD32Async) X(cuStreamCreate) X(cuStreamDestroy)                                       \
  X(cuStreamSynchronize) X(cuStreamIsCapturing) X(cuEventCreate) X(cuEventDestroy)               \
  X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuStreamBeginCapture)           \
  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy)             \
  X(cuGraphDestroy) X(cuStreamGetCtx) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuCtxGetDevice)      \
  X(cuPointerGetAttributes) X(cuMemHostAlloc) X(cuMemHostGetDevicePointer) X(cuMemFreeHost)       \
  X(cuLaunchCooperativeKernel) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

struct Driver {
#define AMAX_DECLARE(fn) decltype(&::fn) fn = nullptr;
  AMAX_CUDA_FUNCTIONS(AMAX_DECLARE)
#undef AMAX_DECLARE
  std::string error;  // why the driver is unusable; empty when usable
  int device_count = 0;
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx = nullptr;  // optional (driver 12.0+): PDL
};

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      d.error = std::string("the NVIDIA driver library libcuda.so.1 could not be loaded (") + dlerror() + ")";
      return d;
    }
#define AMAX_LOAD(fn)                                                                   \
  d.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, AMAX_STR(fn)));                    \
  if (!d.fn) {                                                                          \
    d.error = std::string("libcuda.so.1 lacks ") + AMAX_STR(fn) + " (driver too old)";  \
    return d;                                                                           \
  }
    AMAX_CUDA_FUNCTIONS(AMAX_LOAD)
#undef AMAX_LOAD
    d.cuLaunchKernelEx = reinterpret_cast<decltype(&::cuLaunchKernelEx)>(dlsym(lib, AMAX_STR(cuLaunchKernelEx)));
    if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
      const char* name = nullptr;
      d.cuGetErrorName(r, &name);
      d.error = std::string("cuInit failed: ") + (name ? name : "?") + " (" + std::to_string(r) + ")";
      return d;
    }
    if (d.cuDeviceGetCount(&d.device_count) != CUDA_SUCCESS || d.device_count == 0)
      d.error = "no NVIDIA GPU is visible (cuDeviceGetCount = 0)";
    return d;
  }();
  return d;
}

void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const Driver& d = driver();
  const char* name = nullptr;
  const char* msg = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(r, &msg);
  throw BackendError(call, static_cast<int>(r),
                     std::string(call) + " failed: " + (name ? name : "CUDA_ERROR_UNKNOWN") + " (" +
                         std::to_string(static_cast<int>(r)) + "): " + (msg ? msg : "no message"));
}

#define AMAX_CU(call_expr, name) check(driver().call_expr, name)

/// Makes `ctx` current on the calling thread for the guard's lifetime and then restores the
/// thread's previous context (or none), so that a call leaves the caller's current-context state
/// as the caller set it. When `ctx` is already current, one cuCtxGetCurrent and nothing else.
class [[nodiscard]] ScopedContext {
 public:
  explicit ScopedContext(CUcontext ctx) {
    if (driver().cuCtxGetCurrent(&prev_) != CUDA_SUCCESS) prev_ = nullptr;
    if (prev_ != ctx) {
      check(driver().cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
      restore_ = true;
    }
  }
  /// For noexcept paths (destructors, release): failures to switch are ignored.
  ScopedContext(CUcontext ctx, std::nothrow_t) noexcept {
    if (driver().cuCtxGetCurrent(&prev_) != CUDA_SUCCESS) prev_ = nullptr;
    if (prev_ != ctx) restore_ = driver().cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
  }
  ~ScopedContext() {
    if (restore_) driver().cuCtxSetCurrent(prev_);
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  CUcontext prev_ = nullptr;
  bool restore_ = false;
};

class CudaModule final : public Module {
 public:
  CudaModule(CUmodule m, CUcontext ctx) : module_(m), ctx_(ctx) {}
  ~CudaModule() override {
    const ScopedContext current(ctx_, std::nothrow);
    driver().cuModuleUnload(module_);
  }
  FunctionHandle function(const std::string& name) const override {
    CUfunction f = nullptr;
    const ScopedContext current(ctx_);
    AMAX_CU(cuModuleGetFunction(&f, module_, name.c_str()), "cuModuleGetFunction");
    return f;
  }

 private:
  CUmodule module_;
  CUcontext ctx_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int ordinal) {
    const Driver& d = driver();
    if (!d.error.empty()) throw std::runtime_error(d.error);
    if (ordinal < 0 || ordinal >= d.device_count)
      throw std::runtime_error("no NVIDIA device " + std::to_string(ordinal) + " (" +
                               std::to_string(d.device_count) + " present)");
    AMAX_CU(cuDeviceGet(&dev_, ordinal), "cuDeviceGet");
    AMAX_CU(cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    const ScopedContext current(ctx_);
    char name[256] = {};
    AMAX_CU(cuDeviceGetName(name, sizeof name, dev_), "cuDeviceGetName");
    info_.ordinal = ordinal;
    info_.name = name;
    const int major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    const int minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    info_.arch = "sm_" + std::to_string(major) + std::to_string(minor);
    pdl_ = d.cuLaunchKernelEx != nullptr && major >= 9;
    info_.cu_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info_.wave_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    info_.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    info_.l2_bytes = static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
    std::size_t mem = 0;
    AMAX_CU(cuDeviceTotalMem(&mem, dev_), "cuDeviceTotalMem");
    info_.memory_bytes = mem;
    int v = 0;
    AMAX_CU(cuDriverGetVersion(&v), "cuDriverGetVersion");
    info_.driver_version = "cuda driver " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  }
  ~CudaBackend() override { driver().cuDevicePrimaryCtxRelease(dev_); }

  Vendor vendor() const noexcept override { return Vendor::nvidia; }
  const DeviceInfo& device() const noexcept override { return info_; }

  std::unique_ptr<Module> load_module(std::span<const char> binary) override {
    const ScopedContext current(ctx_);
    CUmodule m = nullptr;
    AMAX_CU(cuModuleLoadData(&m, binary.data()), "cuModuleLoadData");
    return std::make_unique<CudaModule>(m, ctx_);
  }
  void launch(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle s,
              void** args) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuLaunchKernel(static_cast<CUfunction>(f), grid, 1, 1, block, 1, 1, 0,
                           static_cast<CUstream>(s), args, nullptr),
            "cuLaunchKernel");
  }
  void launch_dependent(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle s,
                        void** args) override {
    if (!pdl_) {
      launch(f, grid, block, s, args);
      return;
    }
    const ScopedContext current(ctx_);
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = block;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = static_cast<CUstream>(s);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    AMAX_CU(cuLaunchKernelEx(&cfg, static_cast<CUfunction>(f), args, nullptr), "cuLaunchKernelEx");
  }
  void launch_cooperative_unchecked(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle s,
                                    void** args) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuLaunchCooperativeKernel(static_cast<CUfunction>(f), grid, 1, 1, block, 1, 1, 0,
                                      static_cast<CUstream>(s), args),
            "cuLaunchCooperativeKernel");
  }
  std::uint32_t max_active_blocks_per_cu(FunctionHandle f, std::uint32_t block) override {
    const ScopedContext current(ctx_);
    int n = 0;
    AMAX_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, static_cast<CUfunction>(f), static_cast<int>(block), 0),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    return n > 0 ? static_cast<std::uint32_t>(n) : 0u;
  }
  void memset32_async(void* dst, std::uint32_t value, std::size_t count, StreamHandle s) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuMemsetD32Async(ptr(dst), value, count, static_cast<CUstream>(s)), "cuMemsetD32Async");
  }
  void* allocate(std::size_t bytes) override {
    const ScopedContext current(ctx_);
    CUdeviceptr p = 0;
    AMAX_CU(cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    return reinterpret_cast<void*>(p);
  }
  void release(void* p) noexcept override {
    if (!p) return;
    const ScopedContext current(ctx_, std::nothrow);
    driver().cuMemFree(ptr(p));
  }
  MappedHost allocate_mapped_host(std::size_t bytes) override {
    const ScopedContext current(ctx_);
    void* h = nullptr;
    AMAX_CU(cuMemHostAlloc(&h, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
            "cuMemHostAlloc");
    std::memset(h, 0, bytes);
    CUdeviceptr d = 0;
    if (const CUresult r = driver().cuMemHostGetDevicePointer(&d, h, 0); r != CUDA_SUCCESS) {
      driver().cuMemFreeHost(h);
      check(r, "cuMemHostGetDevicePointer");
    }
    return {h, reinterpret_cast<void*>(d)};
  }
  void release_mapped_host(void* h) noexcept override {
    if (!h) return;
    const ScopedContext current(ctx_, std::nothrow);
    driver().cuMemFreeHost(h);
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuMemcpyHtoD(ptr(dst), src, bytes), "cuMemcpyHtoD");
    // From pageable memory cuMemcpyHtoD may return once the data is staged, before the DMA lands;
    // work on a non-blocking stream would then read old bytes. Wait for the legacy stream.
    AMAX_CU(cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuMemcpyDtoH(dst, ptr(src), bytes), "cuMemcpyDtoH");
  }
  StreamOwner stream_owner(StreamHandle s) override {
    const auto handle = reinterpret_cast<std::uintptr_t>(s);
    if (handle <= 2) return {info_.ordinal, true};  // NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
    CUcontext owner = nullptr;
    AMAX_CU(cuStreamGetCtx(static_cast<CUstream>(s), &owner), "cuStreamGetCtx");
    if (owner == ctx_) return {info_.ordinal, true};
    // Another context: which device is it on? (CUdevice handles are the ordinals.)
    CUdevice dev = -1;
    AMAX_CU(cuCtxPushCurrent(owner), "cuCtxPushCurrent");
    const CUresult r = driver().cuCtxGetDevice(&dev);
    CUcontext popped = nullptr;
    driver().cuCtxPopCurrent(&popped);
    check(r, "cuCtxGetDevice");
    return {static_cast<int>(dev), false};
  }
  int memory_device(const void* p) noexcept override {
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned int type = 0;
    int ordinal = -1;
    unsigned int managed = 0;
    void* data[] = {&type, &ordinal, &managed};
    // Unknown pointers are not an error here: the attributes stay at their null values.
    if (driver().cuPointerGetAttributes(3, attrs, data, ptr(p)) != CUDA_SUCCESS) return -1;
    if (type != CU_MEMORYTYPE_DEVICE || managed) return -1;
    return ordinal;
  }
  StreamHandle create_stream() override {
    const ScopedContext current(ctx_);
    CUstream s = nullptr;
    AMAX_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return s;
  }
  void destroy_stream(StreamHandle s) noexcept override {
    const ScopedContext current(ctx_, std::nothrow);
    driver().cuStreamDestroy(static_cast<CUstream>(s));
  }
  void synchronize(StreamHandle s) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuStreamSynchronize(static_cast<CUstream>(s)), "cuStreamSynchronize");
  }
  bool is_capturing(StreamHandle s) override {
    const ScopedContext current(ctx_);
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    AMAX_CU(cuStreamIsCapturing(static_cast<CUstream>(s), &st), "cuStreamIsCapturing");
    return st != CU_STREAM_CAPTURE_STATUS_NONE;
  }
  EventHandle create_event() override {
    const ScopedContext current(ctx_);
    CUevent e = nullptr;
    AMAX_CU(cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }
  void destroy_event(EventHandle e) noexcept override {
    const ScopedContext current(ctx_, std::nothrow);
    driver().cuEventDestroy(static_cast<CUevent>(e));
  }
  void record(EventHandle e, StreamHandle s) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuEventRecord(static_cast<CUevent>(e), static_cast<CUstream>(s)), "cuEventRecord");
  }
  float elapsed_ms(EventHandle start, EventHandle end) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuEventSynchronize(static_cast<CUevent>(end)), "cuEventSynchronize");
    float ms = 0;
    AMAX_CU(cuEventElapsedTime(&ms, static_cast<CUevent>(start), static_cast<CUevent>(end)),
            "cuEventElapsedTime");
    return ms;
  }
  void begin_capture(StreamHandle s) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuStreamBeginCapture(static_cast<CUstream>(s), CU_STREAM_CAPTURE_MODE_GLOBAL),
            "cuStreamBeginCapture");
  }
  GraphExecHandle end_capture(StreamHandle s) override {
    const ScopedContext current(ctx_);
    CUgraph g = nullptr;
    AMAX_CU(cuStreamEndCapture(static_cast<CUstream>(s), &g), "cuStreamEndCapture");
    CUgraphExec exec = nullptr;
    const CUresult r = driver().cuGraphInstantiate(&exec, g, 0);
    driver().cuGraphDestroy(g);
    check(r, "cuGraphInstantiate");
    return exec;
  }
  void launch_graph(GraphExecHandle g, StreamHandle s) override {
    const ScopedContext current(ctx_);
    AMAX_CU(cuGraphLaunch(static_cast<CUgraphExec>(g), static_cast<CUstream>(s)), "cuGraphLaunch");
  }
  void destroy_graph(GraphExecHandle g) noexcept override {
    const ScopedContext current(ctx_, std::nothrow);
    driver().cuGraphExecDestroy(static_cast<CUgraphExec>(g));
  }

 private:
  static CUdeviceptr ptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
  int attribute(CUdevice_attribute a) {
    int v = 0;
    AMAX_CU(cuDeviceGetAttribute(&v, a, dev_), "cuDeviceGetAttribute");
    return v;
  }

  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  bool pdl_ = false;  // programmatic dependent launch: sm_90+ and a driver with cuLaunchKernelEx
  DeviceInfo info_;
};

}  // namespace

int cuda_device_count() noexcept {
  try {
    return driver().error.empty() ? driver().device_count : 0;
  } catch (...) {
    return 0;
  }
}
std::string cuda_no_device_reason() { return driver().error; }
std::unique_ptr<Backend> make_cuda_backend(int ordinal) { return std::make_unique<CudaBackend>(ordinal); }

}  // namespace amax::detail
