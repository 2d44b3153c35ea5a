#pragma once
// The reference kernels of the timing protocol (templates/bench_kernels.h): the streaming-read
// bandwidth ceiling and the empty-launch floor, loaded on a device. Used by the tuner and the bench.
#include <cstdint>
#include <memory>
#include <string>

#include "amax/backend.hpp"
#include "amax/binary_cache.hpp"
#include "amax/compiler.hpp"

namespace amax {

/// Source of the reference kernels (templates/bench_kernels.h, embedded into the tuner at build
/// time) after the vendor prelude: `amax_stream_read(const void* in, unsigned long long n16,
/// unsigned* sink)`, a pure streaming read of n16 16-byte vectors launched with 512 threads per
/// block (the bandwidth ceiling), `amax_empty()` (the launch-latency floor), `amax_gate` (the
/// timing gate, measure.hpp Gate), and the bench's TransformerEngine kernels. Thread-safe.
std::string render_reference_kernels(Vendor vendor);

/// The reference kernels of the timing protocol (render_reference_kernels), loaded on a device.
struct ReferenceKernels {
  std::unique_ptr<Module> module;
  FunctionHandle stream_read = nullptr;  ///< (const void* in, unsigned long long n16, unsigned* sink), 512 threads
  FunctionHandle empty = nullptr;        ///< ()
  FunctionHandle gate = nullptr;         ///< (volatile unsigned* words, unsigned long long timeout_ticks), 1 thread: Gate
  /// Builds (through the cache) and loads them. Errors: CompileError, BackendError.
  static ReferenceKernels load(Backend& backend, const JitCompiler& compiler, const BinaryCache& cache);
  /// Enqueues a streaming read of the first bytes / 16 16-byte vectors at `in` (16-byte aligned):
  /// 512 threads, 4 loads in flight each, at most 4 blocks per CU. `sink`: one device word,
  /// practically never written. Errors: BackendError.
  void launch_stream_read(Backend& backend, const void* in, std::uint64_t bytes, void* sink, StreamHandle stream) const;
};

}  // namespace amax
