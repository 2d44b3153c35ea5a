// amax_tune._C: the Python extension over the C API (amax_tune.h), nothing else of the library.
//
// Every function takes plain integers (device pointers, stream handles, dtype codes) so that a call
// from Python costs a few argument conversions and one C call. A failed status becomes the
// package's amax_tune.Error (registered by amax_tune/__init__.py through _register_error) carrying
// the status number and the library's message for this thread (amax_last_error()).
//
// The GIL: compute() and the multi-tensor calls keep it (they only enqueue work, and the per-stream
// workspace table and the reused tensor list rely on it); context creation, preload() and
// multi_preload() release it while the library opens databases or compiles.
//
// Lists of tensors (multi_*) arrive as columns, not as objects: pointers, counts and dtype codes,
// each a list or tuple of ints (read in place, one C conversion per item), any other sequence, or
// a 1-d integer buffer (array.array, numpy); dtypes may be one int for the whole list. The
// amax_tensor_t array is built once per call into a vector the context reuses.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <amax/amax_tune.h>
#include <amax/dtype.hpp>

#include <cctype>
#include <climits>
#include <cstdint>
#include <cstring>
#include <type_traits>
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

// ---- a list of tensors from three columns ----

[[noreturn]] void bad_item(PyObject* exc, const char* column, std::size_t i, PyObject* item, const char* why) {
  PyErr_Clear();
  const std::string value = py::repr(py::handle(item)).cast<std::string>();
  PyErr_Format(exc, "%s[%zu] is %s (%s)", column, i, value.c_str(), why);
  throw py::error_already_set();
}

// An int item as uint64: exact ints directly (PyLong_AsUnsignedLong is a short loop over the digits;
// the long long variant goes through a byte array), other integers (numpy's) through __index__.
// bool and non-integers raise TypeError, negative or too large values ValueError, naming the item.
std::uint64_t item_u64(PyObject* o, const char* column, std::size_t i) {
  static_assert(sizeof(unsigned long long) == 8);
  if (PyLong_CheckExact(o)) {
    // Values below 2^30 (counts, dtype codes) without a call into libpython: one digit.
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact(reinterpret_cast<PyLongObject*>(o))) {
      const Py_ssize_t v = PyUnstable_Long_CompactValue(reinterpret_cast<PyLongObject*>(o));
      if (v >= 0) return static_cast<std::uint64_t>(v);
    }
#else
    const Py_ssize_t size = Py_SIZE(o);
    if (size == 0 || size == 1) return size ? reinterpret_cast<PyLongObject*>(o)->ob_digit[0] : 0;
#endif
    if constexpr (sizeof(unsigned long) == 8) {
      const unsigned long v = PyLong_AsUnsignedLong(o);
      if (v != static_cast<unsigned long>(-1) || !PyErr_Occurred()) return v;
    } else {
      const unsigned long long v = PyLong_AsUnsignedLongLong(o);
      if (v != static_cast<unsigned long long>(-1) || !PyErr_Occurred()) return v;
    }
    bad_item(PyExc_ValueError, column, i, o, "not in 0 .. 2**64 - 1");
  }
  if (PyBool_Check(o) || !PyIndex_Check(o)) bad_item(PyExc_TypeError, column, i, o, "not an int");
  const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
  if (!index) throw py::error_already_set();
  return item_u64(index.ptr(), column, i);
}

// Calls store(i, value) for the n items of type T (an integer type) of a buffer; a negative value
// raises ValueError naming the item.
template <class T, class Store>
void read_buffer(const char* buf, std::size_t n, const char* name, Store& store) {
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, buf + i * sizeof(T), sizeof(T));
    if constexpr (std::is_signed_v<T>)
      if (v < 0)
        throw py::value_error(std::string(name) + "[" + std::to_string(i) + "] is " + std::to_string(v) +
                              " (not in 0 .. 2**64 - 1)");
    store(i, static_cast<std::uint64_t>(v), nullptr);
  }
}

// Calls store(i, value) for every item of `column` (a list or tuple of ints, another sequence, or a
// 1-d integer buffer) and returns the count; `expect` (when not SIZE_MAX) is the length it must have.
template <class Store>
std::size_t read_column(py::handle column, const char* name, std::size_t expect, const char* expect_name,
                        std::vector<amax_tensor_t>& out, Store store) {
  auto sized = [&](std::size_t n) {
    if (expect != SIZE_MAX && n != expect)
      throw py::value_error(std::string(name) + " has " + std::to_string(n) + " entries but " + expect_name + " has " +
                            std::to_string(expect));
    if (expect == SIZE_MAX) out.resize(n);
  };
  PyObject* o = column.ptr();
  if (PyList_Check(o) || PyTuple_Check(o)) {
    const std::size_t n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(o));
    sized(n);
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (std::size_t i = 0; i < n; ++i) store(out[i], item_u64(items[i], name, i), i, items[i]);
    return n;
  }
  if (PyObject_CheckBuffer(o)) {
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0) throw py::error_already_set();
    struct Release {
      Py_buffer* b;
      ~Release() { PyBuffer_Release(b); }
    } release{&b};
    const char* f = b.format ? b.format : "B";
    if (*f == '@' || *f == '=') ++f;
    if (b.ndim != 1 || !*f || f[1] || !std::strchr("bBhHiIlLqQnN", *f))
      throw py::type_error(std::string(name) + " is a buffer of format '" + (b.format ? b.format : "B") + "' with " +
                           std::to_string(b.ndim) + " dimensions; a buffer must be 1-d of native integers");
    const std::size_t n = static_cast<std::size_t>(b.len / b.itemsize);
    sized(n);
    auto at = [&](std::size_t i, std::uint64_t v, PyObject* item) { store(out[i], v, i, item); };
    const char* p = static_cast<const char*>(b.buf);
    const bool is_signed = std::islower(static_cast<unsigned char>(*f));  // b h i l q n; B H I L Q N unsigned
    switch (b.itemsize) {
      case 1: is_signed ? read_buffer<std::int8_t>(p, n, name, at) : read_buffer<std::uint8_t>(p, n, name, at); break;
      case 2: is_signed ? read_buffer<std::int16_t>(p, n, name, at) : read_buffer<std::uint16_t>(p, n, name, at); break;
      case 4: is_signed ? read_buffer<std::int32_t>(p, n, name, at) : read_buffer<std::uint32_t>(p, n, name, at); break;
      case 8: is_signed ? read_buffer<std::int64_t>(p, n, name, at) : read_buffer<std::uint64_t>(p, n, name, at); break;
      default:
        throw py::type_error(std::string(name) + ": integer items of " + std::to_string(b.itemsize) +
                             " bytes are not supported");
    }
    return n;
  }
  if (!PySequence_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o))
    throw py::type_error(std::string(name) + " must be a list or tuple of ints, another sequence of ints or a 1-d "
                         "integer buffer, got " + py::type::handle_of(column).attr("__name__").cast<std::string>());
  const py::object fast = py::reinterpret_steal<py::object>(PySequence_Fast(o, name));
  if (!fast) throw py::error_already_set();
  return read_column(fast, name, expect, expect_name, out, store);
}

// Builds `out` (resized, reused) from counts, dtypes (a column, or one int for every tensor) and
// pointers (a column, or None: all NULL, for the calls that read no pointer). Raises TypeError /
// ValueError naming the column, the index and the value; the library checks the rest (dtype codes,
// limits, NULL and misaligned pointers) and names tensors[i].
void build_list(py::handle pointers, py::handle counts, py::handle dtypes, std::vector<amax_tensor_t>& out) {
  const std::size_t n = read_column(counts, "counts", SIZE_MAX, "", out,
                                    [](amax_tensor_t& t, std::uint64_t v, std::size_t, PyObject*) {
                                      t.n = v;
                                      t.data = nullptr;
                                      t.dtype = AMAX_DTYPE_FP32;
                                    });
  if (PyLong_Check(dtypes.ptr()) && !PyBool_Check(dtypes.ptr())) {
    const long code = PyLong_AsLong(dtypes.ptr());
    if (code < 0 || code > INT_MAX) bad_item(PyExc_ValueError, "dtypes", 0, dtypes.ptr(), "not a dtype code");
    for (auto& t : out) t.dtype = static_cast<amax_dtype_t>(code);
  } else {
    read_column(dtypes, "dtypes", n, "counts", out, [](amax_tensor_t& t, std::uint64_t v, std::size_t i, PyObject* o) {
      if (v > INT_MAX) {
        if (o) bad_item(PyExc_ValueError, "dtypes", i, o, "not a dtype code");
        throw py::value_error("dtypes[" + std::to_string(i) + "] is " + std::to_string(v) + " (not a dtype code)");
      }
      t.dtype = static_cast<amax_dtype_t>(v);
    });
  }
  if (!pointers.is_none())
    read_column(pointers, "pointers", n, "counts", out, [](amax_tensor_t& t, std::uint64_t v, std::size_t, PyObject*) {
      t.data = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(v));
    });
}

// Builds `out` from records: a C-contiguous buffer (bytes) of amax_tensor_t in the native layout,
// as amax_tune._torch_fields.tensor_list makes them. ValueError for a length that is not a multiple
// of the record; the library checks the records' contents.
void read_records(py::handle records, std::vector<amax_tensor_t>& out) {
  Py_buffer b;
  if (PyObject_GetBuffer(records.ptr(), &b, PyBUF_C_CONTIGUOUS) != 0) throw py::error_already_set();
  struct Release {
    Py_buffer* b;
    ~Release() { PyBuffer_Release(b); }
  } release{&b};
  const std::size_t bytes = static_cast<std::size_t>(b.len);
  if (bytes % sizeof(amax_tensor_t) != 0)
    throw py::value_error("records has " + std::to_string(bytes) + " bytes, not a multiple of amax_tensor_t's " +
                          std::to_string(sizeof(amax_tensor_t)));
  out.resize(bytes / sizeof(amax_tensor_t));
  if (bytes) std::memcpy(out.data(), b.buf, bytes);
}

// An amax_explanation_t as the dict Explanation is made from.
py::dict explanation_dict(const amax_explanation_t& e) {
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

py::dict multi_explanation_dict(const amax_multi_explanation_t& e) {
  py::dict d;
  d["source"] = static_cast<int>(e.source);
  d["label"] = std::string(e.label);
  d["tensors"] = e.tensors;
  d["total_bytes"] = e.total_bytes;
  d["largest_bytes"] = e.largest_bytes;
  d["launches"] = e.launches;
  d["tensors_per_launch"] = e.tensors_per_launch;
  d["workspace_bytes"] = e.workspace_bytes;
  d["detail"] = std::string(e.detail);
  return d;
}

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

  // amax_context_create_sibling: a context of `nan_mode` sharing this one's databases, kernels and
  // stream slots (its own workspaces and allocator, unset).
  std::unique_ptr<Context> sibling(int nan_mode) const {
    std::unique_ptr<Context> s(new Context(device_, nan_mode));
    check(amax_context_create_sibling(ctx_, static_cast<amax_nan_mode_t>(nan_mode), &s->ctx_),
          "amax_context_create_sibling");
    return s;
  }

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
    const amax_scale_options_t o = scale_options(format, max, epsilon, force_pow2, nan_propagates, "amax_and_scale");
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

  // amax_and_scale with the caller's workspace (device pointer, bytes): the custom op's body.
  void amax_and_scale_with_workspace(std::uintptr_t input, int dtype, std::uint64_t n, int format, float max,
                                     float epsilon, bool force_pow2, bool nan_propagates, std::uintptr_t amax_out,
                                     std::uintptr_t scale_out, std::uintptr_t scale_inv_out, std::uintptr_t workspace,
                                     std::size_t workspace_bytes, std::uintptr_t stream) {
    const amax_scale_options_t o = scale_options(format, max, epsilon, force_pow2, nan_propagates, "amax_and_scale");
    check(::amax_and_scale(ctx_, to_ptr(input), to_dtype(dtype), n, &o, static_cast<float*>(to_ptr(amax_out)),
                           static_cast<float*>(to_ptr(scale_out)), static_cast<float*>(to_ptr(scale_inv_out)),
                           to_ptr(workspace), workspace_bytes, to_ptr(stream)),
          "amax_and_scale");
  }

  void set_workspace_allocator(py::object allocator) { allocator_ = std::move(allocator); }

  // Bytes of workspace held per stream handle (what compute() has allocated so far).
  std::map<std::uintptr_t, std::size_t> workspaces() const {
    std::map<std::uintptr_t, std::size_t> m;
    for (const auto& [s, w] : workspaces_) m[s] = w.bytes;
    return m;
  }

  // amax_preload (scale: amax_preload_scale, amax_and_scale's fused kernels); blocking, without the GIL.
  void preload(const std::vector<int>& dtypes, const std::vector<std::uint64_t>& sizes, bool scale) {
    std::vector<amax_dtype_t> d;
    d.reserve(dtypes.size());
    for (int code : dtypes) d.push_back(to_dtype(code));
    amax_status_t status;
    {
      py::gil_scoped_release unlocked;
      status = scale ? amax_preload_scale(ctx_, d.data(), d.size(), sizes.data(), sizes.size())
                     : amax_preload(ctx_, d.data(), d.size(), sizes.data(), sizes.size());
    }
    check(status, scale ? "amax_preload_scale" : "amax_preload");
  }

  // amax_explain, or amax_explain_scale (the fused call's variant) when `scale`.
  py::dict explain(int dtype, std::uint64_t n, bool scale) const {
    amax_explanation_t e{};
    if (scale) check(amax_explain_scale(ctx_, to_dtype(dtype), n, &e), "amax_explain_scale");
    else check(amax_explain(ctx_, to_dtype(dtype), n, &e), "amax_explain");
    return explanation_dict(e);
  }

  // ---- FP8 quantize (amax_quantize); format: amax_fp8_format_t's value, cast_rule amax_cast_rule_t's ----

  std::size_t quantize_workspace_size(int dtype, std::uint64_t n, int format) const {
    const amax_quantize_options_t o = quantize_options(format, 0.0f, false, false, 0, "amax_quantize_workspace_size");
    std::size_t bytes = 0;
    check(amax_quantize_workspace_size(ctx_, to_dtype(dtype), n, &o, &bytes), "amax_quantize_workspace_size");
    return bytes;
  }

  // amax_quantize with the per-stream workspace of compute(); async on stream.
  void quantize(std::uintptr_t input, int dtype, std::uint64_t n, int format, float epsilon, bool force_pow2,
                bool nan_propagates, int cast_rule, std::uintptr_t output, std::uintptr_t amax_out,
                std::uintptr_t scale_out, std::uintptr_t scale_inv_out, std::uintptr_t stream) {
    const amax_quantize_options_t o =
        quantize_options(format, epsilon, force_pow2, nan_propagates, cast_rule, "amax_quantize");
    std::size_t need = 0;
    check(amax_quantize_workspace_size(ctx_, to_dtype(dtype), n, &o, &need), "amax_quantize_workspace_size");
    Workspace w = workspaces_[stream];
    py::object owner;
    if (w.bytes < need) w = grow(need, stream, owner);
    quantize_into(input, dtype, n, o, output, amax_out, scale_out, scale_inv_out, w.ptr, w.bytes, stream);
  }

  // amax_quantize with the caller's workspace (device pointer, bytes): the custom op's body.
  void quantize_with_workspace(std::uintptr_t input, int dtype, std::uint64_t n, int format, float epsilon,
                               bool force_pow2, bool nan_propagates, int cast_rule, std::uintptr_t output,
                               std::uintptr_t amax_out, std::uintptr_t scale_out, std::uintptr_t scale_inv_out,
                               std::uintptr_t workspace, std::size_t workspace_bytes, std::uintptr_t stream) {
    const amax_quantize_options_t o =
        quantize_options(format, epsilon, force_pow2, nan_propagates, cast_rule, "amax_quantize");
    quantize_into(input, dtype, n, o, output, amax_out, scale_out, scale_inv_out, workspace, workspace_bytes, stream);
  }

  // amax_preload_quantize for `format`; blocking, without the GIL.
  void preload_quantize(const std::vector<int>& dtypes, const std::vector<std::uint64_t>& sizes, int format) {
    const amax_quantize_options_t o = quantize_options(format, 0.0f, false, false, 0, "amax_preload_quantize");
    std::vector<amax_dtype_t> d;
    d.reserve(dtypes.size());
    for (int code : dtypes) d.push_back(to_dtype(code));
    amax_status_t status;
    {
      py::gil_scoped_release unlocked;
      status = amax_preload_quantize(ctx_, d.data(), d.size(), sizes.data(), sizes.size(), &o);
    }
    check(status, "amax_preload_quantize");
  }

  // amax_explain_quantize for `format`.
  py::dict explain_quantize(int dtype, std::uint64_t n, int format) const {
    const amax_quantize_options_t o = quantize_options(format, 0.0f, false, false, 0, "amax_explain_quantize");
    amax_explanation_t e{};
    check(amax_explain_quantize(ctx_, to_dtype(dtype), n, &o, &e), "amax_explain_quantize");
    return explanation_dict(e);
  }

  // ---- many tensors per call: a list as (pointers, counts, dtypes) columns (build_list) ----

  // amax_multi_workspace_size of a list (its counts and dtypes: pointers are not read).
  std::size_t multi_workspace_size(py::handle counts, py::handle dtypes) const {
    build_list(py::none(), counts, dtypes, t_list);
    return multi_need(t_list);
  }

  // amax_multi_compute with the per-stream workspace of compute(); async on stream.
  void multi_compute(py::handle pointers, py::handle counts, py::handle dtypes, std::uintptr_t output,
                     std::uintptr_t stream) {
    build_list(pointers, counts, dtypes, t_list);
    enqueue_multi(output, stream);
  }

  // multi_compute of a list given as records (read_records).
  void multi_compute_records(py::handle records, std::uintptr_t output, std::uintptr_t stream) {
    read_records(records, t_list);
    enqueue_multi(output, stream);
  }

  // amax_multi_compute of t_list with the per-stream workspace.
  void enqueue_multi(std::uintptr_t output, std::uintptr_t stream) {
    float* out = static_cast<float*>(to_ptr(output));
    with_multi_workspace(t_list, stream, "amax_multi_compute", [&](const Workspace& w) {
      return amax_multi_compute(ctx_, t_list.data(), t_list.size(), out, to_ptr(w.ptr), w.bytes, to_ptr(stream));
    });
  }

  // amax_multi_compute with the caller's workspace (device pointer, bytes).
  void multi_compute_with_workspace(py::handle pointers, py::handle counts, py::handle dtypes, std::uintptr_t output,
                                    std::uintptr_t workspace, std::size_t workspace_bytes, std::uintptr_t stream) {
    build_list(pointers, counts, dtypes, t_list);
    check(amax_multi_compute(ctx_, t_list.data(), t_list.size(), static_cast<float*>(to_ptr(output)),
                             to_ptr(workspace), workspace_bytes, to_ptr(stream)),
          "amax_multi_compute");
  }

  // amax_multi_and_scale with the per-stream workspace; options as amax_and_scale's.
  void multi_and_scale(py::handle pointers, py::handle counts, py::handle dtypes, int format, float max, float epsilon,
                       bool force_pow2, bool nan_propagates, std::uintptr_t amax_out, std::uintptr_t scale_out,
                       std::uintptr_t scale_inv_out, std::uintptr_t stream) {
    const amax_scale_options_t o =
        scale_options(format, max, epsilon, force_pow2, nan_propagates, "amax_multi_and_scale");
    build_list(pointers, counts, dtypes, t_list);
    enqueue_multi_and_scale(o, amax_out, scale_out, scale_inv_out, stream);
  }

  // multi_and_scale of a list given as records (read_records).
  void multi_and_scale_records(py::handle records, int format, float max, float epsilon, bool force_pow2,
                               bool nan_propagates, std::uintptr_t amax_out, std::uintptr_t scale_out,
                               std::uintptr_t scale_inv_out, std::uintptr_t stream) {
    const amax_scale_options_t o =
        scale_options(format, max, epsilon, force_pow2, nan_propagates, "amax_multi_and_scale");
    read_records(records, t_list);
    enqueue_multi_and_scale(o, amax_out, scale_out, scale_inv_out, stream);
  }

  // amax_multi_and_scale of t_list with the per-stream workspace.
  void enqueue_multi_and_scale(const amax_scale_options_t& o, std::uintptr_t amax_out, std::uintptr_t scale_out,
                               std::uintptr_t scale_inv_out, std::uintptr_t stream) {
    float* a = static_cast<float*>(to_ptr(amax_out));
    float* s = static_cast<float*>(to_ptr(scale_out));
    float* si = static_cast<float*>(to_ptr(scale_inv_out));
    with_multi_workspace(t_list, stream, "amax_multi_and_scale", [&](const Workspace& w) {
      return amax_multi_and_scale(ctx_, t_list.data(), t_list.size(), &o, a, s, si, to_ptr(w.ptr), w.bytes,
                                  to_ptr(stream));
    });
  }

  // amax_multi_and_scale with the caller's workspace (device pointer, bytes): the custom op's body.
  void multi_and_scale_with_workspace(py::handle pointers, py::handle counts, py::handle dtypes, int format, float max,
                                      float epsilon, bool force_pow2, bool nan_propagates, std::uintptr_t amax_out,
                                      std::uintptr_t scale_out, std::uintptr_t scale_inv_out, std::uintptr_t workspace,
                                      std::size_t workspace_bytes, std::uintptr_t stream) {
    const amax_scale_options_t o =
        scale_options(format, max, epsilon, force_pow2, nan_propagates, "amax_multi_and_scale");
    build_list(pointers, counts, dtypes, t_list);
    check(amax_multi_and_scale(ctx_, t_list.data(), t_list.size(), &o, static_cast<float*>(to_ptr(amax_out)),
                               static_cast<float*>(to_ptr(scale_out)), static_cast<float*>(to_ptr(scale_inv_out)),
                               to_ptr(workspace), workspace_bytes, to_ptr(stream)),
          "amax_multi_and_scale");
  }

  // amax_multi_preload (scale: amax_multi_preload_scale) for a list's counts and dtypes; blocking,
  // without the GIL.
  void multi_preload(py::handle counts, py::handle dtypes, bool scale) {
    std::vector<amax_tensor_t> list;  // its own: other threads may run while the GIL is released
    build_list(py::none(), counts, dtypes, list);
    amax_status_t status;
    {
      py::gil_scoped_release unlocked;
      status = scale ? amax_multi_preload_scale(ctx_, list.data(), list.size())
                     : amax_multi_preload(ctx_, list.data(), list.size());
    }
    check(status, scale ? "amax_multi_preload_scale" : "amax_multi_preload");
  }

  // amax_multi_explain of the list's tensors of `dtype`, as a dict.
  py::dict multi_explain(py::handle counts, py::handle dtypes, int dtype) const {
    build_list(py::none(), counts, dtypes, t_list);
    amax_multi_explanation_t e{};
    check(amax_multi_explain(ctx_, t_list.data(), t_list.size(), to_dtype(dtype), &e), "amax_multi_explain");
    return multi_explanation_dict(e);
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
    std::size_t bytes = 1024;  // powers of two: a handful of growths over a context's life
    const std::size_t held = workspaces_[stream].bytes;
    while (bytes < need || bytes < 2 * held) bytes *= 2;
    // The allocator runs Python (torch.empty, which may release the GIL): other threads may add
    // streams to the table meanwhile, so it is looked up again afterwards, not held by reference.
    const py::tuple r = allocator_(bytes, stream);
    if (r.size() != 2) throw py::value_error("amax_tune._C.Context.compute: the workspace allocator must return (pointer, owner)");
    const Workspace w{r[0].cast<std::uintptr_t>(), bytes};
    if (!w.ptr) throw py::value_error("amax_tune._C.Context.compute: the workspace allocator returned a null pointer");
    owner = r[1];
    if (owner.is_none()) workspaces_[stream] = w;
    return w;
  }

  static amax_quantize_options_t quantize_options(int format, float epsilon, bool force_pow2, bool nan_propagates,
                                                  int cast_rule, const char* function) {
    amax_quantize_options_t o;
    amax_quantize_options_init(&o);
    o.format = static_cast<amax_fp8_format_t>(format);
    o.epsilon = epsilon;
    o.force_pow2 = force_pow2 ? 1 : 0;
    o.nan_propagates = nan_propagates ? 1 : 0;
    o.cast_rule = static_cast<amax_cast_rule_t>(cast_rule);
    check(amax_quantize_options_check(&o), function);
    return o;
  }
  void quantize_into(std::uintptr_t input, int dtype, std::uint64_t n, const amax_quantize_options_t& o,
                     std::uintptr_t output, std::uintptr_t amax_out, std::uintptr_t scale_out,
                     std::uintptr_t scale_inv_out, std::uintptr_t workspace, std::size_t workspace_bytes,
                     std::uintptr_t stream) {
    check(::amax_quantize(ctx_, to_ptr(input), to_dtype(dtype), n, &o, static_cast<std::uint8_t*>(to_ptr(output)),
                          static_cast<float*>(to_ptr(amax_out)), static_cast<float*>(to_ptr(scale_out)),
                          static_cast<float*>(to_ptr(scale_inv_out)), to_ptr(workspace), workspace_bytes,
                          to_ptr(stream)),
          "amax_quantize");
  }

  static amax_scale_options_t scale_options(int format, float max, float epsilon, bool force_pow2,
                                            bool nan_propagates, const char* function) {
    amax_scale_options_t o;
    amax_scale_options_init(&o);
    o.format = static_cast<amax_fp8_format_t>(format);
    o.max = max;
    o.epsilon = epsilon;
    o.force_pow2 = force_pow2 ? 1 : 0;
    o.nan_propagates = nan_propagates ? 1 : 0;
    check(amax_scale_options_check(&o), function);
    return o;
  }

  std::size_t multi_need(const std::vector<amax_tensor_t>& list) const {
    std::size_t bytes = 0;
    check(amax_multi_workspace_size(ctx_, list.data(), list.size(), &bytes), "amax_multi_workspace_size");
    return bytes;
  }

  // Runs call(workspace) with the stream's held workspace first: the library checks its size from
  // the list it sorts anyway, so only a call it is too small for (WORKSPACE_TOO_SMALL, nothing
  // enqueued) asks amax_multi_workspace_size, grows it and runs again. A call sorts the list once.
  template <class Call>
  void with_multi_workspace(const std::vector<amax_tensor_t>& list, std::uintptr_t stream, const char* function,
                            Call call) {
    Workspace w = workspaces_[stream];
    py::object owner;  // a per-call buffer (graph capture) lives until the call has been enqueued
    if (!w.ptr && !list.empty()) w = grow(multi_need(list), stream, owner);
    amax_status_t status = call(w);
    if (status == AMAX_STATUS_WORKSPACE_TOO_SMALL) {
      w = grow(multi_need(list), stream, owner);
      status = call(w);
    }
    check(status, function);
  }

  // The list of this thread's multi-tensor call, reused (no allocation per call once grown).
  static thread_local std::vector<amax_tensor_t> t_list;

  Context(int device, int nan_mode) : device_(device), nan_mode_(nan_mode) {}

  amax_context_t ctx_ = nullptr;
  int device_;
  int nan_mode_;
  py::object allocator_;
  std::unordered_map<std::uintptr_t, Workspace> workspaces_;
};

thread_local std::vector<amax_tensor_t> Context::t_list;

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "amax-tune's C API for Python (raw device pointers and stream handles as integers)";
  m.attr("DTYPE_FP32") = static_cast<int>(AMAX_DTYPE_FP32);
  m.attr("DTYPE_FP16") = static_cast<int>(AMAX_DTYPE_FP16);
  m.attr("DTYPE_BF16") = static_cast<int>(AMAX_DTYPE_BF16);
  {  // every dtype name the library parses (amax::parse_dtype) -> its amax_dtype_t, and code -> canonical name
    py::dict codes, names;
    for (const auto& d : amax::all_dtypes()) {
      codes[py::str(std::string(d.name))] = static_cast<int>(amax::index(d.dtype));
      names[py::int_(static_cast<int>(amax::index(d.dtype)))] = std::string(d.name);
    }
    for (const auto& a : amax::kDTypeAliases) codes[py::str(std::string(a.name))] = static_cast<int>(amax::index(a.dtype));
    m.attr("DTYPE_CODES") = codes;
    m.attr("DTYPE_NAMES") = names;
  }
  m.attr("NAN_PROPAGATE") = static_cast<int>(AMAX_NAN_PROPAGATE);
  m.attr("NAN_IGNORE") = static_cast<int>(AMAX_NAN_IGNORE);
  m.attr("FP8_FORMATS") = py::dict(py::arg("e4m3") = static_cast<int>(AMAX_FP8_E4M3),
                                   py::arg("e5m2") = static_cast<int>(AMAX_FP8_E5M2),
                                   py::arg("e4m3fnuz") = static_cast<int>(AMAX_FP8_E4M3FNUZ),
                                   py::arg("e5m2fnuz") = static_cast<int>(AMAX_FP8_E5M2FNUZ));
  m.attr("FP8_EXPLICIT_MAX") = static_cast<int>(AMAX_FP8_EXPLICIT_MAX);
  m.attr("CAST_RULES") = py::dict(py::arg("transformer_engine") = static_cast<int>(AMAX_CAST_TRANSFORMER_ENGINE),
                                  py::arg("torchao") = static_cast<int>(AMAX_CAST_TORCHAO));

  m.def("version", [] { return std::string(amax_version()); }, "amax_version(): the library's version");
  m.def("status_string", [](int s) { return std::string(amax_status_string(static_cast<amax_status_t>(s))); },
        "amax_status_string(status): e.g. 'AMAX_STATUS_NO_DEVICE'");
  m.def("last_error", [] { return std::string(amax_last_error()); },
        "amax_last_error(): this thread's message of its last failed call");
  m.def("_keep_forever", [](py::object o) { o.inc_ref(); },
        "Never destroys o (the package's cached contexts: work and captured graphs may use them up to exit)");
  m.def("_register_error", [](py::object type) { error_type() = std::move(type); },
        "Sets the exception class raised for a failed status: type(status: int, message: str, function: str)");
  m.def(
      "_tensor_list",
      [](py::handle pointers, py::handle counts, py::handle dtypes, bool echo) -> py::object {
        static std::vector<amax_tensor_t> list;  // under the GIL
        build_list(pointers, counts, dtypes, list);
        if (!echo) return py::int_(list.size());
        py::list r;
        for (const auto& t : list)
          r.append(py::make_tuple(reinterpret_cast<std::uintptr_t>(t.data), t.n, static_cast<int>(t.dtype)));
        return r;
      },
      py::arg("pointers"), py::arg("counts"), py::arg("dtypes"), py::arg("echo") = false,
      "Builds the amax_tensor_t array of a multi-tensor call from its columns, as the Context.multi_* calls "
      "do, without a context: the count, or with echo=True the (pointer, n, dtype) of each entry. For "
      "tests and for timing the conversion.");

  m.attr("TENSOR_RECORD_BYTES") = static_cast<int>(sizeof(amax_tensor_t));
  m.def(
      "_records",
      [](py::handle records) {
        std::vector<amax_tensor_t> list;
        read_records(records, list);
        py::list r;
        for (const auto& t : list)
          r.append(py::make_tuple(reinterpret_cast<std::uintptr_t>(t.data), t.n, static_cast<int>(t.dtype)));
        return r;
      },
      py::arg("records"),
      "The (pointer, n, dtype) of each amax_tensor_t record of a buffer, as the Context.multi_*_records calls read "
      "them. For tests.");

  py::class_<Context>(m, "Context", R"doc(An amax_context_t: one device, one NaN mode.

Context(device, nan_mode, user_db=None, system_db=None, kernel_cache_dir=None): None takes the
library's default (amax_context_options_t), "" disables. Raises amax_tune.Error (e.g. NO_DEVICE).
Thread-safe as the C API is; compute(), amax_and_scale() and the multi_* calls that enqueue hold the
GIL. Pointers and stream handles are integers. A multi-tensor list is three columns: pointers, counts
and dtypes (codes, or one code for every tensor), each a list or tuple of ints, another sequence or a
1-d integer buffer; errors in them raise TypeError / ValueError naming the column, index and value.)doc")
      .def(py::init<int, int, std::optional<std::string>, std::optional<std::string>, std::optional<std::string>>(),
           py::arg("device") = 0, py::arg("nan_mode") = 0, py::arg("user_db") = py::none(),
           py::arg("system_db") = py::none(), py::arg("kernel_cache_dir") = py::none())
      .def_property_readonly("device", &Context::device)
      .def_property_readonly("nan_mode", &Context::nan_mode)
      .def("sibling", &Context::sibling, py::arg("nan_mode"),
           "A Context of nan_mode on the same device sharing this one's databases, kernel cache and stream "
           "slots (amax_context_create_sibling); its workspace allocator is unset.")
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
      .def("preload", &Context::preload, py::arg("dtypes"), py::arg("sizes"), py::arg("scale") = false,
           "amax_preload (scale=True: amax_preload_scale, amax_and_scale's fused kernels): load the kernels of "
           "every (dtype, size) pair before graph capture")
      .def("amax_and_scale_with_workspace", &Context::amax_and_scale_with_workspace, py::arg("input"), py::arg("dtype"),
           py::arg("n"), py::arg("format"), py::arg("max"), py::arg("epsilon"), py::arg("force_pow2"),
           py::arg("nan_propagates"), py::arg("amax_out"), py::arg("scale_out"), py::arg("scale_inv_out"),
           py::arg("workspace"), py::arg("workspace_bytes"), py::arg("stream"),
           "amax_and_scale with the caller's workspace (device pointer, bytes); async on stream")
      .def("multi_and_scale_with_workspace", &Context::multi_and_scale_with_workspace, py::arg("pointers"),
           py::arg("counts"), py::arg("dtypes"), py::arg("format"), py::arg("max"), py::arg("epsilon"),
           py::arg("force_pow2"), py::arg("nan_propagates"), py::arg("amax_out"), py::arg("scale_out"),
           py::arg("scale_inv_out"), py::arg("workspace"), py::arg("workspace_bytes"), py::arg("stream"),
           "amax_multi_and_scale with the caller's workspace (device pointer, bytes); async on stream")
      .def("quantize_workspace_size", &Context::quantize_workspace_size, py::arg("dtype"), py::arg("n"),
           py::arg("format"), "amax_quantize_workspace_size (format: amax_fp8_format_t's value)")
      .def("quantize", &Context::quantize, py::arg("input"), py::arg("dtype"), py::arg("n"), py::arg("format"),
           py::arg("epsilon"), py::arg("force_pow2"), py::arg("nan_propagates"), py::arg("cast_rule"),
           py::arg("output"), py::arg("amax_out"), py::arg("scale_out"), py::arg("scale_inv_out"), py::arg("stream"),
           "amax_quantize with this context's per-stream workspace (device pointers as integers); async on stream")
      .def("quantize_with_workspace", &Context::quantize_with_workspace, py::arg("input"), py::arg("dtype"),
           py::arg("n"), py::arg("format"), py::arg("epsilon"), py::arg("force_pow2"), py::arg("nan_propagates"),
           py::arg("cast_rule"), py::arg("output"), py::arg("amax_out"), py::arg("scale_out"),
           py::arg("scale_inv_out"), py::arg("workspace"), py::arg("workspace_bytes"), py::arg("stream"),
           "amax_quantize with the caller's workspace (device pointer, bytes); async on stream")
      .def("preload_quantize", &Context::preload_quantize, py::arg("dtypes"), py::arg("sizes"), py::arg("format"),
           "amax_preload_quantize: load the quantize kernels of (dtype, size) pairs for the format (blocking)")
      .def("explain_quantize", &Context::explain_quantize, py::arg("dtype"), py::arg("n"), py::arg("format"),
           "amax_explain_quantize as a dict")
      .def("explain", &Context::explain, py::arg("dtype"), py::arg("n"), py::arg("scale") = false,
           "amax_explain (amax_explain_scale with scale=True) as a dict")
      .def("multi_workspace_size", &Context::multi_workspace_size, py::arg("counts"), py::arg("dtypes"),
           "amax_multi_workspace_size of the list (counts, dtype codes or one code), never 0")
      .def("multi_compute", &Context::multi_compute, py::arg("pointers"), py::arg("counts"), py::arg("dtypes"),
           py::arg("output"), py::arg("stream"),
           "amax_multi_compute: output[i] = amax of tensor i (pointers, counts, dtype codes or one code: lists or "
           "tuples of ints, other sequences or 1-d integer buffers), with the per-stream workspace; async on stream")
      .def("multi_compute_records", &Context::multi_compute_records, py::arg("records"), py::arg("output"),
           py::arg("stream"),
           "multi_compute of a list given as records: bytes of amax_tensor_t (amax_tune._torch_fields.tensor_list)")
      .def("multi_and_scale_records", &Context::multi_and_scale_records, py::arg("records"), py::arg("format"),
           py::arg("max"), py::arg("epsilon"), py::arg("force_pow2"), py::arg("nan_propagates"), py::arg("amax_out"),
           py::arg("scale_out"), py::arg("scale_inv_out"), py::arg("stream"),
           "multi_and_scale of a list given as records (as multi_compute_records)")
      .def("multi_compute_with_workspace", &Context::multi_compute_with_workspace, py::arg("pointers"),
           py::arg("counts"), py::arg("dtypes"), py::arg("output"), py::arg("workspace"), py::arg("workspace_bytes"),
           py::arg("stream"), "amax_multi_compute with the caller's workspace (device pointer, bytes)")
      .def("multi_and_scale", &Context::multi_and_scale, py::arg("pointers"), py::arg("counts"), py::arg("dtypes"),
           py::arg("format"), py::arg("max"), py::arg("epsilon"), py::arg("force_pow2"), py::arg("nan_propagates"),
           py::arg("amax_out"), py::arg("scale_out"), py::arg("scale_inv_out"), py::arg("stream"),
           "amax_multi_and_scale with the per-stream workspace: amax, scale and scale_inv per tensor (three arrays "
           "of len(counts) fp32, disjoint)")
      .def(
          "multi_preload",
          [](Context& c, py::handle counts, py::handle dtypes) { c.multi_preload(counts, dtypes, false); },
          py::arg("counts"), py::arg("dtypes"),
          "amax_multi_preload: load the kernels of lists of this shape (counts, dtypes) before graph capture")
      .def(
          "multi_preload_scale",
          [](Context& c, py::handle counts, py::handle dtypes) { c.multi_preload(counts, dtypes, true); },
          py::arg("counts"), py::arg("dtypes"), "amax_multi_preload_scale: the same for multi_and_scale's kernels")
      .def("multi_explain", &Context::multi_explain, py::arg("counts"), py::arg("dtypes"), py::arg("dtype"),
           "amax_multi_explain of the list's tensors of dtype, as a dict");
}
