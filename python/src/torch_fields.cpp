// amax_tune._torch_fields: reads torch tensors' fields through torch's C++ API instead of its Python
// getters (65-100 ns per tensor and field through Python, a few ns here). Built only where
// torch's headers are found at configure time (python/CMakeLists.txt) and used only with the torch
// version it was built against (TORCH_VERSION; amax_tune/_torch.py checks it and otherwise keeps
// its Python path, which is also the path for every tensor this module declines).
//
// A plain CPython module (no pybind11: torch brings its own). Every function holds the GIL, returns
// None for anything it does not take (the caller's Python path then checks it and names the
// problem), and never raises for a tensor: nothing here decides an error message.
#include <torch/csrc/autograd/python_variable.h>

#include <ATen/ops/empty.h>

#include <amax/amax_tune.h>

#include <cstdint>

#ifndef AMAX_TORCH_VERSION  // (CMake's compile check builds it without; the package then never uses it)
#define AMAX_TORCH_VERSION ""
#endif

namespace {

// The dtype code of a supported scalar type, or -1.
int dtype_code(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return AMAX_DTYPE_FP32;
    case at::kHalf: return AMAX_DTYPE_FP16;
    case at::kBFloat16: return AMAX_DTYPE_BF16;
    default: return -1;
  }
}

// The tensor of o when it is a torch.Tensor or Parameter (no other subclass: their semantics may
// differ) on a CUDA/ROCm device, of a supported dtype and contiguous; else nullptr.
const at::Tensor* plain(PyObject* o, int& code) {
  if (!THPVariable_CheckExact(o)) return nullptr;
  const at::Tensor& t = THPVariable_Unpack(o);
  if (!t.defined() || !t.is_cuda()) return nullptr;
  code = dtype_code(t.scalar_type());
  if (code < 0 || !t.is_contiguous()) return nullptr;
  return &t;
}

// tensor_list(xs) -> (device ordinal, records) or None. xs: a list or tuple of at least one
// tensor, every one plain (see plain()) and on one device; records: bytes holding len(xs)
// amax_tensor_t in the native layout (what _C's Context.multi_*_packed take).
PyObject* tensor_list(PyObject*, PyObject* xs) {
  if (!PyList_Check(xs) && !PyTuple_Check(xs)) Py_RETURN_NONE;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(xs);
  if (n == 0) Py_RETURN_NONE;
  PyObject** items = PySequence_Fast_ITEMS(xs);
  PyObject* bytes = PyBytes_FromStringAndSize(nullptr, n * static_cast<Py_ssize_t>(sizeof(amax_tensor_t)));
  if (!bytes) return nullptr;
  auto* rec = reinterpret_cast<amax_tensor_t*>(PyBytes_AS_STRING(bytes));
  int device = -1;
  for (Py_ssize_t i = 0; i < n; ++i) {
    int code = 0;
    const at::Tensor* t = plain(items[i], code);
    const int d = t ? static_cast<int>(t->get_device()) : -1;
    if (!t || (i > 0 && d != device)) {
      Py_DECREF(bytes);
      Py_RETURN_NONE;
    }
    device = d;
    rec[i].data = t->data_ptr();
    rec[i].n = static_cast<uint64_t>(t->numel());
    rec[i].dtype = static_cast<amax_dtype_t>(code);
  }
  return Py_BuildValue("(iN)", device, bytes);
}

// amax_args(x) -> (device ordinal, dtype code, data pointer, n, out, out pointer) or None: the
// arguments of Context.compute for a plain tensor x, with out a new 0-d float32 tensor on x's
// device (at::empty: torch's caching allocator, as torch.empty).
PyObject* amax_args(PyObject*, PyObject* x) {
  int code = 0;
  const at::Tensor* t = plain(x, code);
  if (!t) Py_RETURN_NONE;
  try {
    at::Tensor out = at::empty({}, t->options().dtype(at::kFloat));
    const auto out_ptr = reinterpret_cast<std::uintptr_t>(out.data_ptr());
    PyObject* wrapped = THPVariable_Wrap(std::move(out));
    if (!wrapped) return nullptr;
    return Py_BuildValue("(iiKKNK)", static_cast<int>(t->get_device()), code,
                         static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(t->data_ptr())),
                         static_cast<unsigned long long>(t->numel()), wrapped,
                         static_cast<unsigned long long>(out_ptr));
  } catch (const std::exception& e) {  // an allocation failure: torch's own message
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"tensor_list", tensor_list, METH_O,
     "tensor_list(xs) -> (device, records: bytes of len(xs) amax_tensor_t) or None when a tensor is not a plain "
     "contiguous CUDA tensor of float32/float16/bfloat16, the devices differ or xs is empty / not a list or tuple"},
    {"amax_args", amax_args, METH_O,
     "amax_args(x) -> (device, dtype code, pointer, n, out, out pointer) with out a new 0-d float32 tensor, or "
     "None when x is not a plain contiguous CUDA tensor of float32/float16/bfloat16"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_torch_fields",
                      "torch tensors' fields through torch's C++ API (built against TORCH_VERSION only)", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__torch_fields() {
  PyObject* m = PyModule_Create(&module);
  if (!m) return nullptr;
  if (PyModule_AddStringConstant(m, "TORCH_VERSION", AMAX_TORCH_VERSION) != 0 ||
      PyModule_AddIntConstant(m, "RECORD_BYTES", static_cast<long>(sizeof(amax_tensor_t))) != 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
