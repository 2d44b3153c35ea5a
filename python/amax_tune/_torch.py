"""The PyTorch layer: amax, amax_multi and quantize on torch tensors (and __dlpack__ /
__cuda_array_interface__ producers), the torch.library custom ops amax_tune::amax, amax_out,
amax_multi, amax_multi_out, quantize and quantize_out with fake kernels, and the workspace allocator
(torch's caching allocator). Imported only where torch is importable."""
import contextlib
import operator
from typing import List, Tuple

import torch

from . import _C
from . import _core

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_F32 = torch.float32
_U8 = torch.uint8
_empty = torch.empty
_is_compiling = torch.compiler.is_compiling
_NAN_PROPAGATE, _NAN_IGNORE = _C.NAN_PROPAGATE, _C.NAN_IGNORE  # plain ints (what torch.compile traces)
_DTYPES = {torch.float32: _C.DTYPE_FP32, torch.float16: _C.DTYPE_FP16, torch.bfloat16: _C.DTYPE_BF16}
_PLAIN = frozenset((_Tensor, _Parameter))  # the types the eager paths take without the dispatcher
# Unbound C methods and getters, mapped over a list in C (map) without a bound method per tensor
_data_ptr, _numel, _get_device, _is_contiguous = _Tensor.data_ptr, _Tensor.numel, _Tensor.get_device, _Tensor.is_contiguous
_dtype_of = operator.attrgetter("dtype")

try:
    _raw_stream = torch._C._cuda_getCurrentRawStream  # what Inductor's generated code calls
except AttributeError:  # pragma: no cover (older torch, or a build without CUDA)
    def _raw_stream(device):
        return torch.cuda.current_stream(device).cuda_stream
try:
    _current_device = torch._C._cuda_getDevice
except AttributeError:  # pragma: no cover
    _current_device = torch.cuda.current_device
try:
    _dispatch_modes = torch._C._len_torch_dispatch_stack
except AttributeError:  # pragma: no cover
    def _dispatch_modes():
        return 0


_is_capturing = torch.cuda.is_current_stream_capturing

# The C++ reader of tensor fields (python/src/torch_fields.cpp), built where torch's headers were
# found, and used only with the torch it was built against; without it every call reads the fields
# through torch's Python getters. Both paths give the same results; the reader declines (None) any
# tensor it does not take, which the Python path then checks and names.
try:
    from . import _torch_fields
    if _torch_fields.TORCH_VERSION != torch.__version__ or _torch_fields.RECORD_BYTES != _C.TENSOR_RECORD_BYTES:
        _torch_fields = None
except Exception:  # noqa: BLE001 (not built, or not loadable with this torch)
    _torch_fields = None
_tensor_list = _torch_fields.tensor_list if _torch_fields is not None else None
_amax_args = _torch_fields.amax_args if _torch_fields is not None else None


def _install_allocator(ctx):
    """The eager path's workspace (Context.compute) from torch's caching allocator; the custom ops
    take a workspace of their call instead (compute_op_local). Outside graph capture: one buffer
    per stream handle, grown by powers of two and kept for the context's life (a captured graph
    keeps using the address it captured, so a buffer is never handed back). During capture (the
    stream's buffer missing or too small): a buffer of the graph's memory pool for that one call,
    released after it as torch's own temporaries are (stream-ordered reuse inside the graph)."""
    held = []
    device = ctx.device

    def allocate(nbytes, stream):
        t = _empty(nbytes, dtype=_U8, device=device)
        if _is_capturing():
            return t.data_ptr(), t  # released by _C right after amax_compute has enqueued
        held.append(t)
        return t.data_ptr(), None

    ctx.set_workspace_allocator(allocate)


_core._on_new_context.append(_install_allocator)


def dtype_code(dtype, fn):
    """Code of a torch dtype or a dtype name; TypeError naming it otherwise."""
    code = _DTYPES.get(dtype)
    if code is None:
        if isinstance(dtype, str):
            return _core.dtype_code_of_name(dtype, fn)
        raise TypeError("%s: dtype %s is not supported; supported: torch.float32, torch.float16, torch.bfloat16"
                        % (fn, dtype))
    return code


def as_tensor(x, fn, name="x"):
    """x itself when it is a torch tensor; a zero-copy torch view of a __dlpack__ producer (CuPy,
    JAX; torch.from_dlpack hands the producer torch's current stream to order its work) or of a
    __cuda_array_interface__ producer (torch.as_tensor; the caller orders the producer's stream).
    name: what the error calls x (e.g. "tensors[3]")."""
    if isinstance(x, _Tensor):
        return x
    if hasattr(x, "__dlpack__"):
        return torch.from_dlpack(x)
    if hasattr(x, "__cuda_array_interface__"):
        return torch.as_tensor(x)
    raise TypeError("%s: %s must be a torch.Tensor or an array with __dlpack__ or __cuda_array_interface__ "
                    "(CuPy, JAX, Numba), got %s" % (fn, name, type(x).__qualname__))


def _check_input(x, fn, name="x"):
    """(device ordinal, dtype code) of a tensor amax can take; ValueError / TypeError naming it
    (as `name`, e.g. "tensors[3]")."""
    if x.device.type != "cuda":
        raise ValueError("%s: %s is on device '%s'; amax-tune computes on CUDA/ROCm devices (move it with "
                         "%s.cuda())" % (fn, name, x.device, name))
    code = _DTYPES.get(x.dtype)
    if code is None:
        raise TypeError("%s: %s has dtype %s; supported: torch.float32, torch.float16, torch.bfloat16"
                        % (fn, name, x.dtype))
    return x.device.index, code


def _check_out(out, device, fn):
    if not isinstance(out, _Tensor):
        raise TypeError("%s: out must be a torch.Tensor, got %s" % (fn, type(out).__qualname__))
    if out.dtype != _F32:
        raise TypeError("%s: out has dtype %s; it must be torch.float32" % (fn, out.dtype))
    if out.numel() != 1:
        raise ValueError("%s: out has %d elements (shape %s); it must hold exactly one"
                         % (fn, out.numel(), tuple(out.shape)))
    if out.device.type != "cuda" or out.device.index != device:
        raise ValueError("%s: out is on device '%s' but x is on 'cuda:%d'; they must be on the same device"
                         % (fn, out.device, device))


def _dense(x):
    """True when x is reduced in place (contiguous, or a permutation of a contiguous tensor: see
    _core.is_dense); a strided view is copied first."""
    return _core.is_dense(x.shape, x.stride(), 1)


def _prepare(x, out, fn):
    """(x, device ordinal, dtype code, out) for any torch tensor: x checked (raises naming it) and
    made dense (a strided view such as a step slice or an expand is copied with x.contiguous(), so
    its elements exactly), out checked or a new 0-d fp32 tensor on x's device (out=False: the
    caller handles its outputs; returned as is)."""
    dev = x.get_device()
    code = _DTYPES.get(x.dtype)
    if dev < 0 or code is None:
        dev, code = _check_input(x, fn)  # raises
    if not x.is_contiguous() and not _dense(x):
        x = x.contiguous()  # a strided view (a slice with a step, an expand): its elements copied, exact
    if out is None:
        out = _empty((), dtype=_F32, device=x.device)
    elif out is not False:  # False: the caller handles its outputs
        _check_out(out, dev, fn)
    return x, dev, code, out


def compute(x, nan_mode, out, fn="amax_tune.amax"):
    """Eager path (any torch tensor): enqueues amax of x on torch's current stream of x's device with
    the context's per-stream workspace (kept for the process: see _install_allocator); returns out
    (a new 0-d fp32 tensor when None)."""
    x, dev, code, out = _prepare(x, out, fn)
    if _current_device() != dev:
        # the library makes x's device current for its driver calls; torch's current device stays
        with torch.cuda.device(dev):
            _core.context_of(dev, nan_mode).compute(x.data_ptr(), code, x.numel(), out.data_ptr(), _raw_stream(dev))
        return out
    ctx = _core._contexts.get(dev * 2 + nan_mode) or _core.context_of(dev, nan_mode)
    ctx.compute(x.data_ptr(), code, x.numel(), out.data_ptr(), _raw_stream(dev))
    return out


def compute_op_local(x, nan_mode, out, fn="amax_tune.amax"):
    """The custom ops' body (what torch.compile runs): as compute, but the workspace is a tensor of
    this call only (torch's caching allocator, current stream), released once amax is enqueued, as
    torch's own temporaries are. Nothing outlives the call but the output, which is what CUDA-graph
    trees (torch.compile mode="reduce-overhead") require of every allocation in their memory pool:
    the warm-up and the recording run inside the pool, and a workspace kept past the call would be a
    live allocation not tracked as an output. Replays reuse the recorded address, which the pool
    keeps for the graph."""
    x, dev, code, out = _prepare(x, out, fn)
    if _current_device() != dev:
        with torch.cuda.device(dev):  # as in compute: torch's current device stays
            return _enqueue_op_local(x, dev, code, nan_mode, out)
    return _enqueue_op_local(x, dev, code, nan_mode, out)


def _enqueue_op_local(x, dev, code, nan_mode, out):
    ctx = _core.context_of(dev, nan_mode)
    n = x.numel()
    ws = _empty(ctx.workspace_size(code, n), dtype=_U8, device=x.device)
    ctx.compute_with_workspace(x.data_ptr(), code, n, out.data_ptr(), ws.data_ptr(), ws.numel(), _raw_stream(dev))
    return out  # ws is released here; the allocator reuses it only after this stream's queued work


# --- torch.library custom ops: what torch.compile sees (the eager path calls the context directly) ---

@torch.library.custom_op("amax_tune::amax", mutates_args=())
def _amax_op(x: torch.Tensor, nan_ignore: bool) -> torch.Tensor:
    return compute_op_local(x, int(nan_ignore), None)


@_amax_op.register_fake
def _amax_fake(x, nan_ignore):
    _check_input(x, "amax_tune.amax")
    return x.new_empty((), dtype=_F32)


def _amax_backward(ctx, grad):
    return None, None  # a constant for autograd, as FP8 recipes treat a scale's amax: no gradient to x


_amax_op.register_autograd(_amax_backward)


@torch.library.custom_op("amax_tune::amax_out", mutates_args=("out",))
def _amax_out_op(x: torch.Tensor, out: torch.Tensor, nan_ignore: bool) -> None:
    compute_op_local(x, int(nan_ignore), out)


@_amax_out_op.register_fake
def _amax_out_fake(x, out, nan_ignore):
    dev, _ = _check_input(x, "amax_tune.amax")
    _check_out(out, dev, "amax_tune.amax")


#: torch.device per ordinal (x.device builds a new one per call)
_devices = {}


def _device(dev):
    d = _devices[dev] = torch.device("cuda", dev)
    return d


_contexts = _core._contexts


def amax(x, *, nan="propagate", out=None):
    t = type(x)
    # The fast path: a plain contiguous tensor of a supported dtype on torch's current device,
    # eagerly. Each test is one C-level call; the order matters to torch.compile, which folds
    # _is_compiling() to True and must not reach _dispatch_modes().
    if (t is _Tensor or t is _Parameter) and not _is_compiling() and not _dispatch_modes():
        if out is None and _amax_args is not None:  # one C++ call: checks, fields and the new result
            a = _amax_args(x)
            if a is None:  # not a plain contiguous GPU tensor of a supported dtype
                return _amax_general(x, nan, None)
            dev, code, ptr, n, out, out_ptr = a
            if dev != _current_device():
                return _amax_general(x, nan, out)
            ctx = _fast_context(dev, nan)
            ctx.compute(ptr, code, n, out_ptr, _raw_stream(dev))
            return out
        code = _DTYPES.get(x.dtype)
        dev = x.get_device()
        if code is not None and dev >= 0 and x.is_contiguous() and dev == _current_device():
            ctx = _fast_context(dev, nan)
            if out is None:
                out = _empty((), dtype=_F32, device=_devices.get(dev) or _device(dev))
            elif type(out) is not _Tensor or out.dtype is not _F32 or out.numel() != 1 or out.get_device() != dev:
                _check_out(out, dev, "amax_tune.amax")  # raises, or passes a subclass (a Parameter)
            ctx.compute(x.data_ptr(), code, x.numel(), out.data_ptr(), _raw_stream(dev))
            return out
    return _amax_general(x, nan, out)


def _fast_context(dev, nan):
    """The cached context of (device ordinal, NaN mode name) for amax's fast paths; ValueError naming
    a bad nan."""
    if nan == "propagate":
        key = dev * 2
    elif nan == "ignore":
        key = dev * 2 + 1
    else:
        key = dev * 2 + _core.nan_code(nan, "amax_tune.amax")  # raises naming nan
    return _contexts.get(key) or _core.context_of(dev, key & 1)


def _amax_general(x, nan, out):
    """Everything but the fast path: other producers, strided views, another device than the
    current one, out checks, tensor subclasses, torch.compile and dispatch modes (through the op)."""
    nan_mode = _NAN_PROPAGATE if nan == "propagate" else _core.nan_code(nan, "amax_tune.amax")
    if not isinstance(x, _Tensor):
        x = as_tensor(x, "amax_tune.amax")
    t = type(x)
    if (t is not _Tensor and t is not _Parameter) or _is_compiling() or _dispatch_modes():
        # other tensor subclasses (FakeTensor, ...), torch.compile, dispatch modes: through the op
        if out is None:
            return torch.ops.amax_tune.amax(x, nan_mode == _NAN_IGNORE)
        torch.ops.amax_tune.amax_out(x, out, nan_mode == _NAN_IGNORE)
        return out
    return compute(x, nan_mode, out)


def explain(x, nan_mode, scale=False):
    x = as_tensor(x, "amax_tune.explain")
    dev, code = _check_input(x, "amax_tune.explain")
    with on_device(dev):
        return _core.explain_code(_core.context_of(dev, nan_mode), code, x.numel(), scale)


def current_device():
    return torch.cuda.current_device()


def on_device(dev):
    """torch.cuda.device(dev): keeps torch's current device what it was across library calls
    (which make their device's context current)."""
    return torch.cuda.device(dev)


_FN_SCALE = "amax_tune.amax_and_scale"


def _check_scale_outs(out, count, device, fn):
    """The three tensors of out= of the fused calls (amax, scale, scale_inv): each a contiguous fp32
    tensor of `count` elements on `device`, distinct; TypeError / ValueError naming the bad one."""
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise TypeError("%s: out must be a tuple of three tensors (amax, scale, scale_inv), got %s"
                        % (fn, type(out).__qualname__ if not isinstance(out, (tuple, list)) else
                           "%d items" % len(out)))
    for name, t in zip(("amax", "scale", "scale_inv"), out):
        if count == 1 and isinstance(t, _Tensor) and t.numel() == 1:
            _check_out(t, device, "%s: out[%s]" % (fn, name))
        else:
            _check_multi_out(t, count, device, "%s: out[%s]" % (fn, name))
    if set(map(type, out)) <= _PLAIN and len({t.data_ptr() for t in out}) != 3:  # (fake tensors have no pointer)
        raise ValueError("%s: out's three tensors share memory; amax, scale and scale_inv need distinct tensors" % fn)


def _eager(x):
    """True when a call takes the eager path (a plain tensor, not traced, no dispatch mode)."""
    t = type(x)
    return (t is _Tensor or t is _Parameter) and not _is_compiling() and not _dispatch_modes()


def amax_and_scale(x, *, format=None, max=None, epsilon=0.0, force_pow2=False, nan_propagates=False,
                   nan="propagate", out=None):
    """amax_tune.amax_and_scale (its docstring): eagerly one C call with the per-stream workspace;
    traced (torch.compile), under dispatch modes or for tensor subclasses the custom ops
    amax_tune::amax_and_scale / amax_and_scale_out."""
    fn = _FN_SCALE
    nan_mode = _NAN_PROPAGATE if nan == "propagate" else _core.nan_code(nan, fn)
    fmt_code, max_value = _core.scale_format(format, max, fn)
    epsilon, force_pow2, nan_propagates = float(epsilon), bool(force_pow2), bool(nan_propagates)
    if not isinstance(x, _Tensor):
        x = as_tensor(x, fn)
    if not _eager(x):
        args = (fmt_code, max_value, epsilon, force_pow2, nan_propagates, nan_mode == _NAN_IGNORE)
        if out is None:
            return torch.ops.amax_tune.amax_and_scale(x, *args).unbind(0)
        torch.ops.amax_tune.amax_and_scale_out(x, out[0], out[1], out[2], *args)
        return tuple(out)
    x, dev, code, outs = _prepare_scale(x, out, fn)
    with _on_device_of(dev):
        _core.context_of(dev, nan_mode).amax_and_scale(
            x.data_ptr(), code, x.numel(), fmt_code, max_value, epsilon, force_pow2, nan_propagates,
            outs[0].data_ptr(), outs[1].data_ptr(), outs[2].data_ptr(), _raw_stream(dev))
    return outs


def _prepare_scale(x, out, fn):
    """(x made dense, device ordinal, dtype code, (amax, scale, scale_inv)): out checked, or three
    0-d views of one new (3,) fp32 tensor on x's device (one allocation)."""
    x, dev, code, _ = _prepare(x, False, fn)
    if out is None:
        return x, dev, code, _empty(3, dtype=_F32, device=_devices.get(dev) or _device(dev)).unbind(0)
    _check_scale_outs(out, 1, dev, fn)
    return x, dev, code, tuple(out)


def compute_scale_op_local(x, nan_mode, scale_args, outs):
    """The fused custom ops' body: amax_and_scale with a workspace of this call only (see
    compute_op_local) into outs (three 1-element fp32 tensors)."""
    fn = _FN_SCALE
    x, dev, code, _ = _prepare(x, False, fn)
    with _on_device_of(dev):
        ctx = _core.context_of(dev, nan_mode)
        n = x.numel()
        ws = _empty(ctx.workspace_size(code, n), dtype=_U8, device=x.device)
        ctx.amax_and_scale_with_workspace(x.data_ptr(), code, n, *scale_args, outs[0].data_ptr(), outs[1].data_ptr(),
                                          outs[2].data_ptr(), ws.data_ptr(), ws.numel(), _raw_stream(dev))


@torch.library.custom_op("amax_tune::amax_and_scale", mutates_args=())
def _amax_and_scale_op(x: torch.Tensor, format: int, max: float, epsilon: float, force_pow2: bool,
                       nan_propagates: bool, nan_ignore: bool) -> torch.Tensor:
    r = _empty(3, dtype=_F32, device=x.device)
    compute_scale_op_local(x, int(nan_ignore), (format, max, epsilon, force_pow2, nan_propagates), r.unbind(0))
    return r


@_amax_and_scale_op.register_fake
def _amax_and_scale_fake(x, format, max, epsilon, force_pow2, nan_propagates, nan_ignore):
    _check_input(x, _FN_SCALE)
    return x.new_empty((3,), dtype=_F32)


_amax_and_scale_op.register_autograd(lambda ctx, grad: (None,) * 7)  # constants: no gradient to x


@torch.library.custom_op("amax_tune::amax_and_scale_out", mutates_args=("amax_out", "scale_out", "scale_inv_out"))
def _amax_and_scale_out_op(x: torch.Tensor, amax_out: torch.Tensor, scale_out: torch.Tensor,
                           scale_inv_out: torch.Tensor, format: int, max: float, epsilon: float, force_pow2: bool,
                           nan_propagates: bool, nan_ignore: bool) -> None:
    outs = (amax_out, scale_out, scale_inv_out)
    _check_scale_outs(outs, 1, _check_input(x, _FN_SCALE)[0], _FN_SCALE)
    compute_scale_op_local(x, int(nan_ignore), (format, max, epsilon, force_pow2, nan_propagates), outs)


@_amax_and_scale_out_op.register_fake
def _amax_and_scale_out_fake(x, amax_out, scale_out, scale_inv_out, format, max, epsilon, force_pow2, nan_propagates,
                             nan_ignore):
    _check_scale_outs((amax_out, scale_out, scale_inv_out), 1, _check_input(x, _FN_SCALE)[0], _FN_SCALE)


# --- FP8 quantize (amax_quantize) ---

_FN_QUANT = "amax_tune.quantize"
_CAST_RULES = dict(_C.CAST_RULES)
# torch's FP8 dtypes (those this torch has) and the library's format codes
_FP8_DTYPES = {getattr(torch, t): _core.FP8_FORMATS[f] for f, t in (
    ("e4m3", "float8_e4m3fn"), ("e5m2", "float8_e5m2"), ("e4m3fnuz", "float8_e4m3fnuz"),
    ("e5m2fnuz", "float8_e5m2fnuz")) if hasattr(torch, t)}
_FP8_OF_CODE = {c: d for d, c in _FP8_DTYPES.items()}


def fp8_code(dtype, fn):
    """The amax_fp8_format_t value of a torch FP8 dtype or a format name ("e4m3", ...); ValueError naming it."""
    code = _FP8_DTYPES.get(dtype) if not isinstance(dtype, str) else _core.FP8_FORMATS.get(dtype)
    if code is None or code not in _FP8_OF_CODE:
        raise ValueError("%s: dtype=%r is not an FP8 dtype of this torch; use one of %s"
                         % (fn, dtype, ", ".join(str(d) for d in _FP8_DTYPES)))
    return code


def _rule_code(rule, fn):
    code = _CAST_RULES.get(rule) if isinstance(rule, str) else None
    if code is None:
        raise ValueError("%s: rule=%r is not a cast rule; use 'transformer_engine' (TransformerEngine's cast) or "
                         "'torchao' (torchao's to_fp8_saturated)" % (fn, rule))
    return code


def _check_quantize_out(out, x, fp8, with_amax, fn):
    """out= of quantize: a tuple (q, scale_inv) or, with return_amax, (q, scale_inv, amax, scale): q a
    contiguous tensor of dtype `fp8` and x's element count on x's device, the others distinct
    1-element float32 tensors there; TypeError / ValueError naming the bad one. Returns
    (q, amax, scale, scale_inv), amax and scale new (one (2,) tensor) when not given."""
    want = 4 if with_amax else 2
    if not isinstance(out, (tuple, list)) or len(out) != want:
        raise TypeError("%s: out must be a tuple of %d tensors %s, got %s" % (
            fn, want, "(q, scale_inv, amax, scale)" if with_amax else "(q, scale_inv)",
            "%d items" % len(out) if isinstance(out, (tuple, list)) else type(out).__qualname__))
    q = out[0]
    if not isinstance(q, _Tensor):
        raise TypeError("%s: out[0] (q) must be a torch.Tensor, got %s" % (fn, type(q).__qualname__))
    if q.dtype != fp8:
        raise TypeError("%s: out[0] (q) has dtype %s; it must be %s" % (fn, q.dtype, fp8))
    if q.numel() != x.numel() or not q.is_contiguous():
        raise ValueError("%s: out[0] (q) must be a contiguous tensor of x's %d elements, got shape %s%s"
                         % (fn, x.numel(), tuple(q.shape), "" if q.is_contiguous() else " (not contiguous)"))
    if q.device != x.device:
        raise ValueError("%s: out[0] (q) is on device '%s' but x is on '%s'" % (fn, q.device, x.device))
    words = list(out[1:])
    if not with_amax:
        words += list(_empty(2, dtype=_F32, device=x.device).unbind(0))
    scale_inv, amax, scale = words
    _check_scale_outs((amax, scale, scale_inv), 1, x.get_device(), fn)
    return q, amax, scale, scale_inv


def quantize(x, dtype=None, *, epsilon=0.0, force_pow2=False, nan_propagates=False, rule="transformer_engine",
             nan="propagate", out=None, return_amax=False):
    """amax_tune.quantize (its docstring): eagerly one C call with the per-stream workspace; traced
    (torch.compile), under dispatch modes or for tensor subclasses the custom ops
    amax_tune::quantize / quantize_out."""
    fn = _FN_QUANT
    nan_mode = _NAN_PROPAGATE if nan == "propagate" else _core.nan_code(nan, fn)
    fmt = fp8_code(torch.float8_e4m3fn if dtype is None else dtype, fn)
    fp8 = _FP8_OF_CODE[fmt]
    args = (fmt, float(epsilon), bool(force_pow2), bool(nan_propagates), _rule_code(rule, fn))
    if not isinstance(x, _Tensor):
        x = as_tensor(x, fn)
    if not _eager(x):
        if out is None:
            q, words = torch.ops.amax_tune.quantize(x, *args, nan_mode == _NAN_IGNORE)
            amax, scale, scale_inv = words.unbind(0)
        else:
            q, amax, scale, scale_inv = _check_quantize_out(out, x, fp8, return_amax, fn)
            torch.ops.amax_tune.quantize_out(x, q, amax, scale, scale_inv, *args, nan_mode == _NAN_IGNORE)
        return (q, scale_inv, amax, scale) if return_amax else (q, scale_inv)
    shape = x.shape
    x, dev, code, _ = _prepare(x, False, fn)
    if not x.is_contiguous():
        x = x.contiguous()  # a permuted tensor: the bytes follow the logical order
    if out is None:
        q = _empty(shape, dtype=fp8, device=x.device)
        amax, scale, scale_inv = _empty(3, dtype=_F32, device=x.device).unbind(0)
    else:
        q, amax, scale, scale_inv = _check_quantize_out(out, x, fp8, return_amax, fn)
    with _on_device_of(dev):
        _core.context_of(dev, nan_mode).quantize(x.data_ptr(), code, x.numel(), *args, q.data_ptr(), amax.data_ptr(),
                                                 scale.data_ptr(), scale_inv.data_ptr(), _raw_stream(dev))
    return (q, scale_inv, amax, scale) if return_amax else (q, scale_inv)


def compute_quantize_op_local(x, nan_mode, args, q, outs):
    """The quantize custom ops' body: amax_quantize with a workspace of this call only (see
    compute_op_local) into q and outs (amax, scale, scale_inv: 1-element fp32 tensors)."""
    fn = _FN_QUANT
    x, dev, code, _ = _prepare(x, False, fn)
    if not x.is_contiguous():
        x = x.contiguous()
    with _on_device_of(dev):
        ctx = _core.context_of(dev, nan_mode)
        n = x.numel()
        ws = _empty(ctx.quantize_workspace_size(code, n, args[0]), dtype=_U8, device=x.device)
        ctx.quantize_with_workspace(x.data_ptr(), code, n, *args, q.data_ptr(), outs[0].data_ptr(),
                                    outs[1].data_ptr(), outs[2].data_ptr(), ws.data_ptr(), ws.numel(),
                                    _raw_stream(dev))


@torch.library.custom_op("amax_tune::quantize", mutates_args=())
def _quantize_op(x: torch.Tensor, format: int, epsilon: float, force_pow2: bool, nan_propagates: bool,
                 cast_rule: int, nan_ignore: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    q = _empty(x.shape, dtype=_FP8_OF_CODE[format], device=x.device)
    words = _empty(3, dtype=_F32, device=x.device)
    compute_quantize_op_local(x, int(nan_ignore), (format, epsilon, force_pow2, nan_propagates, cast_rule), q,
                              words.unbind(0))
    return q, words


@_quantize_op.register_fake
def _quantize_fake(x, format, epsilon, force_pow2, nan_propagates, cast_rule, nan_ignore):
    _check_input(x, _FN_QUANT)
    return x.new_empty(x.shape, dtype=_FP8_OF_CODE[format]), x.new_empty((3,), dtype=_F32)


_quantize_op.register_autograd(lambda ctx, *grads: (None,) * 7)  # a cast with a data-dependent scale: no gradient


@torch.library.custom_op("amax_tune::quantize_out", mutates_args=("q", "amax_out", "scale_out", "scale_inv_out"))
def _quantize_out_op(x: torch.Tensor, q: torch.Tensor, amax_out: torch.Tensor, scale_out: torch.Tensor,
                     scale_inv_out: torch.Tensor, format: int, epsilon: float, force_pow2: bool, nan_propagates: bool,
                     cast_rule: int, nan_ignore: bool) -> None:
    _check_quantize_out((q, scale_inv_out, amax_out, scale_out), x, _FP8_OF_CODE[format], True, _FN_QUANT)
    compute_quantize_op_local(x, int(nan_ignore), (format, epsilon, force_pow2, nan_propagates, cast_rule), q,
                              (amax_out, scale_out, scale_inv_out))


@_quantize_out_op.register_fake
def _quantize_out_fake(x, q, amax_out, scale_out, scale_inv_out, format, epsilon, force_pow2, nan_propagates,
                       cast_rule, nan_ignore):
    _check_input(x, _FN_QUANT)
    _check_quantize_out((q, scale_inv_out, amax_out, scale_out), x, _FP8_OF_CODE[format], True, _FN_QUANT)


# --- many tensors per call (amax_multi, amax_multi_and_scale) ---

_FN_MULTI = "amax_tune.amax_multi"


def _check_multi_inputs(xs, fn):
    """The device ordinal of a non-empty list of tensors amax_multi can take (real or fake: nothing is
    read but device and dtype); ValueError / TypeError naming the first bad tensor's index."""
    if not xs:
        raise ValueError("%s: the list of tensors is empty" % fn)
    dev0 = None
    for i, x in enumerate(xs):
        dev, _ = _check_input(x, fn, "tensors[%d]" % i)
        if dev0 is None:
            dev0 = dev
        elif dev != dev0:
            raise ValueError("%s: tensors[%d] is on device '%s' but tensors[0] is on 'cuda:%d'; every tensor of "
                             "the list must be on one device" % (fn, i, x.device, dev0))
    return dev0


def _check_multi_out(out, count, device, fn):
    if not isinstance(out, _Tensor):
        raise TypeError("%s: out must be a torch.Tensor, got %s" % (fn, type(out).__qualname__))
    if out.dtype != _F32:
        raise TypeError("%s: out has dtype %s; it must be torch.float32" % (fn, out.dtype))
    if out.numel() != count:
        raise ValueError("%s: out has %d elements (shape %s); it must hold one per tensor, %d"
                         % (fn, out.numel(), tuple(out.shape), count))
    if not out.is_contiguous():
        raise ValueError("%s: out is not contiguous (shape %s, strides %s); its %d elements must be consecutive"
                         % (fn, tuple(out.shape), out.stride(), count))
    if out.device.type != "cuda" or out.device.index != device:
        raise ValueError("%s: out is on device '%s' but the tensors are on 'cuda:%d'; they must be on the same "
                         "device" % (fn, out.device, device))


def _multi_fields(xs, fn, plain):
    """(tensors, device ordinal, pointers, counts, dtypes) of a non-empty list of torch tensors for
    the C call: dtypes is one code when the list has one dtype, else a list of codes. The tensors are
    xs itself, or a new list where a strided view (not dense) is replaced by its contiguous copy;
    the caller keeps it until the call has been enqueued. plain: every tensor's type is torch.Tensor
    or Parameter. Raises naming the first bad tensor."""
    # One C-level pass per field (map over unbound methods): no Python bytecode per tensor.
    if plain:
        devices = set(map(_get_device, xs))
        if len(devices) == 1 and all(map(_is_contiguous, xs)):
            dev = devices.pop()
            dtypes = set(map(_dtype_of, xs))
            if len(dtypes) == 1:
                codes = _DTYPES.get(dtypes.pop())
            else:
                codes = list(map(_DTYPES.get, map(_dtype_of, xs)))
                if None in codes:
                    codes = None
            if dev >= 0 and codes is not None:
                return xs, dev, list(map(_data_ptr, xs)), list(map(_numel, xs)), codes
    # Anything else (an error to name, several devices, strided views): tensor by tensor.
    dev = _check_multi_inputs(xs, fn)
    dense = [x if x.is_contiguous() or _dense(x) else x.contiguous() for x in xs]
    return dense, dev, list(map(_data_ptr, dense)), list(map(_numel, dense)), [_DTYPES[x.dtype] for x in dense]


def _as_tensors(tensors, fn):
    """(tensors, plain): tensors (a list or tuple) with every non-tensor (a __dlpack__ /
    __cuda_array_interface__ producer) viewed as a torch tensor, TypeError naming the first that is
    neither; plain: every one is a torch.Tensor or Parameter (no other subclass)."""
    if set(map(type, tensors)) <= _PLAIN:
        return tensors, True
    xs = [x if isinstance(x, _Tensor) else as_tensor(x, fn, "tensors[%d]" % i) for i, x in enumerate(tensors)]
    return xs, set(map(type, xs)) <= _PLAIN


def _empty_multi(out, fn, results=1):
    """What a call on an empty list returns: out (checked: an fp32 tensor of no element), or new
    empty fp32 tensors on torch's current CUDA device."""
    if out is not None:
        if not isinstance(out, _Tensor) or out.dtype != _F32 or out.numel():
            _check_multi_out(out, 0, -1, fn)  # raises naming what is wrong
        return out
    r = tuple(_empty(0, dtype=_F32, device="cuda") for _ in range(results))
    return r[0] if results == 1 else r


def _on_device_of(dev):
    """torch.cuda.device(dev) when dev is not torch's current device (the library makes the tensors'
    device current for its driver calls; torch's current device stays), else nothing."""
    return torch.cuda.device(dev) if _current_device() != dev else contextlib.nullcontext()


def amax_multi(tensors, *, nan="propagate", out=None):
    fn = _FN_MULTI
    nan_mode = _NAN_PROPAGATE if nan == "propagate" else _core.nan_code(nan, fn)
    if _is_compiling() or _dispatch_modes():
        return _amax_multi_via_op(tensors, nan_mode, out)
    xs = tensors if type(tensors) is list or type(tensors) is tuple else _core.multi_list(tensors, fn)
    if not xs:
        return _empty_multi(out, fn)
    eager = _eager_list(xs, fn)
    if eager is None:  # tensor subclasses (FakeTensor, ...): through the op
        return _amax_multi_via_op(xs, nan_mode, out)
    xs, dev, columns = eager
    if out is None:
        out = _empty(len(xs), dtype=_F32, device=_devices.get(dev) or _device(dev))
    else:
        _check_multi_out(out, len(xs), dev, fn)
    with _on_device_of(dev):
        ctx = _contexts.get(dev * 2 + nan_mode) or _core.context_of(dev, nan_mode)
        if len(columns) == 1:
            ctx.multi_compute_records(columns[0], out.data_ptr(), _raw_stream(dev))
        else:
            ctx.multi_compute(*columns, out.data_ptr(), _raw_stream(dev))
    return out


def _eager_list(xs, fn):
    """(tensors, device ordinal, columns) of a non-empty list for an eager multi call, or None when it
    holds tensor subclasses (those go through the ops). columns: (records,) from the C++ reader, or
    (pointers, counts, dtypes) read through torch's Python API (see _multi_fields: strided views
    copied, errors named). Keep the returned tensors alive until the call has been enqueued."""
    if _tensor_list is not None:
        r = _tensor_list(xs)
        if r is not None:
            return xs, r[0], (r[1],)
    xs, plain = _as_tensors(xs, fn)
    if not plain:
        return None
    xs, dev, ptrs, counts, codes = _multi_fields(xs, fn, True)
    return xs, dev, (ptrs, counts, codes)


def _amax_multi_via_op(tensors, nan_mode, out):
    """torch.compile, dispatch modes, tensor subclasses: the custom ops (their fake kernels trace)."""
    xs = list(_core.multi_list(tensors, _FN_MULTI))
    if not xs:
        return _empty_multi(out, _FN_MULTI)
    if out is None:
        return torch.ops.amax_tune.amax_multi(xs, nan_mode == _NAN_IGNORE)
    torch.ops.amax_tune.amax_multi_out(xs, out, nan_mode == _NAN_IGNORE)
    return out


def compute_multi_op_local(xs, nan_mode, out, fn=_FN_MULTI):
    """The multi-tensor custom ops' body: as amax_multi's eager path, with a workspace of this call
    only (see compute_op_local)."""
    if not xs:
        raise ValueError("%s: the list of tensors is empty" % fn)
    xs, dev, ptrs, counts, codes = _multi_fields(xs, fn, set(map(type, xs)) <= _PLAIN)
    if out is None:
        out = _empty(len(xs), dtype=_F32, device=xs[0].device)
    else:
        _check_multi_out(out, len(xs), dev, fn)
    with _on_device_of(dev):
        ctx = _core.context_of(dev, nan_mode)
        ws = _empty(ctx.multi_workspace_size(counts, codes), dtype=_U8, device=out.device)
        ctx.multi_compute_with_workspace(ptrs, counts, codes, out.data_ptr(), ws.data_ptr(), ws.numel(),
                                         _raw_stream(dev))
    return out


@torch.library.custom_op("amax_tune::amax_multi", mutates_args=())
def _amax_multi_op(xs: List[torch.Tensor], nan_ignore: bool) -> torch.Tensor:
    return compute_multi_op_local(xs, int(nan_ignore), None)


@_amax_multi_op.register_fake
def _amax_multi_fake(xs, nan_ignore):
    _check_multi_inputs(xs, _FN_MULTI)
    return xs[0].new_empty((len(xs),), dtype=_F32)


def _amax_multi_setup_context(ctx, inputs, output):
    ctx.count = len(inputs[0])


def _amax_multi_backward(ctx, grad):
    # a constant for autograd (as amax): no gradient to any tensor; a list input takes a list of Nones
    return [None] * ctx.count, None


_amax_multi_op.register_autograd(_amax_multi_backward, setup_context=_amax_multi_setup_context)


@torch.library.custom_op("amax_tune::amax_multi_out", mutates_args=("out",))
def _amax_multi_out_op(xs: List[torch.Tensor], out: torch.Tensor, nan_ignore: bool) -> None:
    compute_multi_op_local(xs, int(nan_ignore), out)


@_amax_multi_out_op.register_fake
def _amax_multi_out_fake(xs, out, nan_ignore):
    _check_multi_out(out, len(xs), _check_multi_inputs(xs, _FN_MULTI), _FN_MULTI)


_FN_MULTI_SCALE = "amax_tune.amax_multi_and_scale"


def amax_multi_and_scale(tensors, *, format=None, max=None, epsilon=0.0, force_pow2=False, nan_propagates=False,
                         nan="propagate", out=None):
    """amax_tune.amax_multi_and_scale (its docstring): eagerly one C call into the rows of one new
    (3, len(tensors)) tensor (or out); traced, under dispatch modes or for tensor subclasses the
    custom ops amax_tune::amax_multi_and_scale / amax_multi_and_scale_out."""
    fn = _FN_MULTI_SCALE
    nan_mode = _NAN_PROPAGATE if nan == "propagate" else _core.nan_code(nan, fn)
    fmt_code, max_value = _core.scale_format(format, max, fn)
    args = (fmt_code, max_value, float(epsilon), bool(force_pow2), bool(nan_propagates))
    if _is_compiling() or _dispatch_modes():
        return _amax_multi_and_scale_via_op(tensors, nan_mode, args, out)
    xs = tensors if type(tensors) is list or type(tensors) is tuple else _core.multi_list(tensors, fn)
    if not xs:
        return _empty_scale_outs(out, fn)
    eager = _eager_list(xs, fn)
    if eager is None:
        return _amax_multi_and_scale_via_op(xs, nan_mode, args, out)
    xs, dev, columns = eager
    n = len(xs)
    if out is None:
        outs = _empty((3, n), dtype=_F32, device=_devices.get(dev) or _device(dev)).unbind(0)
    else:
        _check_scale_outs(out, n, dev, fn)
        outs = tuple(out)
    with _on_device_of(dev):
        ctx = _contexts.get(dev * 2 + nan_mode) or _core.context_of(dev, nan_mode)
        if len(columns) == 1:
            ctx.multi_and_scale_records(columns[0], *args, outs[0].data_ptr(), outs[1].data_ptr(), outs[2].data_ptr(),
                                        _raw_stream(dev))
        else:
            ctx.multi_and_scale(*columns, *args, outs[0].data_ptr(), outs[1].data_ptr(), outs[2].data_ptr(),
                                _raw_stream(dev))
    return outs


def _empty_scale_outs(out, fn):
    """What the fused multi call returns for an empty list: out (three fp32 tensors of no element,
    checked) or three new empty fp32 tensors on torch's current CUDA device."""
    if out is None:
        return _empty_multi(None, fn, results=3)
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        _check_scale_outs(out, 0, -1, fn)  # raises naming what is wrong
    return tuple(_empty_multi(o, "%s: out[%s]" % (fn, name)) for name, o in zip(("amax", "scale", "scale_inv"), out))


def _amax_multi_and_scale_via_op(tensors, nan_mode, args, out):
    xs = list(_core.multi_list(tensors, _FN_MULTI_SCALE))
    if not xs:
        return _empty_scale_outs(out, _FN_MULTI_SCALE)
    if out is None:
        return torch.ops.amax_tune.amax_multi_and_scale(xs, *args, nan_mode == _NAN_IGNORE).unbind(0)
    torch.ops.amax_tune.amax_multi_and_scale_out(xs, out[0], out[1], out[2], *args, nan_mode == _NAN_IGNORE)
    return tuple(out)


def compute_multi_scale_op_local(xs, nan_mode, scale_args, outs):
    """The fused multi-tensor custom ops' body: amax_multi_and_scale with a workspace of this call
    only (see compute_op_local) into outs (three fp32 tensors of len(xs) elements)."""
    fn = _FN_MULTI_SCALE
    xs, dev, ptrs, counts, codes = _multi_fields(xs, fn, set(map(type, xs)) <= _PLAIN)
    with _on_device_of(dev):
        ctx = _core.context_of(dev, nan_mode)
        ws = _empty(ctx.multi_workspace_size(counts, codes), dtype=_U8, device=outs[0].device)
        ctx.multi_and_scale_with_workspace(ptrs, counts, codes, *scale_args, outs[0].data_ptr(), outs[1].data_ptr(),
                                           outs[2].data_ptr(), ws.data_ptr(), ws.numel(), _raw_stream(dev))


@torch.library.custom_op("amax_tune::amax_multi_and_scale", mutates_args=())
def _amax_multi_and_scale_op(xs: List[torch.Tensor], format: int, max: float, epsilon: float, force_pow2: bool,
                             nan_propagates: bool, nan_ignore: bool) -> torch.Tensor:
    if not xs:
        raise ValueError("%s: the list of tensors is empty" % _FN_MULTI_SCALE)
    r = _empty((3, len(xs)), dtype=_F32, device=xs[0].device)
    compute_multi_scale_op_local(xs, int(nan_ignore), (format, max, epsilon, force_pow2, nan_propagates), r.unbind(0))
    return r


@_amax_multi_and_scale_op.register_fake
def _amax_multi_and_scale_fake(xs, format, max, epsilon, force_pow2, nan_propagates, nan_ignore):
    _check_multi_inputs(xs, _FN_MULTI_SCALE)
    return xs[0].new_empty((3, len(xs)), dtype=_F32)


def _amax_multi_and_scale_backward(ctx, grad):
    return [None] * ctx.count, None, None, None, None, None, None  # constants: no gradient to any tensor


_amax_multi_and_scale_op.register_autograd(_amax_multi_and_scale_backward, setup_context=_amax_multi_setup_context)


@torch.library.custom_op("amax_tune::amax_multi_and_scale_out",
                         mutates_args=("amax_out", "scale_out", "scale_inv_out"))
def _amax_multi_and_scale_out_op(xs: List[torch.Tensor], amax_out: torch.Tensor, scale_out: torch.Tensor,
                                 scale_inv_out: torch.Tensor, format: int, max: float, epsilon: float,
                                 force_pow2: bool, nan_propagates: bool, nan_ignore: bool) -> None:
    outs = (amax_out, scale_out, scale_inv_out)
    _check_scale_outs(outs, len(xs), _check_multi_inputs(xs, _FN_MULTI_SCALE), _FN_MULTI_SCALE)
    compute_multi_scale_op_local(xs, int(nan_ignore), (format, max, epsilon, force_pow2, nan_propagates), outs)


@_amax_multi_and_scale_out_op.register_fake
def _amax_multi_and_scale_out_fake(xs, amax_out, scale_out, scale_inv_out, format, max, epsilon, force_pow2,
                                   nan_propagates, nan_ignore):
    outs = (amax_out, scale_out, scale_inv_out)
    _check_scale_outs(outs, len(xs), _check_multi_inputs(xs, _FN_MULTI_SCALE), _FN_MULTI_SCALE)


def multi_shape(x, fn, name):
    """(device ordinal, dtype code, element count) of one tensor of a preload_multi / explain_multi list."""
    x = as_tensor(x, fn, name)
    dev, code = _check_input(x, fn, name)
    return dev, code, x.numel()
