// amax_tune._C: the Python extension over the C API (amax_tune.h), nothing else of the library.
//
// Every function takes plain integers (device pointers, stream handles, dtype codes) so that a call
// from Python costs a few argument conversions and one C call. A failed status becomes the
// package's amax_tune.Error (registered by amax_tune/__init__.py through _register_error) carrying
// the status number and the library's message for this thread (amax_last_error()).
//
// The GIL: compute() keeps it (it only enqueues work, and its per-stream workspace table relies on
// it); context creation and preload() release it while the library opens databases or compiles.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <amax/amax_tune.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

// The amax_tune.Error class. Leaked on purpose: it must outlive every module object at exit.
py::object& error_type() {
  static auto* type = new py::object();
  return *type;
}

[[noreturn]] void raise_status(amax_status_t status, const char* function) {
  const std::string message = amax_last_error();
  const py::object& type = error_type();
  if (!type) throw std::runtime_error(std::string(function) + ": " + amax_status_string(status) + ": " + message);
  const py::object error = type(static_cast<int>(status), message, function);
  PyErr_SetObject(type.ptr(), error.ptr());
  throw py::error_already_set();
}

inline void check(amax_status_t status, const char* function) {
  if (status != AMAX_STATUS_SUCCESS) raise_status(status, function);
}

inline amax_dtype_t to_dtype(int code) { return static_cast<amax_dtype_t>(code); }
inline void* to_ptr(std::uintptr_t p) { return reinterpret_cast<void*>(p); }

// One amax_context_t. Owns it; destroying the object destroys the context (do not let it go while
// work or a captured graph that uses it can still run).
class Context {
 public:
  Context(int device, int nan_mode, std::optional<std::string> user_db, std::optional<std::string> system_db,
          std::optional<std::string> kernel_cache_dir)
      : device_(device), nan_mode_(nan_mode) {
    amax_context_options_t o;
    amax_context_options_init(&o);
    o.device = device;
    o.nan_mode = static_cast<amax_nan_mode_t>(nan_mode);
    if (user_db) o.user_db_path = user_db->c_str();
    if (system_db) o.system_db_path = system_db->c_str();
    if (kernel_cache_dir) o.kernel_cache_dir = kernel_cache_dir->c_str();
    amax_status_t status;
    {
      py::gil_scoped_release unlocked;
      status = amax_context_create(&o, &ctx_);
    }
    check(status, "amax_context_create");
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() { amax_context_destroy(ctx_); }

  int device() const { return device_; }
  int nan_mode() const { return nan_mode_; }

  std::size_t workspace_size(int dtype, std::uint64_t n) const {
    std::size_t bytes = 0;
    check(amax_workspace_size(ctx_, to_dtype(dtype), n, &bytes), "amax_workspace_size");
    return bytes;
  }

  // The caller's workspace.
  void compute_with_workspace(std::uintptr_t input, int dtype, std::uint64_t n, std::uintptr_t output,
                              std::uintptr_t workspace, std::size_t workspace_bytes, std::uintptr_t stream) {
    check(amax_compute(ctx_, to_ptr(input), to_dtype(dtype), n, static_cast<float*>(to_ptr(output)), to_ptr(workspace),
                       workspace_bytes, to_ptr(stream)),
          "amax_compute");
  }

  // The workspace of `stream` from this context's table, grown through the allocator set with
  // set_workspace_allocator: allocator(nbytes, stream) -> (device pointer, owner). owner None:
  // the allocator keeps the buffer valid for the context's life and it serves every later call on
  // that stream (never shrunk, never freed: a graph that captured a call keeps using its address).
  // Otherwise (a buffer of a graph's memory pool during capture) the buffer serves this call only
  // and `owner` (the tensor) is released right after the call has been enqueued.
  void compute(std::uintptr_t input, int dtype, std::uint64_t n, std::uintptr_t output, std::uintptr_t stream) {
    std::size_t need = 0;
    check(amax_workspace_size(ctx_, to_dtype(dtype), n, &need), "amax_workspace_size");
    Workspace w = workspaces_[stream];
    py::object owner;
    if (w.bytes < need) w = grow(need, stream, owner);
    check(amax_compute(ctx_, to_ptr(input), to_dtype(dtype), n, static_cast<float*>(to_ptr(output)), to_ptr(w.ptr),
                       w.bytes, to_ptr(stream)),
          "amax_compute");
  }

  // amax_and_scale with the per-stream workspace of compute(); format: amax_fp8_format_t's value.
  void amax_and_scale(std::uintptr_t input, int dtype, std::uint64_t n, int format, float max, float epsilon,
                      bool force_pow2, bool nan_propagates, std::uintptr_t amax_out, std::uintptr_t scale_out,
                      std::uintptr_t scale_inv_out, std::uintptr_t stream) {
    amax_scale_options_t o;
    amax_scale_options_init(&o);
    o.format = static_cast<amax_fp8_format_t>(format);
    o.max = max;
    o.epsilon = epsilon;
    o.force_pow2 = force_pow2 ? 1 : 0;
    o.nan_propagates = nan_propagates ? 1 : 0;
    check(amax_scale_options_check(&o), "amax_and_scale");
    std::size_t need = 0;
    check(amax_workspace_size(ctx_, to_dtype(dtype), n, &need), "amax_workspace_size");
    Workspace w = workspaces_[stream];
    py::object owner;
    if (w.bytes < need) w = grow(need, stream, owner);
    check(::amax_and_scale(ctx_, to_ptr(input), to_dtype(dtype), n, &o, static_cast<float*>(to_ptr(amax_out)),
                           static_cast<float*>(to_ptr(scale_out)), static_cast<float*>(to_ptr(scale_inv_out)),
                           to_ptr(w.ptr), w.bytes, to_ptr(stream)),
          "amax_and_scale");
  }

  void set_workspace_allocator(py::object allocator) { allocator_ = std::move(allocator); }

  // Bytes of workspace held per stream handle (what compute() has allocated so far).
  std::map<std::uintptr_t, std::size_t> workspaces() const {
    std::map<std::uintptr_t, std::size_t> m;
    for (const auto& [s, w] : workspaces_) m[s] = w.bytes;
    return m;
  }

  void preload(const std::vector<int>& dtypes, const std::vector<std::uint64_t>& sizes) {
    std::vector<amax_dtype_t> d;
    d.reserve(dtypes.size());
    for (int code : dtypes) d.push_back(to_dtype(code));
    amax_status_t status;
    {
      py::gil_scoped_release unlocked;
      status = amax_preload(ctx_, d.data(), d.size(), sizes.data(), sizes.size());
    }
    check(status, "amax_preload");
  }

  py::dict explain(int dtype, std::uint64_t n) const {
    amax_explanation_t e{};
    check(amax_explain(ctx_, to_dtype(dtype), n, &e), "amax_explain");
    py::dict d;
    d["source"] = static_cast<int>(e.source);
    d["label"] = std::string(e.label);
    d["tuned_n"] = e.tuned_n;
    d["expected_us"] = e.expected_us;
    d["expected_gbps"] = e.expected_gbps;
    d["grid"] = e.grid;
    d["launches"] = e.launches;
    d["workspace_bytes"] = e.workspace_bytes;
    d["detail"] = std::string(e.detail);
    return d;
  }

 private:
  struct Workspace {
    std::uintptr_t ptr = 0;
    std::size_t bytes = 0;
  };

  Workspace grow(std::size_t need, std::uintptr_t stream, py::object& owner) {
    if (!allocator_)
      throw py::value_error("amax_tune._C.Context.compute: no workspace allocator is set (call "
                            "set_workspace_allocator, or pass your own workspace to compute_with_workspace)");
    Workspace& held = workspaces_[stream];
    std::size_t bytes = 1024;  // powers of two: a handful of growths over a context's life
    while (bytes < need || bytes < 2 * held.bytes) bytes *= 2;
    const py::tuple r = allocator_(bytes, stream);
    if (r.size() != 2) throw py::value_error("amax_tune._C.Context.compute: the workspace allocator must return (pointer, owner)");
    const Workspace w{r[0].cast<std::uintptr_t>(), bytes};
    if (!w.ptr) throw py::value_error("amax_tune._C.Context.compute: the workspace allocator returned a null pointer");
    owner = r[1];
    if (owner.is_none()) held = w;
    return w;
  }

  amax_context_t ctx_ = nullptr;
  int device_;
  int nan_mode_;
  py::object allocator_;
  std::unordered_map<std::uintptr_t, Workspace> workspaces_;
};

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "amax-tune's C API for Python (raw device pointers and stream handles as integers)";
  m.attr("DTYPE_FP32") = static_cast<int>(AMAX_DTYPE_FP32);
  m.attr("DTYPE_FP16") = static_cast<int>(AMAX_DTYPE_FP16);
  m.attr("DTYPE_BF16") = static_cast<int>(AMAX_DTYPE_BF16);
  m.attr("NAN_PROPAGATE") = static_cast<int>(AMAX_NAN_PROPAGATE);
  m.attr("NAN_IGNORE") = static_cast<int>(AMAX_NAN_IGNORE);
  m.attr("FP8_FORMATS") = py::dict(py::arg("e4m3") = static_cast<int>(AMAX_FP8_E4M3),
                                   py::arg("e5m2") = static_cast<int>(AMAX_FP8_E5M2),
                                   py::arg("e4m3fnuz") = static_cast<int>(AMAX_FP8_E4M3FNUZ),
                                   py::arg("e5m2fnuz") = static_cast<int>(AMAX_FP8_E5M2FNUZ));
  m.attr("FP8_EXPLICIT_MAX") = static_cast<int>(AMAX_FP8_EXPLICIT_MAX);

  m.def("version", [] { return std::string(amax_version()); }, "amax_version(): the library's version");
  m.def("status_string", [](int s) { return std::string(amax_status_string(static_cast<amax_status_t>(s))); },
        "amax_status_string(status): e.g. 'AMAX_STATUS_NO_DEVICE'");
  m.def("last_error", [] { return std::string(amax_last_error()); },
        "amax_last_error(): this thread's message of its last failed call");
  m.def("_keep_forever", [](py::object o) { o.inc_ref(); },
        "Never destroys o (the package's cached contexts: work and captured graphs may use them up to exit)");
  m.def("_register_error", [](py::object type) { error_type() = std::move(type); },
        "Sets the exception class raised for a failed status: type(status: int, message: str, function: str)");

  py::class_<Context>(m, "Context", R"doc(An amax_context_t: one device, one NaN mode.

Context(device, nan_mode, user_db=None, system_db=None, kernel_cache_dir=None): None takes the
library's default (amax_context_options_t), "" disables. Raises amax_tune.Error (e.g. NO_DEVICE).
Thread-safe as the C API is; compute() holds the GIL. Pointers and stream handles are integers.)doc")
      .def(py::init<int, int, std::optional<std::string>, std::optional<std::string>, std::optional<std::string>>(),
           py::arg("device") = 0, py::arg("nan_mode") = 0, py::arg("user_db") = py::none(),
           py::arg("system_db") = py::none(), py::arg("kernel_cache_dir") = py::none())
      .def_property_readonly("device", &Context::device)
      .def_property_readonly("nan_mode", &Context::nan_mode)
      .def("workspace_size", &Context::workspace_size, py::arg("dtype"), py::arg("n"),
           "amax_workspace_size: bytes of workspace for (dtype code, n), never 0")
      .def("compute", &Context::compute, py::arg("input"), py::arg("dtype"), py::arg("n"), py::arg("output"),
           py::arg("stream"),
           "amax_compute with this context's per-stream workspace (needs set_workspace_allocator); async on stream")
      .def("compute_with_workspace", &Context::compute_with_workspace, py::arg("input"), py::arg("dtype"), py::arg("n"),
           py::arg("output"), py::arg("workspace"), py::arg("workspace_bytes"), py::arg("stream"),
           "amax_compute with the caller's workspace (device pointer, bytes); async on stream")
      .def("amax_and_scale", &Context::amax_and_scale, py::arg("input"), py::arg("dtype"), py::arg("n"),
           py::arg("format"), py::arg("max"), py::arg("epsilon"), py::arg("force_pow2"), py::arg("nan_propagates"),
           py::arg("amax_out"), py::arg("scale_out"), py::arg("scale_inv_out"), py::arg("stream"),
           "amax_and_scale with this context's per-stream workspace (device pointers as integers)")
      .def("set_workspace_allocator", &Context::set_workspace_allocator, py::arg("allocator"),
           "allocator(nbytes, stream) -> (device pointer, None: kept for the context's life | owner: this call only)")
      .def("workspaces", &Context::workspaces, "{stream handle: workspace bytes held}")
      .def("preload", &Context::preload, py::arg("dtypes"), py::arg("sizes"),
           "amax_preload: load the kernels of every (dtype, size) pair before graph capture")
      .def("explain", &Context::explain, py::arg("dtype"), py::arg("n"), "amax_explain as a dict");
}
