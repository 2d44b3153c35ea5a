"""The torch-free part of the package: dtype and NaN-mode names, the cached contexts, explain and
preload by (dtype, n)."""
import collections
import dataclasses
import math
import os
import threading

from . import _C

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))

#: dtype names accepted wherever a dtype is given as a string (torch dtypes too, when torch is there):
#: the library's own table (amax/dtype.hpp, its canonical names and kDTypeAliases); plain dicts
DTYPE_CODES = dict(_C.DTYPE_CODES)
DTYPE_NAMES = dict(_C.DTYPE_NAMES)
NAN_MODES = {"propagate": _C.NAN_PROPAGATE, "ignore": _C.NAN_IGNORE}
SOURCES = {0: "override", 1: "user_db", 2: "system_db", 3: "default"}
#: FP8 format names -> amax_fp8_format_t values, and the explicit-max value: plain Python objects
#: (not the extension's attributes), which torch.compile traces as constants
FP8_FORMATS = dict(_C.FP8_FORMATS)
FP8_EXPLICIT_MAX = int(_C.FP8_EXPLICIT_MAX)


def nan_code(nan, fn):
    code = NAN_MODES.get(nan) if isinstance(nan, str) else None
    if code is None:
        raise ValueError("%s: nan=%r is not a NaN mode; use 'propagate' (any NaN gives NaN, torch.amax) "
                         "or 'ignore' (NaNs skipped, all-NaN gives +0.0, TransformerEngine)" % (fn, nan))
    return code


def scale_format(format, max, fn):
    """(amax_fp8_format_t value, explicit max) of amax_and_scale's format= and max= (raises naming them).
    format=None means 'e4m3' unless max= is given (then the explicit numerator)."""
    if max is None and format is None:
        format = "e4m3"
    if max is not None:
        if format not in (None, "explicit"):
            raise ValueError("%s: max=%r is an explicit numerator; give format='explicit' (or leave format out "
                             "with format=None), not format=%r" % (fn, max, format))
        return FP8_EXPLICIT_MAX, float(max)
    code = FP8_FORMATS.get(format) if isinstance(format, str) else None
    if code is None:
        raise ValueError("%s: format=%r is not an FP8 format; use one of %s, or max=<float>"
                         % (fn, format, ", ".join(repr(k) for k in FP8_FORMATS)))
    return code, 0.0


def multi_list(tensors, fn, name="tensors"):
    """tensors itself when it is a list or tuple (what the multi-tensor calls take); TypeError naming
    it otherwise (a single tensor, a generator, a dict)."""
    if isinstance(tensors, (list, tuple)):
        return tensors
    raise TypeError("%s: %s must be a list or tuple of tensors, got %s" % (fn, name, type(tensors).__qualname__))


def is_dense(shape, strides, unit):
    """True when an array of this shape and strides (in any unit; ``unit`` is one element's stride)
    covers exactly prod(shape) consecutive elements in some order: contiguous, or a permutation of a
    contiguous array such as a transpose. amax does not depend on order, so such a view is reduced in
    place; any other view (a step slice, an expand) is not."""
    expected = unit
    for stride, extent in sorted((st, sz) for sz, st in zip(shape, strides) if sz != 1):
        if stride != expected:
            return False
        expected *= extent
    return True


#: __cuda_array_interface__ typestr -> (dtype code, bytes per element); bfloat16 has no standard typestr
_CAI_DTYPES = {"<f4": (_C.DTYPE_FP32, 4), "<f2": (_C.DTYPE_FP16, 2)}

#: what cuda_array_fields returns: the device pointer (int), the dtype code, the element count
CudaArrayFields = collections.namedtuple("CudaArrayFields", ["pointer", "dtype", "n"])


def cuda_array_fields(x):
    """``(pointer, dtype, n)`` of an array that has ``__cuda_array_interface__`` (CuPy, Numba, ...),
    without torch: the arguments :class:`amax_tune.Context`'s ``compute_with_workspace`` (and the
    ``multi_*`` columns) take. ``dtype`` is the package's dtype code (DTYPE_FP32 for typestr
    ``<f4``, DTYPE_FP16 for ``<f2``), ``n`` the element count.

    The array must be dense: C-contiguous or a permutation of a contiguous array (a transpose);
    amax does not depend on the order. Raises TypeError for an object without the interface or of
    another element type, ValueError (naming shape and strides) for a strided view or a masked
    array. The caller orders the producer's stream before the computing stream. Thread-safe."""
    fn = "amax_tune.cuda_array_fields"
    cai = getattr(x, "__cuda_array_interface__", None)
    if not isinstance(cai, dict):
        raise TypeError("%s: a %s has no __cuda_array_interface__ (CuPy, Numba and JAX arrays on a GPU have it)"
                        % (fn, type(x).__qualname__))
    typestr = cai.get("typestr")
    code_size = _CAI_DTYPES.get(typestr)
    if code_size is None:
        raise TypeError("%s: typestr %r is not supported; supported: '<f4' (float32), '<f2' (float16)" % (fn, typestr))
    code, size = code_size
    shape = tuple(cai.get("shape", ()))
    n = math.prod(shape)
    strides = cai.get("strides")
    if cai.get("mask") is not None:
        raise ValueError("%s: the array has a mask; amax takes every element of a plain array" % fn)
    if strides is not None and n > 0 and not is_dense(shape, strides, size):
        raise ValueError("%s: the array is a strided view (shape %s, strides %s bytes); copy it first "
                         "(cupy.ascontiguousarray(x))" % (fn, shape, tuple(strides)))
    return CudaArrayFields(int(cai["data"][0]), code, n)


def system_db_path():
    """The shipped database this package passes to the library: ``None`` when $AMAX_TUNE_SYSTEM_DB
    is set (the library reads it) or when the package holds no ``data/system.db`` (the library's own
    rule: ``<prefix>/share/amax-tune/system.db`` next to libamax_tune)."""
    if os.environ.get("AMAX_TUNE_SYSTEM_DB"):
        return None
    bundled = os.path.join(_PKG_DIR, "data", "system.db")
    return bundled if os.path.isfile(bundled) else None


_contexts = {}
_lock = threading.Lock()
#: called with each new context (the torch layer installs its workspace allocator here)
_on_new_context = []


def context(device=0, nan="propagate"):
    """The package's context of (device ordinal, NaN mode), created on first use and kept for the
    life of the process (work in flight and captured CUDA graphs may use it up to exit). The two NaN
    modes of a device share one database load, kernel cache and set of stream slots (siblings).

    The user database is the library's default ($AMAX_TUNE_DB, else
    ~/.local/share/amax-tune/tuning.db), the system database :func:`system_db_path`. Raises
    :class:`amax_tune.Error` (``NO_DEVICE`` without a GPU). Thread-safe.
    """
    return context_of(_device_ordinal(device, "amax_tune.context"), nan_code(nan, "amax_tune.context"))


def context_of(device, nan_mode):
    key = device * 2 + nan_mode
    c = _contexts.get(key)
    if c is not None:
        return c
    with _lock:
        c = _contexts.get(key)
        if c is None:
            # The other NaN mode's context of the device, where there is one, lends its state: one
            # database load, kernel cache and set of stream slots per device.
            other = _contexts.get(device * 2 + 1 - nan_mode)
            if other is not None:
                c = other.sibling(nan_mode)
            else:
                c = _C.Context(device, nan_mode, None, system_db_path(), None)
            for hook in _on_new_context:
                hook(c)
            _C._keep_forever(c)
            _contexts[key] = c
    return c


def _device_ordinal(device, fn):
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise ValueError("%s: device=%r is not a device ordinal (an int >= 0)" % (fn, device))
    return device


def dtype_code_of_name(dtype, fn):
    code = DTYPE_CODES.get(dtype.lower()) if isinstance(dtype, str) else None
    if code is None:
        raise TypeError("%s: dtype %r is not supported; supported: fp32, fp16, bf16 (or the torch dtypes "
                        "torch.float32, torch.float16, torch.bfloat16)" % (fn, dtype))
    return code


def element_count(n, fn):
    if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n >= 1 << 64:
        raise ValueError("%s: n=%r is not an element count (an int, 0 <= n < 2**64)" % (fn, n))
    return n


class _Described:
    """``str()`` of an explanation: label, source and detail."""

    def __str__(self):
        return "%s (%s): %s" % (self.label, self.source, self.detail)


@dataclasses.dataclass(frozen=True)
class Explanation(_Described):
    """What amax_explain (or, with ``explain(..., scale=True)``, amax_explain_scale) reports for
    (dtype, n): ``source`` ('override', 'user_db', 'system_db' or
    'default'), ``label`` (the variant), ``tuned_n`` (the tuned size of the entry, 0 for defaults),
    ``expected_us`` / ``expected_gbps`` (the entry's measurement at tuned_n, 0 when unknown),
    ``grid`` (blocks for this n), ``launches`` (1 or 2; for n = 0 the memsets: 1, or 3 for the
    fused call), ``workspace_bytes``, ``detail`` (a
    sentence: which entry, measured where and when, or why a fallback). ``str()`` gives label,
    source and detail."""
    dtype: str
    n: int
    source: str
    label: str
    tuned_n: int
    expected_us: float
    expected_gbps: float
    grid: int
    launches: int
    workspace_bytes: int
    detail: str


def explanation_of(d, code, n):
    """An Explanation of the dict of one of _C.Context's explain calls for (dtype code, n)."""
    d["source"] = SOURCES.get(d["source"], str(d["source"]))
    return Explanation(dtype=DTYPE_NAMES[code], n=n, **d)


def explain_code(ctx, code, n, scale=False):
    return explanation_of(ctx.explain(code, n, scale), code, n)


@dataclasses.dataclass(frozen=True)
class MultiExplanation(_Described):
    """What amax_multi_explain reports for the tensors of one dtype of a list: ``source``
    ('override', 'user_db', 'system_db' or 'default'), ``label`` (the multi-tensor variant, e.g.
    ``multi.t512.v8.u4.c32k.b4cu.thread``), ``tensors``, ``total_bytes`` and ``largest_bytes`` (the
    group's shape), ``launches`` (kernel launches for them), ``tensors_per_launch`` (descriptors per
    launch of the kernel used), ``workspace_bytes``, ``detail`` (which entry, or why the default).
    ``str()`` gives label, source and detail."""
    dtype: str
    source: str
    label: str
    tensors: int
    total_bytes: int
    largest_bytes: int
    launches: int
    tensors_per_launch: int
    workspace_bytes: int
    detail: str


def explain_multi_codes(ctx, counts, codes):
    """{dtype name: MultiExplanation} for each dtype present in the list (counts, dtype codes), in
    the order fp32, fp16, bf16."""
    r = {}
    for code in sorted(set(codes)):
        d = ctx.multi_explain(counts, codes, code)
        d["source"] = SOURCES.get(d["source"], str(d["source"]))
        r[DTYPE_NAMES[code]] = MultiExplanation(dtype=DTYPE_NAMES[code], **d)
    return r
