#pragma once
// The GPU API behind amax-tune: one interface, two implementations of the same shape.
//   CUDA: driver API (primary context, cuModuleLoadData, cuLaunchKernel, events), loaded with
//         dlopen("libcuda.so.1") so that binaries start on machines without a GPU driver.
//   HIP:  HIP module API (hipModuleLoadData, hipModuleLaunchKernel, events).
// The launch logic above it (launch.hpp) is written once for both.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "amax/arch.hpp"

namespace amax {

/// A failed GPU API call. what() names the call, the error code's name and number and the
/// driver's message, e.g. "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (200): device kernel
/// image is invalid".
class BackendError : public std::runtime_error {
 public:
  BackendError(std::string call, int code, const std::string& what)
      : std::runtime_error(what), call_(std::move(call)), code_(code) {}
  const std::string& call() const noexcept { return call_; }
  int code() const noexcept { return code_; }

 private:
  std::string call_;
  int code_;
};

/// What the tuner and dispatcher need to know about a device.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;            ///< "NVIDIA H200", "AMD Instinct MI300X"
  std::string arch;            ///< JIT target: "sm_90", or the full target ID "gfx942:sramecc+:xnack-"
  int cu_count = 0;            ///< SMs (NVIDIA) / CUs (AMD)
  int wave_size = 0;           ///< 32 / 64
  int max_threads_per_block = 0;
  std::uint64_t l2_bytes = 0;  ///< last-level on-chip cache the timing protocol must defeat
  std::uint64_t memory_bytes = 0;
  std::string driver_version;  ///< "cuda driver 13.0" / "hip 5.2.21153"
};

// Opaque handles of the underlying API (CUstream/hipStream_t, CUfunction/hipFunction_t, ...).
using StreamHandle = void*;    ///< nullptr = the legacy default stream
using FunctionHandle = void*;
using EventHandle = void*;
using GraphExecHandle = void*;

/// A loaded code object; unloads on destruction. Not copyable.
class Module {
 public:
  virtual ~Module() = default;
  /// The kernel `name`. Errors: BackendError when absent.
  virtual FunctionHandle function(const std::string& name) const = 0;
};

/// Which device (and, on CUDA, which context) a stream was created in: what the C API checks
/// before it launches on a caller's stream (docs/api.md, "Several GPUs").
struct StreamOwner {
  int device = -1;           ///< ordinal of the stream's device; -1 where the API cannot tell
                             ///< (HIP before ROCm 6 has no hipStreamGetDevice)
  bool same_context = true;  ///< false for a stream of another context of any device (CUDA:
                             ///< not the device's primary context that this backend uses)
};

/// One device of one vendor. Thread-safety: every method may be called from any thread. Each
/// call makes the device's context (CUDA: the primary context; HIP: the device) current on the
/// calling thread for its duration and restores the thread's previous one before it returns, so
/// the caller's current-device state is left as the caller set it.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Vendor vendor() const noexcept = 0;
  virtual const DeviceInfo& device() const noexcept = 0;

  virtual std::unique_ptr<Module> load_module(std::span<const char> binary) = 0;
  /// Launches `f` with a 1-D grid and block on `stream`; `args` as for cuLaunchKernel.
  virtual void launch(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle stream,
                      void** args) = 0;
  /// As launch(), as a programmatic dependent launch (CUDA sm_90+ with cuLaunchKernelEx:
  /// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION), so that `f` may start before the
  /// previous kernel on `stream` completes; `f` must execute griddepcontrol.wait before it reads
  /// that kernel's results (amax_wait_prerequisite_grid in the template). Where the device or
  /// driver lacks it (HIP, before sm_90, a driver without cuLaunchKernelEx): an ordinary launch.
  virtual void launch_dependent(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle stream,
                                void** args) {
    launch(f, grid, block, stream, args);
  }
  /// As launch(), as a cooperative launch (CUDA: cuLaunchCooperativeKernel; HIP:
  /// hipModuleLaunchCooperativeKernel, ROCm 5.5+): every block of the grid is resident at once, so
  /// blocks may wait on each other (polling, a grid-wide barrier). One occupancy query per
  /// call first: a grid larger than max_active_blocks_per_cu(f, block) x the CU count is refused
  /// here, on both vendors and also while `stream` is being captured (HIP's capture path checks
  /// nothing, and such a grid would wait forever on replay). Under stream capture it becomes a kernel
  /// node with the cooperative attribute (tests/gpu check it on CUDA). Errors: BackendError with
  /// call() "launch_cooperative" naming the grid, the resident blocks and their two factors when the
  /// grid is too large; BackendError from the query or the launch, also where the backend or runtime
  /// has no cooperative launch (HIP before ROCm 5.5).
  void launch_cooperative(FunctionHandle f, std::uint32_t grid, std::uint32_t block, StreamHandle stream,
                          void** args);
  /// Blocks of `f` launched with `block` threads (no dynamic shared memory) that one CU/SM holds at
  /// once (CUDA: cuOccupancyMaxActiveBlocksPerMultiprocessor; HIP:
  /// hipModuleOccupancyMaxActiveBlocksPerMultiprocessor). Errors: BackendError (also from a backend
  /// without the query: this default).
  virtual std::uint32_t max_active_blocks_per_cu(FunctionHandle f, std::uint32_t block) {
    (void)f, (void)block;
    throw BackendError("max_active_blocks_per_cu", 0, "this backend has no occupancy query");
  }
  /// Sets `count` 32-bit words at `dst` to `value`, asynchronously on `stream` (a memset node
  /// under graph capture).
  virtual void memset32_async(void* dst, std::uint32_t value, std::size_t count, StreamHandle stream) = 0;

  virtual void* allocate(std::size_t bytes) = 0;  ///< device memory; BackendError when out of memory
  virtual void release(void* p) noexcept = 0;
  /// Page-locked host memory of `bytes` bytes, mapped into the device's address space: `host` is
  /// the host's pointer and `device` the address kernels use for the same bytes (they may be
  /// equal). The host's stores become visible to a kernel that polls the words with volatile
  /// loads while it runs, which is what the timing gate (measure.hpp Gate) needs. Zeroed.
  /// Errors: BackendError. Release with release_mapped_host(host).
  struct MappedHost {
    void* host = nullptr;
    void* device = nullptr;
  };
  virtual MappedHost allocate_mapped_host(std::size_t bytes) = 0;
  virtual void release_mapped_host(void* host) noexcept = 0;
  /// Synchronous: returns once the bytes are in device memory (also from pageable host memory,
  /// where the driver's copy may return before its DMA completes), so that work on any stream
  /// sees them.
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;     ///< synchronous

  /// Who owns `s`. The special handles (nullptr = legacy default stream, CU_STREAM_LEGACY = 1,
  /// CU_STREAM_PER_THREAD / hipStreamPerThread = 2) resolve to the current context, which every
  /// call makes this device's, so they are this device's. Errors: BackendError when the driver
  /// rejects the handle (a destroyed stream, garbage).
  virtual StreamOwner stream_owner(StreamHandle s) = 0;
  /// Ordinal of the device whose memory `p` points into, or -1 where `p` is not one device's
  /// memory: host memory (pinned or pageable), managed/unified memory (any device may read it),
  /// or a pointer the driver does not know. One pointer-attribute query (cuPointerGetAttributes /
  /// hipPointerGetAttributes); never throws.
  virtual int memory_device(const void* p) noexcept = 0;

  virtual StreamHandle create_stream() = 0;  ///< a non-blocking stream
  virtual void destroy_stream(StreamHandle s) noexcept = 0;
  virtual void synchronize(StreamHandle s) = 0;
  /// True while `s` is being captured into a graph (no synchronisation or allocation allowed).
  virtual bool is_capturing(StreamHandle s) = 0;

  virtual EventHandle create_event() = 0;
  virtual void destroy_event(EventHandle e) noexcept = 0;
  virtual void record(EventHandle e, StreamHandle s) = 0;
  /// Milliseconds between two recorded, completed events (waits for `end`).
  virtual float elapsed_ms(EventHandle start, EventHandle end) = 0;

  /// Graph capture of `s` (global capture mode), for tests and benchmarks of graph replay.
  virtual void begin_capture(StreamHandle s) = 0;
  /// Ends the capture and instantiates the graph.
  virtual GraphExecHandle end_capture(StreamHandle s) = 0;
  virtual void launch_graph(GraphExecHandle g, StreamHandle s) = 0;
  virtual void destroy_graph(GraphExecHandle g) noexcept = 0;

 protected:
  /// The vendor's cooperative launch, called by launch_cooperative() once the grid is known to be
  /// resident. This default (a backend without one) throws BackendError.
  virtual void launch_cooperative_unchecked(FunctionHandle f, std::uint32_t grid, std::uint32_t block,
                                            StreamHandle stream, void** args) {
    (void)f, (void)grid, (void)block, (void)stream, (void)args;
    throw BackendError("launch_cooperative", 0, "this backend has no cooperative launch");
  }
};

/// Number of devices of `vendor` visible to this process; 0 when the build lacks that backend,
/// the driver library is missing or no device is present (never throws).
int device_count(Vendor vendor) noexcept;

/// Why device_count(vendor) is 0, for skip messages and errors ("libcuda.so.1 not found", ...).
std::string no_device_reason(Vendor vendor);

/// The backend for device `ordinal` of `vendor`. Errors: BackendError from the driver,
/// std::runtime_error naming the vendor when this build has no such backend or no such device.
std::unique_ptr<Backend> make_backend(Vendor vendor, int ordinal = 0);

/// The vendor whose device `ordinal` exists (NVIDIA checked first, then AMD): the one rule by
/// which the library, the tuner and the bench pick a backend for a device ordinal. Returns false
/// (and leaves `out` alone) when no vendor has more than `ordinal` devices. Thread-safe.
bool first_available_vendor(Vendor& out, int ordinal = 0) noexcept;

}  // namespace amax
