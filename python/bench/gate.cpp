// amax_tune_bench_gate (imported as _amax_gate): the C++ timing gate (measure/include/amax/measure.hpp
// Gate, the kernel amax_gate of templates/bench_kernels.h) for python/bench/bench_torch.py, so that
// the Python bench measures GPU time with the same gate as `amax-tune bench`. A bench tool of the
// build tree only: not part of the amax_tune package or its wheel.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "amax/backend.hpp"
#include "amax/binary_cache.hpp"
#include "amax/compiler.hpp"
#include "amax/measure.hpp"
#include "amax/reference_kernels.hpp"

namespace py = pybind11;

namespace {

/// nvbench's blocking kernel on a caller's stream: close(stream) enqueues the gate, the caller then
/// enqueues a batch behind it and calls release(); once the batch has completed, timed_out() says
/// whether the gate gave up (after timeout_ms) before release(), in which case events around the
/// batch did not measure GPU time. Not thread-safe: one batch at a time.
class PyGate {
 public:
  PyGate(int device, double timeout_ms) {
    if (!(timeout_ms > 0)) throw std::invalid_argument("timeout_ms must be > 0, got " + std::to_string(timeout_ms));
    amax::Vendor vendor;
    if (!amax::first_available_vendor(vendor, device))
      throw std::runtime_error("no GPU at ordinal " + std::to_string(device) + " for the timing gate");
    backend_ = amax::make_backend(vendor, device);
    const auto compiler = amax::make_compiler(vendor);
    kernels_ = amax::ReferenceKernels::load(*backend_, *compiler, amax::BinaryCache(amax::BinaryCache::default_dir()));
    gate_ = std::make_unique<amax::tune::Gate>(*backend_, kernels_.gate, timeout_ms);
  }
  /// Enqueues the closed gate on the stream whose handle is `stream` (cudaStream_t / hipStream_t as
  /// an integer, 0 = the legacy default stream).
  void close(std::uintptr_t stream) { gate_->close(reinterpret_cast<amax::StreamHandle>(stream)); }
  void release() noexcept { gate_->release(); }
  bool timed_out() const noexcept { return gate_->timed_out(); }
  double timeout_ms() const noexcept { return gate_->timeout_ms(); }

 private:
  // destroyed in reverse order: the gate, then its kernel's module, then the backend
  std::unique_ptr<amax::Backend> backend_;
  amax::ReferenceKernels kernels_;
  std::unique_ptr<amax::tune::Gate> gate_;
};

}  // namespace

PYBIND11_MODULE(_amax_gate, m) {
  m.doc() = "The C++ timing gate of amax-tune's bench (measure.hpp Gate) for the Python bench";
  py::class_<PyGate>(m, "Gate", "nvbench's blocking kernel: holds a stream until release() or timeout_ms")
      .def(py::init<int, double>(), py::arg("device") = 0, py::arg("timeout_ms") = 1000.0,
           "Loads the gate kernel on GPU `device` (JIT-compiled through the binary cache). Errors: RuntimeError.")
      .def("close", &PyGate::close, py::arg("stream"),
           "Enqueues the closed gate on the stream handle `stream` (an int: torch's Stream.cuda_stream)")
      .def("release", &PyGate::release, "Opens the last closed gate (a store to mapped host memory)")
      .def("timed_out", &PyGate::timed_out,
           "Whether the last closed gate gave up before release(); meaningful once the work behind it completed")
      .def_property_readonly("timeout_ms", &PyGate::timeout_ms);
}
