"""amax-tune for Python: ``amax = max |x|`` of a GPU tensor with the tuned kernel of its device,
dtype and size, on torch's current stream.

    import torch, amax_tune
    x = torch.randn(1 << 20, device="cuda", dtype=torch.bfloat16)
    a = amax_tune.amax(x)                       # 0-d float32 tensor on x's device, async
    a = amax_tune.amax(x, nan="ignore")         # NaNs skipped (TransformerEngine), all-NaN gives +0.0
    amax_tune.amax(x, out=history[i])           # into a 1-element float32 tensor of x's device
    print(amax_tune.explain(x))                 # which tuned variant serves this (dtype, n), and why
    amax_tune.preload(["bf16"], [1 << 20])      # load kernels before torch.cuda.graph capture
    amax_tune.preload(["bf16"], [1 << 20], scale=True)      # ... and those of amax_and_scale
    a, s, si = amax_tune.amax_and_scale(x, format="e4m3")   # amax, scale, scale_inv from one launch
    amax_tune.amax_and_scale(x, out=(hist[i], scale, scale_inv))   # into a recipe's own tensors
    print(amax_tune.explain(x, scale=True))     # the fused variant amax_and_scale runs for x
    amaxes = amax_tune.amax_multi(weights)      # 1-d float32, one amax per tensor, a few launches
    a, s, si = amax_tune.amax_multi_and_scale(weights)      # the same with scale and scale_inv per tensor
    amax_tune.preload_multi(weights)            # load the multi-tensor kernels before capture

Contract (the library's, bit for bit): the largest |x| exactly (denormals kept, |-0.0| = +0.0);
``nan="propagate"`` (default): any NaN gives NaN (0x7fc00000), as torch.amax(x.abs());
``nan="ignore"``: NaNs skipped; +-Inf gives +Inf; an empty tensor gives +0.0.

Inputs: torch tensors of float32, float16, bfloat16 on a CUDA (or ROCm) device, and any
``__dlpack__`` / ``__cuda_array_interface__`` producer (CuPy, JAX), viewed without a copy; the
result is a torch tensor (``cupy.from_dlpack(result)`` views it back). A contiguous tensor, or a
permutation of one (a transpose), is reduced in place; any other strided view (a step slice, an
expand) is first copied with ``x.contiguous()`` (torch's allocator, on the same stream), so the
result is always the amax of exactly the view's elements. Errors: ValueError for a tensor not on a
GPU, for ``out`` on another device than x, for a bad ``nan``; TypeError for an unsupported dtype or
a non-array; :class:`Error` (with ``.status``, a :class:`Status`, and the library's
``.message``) for every failed C status, e.g. ``NO_DEVICE`` without a GPU, ``NOT_PRELOADED`` when
a kernel not yet loaded is called during graph capture.

Streams, memory: the work is enqueued on ``torch.cuda.current_stream(x.device)``; nothing
synchronises. Eager calls allocate the output (none with ``out=``) and, once per (device, NaN
mode, stream), a workspace from torch's caching allocator that is kept for the life of the process
(captured CUDA graphs use its address). Under torch.compile (the custom ops) the workspace is a
tensor of that call only, released once the work is enqueued, as torch's temporaries are: CUDA-graph
trees (``mode="reduce-overhead"``) allow no other live allocation in their pool. A context per
(device, NaN mode) is created on first use and lives until exit. The library's rules hold: do not replay a captured graph at the same time as other amax work
on its capture stream.

torch.compile: ``amax`` is the custom op ``torch.ops.amax_tune.amax`` (and ``amax_out``) with fake
kernels, so ``torch.compile(fullgraph=True)`` keeps it in the graph; eager calls skip the
dispatcher. Autograd: the result is a constant (no gradient flows to x), as FP8 recipes treat a
scale's amax.

Versions: Python >= 3.9 (:data:`PYTHON_MIN`), torch >= 2.4 (:data:`TORCH_MIN`: torch.library.custom_op)
for the torch calls. Without torch, or with an older torch, ``import amax_tune`` still works:
:func:`explain` / :func:`preload` / :func:`preload_multi` / :func:`explain_multi` take (dtype name, n),
:class:`Context` computes on raw device pointers, :func:`cuda_array_fields` reads them from a
``__cuda_array_interface__`` array (CuPy, Numba); the torch calls raise ImportError naming the reason.
An older torch, or one that fails to import, is warned about once at import
(:class:`TorchVersionWarning`, naming the version, the minimum and what is unavailable); torch not
installed is not (a supported way to use the package).

Many tensors per call: ``amax_multi(tensors)`` (a list or tuple; dtypes may mix; empty tensors
give +0.0) returns a 1-d float32 tensor of ``len(tensors)`` amaxes on the tensors' device (all on
one), written by the C API's ``amax_multi_compute`` in a few launches whatever the count (one per
1600 tensors of a dtype on NVIDIA sm_70+), on torch's current stream; per tensor the same contract
as ``amax`` (strided views copied, NaN modes, bit for bit). It is the custom op
``torch.ops.amax_tune.amax_multi`` (and ``amax_multi_out``, Tensor[] inputs, fake kernels), so
``torch.compile(fullgraph=True)`` keeps it in the graph. ``amax_multi_and_scale`` adds scale and
scale_inv per tensor by ``amax_and_scale``'s rule (the custom ops ``amax_multi_and_scale`` and
``amax_multi_and_scale_out``).
``preload_multi(tensors or (dtype, n) pairs, scale=False)`` loads the kernels of lists of that shape
before graph capture; ``explain_multi`` names the variant per dtype. The host cost is the list:
each call reads every tensor's type, device, dtype, contiguity, pointer and element count through
torch's Python API (a C-level pass per field, no Python bytecode per tensor; on an H200 host,
192 us for 500 tensors, 65-100 ns per tensor and field), then builds the C array in one
pass (7 us); for a hot loop over many tensors, capture the call in a CUDA graph.

``amax_and_scale(x, format="e4m3", epsilon=0, force_pow2=False, out=None)`` -> (amax, scale,
scale_inv) is the fused amax + FP8 scale call: the custom ops ``torch.ops.amax_tune.amax_and_scale``
and ``amax_and_scale_out`` (fake kernels), under graph capture after ``preload(..., scale=True)``.
"""
import contextlib

from . import _C
from ._errors import Error, Status
from . import _core
from . import _requirements
from ._core import Explanation, MultiExplanation, context, cuda_array_fields, system_db_path

__version__ = _C.version()
#: the extension's class over amax_context_t (raw pointers, stream handles and dtype codes as ints)
Context = _C.Context
DTYPE_FP32, DTYPE_FP16, DTYPE_BF16 = _C.DTYPE_FP32, _C.DTYPE_FP16, _C.DTYPE_BF16

_C._register_error(Error)



class TorchVersionWarning(UserWarning):
    """Warned once, at import, when torch is importable but older than
    :data:`TORCH_MIN` or fails to import or to load the package's torch layer: the message names the
    torch version, the minimum, what is unavailable (those calls raise ImportError naming the same
    reason) and what still works."""


#: the oldest torch the torch layer (amax, amax_multi, the custom ops, ...) supports, as (major, minor)
TORCH_MIN = _requirements.TORCH_MIN
#: the oldest Python the package supports, as (major, minor) (the wheel's Requires-Python)
PYTHON_MIN = _requirements.PYTHON_MIN


def _load_torch():
    """(the torch layer module or None, why it is unavailable or None, whether to warn). Never raises:
    torch missing is a supported way to use the package (no warning); an older torch, a torch that
    fails to import (a broken install) or a torch layer that fails to load is warned about once."""
    try:
        import torch
    except ModuleNotFoundError as e:
        if e.name == "torch":
            return None, "torch is not installed here", False
        return None, "importing torch failed (%s: %s)" % (type(e).__name__, e), True
    except Exception as e:  # noqa: BLE001 (a broken install: a missing shared library, an ABI mismatch, ...)
        return None, "importing torch failed (%s: %s)" % (type(e).__name__, e), True
    version = getattr(torch, "__version__", None)
    parsed = _requirements.version_tuple(version)
    if parsed is None or parsed < TORCH_MIN:
        return None, "torch %s is older than %s, the oldest amax_tune supports" % (
            version, _requirements.dotted(TORCH_MIN)), True
    try:
        from . import _torch as layer
    except Exception as e:  # noqa: BLE001 (a torch build that lacks what the layer needs)
        return None, "amax_tune's torch layer failed to load with torch %s (%s: %s)" % (
            version, type(e).__name__, e), True
    return layer, None, False


_torch, _torch_missing, _warn = _load_torch()
if _warn:
    import warnings
    warnings.warn(
        "amax_tune: %s; unavailable: %s (they raise ImportError); available: Context on raw device pointers, "
        "cuda_array_fields of __cuda_array_interface__ arrays (CuPy, Numba), explain / preload / preload_multi / "
        "explain_multi by (dtype, n). torch >= %s gives the rest (pip install 'amax-tune[torch]')"
        % (_torch_missing, ", ".join(_requirements.TORCH_CALLS), _requirements.dotted(TORCH_MIN)),
        TorchVersionWarning, stacklevel=2)
    del warnings
del _warn

__all__ = ["amax", "amax_and_scale", "amax_multi", "amax_multi_and_scale", "quantize", "explain", "explain_multi",
           "explain_quantize", "preload", "preload_multi", "preload_quantize", "context", "system_db_path",
           "cuda_array_fields", "Context", "Error", "Status",
           "Explanation", "MultiExplanation", "TorchVersionWarning", "TORCH_MIN", "PYTHON_MIN", "__version__"]


def _no_torch(fn):
    return ImportError("%s needs PyTorch >= %s (its results are torch tensors and its workspace comes from torch's "
                       "caching allocator), and %s; without torch, amax_tune.Context computes on device pointers "
                       "you allocate (amax_tune.cuda_array_fields reads them from CuPy / Numba arrays)"
                       % (fn, _requirements.dotted(TORCH_MIN), _torch_missing))


if _torch is not None:
    amax = _torch.amax
else:
    def amax(x, *, nan="propagate", out=None):
        raise _no_torch("amax_tune.amax")

if _torch is not None:
    amax_and_scale = _torch.amax_and_scale
else:
    def amax_and_scale(x, **kwargs):
        raise _no_torch("amax_tune.amax_and_scale")

amax_and_scale.__doc__ = """amax_and_scale(x, *, format=None, max=None, epsilon=0.0, force_pow2=False,
nan_propagates=False, nan="propagate", out=None) -> (amax, scale, scale_inv), three 0-d torch.float32
tensors on x's device (views of one new (3,) tensor), written by the launch that reduces x (the C
API's amax_and_scale).

FP8 current scaling: scale = m / amax with m the format's largest finite value ("e4m3" 448, "e5m2"
57344, "e4m3fnuz" 240, "e5m2fnuz" 57344; format=None, the default, is "e4m3" unless max= is given) or max= (an explicit numerator,
format="explicit" or None),
TransformerEngine's compute_scale_from_amax rules exactly: amax below epsilon raised to it, scale 1 for
an amax that is 0, infinite or NaN, FLT_MAX for a quotient that overflows, force_pow2 rounds the scale
down to a power of two, scale_inv = 1 / scale rounded to nearest; nan_propagates=True gives NaN scale
and scale_inv for a NaN amax (torchao). x and nan as for amax. out: a tuple of three distinct
1-element float32 tensors on x's device (amax, scale, scale_inv: e.g. an amax history row and a
recipe's scale tensors), written and returned. Asynchronous on torch's current stream. It is the
custom op ``torch.ops.amax_tune.amax_and_scale`` (and ``amax_and_scale_out``, fake kernels, no
gradient), so torch.compile(fullgraph=True) keeps it in the graph; under torch.cuda.graph capture
after ``preload(dtypes, sizes, scale=True)``. Raises ValueError / TypeError naming a bad format /
max / nan / out, amax_tune.Error for a failed C status (e.g. INVALID_ARGUMENT for a negative
epsilon, naming it). Thread-safe as amax."""

if _torch is not None:
    quantize = _torch.quantize
else:
    def quantize(x, dtype=None, **kwargs):
        raise _no_torch("amax_tune.quantize")

quantize.__doc__ = """quantize(x, dtype=torch.float8_e4m3fn, *, epsilon=0.0, force_pow2=False, nan_propagates=False,
rule="transformer_engine", nan="propagate", out=None, return_amax=False) -> (q, scale_inv), or with
return_amax=True (q, scale_inv, amax, scale): FP8 current scaling of x in one call (the C API's
amax_quantize): amax of x, scale and scale_inv by amax_and_scale's rule with dtype's largest finite
value as the numerator, and q = dtype(x * scale), a new contiguous tensor of x's shape; scale_inv,
amax and scale are 0-d torch.float32 tensors on x's device.

dtype: torch.float8_e4m3fn or torch.float8_e5m2 (or "e4m3" / "e5m2"); torch.float8_e4m3fnuz and
torch.float8_e5m2fnuz on gfx942 only (elsewhere amax_tune.Error INVALID_ARGUMENT naming the
device). The product x * scale is fp32, rounded to nearest; rule="transformer_engine" converts it
as TransformerEngine's cast (round to nearest even, saturate to +-max, NaN stays NaN, fnuz: +-Inf
becomes NaN), rule="torchao" as torchao's to_fp8_saturated (clamp to +-max, then convert): the
bytes equal those projects' bit for bit. epsilon, force_pow2, nan_propagates and nan as for
amax_and_scale; x as for amax (a strided or permuted x is copied contiguous first). out: a tuple
laid out as the result ((q, scale_inv), or (q, scale_inv, amax, scale) with return_amax): q a
contiguous tensor of dtype with x's element count, the others distinct 1-element float32 tensors,
all on x's device; written and returned. Asynchronous on torch's current stream. It is the custom
op ``torch.ops.amax_tune.quantize`` (and ``quantize_out``, fake kernels, no gradient), so
torch.compile(fullgraph=True) keeps it in the graph; under torch.cuda.graph capture after
``preload_quantize(dtypes, sizes, dtype)``. Raises ValueError / TypeError naming a bad dtype, rule,
nan or out, amax_tune.Error for a failed C status. Thread-safe as amax."""

if _torch is not None:
    amax_multi = _torch.amax_multi
    amax_multi_and_scale = _torch.amax_multi_and_scale
else:
    def amax_multi(tensors, *, nan="propagate", out=None):
        raise _no_torch("amax_tune.amax_multi")

    def amax_multi_and_scale(tensors, **kwargs):
        raise _no_torch("amax_tune.amax_multi_and_scale")

amax_multi.__doc__ = """amax_multi(tensors, *, nan="propagate", out=None) -> 1-d torch.float32 tensor of len(tensors)
elements on the tensors' device: element i is amax(tensors[i]) (the C API's amax_multi_compute).

tensors: a list or tuple of tensors (or __dlpack__ / __cuda_array_interface__ arrays) as amax takes
them, all on one GPU; dtypes may mix (one launch group per dtype); an empty tensor gives +0.0;
strided views are copied as amax does. An empty list gives an empty tensor on torch's current CUDA
device (or out). nan: as for amax. out: a contiguous float32 tensor of len(tensors) elements on that
device (e.g. a row of an amax history), written and returned. Asynchronous on torch's current stream
of the tensors' device, a few launches whatever the count; safe under torch.cuda.graph capture once
preload_multi has loaded the kernels of the list's shape, and under torch.compile (the custom ops
amax_tune::amax_multi and amax_multi_out). Raises ValueError / TypeError naming the bad tensor's
index and value (``tensors[3] is on device 'cpu'``, ``tensors[2] has dtype torch.float64``,
``tensors[1] is on device 'cuda:1' but tensors[0] is on 'cuda:0'``), TypeError for a tensors that
is not a list or tuple, amax_tune.Error for a failed C status. No gradient flows (a constant)."""

amax_multi_and_scale.__doc__ = """amax_multi_and_scale(tensors, *, format=None, max=None, epsilon=0.0,
force_pow2=False, nan_propagates=False, nan="propagate", out=None) -> (amax, scale, scale_inv), three
1-d torch.float32 tensors of len(tensors) elements (rows of one new (3, len(tensors)) tensor) on the
tensors' device, written by the launches that reduce them (the C API's amax_multi_and_scale).

Per tensor, exactly amax_and_scale's rule with one set of options for the whole list (format, max,
epsilon, force_pow2, nan_propagates and nan as amax_and_scale takes them; tensors as amax_multi).
out: a tuple of three distinct contiguous float32 tensors of len(tensors) elements on that device,
written and returned. It is the custom op ``torch.ops.amax_tune.amax_multi_and_scale`` (and
``amax_multi_and_scale_out``), so torch.compile(fullgraph=True) keeps it in the graph; under
torch.cuda.graph capture after preload_multi(tensors, scale=True). Raises as amax_multi, ValueError
naming a bad format / max / out, amax_tune.Error for a failed C status (INVALID_ARGUMENT naming a
bad epsilon)."""

amax.__doc__ = """amax(x, *, nan="propagate", out=None) -> 0-d torch.float32 tensor on x's device.

x: a torch tensor (or __dlpack__ / __cuda_array_interface__ array) of float32, float16 or bfloat16
on a GPU, any shape, any strides (see the module's docstring). nan: "propagate" (any NaN gives NaN)
or "ignore" (NaNs skipped, all-NaN gives +0.0). out: a 1-element float32 tensor on x's device that
receives the result (and is returned). Asynchronous on torch's current stream of x's device; safe
under torch.cuda.graph capture once the kernel is loaded (see preload) and under torch.compile.
Raises ValueError / TypeError naming a bad argument, amax_tune.Error for a failed C status.
Thread-safe (each call holds the GIL while it enqueues)."""


def explain(x=None, *, dtype=None, n=None, device=None, nan="propagate", scale=False):
    """Which variant serves ``amax(x)`` and why: an :class:`Explanation`; with ``scale=True``, the
    fused variant ``amax_and_scale(x)`` runs (amax_explain_scale: label ending in ``.scale``; an
    ``atomic`` table choice runs as ``self_reset`` of its threads and vector width, one launch;
    ``preload(..., scale=True)`` loads it).

    Either a tensor (or array) ``x``, or ``dtype`` ("fp32", "fp16", "bf16" or a torch dtype), ``n``
    (elements) and ``device`` (ordinal, default torch's current device, else 0). Raises as
    :func:`amax` does (``amax_tune.Error`` NO_DEVICE without a GPU).
    """
    fn = "amax_tune.explain"
    nan_mode = _core.nan_code(nan, fn)
    if type(scale) is not bool:
        raise TypeError("%s: scale=%r (expected True or False)" % (fn, scale))
    if x is not None:
        if dtype is not None or n is not None or device is not None:
            raise ValueError("%s: give either x or dtype/n/device, not both" % fn)
        if _torch is None:
            raise _no_torch(fn + "(x)")
        return _torch.explain(x, nan_mode, scale)
    if dtype is None or n is None:
        raise ValueError("%s: give a tensor x, or dtype and n" % fn)
    code = _dtype_code(dtype, fn)
    n = _core.element_count(n, fn)
    dev = _core._device_ordinal(_default_device() if device is None else device, fn)
    with _on_device(dev):
        return _core.explain_code(_core.context_of(dev, nan_mode), code, n, scale)


def preload(dtypes, sizes, *, scale=False, device=None, nan="propagate"):
    """Compiles (or loads from the kernel cache) every kernel that amax (``scale=True``: the fused
    kernels of amax_and_scale) would use for each (dtype, size) pair, so that calls during
    ``torch.cuda.graph`` capture need no JIT (amax_preload / amax_preload_scale).

    dtypes: names ("fp32", "fp16", "bf16") or torch dtypes; sizes: element counts; scale: a bool;
    device: ordinal (default torch's current device, else 0); nan: the NaN mode of the calls to
    prepare. Blocking (releases the GIL). Raises TypeError for a scale that is not a bool,
    amax_tune.Error (NO_DEVICE, COMPILE_FAILED, ...).
    """
    fn = "amax_tune.preload"
    nan_mode = _core.nan_code(nan, fn)
    if type(scale) is not bool:
        raise TypeError("%s: scale=%r (expected True or False)" % (fn, scale))
    codes, counts, dev = _preload_args(dtypes, sizes, device, fn)
    with _on_device(dev):
        _core.context_of(dev, nan_mode).preload(codes, counts, scale)


def _preload_args(dtypes, sizes, device, fn):
    """(dtype codes, element counts, device ordinal) of the preload calls' arguments (one dtype or
    size may be given bare), each checked and named."""
    if isinstance(dtypes, str) or not hasattr(dtypes, "__iter__"):
        dtypes = [dtypes]
    if isinstance(sizes, int):
        sizes = [sizes]
    codes = [_dtype_code(d, fn) for d in dtypes]
    counts = [_core.element_count(n, fn) for n in sizes]
    return codes, counts, _core._device_ordinal(_default_device() if device is None else device, fn)


def _fp8_format_code(fp8, fn):
    """The amax_fp8_format_t value of an FP8 format name ("e4m3", ...) or torch FP8 dtype."""
    if isinstance(fp8, str):
        code = _core.FP8_FORMATS.get(fp8)
        if code is None:
            raise ValueError("%s: format=%r is not an FP8 format; use one of %s"
                             % (fn, fp8, ", ".join(repr(k) for k in _core.FP8_FORMATS)))
        return code
    if _torch is None:
        raise _no_torch(fn + " with a torch dtype")
    return _torch.fp8_code(fp8, fn)


def preload_quantize(dtypes, sizes, format="e4m3", *, device=None, nan="propagate"):
    """Compiles (or loads from the kernel cache) every kernel that quantize uses for each (dtype,
    size) pair into ``format`` (an FP8 format name "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", or a
    torch FP8 dtype), so that quantize calls during ``torch.cuda.graph`` capture need no JIT
    (amax_preload_quantize). dtypes, sizes, device and nan as for :func:`preload`. Blocking
    (releases the GIL). Raises ValueError naming a bad format, amax_tune.Error (NO_DEVICE,
    INVALID_ARGUMENT for a fnuz format off gfx942, COMPILE_FAILED, ...).
    """
    fn = "amax_tune.preload_quantize"
    nan_mode = _core.nan_code(nan, fn)
    fmt = _fp8_format_code(format, fn)
    codes, counts, dev = _preload_args(dtypes, sizes, device, fn)
    with _on_device(dev):
        _core.context_of(dev, nan_mode).preload_quantize(codes, counts, fmt)


def explain_quantize(dtype, n, format="e4m3", *, device=None, nan="propagate"):
    """Which variant quantize runs for ``n`` elements of ``dtype`` ("fp32", "fp16", "bf16" or a
    torch dtype) into ``format`` (as preload_quantize takes it), and why: an :class:`Explanation`
    (amax_explain_quantize: label ``quant.<kind>...``; launches 1 for the one-launch kinds, the
    fused amax launches + 1 for ``cast``). device: ordinal (default torch's current device, else 0).
    Raises as preload_quantize.
    """
    fn = "amax_tune.explain_quantize"
    nan_mode = _core.nan_code(nan, fn)
    fmt = _fp8_format_code(format, fn)
    code = _dtype_code(dtype, fn)
    n = _core.element_count(n, fn)
    dev = _core._device_ordinal(_default_device() if device is None else device, fn)
    with _on_device(dev):
        return _core.explanation_of(_core.context_of(dev, nan_mode).explain_quantize(code, n, fmt), code, n)


def preload_multi(tensors_or_shapes, scale=False, *, device=None, nan="propagate"):
    """Compiles (or loads from the kernel cache) the kernels that amax_multi (scale=True:
    amax_multi_and_scale) uses for lists of this shape, so that such calls during
    ``torch.cuda.graph`` capture need no JIT (amax_multi_preload / amax_multi_preload_scale).

    tensors_or_shapes: a list or tuple of tensors (only their dtypes and element counts are read)
    or of (dtype, n) pairs (dtype a name or torch dtype), the list the captured calls will take;
    device: ordinal (default the tensors' device, else torch's current device, else 0); nan: the
    NaN mode of the calls to prepare. Blocking (releases the GIL). Raises ValueError / TypeError
    naming a bad entry's index, amax_tune.Error (NO_DEVICE, COMPILE_FAILED, ...).
    """
    fn = "amax_tune.preload_multi"
    nan_mode = _core.nan_code(nan, fn)
    counts, codes, dev = _multi_shapes(tensors_or_shapes, device, fn)
    with _on_device(dev):
        ctx = _core.context_of(dev, nan_mode)
        (ctx.multi_preload_scale if scale else ctx.multi_preload)(counts, codes)


def explain_multi(tensors_or_shapes, *, device=None, nan="propagate"):
    """Which multi-tensor variant serves ``amax_multi`` on this list, and how: ``{dtype name:``
    :class:`MultiExplanation` ``}`` for each dtype in the list (label, source, launches, tensors per
    launch, workspace, the group's shape, detail). tensors_or_shapes and device as for
    :func:`preload_multi`. Raises as :func:`preload_multi`.
    """
    fn = "amax_tune.explain_multi"
    nan_mode = _core.nan_code(nan, fn)
    counts, codes, dev = _multi_shapes(tensors_or_shapes, device, fn)
    with _on_device(dev):
        return _core.explain_multi_codes(_core.context_of(dev, nan_mode), counts, codes)


def _multi_shapes(items, device, fn):
    """(counts, dtype codes, device ordinal) of a list of tensors or (dtype, n) pairs."""
    items = _core.multi_list(items, fn, "tensors_or_shapes")
    counts, codes, devices = [], [], set()
    for i, item in enumerate(items):
        name = "tensors_or_shapes[%d]" % i
        if isinstance(item, (tuple, list)):
            if len(item) != 2:
                raise TypeError("%s: %s is %r; give tensors or (dtype, n) pairs" % (fn, name, item))
            codes.append(_dtype_code(item[0], "%s: %s" % (fn, name)))
            counts.append(_core.element_count(item[1], "%s: %s" % (fn, name)))
        elif _torch is not None:
            dev, code, n = _torch.multi_shape(item, fn, name)
            devices.add(dev)
            codes.append(code)
            counts.append(n)
        else:
            raise TypeError("%s: %s is a %s; give (dtype, n) pairs (tensors need torch >= %s, and %s)"
                            % (fn, name, type(item).__qualname__, _requirements.dotted(TORCH_MIN), _torch_missing))
    if len(devices) > 1:
        raise ValueError("%s: the tensors are on several devices (%s); a list is on one device"
                         % (fn, ", ".join("cuda:%d" % d for d in sorted(devices))))
    if device is None:
        dev = devices.pop() if devices else _default_device()
    else:
        dev = _core._device_ordinal(device, fn)
        if devices and devices != {dev}:
            raise ValueError("%s: device=%d but the tensors are on cuda:%d" % (fn, dev, devices.pop()))
    return counts, codes, dev


def _dtype_code(dtype, fn):
    if _torch is not None:
        return _torch.dtype_code(dtype, fn)
    return _core.dtype_code_of_name(dtype, fn)


def _on_device(dev):
    if _torch is not None and _torch_has_cuda():
        return _torch.on_device(dev)
    return contextlib.nullcontext()


def _torch_has_cuda():
    try:
        return _torch.torch.cuda.is_available()
    except Exception:
        return False


def _default_device():
    if _torch is not None:
        try:
            return _torch.current_device()
        except Exception:  # torch without CUDA, or no device: the library reports it
            return 0
    return 0
