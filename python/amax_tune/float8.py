"""Drop-ins for the scale computations of two FP8 training recipes, with amax-tune's multi-tensor and
fused kernels in place of the torch code they replace. Each reproduces its recipe's formula bit for
bit (python/tests/test_gpu.py compares them with that formula computed by torch on the GPU). Needs
torch >= 2.4 (see amax_tune.TORCH_MIN); importing this module without it raises ImportError.

torchao / FSDP2 float8 (``precompute_float8_dynamic_scale_for_fsdp``): :func:`fsdp_float8_scales`.
TransformerEngine current scaling (amax + scale + scale_inv with ``amax_epsilon`` and
``force_pow_2_scales``): :func:`te_current_scaling` and :func:`te_current_scaling_multi`.

Where the two rules differ (same amax):

====================  ==========================================  ===========================================
amax                  torchao (fsdp_float8_scales)                TE (te_current_scaling, amax_and_scale)
====================  ==========================================  ===========================================
+Inf                  scale = max / inf = 0                       scale = 1
NaN (weights)         scale NaN                                   NaN skipped by TE's amax (fmaxf)
0                     clamped to eps (1e-12, by torch.clamp in    scale = 1 when amax_epsilon is 0
                      the weights' dtype): scale = max / eps
rounding              max / amax in float64 (torch computes       max / amax in float32, rounded once
                      reciprocal(amax) * max), then to float32    (may differ from torchao's in the last bit)
float16 weights       scale clamped to 65504                      no clamp (FLT_MAX for an overflow)
====================  ==========================================  ===========================================
"""
from . import _requirements
from . import _torch, _torch_missing  # the package's decision (amax_tune/__init__.py): the layer or None

if _torch is None:
    raise ImportError("amax_tune.float8 needs torch >= %s, and %s"
                      % (_requirements.dotted(_requirements.TORCH_MIN), _torch_missing))
import torch  # noqa: E402

#: torch's float8 dtypes -> amax_and_scale's format names
_FORMATS = {}
for _name, _fmt in (("float8_e4m3fn", "e4m3"), ("float8_e5m2", "e5m2"), ("float8_e4m3fnuz", "e4m3fnuz"),
                    ("float8_e5m2fnuz", "e5m2fnuz")):
    if hasattr(torch, _name):
        _FORMATS[getattr(torch, _name)] = _fmt

#: torchao's epsilon (torchao.float8.float8_utils.EPS)
TORCHAO_EPS = 1e-12


def _format_of(float8_dtype, fn):
    fmt = _FORMATS.get(float8_dtype)
    if fmt is None:
        raise TypeError("%s: float8_dtype %r is not a float8 dtype; use one of %s"
                        % (fn, float8_dtype, ", ".join(str(d) for d in _FORMATS)))
    return fmt


def fsdp_float8_scales(weights, float8_dtype=torch.float8_e4m3fn, *, eps=TORCHAO_EPS, reduce_amax=None):
    """The per-weight scales of torchao's ``precompute_float8_dynamic_scale_for_fsdp``, bit for bit,
    with one amax_multi launch (a few for over 1600 weights) in place of
    ``torch._foreach_norm(weights, inf)`` and ``torch.stack``.

    The formula (torchao main, torchao/float8/fsdp_utils.py), with D the weights' dtype
    (``torch.stack`` promotes mixed dtypes):

        amax  = stack(max |w_i|)            in D   (after reduce_amax: FSDP's all-reduce MAX)
        amax  = clamp(amax, min=eps)        in D   (torch.clamp of a D tensor)
        scale = finfo(float8_dtype).max / amax.to(float64)   (torch: reciprocal, then multiply)
        scale = clamp(scale, max=65504) if D is float16
        scale = scale.to(float32)

    weights: a list or tuple of tensors (the local shards under FSDP2: for DTensors, pass
    ``w.to_local()``; torchao's weight wrapper: its ``_tensor``) of float32 / float16 / bfloat16 on
    one GPU. float8_dtype: torch.float8_e4m3fn (torchao's default), float8_e5m2, float8_e4m3fnuz or
    float8_e5m2fnuz. reduce_amax: None (one process), or a callable that reduces the fp32 amax
    tensor in place across ranks, e.g. ``lambda t: torch.distributed.all_reduce(t,
    op=torch.distributed.ReduceOp.MAX, group=g)``: torchao's all-reduce of the Partial amax.
    Returns a 1-d float32 tensor of len(weights) scales on the weights' device (torchao stores
    ``scales[i]`` as weight i's ``_precomputed_scale``). An empty list gives an empty tensor.
    Asynchronous on torch's current stream; a NaN anywhere in a weight gives that weight a NaN
    scale, +-Inf a scale of 0 (the module's docstring compares TE's rule). Raises as
    amax_tune.amax_multi (naming the bad weight's index), TypeError for another float8_dtype.
    """
    fn = "amax_tune.float8.fsdp_float8_scales"
    _format_of(float8_dtype, fn)
    amax = _torch.amax_multi(weights)
    if not len(weights):
        return amax
    if reduce_amax is not None:
        reduce_amax(amax)
    dtype = weights[0].dtype
    for w in weights[1:]:
        dtype = torch.promote_types(dtype, w.dtype)
    amax = amax.to(dtype)  # exact: each amax is a value of its weight's dtype
    amax = torch.clamp(amax, eps)
    scale = torch.finfo(float8_dtype).max / amax.to(torch.float64)
    if dtype is torch.float16:
        scale = torch.clamp(scale, max=torch.finfo(torch.float16).max)
    return scale.to(torch.float32)


def te_current_scaling(x, float8_dtype=torch.float8_e4m3fn, *, amax_epsilon=0.0, force_pow_2_scales=False,
                       out=None):
    """TransformerEngine's current scaling of one tensor (its amax kernel, then
    ``compute_scale_from_amax``), bit for bit, in one launch: amax_and_scale(x, format, epsilon=
    amax_epsilon, force_pow2=force_pow_2_scales, nan="ignore").

    The formula (TE's compute_scale_from_amax, commits cited in common/include/amax/scale_rule.hpp),
    m = finfo(float8_dtype).max:
        amax  = max |x|, NaNs skipped (TE's fmaxf), 0 for an empty x
        a     = max(amax, amax_epsilon)
        scale = 1 if a is 0 or inf, else m / a in float32 (FLT_MAX if that overflows)
        scale = scale with its mantissa bits cleared if force_pow_2_scales
        scale_inv = 1 / scale in float32

    Returns (amax, scale, scale_inv), 0-d float32 tensors on x's device (out: three 1-element fp32
    tensors, e.g. TE's amax history row, scale and scale_inv). Under torch.compile and CUDA-graph
    capture as amax_and_scale (preload(..., scale=True, nan="ignore") first). Raises as
    amax_and_scale, TypeError for another float8_dtype."""
    fmt = _format_of(float8_dtype, "amax_tune.float8.te_current_scaling")
    return _torch.amax_and_scale(x, format=fmt, epsilon=amax_epsilon, force_pow2=force_pow_2_scales, nan="ignore",
                                 out=out)


def te_current_scaling_multi(tensors, float8_dtype=torch.float8_e4m3fn, *, amax_epsilon=0.0,
                             force_pow_2_scales=False, out=None):
    """te_current_scaling of every tensor of a list, in a few launches (amax_multi_and_scale):
    (amax, scale, scale_inv), three 1-d float32 tensors of len(tensors) elements (out: three
    contiguous fp32 tensors of that many elements). Raises as amax_multi_and_scale."""
    fmt = _format_of(float8_dtype, "amax_tune.float8.te_current_scaling_multi")
    return _torch.amax_multi_and_scale(tensors, format=fmt, epsilon=amax_epsilon, force_pow2=force_pow_2_scales,
                                       nan="ignore", out=out)


__all__ = ["fsdp_float8_scales", "te_current_scaling", "te_current_scaling_multi", "TORCHAO_EPS"]
