// TEST-ONLY translation of the HIP runtime calls that runtime/src/hip_backend.cpp makes onto the
// CUDA driver API, so that the HIP backend's host code, compiled exactly as for AMD (ROCm's own
// headers, __HIP_PLATFORM_AMD__, the ROCm hipDeviceProp_t layout), runs on an NVIDIA GPU.
// Linked into test_hipshim in place of libamdhip64; never shipped. libcuda.so.1 is opened with
// dlopen, as in cuda_backend.cpp, so that the test starts (and skips) on machines without a driver.
// Every CUresult is translated to the hipError_t that ROCm returns for the same condition; a code
// without a HIP counterpart becomes hipErrorUnknown. Thread-safety: as the driver API (the table
// of entry points is built once, thread-safe).
#include <hip/hip_runtime_api.h>

#include <cuda.h>
#include <dlfcn.h>

#include <cstring>
#include <string>

namespace {

#define SHIM_STR2(x) #x
#define SHIM_STR(x) SHIM_STR2(x)
#define SHIM_CUDA_FUNCTIONS(X)                                                                     \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)            \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)       \
  X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload) \
  X(cuLaunchKernel) X(cuMemsetD32Async) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) \
  X(cuMemcpyDtoD) X(cuMemcpy) X(cuStreamCreate) X(cuStreamDestroy)                                 \
  X(cuStreamSynchronize) X(cuStreamIsCapturing) X(cuStreamBeginCapture) X(cuStreamEndCapture)      \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy)  \
  X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)                 \
  X(cuPointerGetAttributes) X(cuMemHostAlloc) X(cuMemHostGetDevicePointer) X(cuMemFreeHost)        \
  X(cuLaunchCooperativeKernel) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

struct Driver {
#define SHIM_DECLARE(fn) decltype(&::fn) fn = nullptr;
  SHIM_CUDA_FUNCTIONS(SHIM_DECLARE)
#undef SHIM_DECLARE
  bool ok = false;
};

const Driver& drv() {
  static const Driver d = [] {
    Driver d;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return d;
#define SHIM_LOAD(fn)                                                  \
  d.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, SHIM_STR(fn))); \
  if (!d.fn) return d;
    SHIM_CUDA_FUNCTIONS(SHIM_LOAD)
#undef SHIM_LOAD
    d.ok = true;
    return d;
  }();
  return d;
}

hipError_t tr(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return hipSuccess;
    case CUDA_ERROR_INVALID_VALUE: return hipErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return hipErrorOutOfMemory;
    case CUDA_ERROR_NOT_INITIALIZED: return hipErrorNotInitialized;
    case CUDA_ERROR_DEINITIALIZED: return hipErrorDeinitialized;
    case CUDA_ERROR_NO_DEVICE: return hipErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return hipErrorInvalidDevice;
    case CUDA_ERROR_INVALID_IMAGE: return hipErrorInvalidImage;
    case CUDA_ERROR_INVALID_CONTEXT: return hipErrorInvalidContext;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return hipErrorNoBinaryForGpu;
    case CUDA_ERROR_INVALID_PTX: return hipErrorInvalidKernelFile;
    case CUDA_ERROR_INVALID_SOURCE: return hipErrorInvalidSource;
    case CUDA_ERROR_INVALID_HANDLE: return hipErrorInvalidHandle;
    case CUDA_ERROR_NOT_FOUND: return hipErrorNotFound;
    case CUDA_ERROR_NOT_READY: return hipErrorNotReady;
    case CUDA_ERROR_ILLEGAL_ADDRESS: return hipErrorIllegalAddress;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return hipErrorLaunchOutOfResources;
    case CUDA_ERROR_LAUNCH_FAILED: return hipErrorLaunchFailure;
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: return hipErrorCooperativeLaunchTooLarge;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return hipErrorStreamCaptureUnsupported;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return hipErrorStreamCaptureInvalidated;
    case CUDA_ERROR_STREAM_CAPTURE_MERGE: return hipErrorStreamCaptureMerge;
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: return hipErrorStreamCaptureUnmatched;
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: return hipErrorStreamCaptureUnjoined;
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return hipErrorStreamCaptureIsolation;
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: return hipErrorStreamCaptureImplicit;
    case CUDA_ERROR_CAPTURED_EVENT: return hipErrorCapturedEvent;
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return hipErrorStreamCaptureWrongThread;
    default: return hipErrorUnknown;
  }
}

thread_local int t_device = 0;  // HIP's per-thread current device, 0 until hipSetDevice

// The thread's device's primary context made current (HIP creates it implicitly on first use).
CUresult ctx() {
  CUcontext c = nullptr;
  if (drv().cuCtxGetCurrent(&c) == CUDA_SUCCESS && c) {
    CUdevice cur = -1;
    if (drv().cuCtxGetDevice(&cur) == CUDA_SUCCESS && cur == t_device) return CUDA_SUCCESS;
  }
  CUdevice d = 0;
  if (CUresult r = drv().cuDeviceGet(&d, t_device); r != CUDA_SUCCESS) return r;
  if (CUresult r = drv().cuDevicePrimaryCtxRetain(&c, d); r != CUDA_SUCCESS) return r;
  return drv().cuCtxSetCurrent(c);
}

#define SHIM_CTX()                                                  \
  do {                                                              \
    if (!drv().ok) return hipErrorNoDevice;                         \
    if (CUresult r_ = ctx(); r_ != CUDA_SUCCESS) return tr(r_);     \
  } while (0)

CUstream cs(hipStream_t s) { return reinterpret_cast<CUstream>(s); }
CUdeviceptr dp(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

}  // namespace

extern "C" {

hipError_t hipInit(unsigned int flags) {
  if (!drv().ok) return hipErrorNoDevice;  // ROCm: no usable driver / GPU
  return tr(drv().cuInit(flags));
}

hipError_t hipGetDeviceCount(int* count) {
  if (!drv().ok) return hipErrorNoDevice;
  return tr(drv().cuDeviceGetCount(count));
}

hipError_t hipDriverGetVersion(int* v) {
  if (!drv().ok) return hipErrorNoDevice;
  return tr(drv().cuDriverGetVersion(v));
}

hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int ordinal) {
  if (!drv().ok) return hipErrorNoDevice;
  if (!p) return hipErrorInvalidValue;
  CUdevice d = 0;
  if (CUresult r = drv().cuDeviceGet(&d, ordinal); r != CUDA_SUCCESS) return tr(r);
  std::memset(p, 0, sizeof *p);
  if (CUresult r = drv().cuDeviceGetName(p->name, sizeof p->name, d); r != CUDA_SUCCESS) return tr(r);
  size_t mem = 0;
  if (CUresult r = drv().cuDeviceTotalMem(&mem, d); r != CUDA_SUCCESS) return tr(r);
  p->totalGlobalMem = mem;
  struct { int* field; CUdevice_attribute a; } attrs[] = {
      {&p->multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&p->warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {&p->maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&p->l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
      {&p->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&p->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&p->clockRate, CU_DEVICE_ATTRIBUTE_CLOCK_RATE},
      {&p->pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID},
  };
  for (auto& a : attrs)
    if (CUresult r = drv().cuDeviceGetAttribute(a.field, a.a, d); r != CUDA_SUCCESS) return tr(r);
  // The target name the HIP backend reports as arch: on AMD a target ID (gfx942:sramecc+:xnack-),
  // here the NVRTC target the test's code objects are compiled for.
  const std::string arch = "sm_" + std::to_string(p->major) + std::to_string(p->minor);
  std::strncpy(p->gcnArchName, arch.c_str(), sizeof p->gcnArchName - 1);
  return hipSuccess;
}

hipError_t hipGetDevice(int* device) {
  if (!drv().ok) return hipErrorNoDevice;
  if (!device) return hipErrorInvalidValue;
  *device = t_device;
  return hipSuccess;
}

hipError_t hipSetDevice(int device) {
  if (!drv().ok) return hipErrorNoDevice;
  int n = 0;
  if (CUresult r = drv().cuDeviceGetCount(&n); r != CUDA_SUCCESS) return tr(r);
  if (device < 0 || device >= n) return hipErrorInvalidDevice;
  t_device = device;
  return tr(ctx());
}

// ROCm 5.x fills memoryType (hipMemoryTypeHost / Device), device, isManaged; an unknown pointer is
// hipErrorInvalidValue there, as here.
hipError_t hipPointerGetAttributes(hipPointerAttribute_t* a, const void* p) {
  if (!drv().ok) return hipErrorNoDevice;
  if (!a) return hipErrorInvalidValue;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
  unsigned int type = 0;
  int ordinal = -1;
  unsigned int managed = 0;
  void* data[] = {&type, &ordinal, &managed};
  if (CUresult r = drv().cuPointerGetAttributes(3, attrs, data, dp(p)); r != CUDA_SUCCESS) return tr(r);
  if (type == 0) return hipErrorInvalidValue;  // not known to the driver
  std::memset(a, 0, sizeof *a);
  a->memoryType = type == CU_MEMORYTYPE_DEVICE ? hipMemoryTypeDevice : hipMemoryTypeHost;
  a->device = ordinal;
  a->isManaged = managed ? 1 : 0;
  return hipSuccess;
}

hipError_t hipGetLastError(void) { return hipSuccess; }  // the shim keeps no sticky error state

hipError_t hipModuleLoadData(hipModule_t* m, const void* image) {
  SHIM_CTX();
  CUmodule cm = nullptr;
  const hipError_t e = tr(drv().cuModuleLoadData(&cm, image));
  *m = reinterpret_cast<hipModule_t>(cm);
  return e;
}

hipError_t hipModuleGetFunction(hipFunction_t* f, hipModule_t m, const char* name) {
  SHIM_CTX();
  CUfunction cf = nullptr;
  const hipError_t e = tr(drv().cuModuleGetFunction(&cf, reinterpret_cast<CUmodule>(m), name));
  *f = reinterpret_cast<hipFunction_t>(cf);
  return e;
}

hipError_t hipModuleUnload(hipModule_t m) {
  SHIM_CTX();
  return tr(drv().cuModuleUnload(reinterpret_cast<CUmodule>(m)));
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, hipStream_t s, void** args,
                                 void** extra) {
  SHIM_CTX();
  return tr(drv().cuLaunchKernel(reinterpret_cast<CUfunction>(f), gx, gy, gz, bx, by, bz, shared, cs(s),
                                 args, extra));
}

// ROCm 5.5+ (the HIP backend declares it itself where the headers are older, as these 5.2 ones).
hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                            unsigned by, unsigned bz, unsigned shared, hipStream_t s, void** args) {
  SHIM_CTX();
  return tr(drv().cuLaunchCooperativeKernel(reinterpret_cast<CUfunction>(f), gx, gy, gz, bx, by, bz, shared, cs(s),
                                            args));
}

hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, hipFunction_t f, int block_size,
                                                             size_t dynamic_shared) {
  SHIM_CTX();
  return tr(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, reinterpret_cast<CUfunction>(f), block_size,
                                                              dynamic_shared));
}

hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t s) {
  SHIM_CTX();
  return tr(drv().cuMemsetD32Async(dp(dst), static_cast<unsigned>(value), count, cs(s)));
}

hipError_t hipMalloc(void** p, size_t bytes) {
  SHIM_CTX();
  CUdeviceptr d = 0;
  const hipError_t e = tr(drv().cuMemAlloc(&d, bytes));
  *p = reinterpret_cast<void*>(d);
  return e;
}

hipError_t hipFree(void* p) {
  SHIM_CTX();
  return tr(drv().cuMemFree(dp(p)));
}

hipError_t hipHostMalloc(void** p, size_t bytes, unsigned int flags) {
  SHIM_CTX();
  unsigned cu = 0;
  if (flags & hipHostMallocMapped) cu |= CU_MEMHOSTALLOC_DEVICEMAP;
  if (flags & hipHostMallocPortable) cu |= CU_MEMHOSTALLOC_PORTABLE;
  return tr(drv().cuMemHostAlloc(p, bytes, cu));
}

hipError_t hipHostGetDevicePointer(void** d, void* h, unsigned int flags) {
  SHIM_CTX();
  CUdeviceptr c = 0;
  const hipError_t e = tr(drv().cuMemHostGetDevicePointer(&c, h, flags));
  *d = reinterpret_cast<void*>(c);
  return e;
}

hipError_t hipHostFree(void* p) {
  SHIM_CTX();
  return tr(drv().cuMemFreeHost(p));
}

hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  SHIM_CTX();
  switch (kind) {
    case hipMemcpyHostToDevice: return tr(drv().cuMemcpyHtoD(dp(dst), src, bytes));
    case hipMemcpyDeviceToHost: return tr(drv().cuMemcpyDtoH(dst, dp(src), bytes));
    case hipMemcpyDeviceToDevice: return tr(drv().cuMemcpyDtoD(dp(dst), dp(src), bytes));
    default: return tr(drv().cuMemcpy(dp(dst), dp(src), bytes));
  }
}

hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned int flags) {
  SHIM_CTX();
  CUstream c = nullptr;
  const unsigned cf = (flags & hipStreamNonBlocking) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
  const hipError_t e = tr(drv().cuStreamCreate(&c, cf));
  *s = reinterpret_cast<hipStream_t>(c);
  return e;
}

hipError_t hipStreamDestroy(hipStream_t s) {
  SHIM_CTX();
  return tr(drv().cuStreamDestroy(cs(s)));
}

hipError_t hipStreamSynchronize(hipStream_t s) {
  SHIM_CTX();
  return tr(drv().cuStreamSynchronize(cs(s)));
}

hipError_t hipStreamIsCapturing(hipStream_t s, hipStreamCaptureStatus* status) {
  SHIM_CTX();
  CUstreamCaptureStatus c = CU_STREAM_CAPTURE_STATUS_NONE;
  const hipError_t e = tr(drv().cuStreamIsCapturing(cs(s), &c));
  *status = c == CU_STREAM_CAPTURE_STATUS_ACTIVE        ? hipStreamCaptureStatusActive
            : c == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? hipStreamCaptureStatusInvalidated
                                                        : hipStreamCaptureStatusNone;
  return e;
}

hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
  SHIM_CTX();
  const CUstreamCaptureMode m = mode == hipStreamCaptureModeGlobal        ? CU_STREAM_CAPTURE_MODE_GLOBAL
                                : mode == hipStreamCaptureModeThreadLocal ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                                                          : CU_STREAM_CAPTURE_MODE_RELAXED;
  return tr(drv().cuStreamBeginCapture(cs(s), m));
}

hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* g) {
  SHIM_CTX();
  CUgraph c = nullptr;
  const hipError_t e = tr(drv().cuStreamEndCapture(cs(s), &c));
  *g = reinterpret_cast<hipGraph_t>(c);
  return e;
}

hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t g, hipGraphNode_t* error_node, char* log,
                               size_t log_size) {
  SHIM_CTX();
  if (error_node) *error_node = nullptr;
  if (log && log_size) log[0] = '\0';
  CUgraphExec c = nullptr;
  const hipError_t e = tr(drv().cuGraphInstantiate(&c, reinterpret_cast<CUgraph>(g), 0));
  *exec = reinterpret_cast<hipGraphExec_t>(c);
  return e;
}

hipError_t hipGraphLaunch(hipGraphExec_t g, hipStream_t s) {
  SHIM_CTX();
  return tr(drv().cuGraphLaunch(reinterpret_cast<CUgraphExec>(g), cs(s)));
}

hipError_t hipGraphExecDestroy(hipGraphExec_t g) {
  SHIM_CTX();
  return tr(drv().cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(g)));
}

hipError_t hipGraphDestroy(hipGraph_t g) {
  SHIM_CTX();
  return tr(drv().cuGraphDestroy(reinterpret_cast<CUgraph>(g)));
}

hipError_t hipEventCreate(hipEvent_t* e) {
  SHIM_CTX();
  CUevent c = nullptr;
  const hipError_t r = tr(drv().cuEventCreate(&c, CU_EVENT_DEFAULT));
  *e = reinterpret_cast<hipEvent_t>(c);
  return r;
}

hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  SHIM_CTX();
  return tr(drv().cuEventRecord(reinterpret_cast<CUevent>(e), cs(s)));
}

hipError_t hipEventSynchronize(hipEvent_t e) {
  SHIM_CTX();
  return tr(drv().cuEventSynchronize(reinterpret_cast<CUevent>(e)));
}

hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  SHIM_CTX();
  return tr(drv().cuEventElapsedTime(ms, reinterpret_cast<CUevent>(start), reinterpret_cast<CUevent>(stop)));
}

hipError_t hipEventDestroy(hipEvent_t e) {
  SHIM_CTX();
  return tr(drv().cuEventDestroy(reinterpret_cast<CUevent>(e)));
}

// Names and messages as ROCm's hipGetErrorName / hipGetErrorString give them for these codes.
const char* hipGetErrorName(hipError_t e) {
  switch (e) {
#define SHIM_NAME(c) \
  case c: return #c;
    SHIM_NAME(hipSuccess) SHIM_NAME(hipErrorInvalidValue) SHIM_NAME(hipErrorOutOfMemory)
    SHIM_NAME(hipErrorNotInitialized) SHIM_NAME(hipErrorDeinitialized) SHIM_NAME(hipErrorNoDevice)
    SHIM_NAME(hipErrorInvalidDevice) SHIM_NAME(hipErrorInvalidImage) SHIM_NAME(hipErrorInvalidContext)
    SHIM_NAME(hipErrorNoBinaryForGpu) SHIM_NAME(hipErrorInvalidKernelFile) SHIM_NAME(hipErrorInvalidSource)
    SHIM_NAME(hipErrorInvalidHandle) SHIM_NAME(hipErrorNotFound) SHIM_NAME(hipErrorNotReady)
    SHIM_NAME(hipErrorIllegalAddress) SHIM_NAME(hipErrorLaunchOutOfResources) SHIM_NAME(hipErrorLaunchFailure)
    SHIM_NAME(hipErrorCooperativeLaunchTooLarge)
    SHIM_NAME(hipErrorStreamCaptureUnsupported) SHIM_NAME(hipErrorStreamCaptureInvalidated)
    SHIM_NAME(hipErrorStreamCaptureMerge) SHIM_NAME(hipErrorStreamCaptureUnmatched)
    SHIM_NAME(hipErrorStreamCaptureUnjoined) SHIM_NAME(hipErrorStreamCaptureIsolation)
    SHIM_NAME(hipErrorStreamCaptureImplicit) SHIM_NAME(hipErrorCapturedEvent)
    SHIM_NAME(hipErrorStreamCaptureWrongThread)
#undef SHIM_NAME
    default: return "hipErrorUnknown";
  }
}

const char* hipGetErrorString(hipError_t e) {
  switch (e) {
    case hipSuccess: return "no error";
    case hipErrorInvalidValue: return "invalid argument";
    case hipErrorOutOfMemory: return "out of memory";
    case hipErrorNoDevice: return "no ROCm-capable device is detected";
    case hipErrorInvalidDevice: return "invalid device ordinal";
    case hipErrorInvalidImage: return "device kernel image is invalid";
    case hipErrorInvalidKernelFile: return "invalid kernel file";
    case hipErrorNotFound: return "named symbol not found";
    case hipErrorInvalidHandle: return "invalid resource handle";
    case hipErrorNotReady: return "device not ready";
    case hipErrorLaunchFailure: return "unspecified launch failure";
    case hipErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
    default: return "the HIP shim has no message for this code";
  }
}

}  // extern "C"
