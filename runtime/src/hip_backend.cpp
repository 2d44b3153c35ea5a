// HIP backend: the HIP module API, a mirror of the CUDA backend call for call.
#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "amax/backend.hpp"
#include "backends.hpp"

#if HIP_VERSION < 50500000
// ROCm 5.5 added the module API's cooperative launch (symbol version hip_5.5 in libamdhip64.so.5).
// Older headers lack it: declared here, weak, with the signature of the 5.5+ headers, so that the
// backend builds against any ROCm 5 and uses the launch where the runtime library it runs with has it.
extern "C" __attribute__((weak)) hipError_t hipModuleLaunchCooperativeKernel(
    hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
    unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
    void** kernelParams);
#endif

namespace amax::detail {
namespace {

void check(hipError_t r, const char* call) {
  if (r == hipSuccess) return;
  throw BackendError(call, static_cast<int>(r),
                     std::string(call) + " failed: " + hipGetErrorName(r) + " (" +
                         std::to_string(static_cast<int>(r)) + "): " + hipGetErrorString(r));
}

struct Runtime {
  std::string error;
  int device_count = 0;
};

const Runtime& runtime() {
  static const Runtime rt = [] {
    Runtime rt;
    if (hipError_t r = hipInit(0); r != hipSuccess) {
      rt.error = std::string("hipInit failed: ") + hipGetErrorName(r) + " (" + std::to_string(r) + ")";
      return rt;
    }
    if (hipGetDeviceCount(&rt.device_count) != hipSuccess || rt.device_count == 0) {
      rt.device_count = 0;
      rt.error = "no AMD GPU is visible (hipGetDeviceCount = 0)";
    }
    return rt;
  }();
  return rt;
}

/// Makes `ordinal` the calling thread's current HIP device for the guard's lifetime and then
/// restores the previous one, so that a call leaves the caller's current device as the caller set
/// it. When it is already current, one hipGetDevice and nothing else.
class [[nodiscard]] ScopedDevice {
 public:
  explicit ScopedDevice(int ordinal) {
    if (hipGetDevice(&prev_) != hipSuccess) prev_ = -1;
    if (prev_ != ordinal) {
      check(hipSetDevice(ordinal), "hipSetDevice");
      restore_ = prev_ >= 0;
    }
  }
  /// For noexcept paths (destructors, release): failures to switch are ignored.
  ScopedDevice(int ordinal, std::nothrow_t) noexcept {
    if (hipGetDevice(&prev_) != hipSuccess) prev_ = -1;
    if (prev_ != ordinal) restore_ = hipSetDevice(ordinal) == hipSuccess && prev_ >= 0;
  }
  ~ScopedDevice() {
    if (restore_) (void)hipSetDevice(prev_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int prev_ = -1;
  bool restore_ = false;
};

class HipModule final : public Module {
 public:
  HipModule(hipModule_t m, int ordinal) : module_(m), ordinal_(ordinal) {}
  ~HipModule() override {
    const ScopedDevice current(ordinal_, std::nothrow);
    (void)hipModuleUnload(module_);
  }
  FunctionHandle function(const std::string& name) const override {
    hipFunction_t f = nullptr;
    const ScopedDevice current(ordinal_);
    check(hipModuleGetFunction(&f, module_, name.c_str()), "hipModuleGetFunction");
    return f;
  }

 private:
  hipModule_t module_;
  int ordinal_;
};

class HipBackend final : public Backend {
 public:
  explicit HipBackend(int ordinal) : ordinal_(ordinal) {
    const Runtime& rt = runtime();
    if (!rt.error.empty()) throw std::runtime_error(rt.error);
    if (ordinal < 0 || ordinal >= rt.device_count)
      throw std::runtime_error("no AMD device " + std::to_string(ordinal) + " (" +
                               std::to_string(rt.device_count) + " present)");
    const ScopedDevice current(ordinal_);
    hipDeviceProp_t p{};
    check(hipGetDeviceProperties(&p, ordinal), "hipGetDeviceProperties");
    info_.ordinal = ordinal;
    info_.name = p.name;
    info_.arch = p.gcnArchName;  // full target ID, e.g. gfx942:sramecc+:xnack-, as hipRTC takes it
    info_.cu_count = p.multiProcessorCount;
    info_.wave_size = p.warpSize;
    info_.max_threads_per_block = p.maxThreadsPerBlock;
    info_.l2_bytes = static_cast<std::uint64_t>(p.l2CacheSize);
    info_.memory_bytes = p.totalGlobalMem;
    int v = 0;
    check(hipDriverGetVersion(&v), "hipDriverGetVersion");
    info_.driver_version = "hip driver " + std::to_string(v);
  }

  Vendor vendor() const noexcept override { return Vendor::amd; }
  const DeviceInfo& device() const noexcept override { return info_; }

  std::unique_ptr<Module> load_module(std::span<const char> binary) override {
    const ScopedDevice current(ordinal_);
    hipModule_t m = nullptr;
    check(hipModuleLoadData(&m, binary.data()), "hipModuleLoadData");
    return std::make_unique<HipModule>(m, ordinal_);
  }
  void launch(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle s,
              void** args) override {
    const ScopedDevice current(ordinal_);
    check(hipModuleLaunchKernel(static_cast<hipFunction_t>(f), grid, 1, 1, block, 1, 1, 0,
                                static_cast<hipStream_t>(s), args, nullptr),
          "hipModuleLaunchKernel");
  }
  void launch_cooperative_unchecked(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle s,
                                    void** args) override {
#if HIP_VERSION < 50500000
    if (!&hipModuleLaunchCooperativeKernel)
      throw BackendError("hipModuleLaunchCooperativeKernel", static_cast<int>(hipErrorNotSupported),
                         "hipModuleLaunchCooperativeKernel is missing from the loaded libamdhip64 (ROCm 5.5 added "
                         "it; this one is older), so there is no cooperative launch");
#endif
    const ScopedDevice current(ordinal_);
    check(hipModuleLaunchCooperativeKernel(static_cast<hipFunction_t>(f), grid, 1, 1, block, 1, 1, 0,
                                           static_cast<hipStream_t>(s), args),
          "hipModuleLaunchCooperativeKernel");
  }
  std::uint32_t max_active_blocks_per_cu(FunctionHandle f, std::uint32_t block) override {
    const ScopedDevice current(ordinal_);
    int n = 0;
    check(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&n, static_cast<hipFunction_t>(f),
                                                             static_cast<int>(block), 0),
          "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor");
    return n > 0 ? static_cast<std::uint32_t>(n) : 0u;
  }
  void memset32_async(void* dst, std::uint32_t value, std::size_t count, StreamHandle s) override {
    const ScopedDevice current(ordinal_);
    check(hipMemsetD32Async(dst, static_cast<int>(value), count, static_cast<hipStream_t>(s)),
          "hipMemsetD32Async");
  }
  void* allocate(std::size_t bytes) override {
    const ScopedDevice current(ordinal_);
    void* p = nullptr;
    check(hipMalloc(&p, bytes ? bytes : 1), "hipMalloc");
    return p;
  }
  void release(void* p) noexcept override {
    if (!p) return;
    const ScopedDevice current(ordinal_, std::nothrow);
    (void)hipFree(p);
  }
  MappedHost allocate_mapped_host(std::size_t bytes) override {
    const ScopedDevice current(ordinal_);
    void* h = nullptr;
    check(hipHostMalloc(&h, bytes ? bytes : 1, hipHostMallocMapped | hipHostMallocPortable), "hipHostMalloc");
    std::memset(h, 0, bytes);
    void* d = nullptr;
    if (const hipError_t e = hipHostGetDevicePointer(&d, h, 0); e != hipSuccess) {
      (void)hipHostFree(h);
      check(e, "hipHostGetDevicePointer");
    }
    return {h, d};
  }
  void release_mapped_host(void* h) noexcept override {
    if (!h) return;
    const ScopedDevice current(ordinal_, std::nothrow);
    (void)hipHostFree(h);
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    const ScopedDevice current(ordinal_);
    check(hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice), "hipMemcpy");
    // As on CUDA: make sure the DMA from pageable memory has landed before returning.
    check(hipStreamSynchronize(nullptr), "hipStreamSynchronize");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    const ScopedDevice current(ordinal_);
    check(hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost), "hipMemcpy");
  }
  StreamOwner stream_owner(StreamHandle s) override {
    const auto handle = reinterpret_cast<std::uintptr_t>(s);
    if (handle <= 2) return {ordinal_, true};  // NULL, hipStreamLegacy, hipStreamPerThread
#if HIP_VERSION_MAJOR >= 6
    hipDevice_t dev = -1;
    check(hipStreamGetDevice(static_cast<hipStream_t>(s), &dev), "hipStreamGetDevice");
    return {static_cast<int>(dev), static_cast<int>(dev) == ordinal_};
#else
    return {-1, true};  // HIP 5.x cannot tell a stream's device (no hipStreamGetDevice)
#endif
  }
  int memory_device(const void* p) noexcept override {
    hipPointerAttribute_t a{};
    if (hipPointerGetAttributes(&a, p) != hipSuccess) {
      (void)hipGetLastError();  // an unknown (host) pointer is not an error the caller should see later
      return -1;
    }
#if HIP_VERSION_MAJOR >= 6
    const hipMemoryType type = a.type;
#else
    const hipMemoryType type = a.memoryType;
#endif
    if (type != hipMemoryTypeDevice || a.isManaged) return -1;
    return a.device;
  }
  StreamHandle create_stream() override {
    const ScopedDevice current(ordinal_);
    hipStream_t s = nullptr;
    check(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "hipStreamCreateWithFlags");
    return s;
  }
  void destroy_stream(StreamHandle s) noexcept override {
    const ScopedDevice current(ordinal_, std::nothrow);
    (void)hipStreamDestroy(static_cast<hipStream_t>(s));
  }
  void synchronize(StreamHandle s) override {
    const ScopedDevice current(ordinal_);
    check(hipStreamSynchronize(static_cast<hipStream_t>(s)), "hipStreamSynchronize");
  }
  bool is_capturing(StreamHandle s) override {
    const ScopedDevice current(ordinal_);
    hipStreamCaptureStatus st = hipStreamCaptureStatusNone;
    check(hipStreamIsCapturing(static_cast<hipStream_t>(s), &st), "hipStreamIsCapturing");
    return st != hipStreamCaptureStatusNone;
  }
  EventHandle create_event() override {
    const ScopedDevice current(ordinal_);
    hipEvent_t e = nullptr;
    check(hipEventCreate(&e), "hipEventCreate");
    return e;
  }
  void destroy_event(EventHandle e) noexcept override {
    const ScopedDevice current(ordinal_, std::nothrow);
    (void)hipEventDestroy(static_cast<hipEvent_t>(e));
  }
  void record(EventHandle e, StreamHandle s) override {
    const ScopedDevice current(ordinal_);
    check(hipEventRecord(static_cast<hipEvent_t>(e), static_cast<hipStream_t>(s)), "hipEventRecord");
  }
  float elapsed_ms(EventHandle start, EventHandle end) override {
    const ScopedDevice current(ordinal_);
    check(hipEventSynchronize(static_cast<hipEvent_t>(end)), "hipEventSynchronize");
    float ms = 0;
    check(hipEventElapsedTime(&ms, static_cast<hipEvent_t>(start), static_cast<hipEvent_t>(end)),
          "hipEventElapsedTime");
    return ms;
  }
  void begin_capture(StreamHandle s) override {
    const ScopedDevice current(ordinal_);
    check(hipStreamBeginCapture(static_cast<hipStream_t>(s), hipStreamCaptureModeGlobal),
          "hipStreamBeginCapture");
  }
  GraphExecHandle end_capture(StreamHandle s) override {
    const ScopedDevice current(ordinal_);
    hipGraph_t g = nullptr;
    check(hipStreamEndCapture(static_cast<hipStream_t>(s), &g), "hipStreamEndCapture");
    hipGraphExec_t exec = nullptr;
    const hipError_t r = hipGraphInstantiate(&exec, g, nullptr, nullptr, 0);
    (void)hipGraphDestroy(g);
    check(r, "hipGraphInstantiate");
    return exec;
  }
  void launch_graph(GraphExecHandle g, StreamHandle s) override {
    const ScopedDevice current(ordinal_);
    check(hipGraphLaunch(static_cast<hipGraphExec_t>(g), static_cast<hipStream_t>(s)), "hipGraphLaunch");
  }
  void destroy_graph(GraphExecHandle g) noexcept override {
    const ScopedDevice current(ordinal_, std::nothrow);
    (void)hipGraphExecDestroy(static_cast<hipGraphExec_t>(g));
  }

 private:

  int ordinal_;
  DeviceInfo info_;
};

}  // namespace

int hip_device_count() noexcept {
  try {
    return runtime().error.empty() ? runtime().device_count : 0;
  } catch (...) {
    return 0;
  }
}
std::string hip_no_device_reason() { return runtime().error; }
std::unique_ptr<Backend> make_hip_backend(int ordinal) { return std::make_unique<HipBackend>(ordinal); }

}  // namespace amax::detail
