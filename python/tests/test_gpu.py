"""GPU tests of the amax_tune package (CTest python.gpu, label gpu; or directly:
``python3 python/tests/test_gpu.py`` / ``python3 -m pytest python/tests/test_gpu.py``).

Needs torch with a CUDA (or ROCm) device; exits 77 (CTest: skipped) without them when run as a
script. Beside a torch older than amax_tune.TORCH_MIN (Debian 12's 1.13) the package's torch calls
are unavailable (its documented rule): their suites skip naming the package's reason, and RawPointers
tests what the package offers there, Context on the device pointers of torch's tensors. Every result
is compared bit for bit (``.view(torch.int32)``) with torch on the same tensor: ``torch.amax(x.abs())``
for nan="propagate" (a NaN result must be the library's 0x7fc00000), and the NaN-free maximum (NaNs
replaced by +0.0, so all-NaN gives +0.0) for nan="ignore". CuPy and JAX inputs are tested where those are importable.
"""
import math
import os
import random
import re
import sys
import threading
import unittest

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX must leave torch its memory

try:
    import torch
except ImportError as e:
    torch = None
    NO_DEVICE = "torch is not importable (%s)" % e
else:
    NO_DEVICE = None if torch.cuda.is_available() else "torch sees no CUDA device"

import amax_tune

#: why the suites of the package's torch calls skip: no device, or the package's own reason why its torch
#: layer is not loaded (e.g. "torch 1.13.0 is older than 2.4, the oldest amax_tune supports")
SKIP = NO_DEVICE or (None if amax_tune._torch is not None else
                     "the package's torch calls are unavailable: %s" % amax_tune._torch_missing)

NAN_BITS = 0x7FC00000
DTYPES = [] if torch is None else [torch.float32, torch.float16, torch.bfloat16]
KINDS = ["random", "max_first", "max_last", "max_middle", "max_in_vector", "all_negative", "negative_zero",
         "pos_inf", "neg_inf", "nan_first", "nan_middle", "nan_last", "nan_and_inf", "all_nan", "denormals"]
SIZES = [0, 1, 2, 7, 31, 33, 255, 1000, 4097, 65537, 1_000_003, (1 << 24) + 7]
OFFSETS = [0, 1, 3]


def bits(t):
    """The fp32 bits of a 0-d / 1-element tensor, as a Python int (0..2^32-1)."""
    return int(t.reshape(()).float().view(torch.int32).item()) & 0xFFFFFFFF


def reference_bits(x, nan):
    """Expected bits of amax_tune.amax(x, nan=nan), from torch alone."""
    if x.numel() == 0:
        return 0
    a = x.abs().float()
    if nan == "ignore":
        a = torch.where(torch.isnan(a), torch.zeros_like(a), a)
    r = torch.amax(a)
    return NAN_BITS if torch.isnan(r).item() else bits(r)


def _int_view_dtype(dtype):
    return torch.int32 if dtype == torch.float32 else torch.int16


def _nan_value(dtype, g):
    """A NaN of dtype with a random payload and sign, as a 1-element tensor."""
    exp = {torch.float32: (0x7F800000, 0x7FFFFF), torch.float16: (0x7C00, 0x3FF), torch.bfloat16: (0x7F80, 0x7F)}
    base, mant = exp[dtype]
    payload = int(torch.randint(1, mant + 1, (1,), generator=g).item())
    sign = int(torch.randint(0, 2, (1,), generator=g).item())
    word = base | payload
    if sign:
        word |= 0x80000000 if dtype == torch.float32 else 0x8000
    if dtype != torch.float32 and word >= 0x8000:
        word -= 0x10000  # int16 view
    if dtype == torch.float32 and word >= 0x80000000:
        word -= 1 << 32
    return torch.tensor([word], dtype=_int_view_dtype(dtype)).view(dtype)


def make_input(kind, dtype, n, seed=1):
    """n elements of one adversarial kind (runtime/include/amax/reference.hpp's list), on the GPU."""
    g = torch.Generator().manual_seed(seed * 7919 + n)
    if n == 0:
        return torch.empty(0, dtype=dtype, device="cuda")
    span = 10 if dtype == torch.float16 else 30
    if kind == "denormals":
        hi = {torch.float32: 0x7FFFFF, torch.float16: 0x3FF, torch.bfloat16: 0x7F}[dtype]
        words = torch.randint(1, hi + 1, (n,), generator=g, dtype=torch.int64)
        sign = torch.randint(0, 2, (n,), generator=g, dtype=torch.int64)
        words = words | (sign << (31 if dtype == torch.float32 else 15))
        if dtype == torch.float32:
            words = torch.where(words >= 1 << 31, words - (1 << 32), words)
        else:
            words = torch.where(words >= 1 << 15, words - (1 << 16), words)
        return words.to(_int_view_dtype(dtype)).view(dtype).cuda()
    if kind == "random":
        v = torch.randn(n, generator=g) * torch.exp2(torch.randint(-span, span, (n,), generator=g).float())
        return v.to(dtype).cuda()
    v = (torch.rand(n, generator=g) - 0.5)  # |v| <= 0.5
    if kind == "all_negative":
        v = -(v.abs() + 0.25)
        v[n // 3] = -0.875  # the maximum |x|, negative
    elif kind == "negative_zero":
        v = torch.full((n,), -0.0)
    v = v.to(dtype)
    at = {"max_first": 0, "max_last": n - 1, "max_middle": n // 2,
          "max_in_vector": min(n - 1, (n // 2) // 8 * 8 + 5)}
    if kind in at:
        v[at[kind]] = -3.0 if (n % 2) else 3.0
    elif kind == "pos_inf":
        v[n // 3] = float("inf")
    elif kind == "neg_inf":
        v[n - 1] = float("-inf")
    elif kind in ("nan_first", "nan_middle", "nan_last"):
        v[{"nan_first": 0, "nan_middle": n // 2, "nan_last": n - 1}[kind]] = _nan_value(dtype, g)[0]
    elif kind == "nan_and_inf":
        v[n // 4] = _nan_value(dtype, g)[0]
        v[(3 * n) // 4] = float("-inf")
    elif kind == "all_nan":
        v = torch.cat([_nan_value(dtype, g) for _ in range(min(n, 64))]).repeat((n + 63) // 64)[:n]
    return v.cuda()


def placed(values, offset, guard):
    """values copied into a larger buffer at `offset`, surrounded by `guard` (a large finite value:
    a read outside the view shows as a wrong maximum)."""
    buf = torch.full((values.numel() + offset + 5,), guard, dtype=values.dtype, device="cuda")
    view = buf[offset:offset + values.numel()]
    view.copy_(values)
    return view


def guard_of(dtype):
    return 60000.0 if dtype == torch.float16 else 1e30


@unittest.skipIf(SKIP, SKIP)
class BitExact(unittest.TestCase):
    def test_adversarial_inputs_both_nan_modes(self):
        cases = 0
        for dtype in DTYPES:
            for n in SIZES:
                for kind in KINDS:
                    values = make_input(kind, dtype, n)
                    for offset in OFFSETS:
                        x = placed(values, offset, guard_of(dtype))
                        for nan in ("propagate", "ignore"):
                            got = amax_tune.amax(x, nan=nan)
                            self.assertEqual(got.shape, ())
                            self.assertEqual(got.dtype, torch.float32)
                            self.assertEqual(got.device, x.device)
                            want = reference_bits(x, nan)
                            self.assertEqual(bits(got), want, "%s n=%d %s offset=%d nan=%s: %#010x != %#010x"
                                             % (dtype, n, kind, offset, nan, bits(got), want))
                            cases += 1
        print("\nbit-exact: %d cases (%d dtypes x %d sizes x %d kinds x %d offsets x 2 NaN modes)"
              % (cases, len(DTYPES), len(SIZES), len(KINDS), len(OFFSETS)), file=sys.stderr)

    def test_large_tensor(self):
        x = torch.randn((1 << 28) + 3, device="cuda").to(torch.bfloat16)
        x[-1] = -1000.0
        self.assertEqual(bits(amax_tune.amax(x)), bits(torch.tensor(1000.0)))
        self.assertEqual(bits(amax_tune.amax(x)), reference_bits(x, "propagate"))

    def test_zero_d_and_empty(self):
        self.assertEqual(amax_tune.amax(torch.tensor(-2.5, device="cuda")).item(), 2.5)
        self.assertEqual(bits(amax_tune.amax(torch.empty(0, 3, device="cuda"))), 0)

    def test_out(self):
        hist = torch.full((8,), -1.0, device="cuda")
        x = torch.randn(100000, device="cuda", dtype=torch.float16)
        r = amax_tune.amax(x, out=hist[3:4])
        self.assertEqual(r.data_ptr(), hist[3:4].data_ptr())
        self.assertEqual(bits(hist[3]), reference_bits(x, "propagate"))
        self.assertEqual(hist[torch.arange(8, device="cuda") != 3].tolist(), [-1.0] * 7)
        amax_tune.amax(x, out=hist[0])  # a 0-d view works too
        self.assertEqual(bits(hist[0]), reference_bits(x, "propagate"))


@unittest.skipIf(SKIP, SKIP)
class Views(unittest.TestCase):
    """The amax of exactly the view's elements, never of the memory around it."""

    def check(self, view, what):
        for nan in ("propagate", "ignore"):
            self.assertEqual(bits(amax_tune.amax(view, nan=nan)), reference_bits(view, nan), what)

    def test_views(self):
        base = torch.randn(64, 257, device="cuda")
        base[0, 1] = 1e6  # outside the step slices below and every column but 1
        base[63, 256] = -5e5
        self.check(base.t(), "transpose (dense, reduced in place)")
        self.check(base[:, ::2], "step slice (copied)")
        self.check(base[1:, 2], "one column")
        self.check(base[::3, 5:200:7], "2-D step slice")
        self.check(base.view(8, 8, 257).permute(2, 0, 1), "3-D permutation")
        self.check(base[5].expand(4, 257), "expand (stride 0)")
        self.check(base[:, 2:], "rows of a narrower slice (non-contiguous rows)")
        self.assertEqual(amax_tune.amax(base[:, ::2]).item(), float(base[:, ::2].abs().max().item()))
        self.assertNotEqual(amax_tune.amax(base[:, ::2]).item(), 1e6)


def _scale_reference(amax_bits, m, epsilon=0.0, pow2=False, nanp=False):
    """TE's compute_scale_from_amax on fp32 bits, in Python with float32 rounding (struct): division of
    two floats rounded once in double then to float is exact (double rounding is innocuous there)."""
    import struct
    f = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
    b = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]
    a = struct.unpack("<f", struct.pack("<I", amax_bits))[0]
    if a != a and nanp:
        return 0x7FC00000, 0x7FC00000
    if a < f(epsilon):
        a = f(epsilon)
    scale = 1.0
    if not (a != a or a == 0.0 or a == float("inf")):
        q = m / a
        scale = f(q) if abs(q) < 3.4028235677973366e38 else float("inf")
        if scale == float("inf"):
            scale = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
        if pow2:
            scale = struct.unpack("<f", struct.pack("<I", b(scale) & 0xFF800000))[0]
    return b(scale), b(f(1.0 / scale))


@unittest.skipIf(SKIP, SKIP)
class AmaxAndScale(unittest.TestCase):
    def test_formats_rules_and_nan(self):
        m = {"e4m3": 448.0, "e5m2": 57344.0, "e4m3fnuz": 240.0, "e5m2fnuz": 57344.0}
        g = torch.Generator().manual_seed(5)
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for n in (1000, 1 << 20):
                x = (torch.rand(n, generator=g) * 6 - 3).to(dtype).cuda()
                for fmt, maxv in m.items():
                    for pow2 in (False, True):
                        a, s, si = amax_tune.amax_and_scale(x, format=fmt, epsilon=1e-6, force_pow2=pow2)
                        ab = bits(a)
                        self.assertEqual(ab, reference_bits(x, "propagate"))
                        self.assertEqual((bits(s), bits(si)), _scale_reference(ab, maxv, 1e-6, pow2), (dtype, n, fmt))
                a, s, si = amax_tune.amax_and_scale(x, max=1.0)
                self.assertEqual((bits(s), bits(si)), _scale_reference(bits(a), 1.0))
                y = x.clone()
                y[n // 2] = float("nan")
                a, s, si = amax_tune.amax_and_scale(y)
                self.assertEqual((bits(a), bits(s), bits(si)), (0x7FC00000, 0x3F800000, 0x3F800000))
                a, s, si = amax_tune.amax_and_scale(y, nan_propagates=True)
                self.assertEqual((bits(a), bits(s), bits(si)), (0x7FC00000, 0x7FC00000, 0x7FC00000))
                a, s, si = amax_tune.amax_and_scale(y, nan="ignore", nan_propagates=True)
                self.assertEqual(bits(a), reference_bits(y, "ignore"))
                self.assertEqual((bits(s), bits(si)), _scale_reference(bits(a), 448.0))
        z = torch.zeros(16, device="cuda")
        self.assertEqual([bits(t) for t in amax_tune.amax_and_scale(z)], [0, 0x3F800000, 0x3F800000])
        with self.assertRaisesRegex(amax_tune.Error, r"options.epsilon is -1"):
            amax_tune.amax_and_scale(z, epsilon=-1.0)


@unittest.skipIf(SKIP, SKIP)
class Errors(unittest.TestCase):
    def test_bad_inputs_are_named(self):
        with self.assertRaisesRegex(ValueError, r"x is on device 'cpu'"):
            amax_tune.amax(torch.ones(4))
        with self.assertRaisesRegex(TypeError, r"x has dtype torch.float64"):
            amax_tune.amax(torch.ones(4, device="cuda", dtype=torch.float64))
        with self.assertRaisesRegex(TypeError, r"x must be a torch.Tensor or an array .* got list"):
            amax_tune.amax([1.0, 2.0])
        with self.assertRaisesRegex(ValueError, r"nan='none' is not a NaN mode"):
            amax_tune.amax(torch.ones(4, device="cuda"), nan="none")
        x = torch.ones(4, device="cuda")
        with self.assertRaisesRegex(TypeError, r"out has dtype torch.float16"):
            amax_tune.amax(x, out=torch.empty(1, device="cuda", dtype=torch.float16))
        with self.assertRaisesRegex(ValueError, r"out has 2 elements"):
            amax_tune.amax(x, out=torch.empty(2, device="cuda"))
        with self.assertRaisesRegex(ValueError, r"out is on device 'cpu' but x is on 'cuda:0'"):
            amax_tune.amax(x, out=torch.empty(1))
        if torch.cuda.device_count() > 1:
            with self.assertRaisesRegex(ValueError, r"out is on device 'cuda:1' but x is on 'cuda:0'"):
                amax_tune.amax(x, out=torch.empty(1, device="cuda:1"))


@unittest.skipIf(NO_DEVICE, NO_DEVICE)
class RawPointers(unittest.TestCase):
    """Context on the device pointers of torch's tensors with the caller's workspace: what the package
    offers beside any torch, also one older than TORCH_MIN (torch only allocates and computes references)."""

    def test_bit_exact_with_the_callers_workspace(self):
        codes = {torch.float32: amax_tune.DTYPE_FP32, torch.float16: amax_tune.DTYPE_FP16,
                 torch.bfloat16: amax_tune.DTYPE_BF16}
        out = torch.empty((), device="cuda")
        stream = torch.cuda.current_stream()
        for nan in ("propagate", "ignore"):
            ctx = amax_tune.context(0, nan=nan)
            for dtype, code in codes.items():
                for kind in ("random", "max_in_vector", "negative_zero", "nan_middle", "all_nan", "denormals"):
                    for n in (1, 33, 4097, 1_000_003):
                        x = make_input(kind, dtype, n, seed=5)
                        ws = torch.empty(ctx.workspace_size(code, n), dtype=torch.uint8, device="cuda")
                        ctx.compute_with_workspace(x.data_ptr(), code, n, out.data_ptr(), ws.data_ptr(), ws.numel(),
                                                   stream.cuda_stream)
                        stream.synchronize()
                        self.assertEqual(bits(out), reference_bits(x, nan), (nan, dtype, kind, n))

    def test_c_status_becomes_error(self):
        ctx = amax_tune.context(0)
        out = torch.empty((), device="cuda")
        x = torch.ones(16, device="cuda", dtype=torch.float16)
        with self.assertRaises(amax_tune.Error) as cm:  # an odd address for 2-byte elements
            ctx.compute(x.data_ptr() + 1, amax_tune.DTYPE_FP16, 8, out.data_ptr(), 0)
        self.assertIs(cm.exception.status, amax_tune.Status.MISALIGNED_POINTER)
        self.assertEqual(cm.exception.function, "amax_compute")
        self.assertIn("not aligned", cm.exception.message)
        with self.assertRaises(amax_tune.Error) as cm:
            ctx.compute_with_workspace(x.data_ptr(), amax_tune.DTYPE_FP16, 1 << 22, out.data_ptr(), 0, 0, 0)
        self.assertIs(cm.exception.status, amax_tune.Status.WORKSPACE_TOO_SMALL)
        self.assertIn("workspace of 0 bytes (NULL) is too small", cm.exception.message)
        with self.assertRaises(amax_tune.Error) as cm:
            ctx.compute(x.data_ptr(), 7, 16, out.data_ptr(), 0)
        self.assertIs(cm.exception.status, amax_tune.Status.UNKNOWN_DTYPE)


@unittest.skipIf(NO_DEVICE, NO_DEVICE)
class SiblingOverrides(unittest.TestCase):
    """A sibling shares its base's tables, overrides included (amax_context_create_sibling): an override
    variable changed after the base was created applies to a new context, not to the sibling."""

    def test_sibling_keeps_the_overrides_of_its_base(self):
        names = ("AMAX_TUNE_FORCE_LABEL", "AMAX_TUNE_FORCE_STRATEGY", "NVTE_USE_ATOMIC_AMAX")
        saved = {k: os.environ.pop(k, None) for k in names}
        try:
            os.environ["AMAX_TUNE_FORCE_STRATEGY"] = "atomic"
            base = amax_tune._C.Context(0, 0, None, amax_tune.system_db_path(), None)
            os.environ["AMAX_TUNE_FORCE_STRATEGY"] = "two_stage"
            sibling = base.sibling(1)
            fresh = amax_tune._C.Context(0, 1, None, amax_tune.system_db_path(), None)
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v
        for n in (4096, 1 << 20, 1 << 26):
            for ctx, strategy in ((base, "atomic"), (sibling, "atomic"), (fresh, "two_stage")):
                e = ctx.explain(amax_tune.DTYPE_BF16, n)
                self.assertEqual(e["source"], 0, e)  # AMAX_SOURCE_OVERRIDE
                self.assertEqual(e["label"].split(".")[0], strategy, (ctx.nan_mode, n, e))


@unittest.skipIf(SKIP, SKIP)
class Explain(unittest.TestCase):
    def test_explain(self):
        x = torch.randn(1 << 20, device="cuda", dtype=torch.bfloat16)
        e = amax_tune.explain(x)
        self.assertIn(e.source, ("override", "user_db", "system_db", "default"))
        self.assertRegex(e.label, r"^(atomic|two_stage|one_pass|self_reset|first_reset|first_reset_warp)\.t\d+\.v\d+\.u\d+\.b")
        self.assertEqual(e.workspace_bytes, amax_tune.context(0).workspace_size(amax_tune.DTYPE_BF16, 1 << 20))
        self.assertEqual((e.dtype, e.n), ("bf16", 1 << 20))
        self.assertIn(e.label, str(e))
        self.assertEqual(amax_tune.explain(dtype=torch.bfloat16, n=1 << 20, device=0), e)
        if not os.environ.get("AMAX_TUNE_DB") and e.source == "system_db":
            self.assertIn(amax_tune.system_db_path() or "system.db", e.detail)
        print("\nexplain(bf16, 2^20): %s" % e, file=sys.stderr)

    def test_explain_scale(self):
        # amax_and_scale's variant (fused_variant in generator/src/search_space.cpp): the amax-only
        # choice with the scale epilogue; an atomic choice runs as self_reset (one launch) with its
        # grid cap lowered to at most 4 blocks per CU (an uncapped or absolute one: unroll at least 8,
        # kFusedSelfResetUnroll) where that variant is in the pruned space
        for n in (1000, 1 << 21, (1 << 22) + 5):
            x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
            a, f = amax_tune.explain(x), amax_tune.explain(x, scale=True)
            strategy, shape = a.label.split(".", 1)
            fused_strategy, fused_shape = f.label.split(".", 1)
            if strategy == "atomic" and fused_strategy == "self_reset" and a.source != "override":
                head, cap = shape.rsplit(".b", 1)
                m = re.fullmatch(r"(\d+)cu", cap)
                fused_cap = cap if m and int(m.group(1)) <= 4 else "4cu"
                if not m:
                    threads, nvec, unroll = head.split(".")
                    head = "%s.%s.u%d" % (threads, nvec, max(int(unroll[1:]), 8))
                self.assertEqual(fused_shape, "%s.b%s.scale" % (head, fused_cap))
                self.assertLessEqual(f.grid, a.grid)
            elif strategy in ("first_reset", "first_reset_warp"):
                # no scale epilogue: self_reset of its shape at 4 blocks per CU (first_reset's table
                # caps 2 per CU and uncapped are not in the pruned self_reset space)
                self.assertEqual(fused_strategy, "self_reset")
                self.assertEqual(fused_shape, "%s.b4cu.scale" % shape.rsplit(".b", 1)[0])
            else:
                self.assertEqual(fused_strategy, strategy)
                self.assertEqual(fused_shape, shape + ".scale")
                self.assertEqual(f.grid, a.grid)
            self.assertEqual(f.launches, 1 if fused_strategy in ("self_reset", "one_pass") else a.launches)
            self.assertEqual((f.source, f.tuned_n), (a.source, a.tuned_n))
            self.assertEqual(amax_tune.explain(dtype="bf16", n=n, device=0, scale=True), f)
            print("explain(bf16, %d, scale=True): %s" % (n, f), file=sys.stderr)


@unittest.skipIf(SKIP, SKIP)
class Streams(unittest.TestCase):
    def test_current_stream_and_several_streams(self):
        streams = [torch.cuda.Stream() for _ in range(4)]
        xs = [torch.randn(n, device="cuda") for n in (1000, 70000, 1 << 20, 3 << 20)]
        torch.cuda.synchronize()
        outs = []
        for s, x in zip(streams, xs):
            with torch.cuda.stream(s):
                outs.append([amax_tune.amax(x) for _ in range(10)])
        torch.cuda.synchronize()
        for x, rs in zip(xs, outs):
            for r in rs:
                self.assertEqual(bits(r), reference_bits(x, "propagate"))
        held = amax_tune.context(0).workspaces()
        for s in streams:
            self.assertIn(s.cuda_stream, held)  # each stream its own workspace

    def test_threads_with_their_own_streams(self):
        errors = []

        def work(i):
            try:
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    for k in range(20):
                        x = torch.randn(1000 + 4099 * k * (i + 1), device="cuda", dtype=torch.bfloat16)
                        x[k] = 77.0
                        r = amax_tune.amax(x, nan="ignore" if i % 2 else "propagate")
                        s.synchronize()
                        if r.item() != 77.0:
                            errors.append((i, k, r.item()))
            except Exception as e:  # reported below
                errors.append((i, repr(e)))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


@unittest.skipIf(SKIP or torch.cuda.device_count() < 2, SKIP or "one GPU")
class TwoDevices(unittest.TestCase):
    def test_tensor_on_another_device_than_the_current_one(self):
        torch.cuda.set_device(0)
        x = torch.randn(1 << 20, device="cuda:1")
        x[12345] = -99.0
        r = amax_tune.amax(x)
        self.assertEqual(r.device, x.device)
        self.assertEqual(r.item(), 99.0)
        self.assertEqual(torch.cuda.current_device(), 0)  # torch's current device left as it was
        self.assertEqual(torch.empty(1, device="cuda").device.index, 0)
        self.assertEqual(amax_tune.explain(x).n, 1 << 20)
        self.assertEqual(torch.cuda.current_device(), 0)


    def test_multi_on_another_device_than_the_current_one(self):
        torch.cuda.set_device(0)
        xs = [torch.randn(1 << 20, device="cuda:1"), torch.randn(1000, device="cuda:1", dtype=torch.bfloat16)]
        xs[1][5] = -77.0
        r = amax_tune.amax_multi(xs)
        self.assertEqual(r.device, xs[0].device)
        self.assertEqual(r[1].item(), 77.0)
        self.assertEqual(torch.cuda.current_device(), 0)
        with self.assertRaisesRegex(ValueError, r"tensors\[1\] is on device 'cuda:1' but tensors\[0\] is on 'cuda:0'"):
            amax_tune.amax_multi([torch.ones(3, device="cuda:0"), xs[0]])


@unittest.skipIf(SKIP, SKIP)
class CudaGraphs(unittest.TestCase):
    def test_capture_and_replay_with_new_data(self):
        for dtype, n, nan in ((torch.bfloat16, 1 << 20, "propagate"), (torch.float32, 3_000_001, "ignore"),
                              (torch.float16, 5000, "propagate")):
            amax_tune.preload([dtype], [n, n - 1], nan=nan)
            x = torch.zeros(n, device="cuda", dtype=dtype)
            hist = torch.zeros(4, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = amax_tune.amax(x, nan=nan)
                amax_tune.amax(x[1:], nan=nan, out=hist[1:2])
            for trial in range(4):
                x.copy_(make_input(KINDS[trial * 3 + 1], dtype, n, seed=trial))
                g.replay()
                torch.cuda.synchronize()
                self.assertEqual(bits(y), reference_bits(x, nan), (dtype, n, nan, trial))
                self.assertEqual(bits(hist[1]), reference_bits(x[1:], nan), (dtype, n, nan, trial))

    def test_fake_tensor_mode(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        real = torch.empty(1000, device="cuda", dtype=torch.bfloat16)
        mode = FakeTensorMode()
        fx = mode.from_tensor(real)
        with mode:
            r = amax_tune.amax(fx)  # a tensor subclass: through the op, to its fake kernel
        self.assertEqual((tuple(r.shape), r.dtype, r.device.type), ((), torch.float32, "cuda"))
        self.assertIsNot(type(r), torch.Tensor)


@unittest.skipIf(SKIP, SKIP)
class Compile(unittest.TestCase):
    def test_fullgraph(self):
        torch._dynamo.reset()

        def f(x, hist):
            a = amax_tune.amax(x * 2)
            b = amax_tune.amax(x, nan="ignore")
            amax_tune.amax(x[::2], out=hist[0:1])
            return a, b, hist

        explanation = torch._dynamo.explain(f)(torch.randn(4096, device="cuda"), torch.zeros(2, device="cuda"))
        self.assertEqual(explanation.graph_break_count, 0, explanation.break_reasons)
        cf = torch.compile(f, fullgraph=True)
        for n, dtype in ((4096, torch.float32), (1 << 20, torch.bfloat16), (65537, torch.float16)):
            x = make_input("nan_middle", dtype, n)
            hist = torch.zeros(2, device="cuda")
            a, b, h = cf(x, hist)
            self.assertEqual(bits(a), reference_bits(x * 2, "propagate"))
            self.assertEqual(bits(b), reference_bits(x, "ignore"))
            self.assertEqual(bits(hist[0]), reference_bits(x[::2], "propagate"))
            self.assertEqual(h.data_ptr(), hist.data_ptr())

    def test_requires_grad_input_gives_no_gradient(self):
        torch._dynamo.reset()
        w = torch.randn(1000, device="cuda", requires_grad=True)
        self.assertFalse(amax_tune.amax(w).requires_grad)  # eager: the result is a constant
        p = torch.nn.Parameter(w.detach().clone())
        self.assertEqual(bits(amax_tune.amax(p)), bits(w.detach().abs().amax()))  # a weight, eagerly
        cf = torch.compile(lambda w: (w * amax_tune.amax(w)).sum(), fullgraph=True)
        cf(w).backward()  # amax is a constant for autograd: d/dw (w * c).sum() = c
        self.assertEqual(bits(w.grad[0]), bits(w.detach().abs().amax()))

    def test_reduce_overhead_cudagraphs(self):
        # CUDA-graph trees: warm-up and recording run in the tree's memory pool, which must hold no
        # live allocation but the outputs; the op's workspace is its call's own (compute_op_local)
        torch._dynamo.reset()
        amax_tune.preload(["bf16", "fp32"], [1 << 16, 1 << 22])
        held = amax_tune.context(0).workspaces()
        cf = torch.compile(lambda x: amax_tune.amax(x.relu()), mode="reduce-overhead", fullgraph=True)
        for n, dtype in ((1 << 16, torch.bfloat16), (1 << 22, torch.float32)):
            for trial in range(5):  # warm-up, recording, then replays with new data
                x = torch.randn(n, device="cuda", dtype=dtype)
                x[trial * 100] = 50.0 + trial
                self.assertEqual(bits(cf(x)), bits(torch.tensor(50.0 + trial)), (n, dtype, trial))
        self.assertEqual(amax_tune.context(0).workspaces(), held)  # no per-stream workspace taken


# --- FP8 quantize ---

FP8_MAX = {"e4m3": 448.0, "e5m2": 57344.0, "e4m3fnuz": 240.0, "e5m2fnuz": 57344.0}


def _fp8_formats():
    """(name, torch dtype) of the formats this device takes: the OCP ones, and the fnuz ones on gfx942."""
    f = [("e4m3", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2)]
    if "gfx942" in getattr(torch.cuda.get_device_properties(0), "gcnArchName", ""):
        f += [("e4m3fnuz", torch.float8_e4m3fnuz), ("e5m2fnuz", torch.float8_e5m2fnuz)]
    return f


def quantize_reference(x, fmt, fp8, scale, rule):
    """The FP8 bytes (uint8) of x at the scale tensor `scale`, from torch alone: the fp32 product
    clamped to +-max (TE's saturation equals torchao's clamp for finite values and for the OCP
    formats' infinities), then torch's conversion; TE's rule makes +-Inf NaN for the fnuz formats."""
    p = x.float() * scale
    m = FP8_MAX[fmt]
    q = p.clamp(-m, m)
    if rule == "transformer_engine" and fmt.endswith("fnuz"):
        q = torch.where(torch.isinf(p), torch.full_like(p, float("nan")), q)
    return q.to(fp8).view(torch.uint8)


@unittest.skipIf(SKIP, SKIP)
class Quantize(unittest.TestCase):
    def check(self, x, fmt, fp8, rule="transformer_engine", nan="propagate", epsilon=0.0, pow2=False, nanp=False,
              what=""):
        q, si, a, s = amax_tune.quantize(x, fp8, rule=rule, nan=nan, epsilon=epsilon, force_pow2=pow2,
                                         nan_propagates=nanp, return_amax=True)
        self.assertEqual((q.dtype, tuple(q.shape), q.device), (fp8, tuple(x.shape), x.device), what)
        ab = bits(a)
        self.assertEqual(ab, reference_bits(x, nan), what)
        self.assertEqual((bits(s), bits(si)), _scale_reference(ab, FP8_MAX[fmt], epsilon, pow2, nanp), what)
        want = quantize_reference(x.reshape(-1), fmt, fp8, s, rule)
        got = q.reshape(-1).view(torch.uint8)
        bad = (got != want).nonzero()
        self.assertEqual(bad.numel(), 0, "%s: first differing byte %s: got %s, want %s" % (
            what, bad[:1].tolist(), got[bad[:1, 0]].tolist() if bad.numel() else "", want[bad[:1, 0]].tolist()
            if bad.numel() else ""))
        return q, si

    def test_bit_exact_dtypes_formats_rules_kinds_sizes(self):
        rng = random.Random()
        for dtype in DTYPES:
            for n in (1, 7, 1000, 65537, (1 << 20) + 3):
                for fmt, fp8 in _fp8_formats():
                    for rule in ("transformer_engine", "torchao"):
                        kind = rng.choice(KINDS)
                        nan = rng.choice(("propagate", "ignore"))
                        off = rng.choice(OFFSETS)
                        x = placed(make_input(kind, dtype, n, seed=rng.randrange(1 << 30)), off, 0.0)
                        self.check(x, fmt, fp8, rule, nan, rng.choice((0.0, 1e-6)), rng.random() < 0.5,
                                   rng.random() < 0.5, what="%s n=%d %s %s %s %s off=%d" % (dtype, n, fmt, rule, kind,
                                                                                          nan, off))

    def test_special_amaxes(self):
        for fmt, fp8 in _fp8_formats():
            z = torch.zeros(1000, device="cuda", dtype=torch.bfloat16)
            self.check(z, fmt, fp8, what="amax 0")
            self.check(z, fmt, fp8, epsilon=0.5, what="amax 0 below epsilon")
            y = torch.randn(4096, device="cuda")
            y[7] = float("inf")
            self.check(y, fmt, fp8, what="+Inf", rule="torchao")
            self.check(y, fmt, fp8, what="+Inf")
            y[9] = float("nan")
            self.check(y, fmt, fp8, what="NaN, TE rule")
            self.check(y, fmt, fp8, nanp=True, what="NaN, nan_propagates")
            self.check(y, fmt, fp8, nan="ignore", what="NaN, ignore")
            d = torch.full((33,), 1e-45, device="cuda")  # the smallest fp32 denormal: the scale overflows
            self.check(d, fmt, fp8, what="denormal amax")

    def test_shapes_views_and_empty(self):
        x = torch.randn(64, 48, device="cuda", dtype=torch.bfloat16)
        for v in (x, x.t(), x[::2, 1:], x.unsqueeze(0).expand(3, 64, 48)):
            q, si = self.check(v, "e4m3", torch.float8_e4m3fn, what="view %s" % (tuple(v.stride()),))
            self.assertTrue(q.is_contiguous())
        q, si = amax_tune.quantize(torch.empty(0, 5, device="cuda"), torch.float8_e5m2)
        self.assertEqual((tuple(q.shape), bits(si)), ((0, 5), 0x3F800000))

    def test_out(self):
        x = make_input("random", torch.float32, 1 << 16)
        q = torch.full((1 << 16,), 7, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)
        words = torch.zeros(4, device="cuda")
        r = amax_tune.quantize(x, torch.float8_e4m3fn, out=(q, words[0:1]))
        self.assertIs(r[0], q)
        self.assertEqual(r[1].data_ptr(), words.data_ptr())
        eager_q, eager_si = amax_tune.quantize(x, torch.float8_e4m3fn)
        self.assertTrue(torch.equal(q.view(torch.uint8), eager_q.view(torch.uint8)))
        self.assertEqual(bits(words[0]), bits(eager_si))
        r = amax_tune.quantize(x, torch.float8_e4m3fn, out=(q, words[0:1], words[1:2], words[2:3]), return_amax=True)
        self.assertEqual([bits(words[i]) for i in (1, 0)], [reference_bits(x, "propagate"), bits(eager_si)])
        with self.assertRaisesRegex(TypeError, r"out\[0\] \(q\) has dtype torch.float8_e5m2; it must be "
                                               r"torch.float8_e4m3fn"):
            amax_tune.quantize(x, torch.float8_e4m3fn, out=(torch.empty_like(q, dtype=torch.float8_e5m2), words[0:1]))
        with self.assertRaisesRegex(ValueError, r"out\[0\] \(q\) must be a contiguous tensor of x's 65536 elements"):
            amax_tune.quantize(x, torch.float8_e4m3fn, out=(q[:100], words[0:1]))
        with self.assertRaisesRegex(TypeError, r"out must be a tuple of 4 tensors \(q, scale_inv, amax, scale\)"):
            amax_tune.quantize(x, torch.float8_e4m3fn, out=(q, words[0:1]), return_amax=True)
        with self.assertRaisesRegex(ValueError, r"rule='te' is not a cast rule"):
            amax_tune.quantize(x, rule="te")
        with self.assertRaisesRegex(ValueError, r"dtype=torch.int8 is not an FP8 dtype"):
            amax_tune.quantize(x, torch.int8)

    def test_fnuz_off_gfx942_is_refused_naming_the_device(self):
        if len(_fp8_formats()) > 2:
            self.skipTest("a gfx942 device takes the fnuz formats")
        with self.assertRaisesRegex(amax_tune.Error, r"is the MI300's \(gfx942\) FP8; this device is"):
            amax_tune.quantize(torch.ones(10, device="cuda"), torch.float8_e4m3fnuz)

    def test_cuda_graph_capture_and_replay_with_new_data(self):
        for dtype, n in ((torch.bfloat16, 1 << 20), (torch.float32, 3_000_001), (torch.float16, 5000)):
            amax_tune.preload_quantize([dtype], [n], "e4m3")
            x = torch.zeros(n, device="cuda", dtype=dtype)
            q = torch.empty(n, device="cuda", dtype=torch.float8_e4m3fn)
            si = torch.zeros(1, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                r = amax_tune.quantize(x, torch.float8_e4m3fn, return_amax=True)
                amax_tune.quantize(x, torch.float8_e4m3fn, out=(q, si))
            for trial in range(4):
                x.copy_(make_input(KINDS[trial * 3 + 1], dtype, n, seed=trial))
                g.replay()
                torch.cuda.synchronize()
                q2, si2, a2, s2 = r
                self.assertEqual(bits(a2), reference_bits(x, "propagate"), (dtype, n, trial))
                want = quantize_reference(x, "e4m3", torch.float8_e4m3fn, s2, "transformer_engine")
                self.assertTrue(torch.equal(q2.view(torch.uint8), want), (dtype, n, trial))
                self.assertTrue(torch.equal(q.view(torch.uint8), want), (dtype, n, trial))
                self.assertEqual(bits(si), bits(si2))

    def test_compile_fullgraph_and_fake_tensors(self):
        torch._dynamo.reset()

        def f(x, q, si):
            a = amax_tune.quantize(x * 2, torch.float8_e5m2, rule="torchao")
            amax_tune.quantize(x, torch.float8_e4m3fn, out=(q, si))
            return a[0], a[1], q, si

        n = 1 << 18
        x0, q0, s0 = torch.randn(n, device="cuda"), torch.empty(n, device="cuda", dtype=torch.float8_e4m3fn), \
            torch.zeros(1, device="cuda")
        explanation = torch._dynamo.explain(f)(x0, q0, s0)
        self.assertEqual(explanation.graph_break_count, 0, explanation.break_reasons)
        cf = torch.compile(f, fullgraph=True)
        for dtype in DTYPES:
            x = make_input("nan_middle", dtype, n)
            q = torch.empty(n, device="cuda", dtype=torch.float8_e4m3fn)
            si = torch.zeros(1, device="cuda")
            a, b, q_out, si_out = cf(x, q, si)
            ea, eb = amax_tune.quantize(x * 2, torch.float8_e5m2, rule="torchao")
            self.assertTrue(torch.equal(a.view(torch.uint8), ea.view(torch.uint8)), dtype)
            self.assertEqual(bits(b), bits(eb))
            eq, esi = amax_tune.quantize(x, torch.float8_e4m3fn)
            self.assertTrue(torch.equal(q.view(torch.uint8), eq.view(torch.uint8)), dtype)
            self.assertEqual(bits(si), bits(esi))
            self.assertEqual(q_out.data_ptr(), q.data_ptr())
        from torch._subclasses.fake_tensor import FakeTensorMode
        mode = FakeTensorMode()
        fx = mode.from_tensor(torch.empty(3, 5, device="cuda", dtype=torch.bfloat16))
        with mode:
            fq, fsi = amax_tune.quantize(fx, torch.float8_e4m3fn)
        self.assertEqual((tuple(fq.shape), fq.dtype, tuple(fsi.shape), fsi.dtype),
                         ((3, 5), torch.float8_e4m3fn, (), torch.float32))

    def test_explain_quantize(self):
        e = amax_tune.explain_quantize("bf16", 1 << 20, torch.float8_e4m3fn)
        self.assertTrue(e.label.startswith("quant."), e)
        if e.label.startswith(("quant.keep.", "quant.reread.")):
            self.assertEqual(e.launches, 1, e)
        else:
            self.assertGreaterEqual(e.launches, 2, e)  # the fused amax + scale, then the cast
        self.assertGreaterEqual(e.workspace_bytes, 4)
        self.assertEqual(amax_tune.explain_quantize("fp32", 0).launches, 3)  # n = 0: three memsets


# --- many tensors per call ---

CLEAN_KINDS = [k for k in KINDS if "nan" not in k]
LIST_SIZES = [0, 1, 2, 7, 31, 33, 255, 1000, 4097, 65537]
LARGE_SIZES = [1_000_003, (1 << 22) + 5]
SOURCES = ("override", "user_db", "system_db", "default")


def make_list(count, seed, kinds=CLEAN_KINDS):
    """count tensors of mixed dtypes and sizes (empty ones too; a few large ones), each a view at an
    offset of 0, 1 or 3 elements inside a guarded buffer of its own."""
    rng = random.Random(seed)
    xs = []
    for i in range(count):
        dtype = DTYPES[rng.randrange(len(DTYPES))]
        large = rng.random() < (0.3 if count <= 7 else 4.0 / count)
        n = rng.choice(LARGE_SIZES) if large else rng.choice(LIST_SIZES)
        values = make_input(rng.choice(kinds), dtype, n, seed=seed * 10007 + i)
        xs.append(placed(values, rng.choice(OFFSETS), guard_of(dtype)))
    return xs


def stack_reference(xs):
    """torch alone, per tensor: the fp32 amax (0 for an empty tensor), stacked (NaN-free lists)."""
    zero = torch.zeros((), device="cuda")
    return torch.stack([t.float().abs().amax() if t.numel() else zero for t in xs])


def bits_list(t):
    return [b & 0xFFFFFFFF for b in t.reshape(-1).view(torch.int32).tolist()]


class MultiCase(unittest.TestCase):
    def assertBits(self, got, want, xs, what):
        """got: a 1-d fp32 tensor; want: a list of fp32 bits; names the first differing tensor."""
        self.assertEqual(got.dtype, torch.float32, what)
        self.assertEqual(tuple(got.shape), (len(want),), what)
        g = bits_list(got)
        for i, (a, b) in enumerate(zip(g, want)):
            if a != b:
                x = xs[i]
                self.fail("%s: tensors[%d] (%s, n=%d, of %d): %#010x != %#010x" % (what, i, x.dtype, x.numel(),
                                                                                   len(xs), a, b))

    def assertMatchesTorch(self, got, xs, nan, what):
        self.assertBits(got, [reference_bits(x, nan) for x in xs], xs, what)


@unittest.skipIf(SKIP, SKIP)
class MultiBitExact(MultiCase):
    def test_lists_of_1_7_500_4096_mixed_dtypes_sizes_offsets(self):
        for count in (1, 7, 500, 4096):
            xs = make_list(count, seed=count)
            want = bits_list(stack_reference(xs))
            for nan in ("propagate", "ignore"):
                got = amax_tune.amax_multi(xs, nan=nan)
                self.assertEqual(got.device, xs[0].device)
                self.assertBits(got, want, xs, "%d tensors, nan=%s" % (count, nan))
            out = torch.full((count,), -1.0, device="cuda")
            self.assertIs(amax_tune.amax_multi(tuple(xs), out=out), out)
            self.assertBits(out, want, xs, "%d tensors, out=" % count)
            print("\namax_multi: %d tensors (%s) bit-exact" % (count, ", ".join(
                "%s %d" % (k, v) for k, v in sorted(explain_counts(xs).items()))), file=sys.stderr)

    def test_views_and_shapes(self):
        base = torch.randn(64, 257, device="cuda")
        base[0, 1] = 1e6  # outside the step slices below and every column but 1
        base[63, 256] = -5e5
        xs = [base.t(), base[:, ::2], base[1:, 2], base[5].expand(4, 257), torch.tensor(-2.5, device="cuda"),
              torch.empty(0, 3, device="cuda"), base.view(8, 8, 257).permute(2, 0, 1), base[::3, 5:200:7],
              base.to(torch.bfloat16)[:, 2:], torch.nn.Parameter(base[7].clone(), requires_grad=False)]
        for nan in ("propagate", "ignore"):
            self.assertBits(amax_tune.amax_multi(xs, nan=nan), bits_list(stack_reference(xs)), xs, "views")
        self.assertEqual(bits_list(amax_tune.amax_multi(xs))[1], bits(base[:, ::2].abs().max()))

    def test_nan_in_one_tensor_both_modes(self):
        for count, where in ((3, 1), (9, 4), (500, 321)):
            xs = make_list(count, seed=100 + count)
            xs[where] = placed(make_input("nan_middle", torch.bfloat16, 4097), 1, guard_of(torch.bfloat16))
            xs[where - 1] = make_input("all_nan", torch.float32, 1000)  # ignore: +0.0
            for nan in ("propagate", "ignore"):
                got = amax_tune.amax_multi(xs, nan=nan)
                self.assertMatchesTorch(got, xs, nan, "%d tensors, NaN at %d, nan=%s" % (count, where, nan))
                g = bits_list(got)
                if nan == "propagate":
                    self.assertEqual((g[where - 1], g[where]), (NAN_BITS, NAN_BITS))
                else:
                    self.assertEqual(g[where - 1], 0)
                    self.assertNotEqual(g[where], NAN_BITS)

    def test_empty_list(self):
        r = amax_tune.amax_multi([])
        self.assertEqual((tuple(r.shape), r.dtype, r.device.type), ((0,), torch.float32, "cuda"))
        out = torch.empty(0, device="cuda")
        self.assertIs(amax_tune.amax_multi((), out=out), out)
        a, s, si = amax_tune.amax_multi_and_scale([])
        self.assertEqual([tuple(t.shape) for t in (a, s, si)], [(0,)] * 3)


def explain_counts(xs):
    counts = {}
    for x in xs:
        counts[str(x.dtype).replace("torch.", "")] = counts.get(str(x.dtype).replace("torch.", ""), 0) + 1
    return counts


@unittest.skipIf(SKIP, SKIP)
class MultiAndScale(MultiCase):
    FORMATS = {"e4m3": 448.0, "e5m2": 57344.0, "e4m3fnuz": 240.0, "e5m2fnuz": 57344.0}

    def special_list(self):
        """Mixed tensors plus the rule's cases: all zeros and empty (amax 0: scale 1), denormals (a
        quotient that overflows: FLT_MAX without epsilon), a NaN (scale 1, or NaN with
        nan_propagates), +inf (scale 1)."""
        xs = make_list(7, seed=21)
        xs += [torch.zeros(100, device="cuda", dtype=torch.bfloat16), torch.empty(0, device="cuda"),
               make_input("denormals", torch.float32, 5000), make_input("nan_last", torch.float16, 333),
               make_input("pos_inf", torch.bfloat16, 70000)]
        return xs

    def check(self, xs, res, m, eps=0.0, pow2=False, nanp=False, nan="propagate", what=""):
        a, s, si = res
        want_a = [reference_bits(x, nan) for x in xs]
        self.assertBits(a, want_a, xs, "amax " + what)
        rule = [_scale_reference(ab, m, eps, pow2, nanp) for ab in want_a]
        self.assertBits(s, [r[0] for r in rule], xs, "scale " + what)
        self.assertBits(si, [r[1] for r in rule], xs, "scale_inv " + what)

    def test_formats_epsilon_pow2_nan(self):
        xs = self.special_list()
        for fmt, m in self.FORMATS.items():
            for eps in (0.0, 1e-6):
                for pow2 in (False, True):
                    res = amax_tune.amax_multi_and_scale(xs, format=fmt, epsilon=eps, force_pow2=pow2)
                    self.check(xs, res, m, eps, pow2, what="%s eps=%g pow2=%s" % (fmt, eps, pow2))
        self.check(xs, amax_tune.amax_multi_and_scale(xs, max=1.0), 1.0, what="max=1.0")
        self.check(xs, amax_tune.amax_multi_and_scale(xs, format="explicit", max=3.5), 3.5, what="explicit 3.5")
        self.check(xs, amax_tune.amax_multi_and_scale(xs), 448.0, what="default e4m3")
        self.check(xs, amax_tune.amax_multi_and_scale(xs, nan_propagates=True), 448.0, nanp=True, what="nanp")
        self.check(xs, amax_tune.amax_multi_and_scale(xs, nan="ignore", nan_propagates=True), 448.0, nanp=True,
                   nan="ignore", what="nan=ignore")
        a, s, si = amax_tune.amax_multi_and_scale(xs)
        self.assertEqual(bits_list(s)[-2:], [0x3F800000, 0x3F800000])  # NaN and inf: scale 1
        self.assertEqual(bits_list(s)[9], 0x7F7FFFFF)  # denormal amax: the quotient overflows to FLT_MAX
        for t in (a, s, si):
            self.assertEqual(t.device, xs[0].device)

    def test_same_amax_as_amax_multi_and_errors(self):
        xs = make_list(500, seed=5)
        a, _, _ = amax_tune.amax_multi_and_scale(xs, format="e5m2")
        self.assertEqual(bits_list(a), bits_list(amax_tune.amax_multi(xs)))
        with self.assertRaisesRegex(amax_tune.Error, r"options.epsilon is -1"):
            amax_tune.amax_multi_and_scale(xs, epsilon=-1.0)
        with self.assertRaisesRegex(ValueError, r"format='e3m4' is not an FP8 format"):
            amax_tune.amax_multi_and_scale(xs, format="e3m4")
        with self.assertRaisesRegex(ValueError, r"tensors\[2\] is on device 'cpu'"):
            amax_tune.amax_multi_and_scale(xs[:2] + [torch.ones(3)])


@unittest.skipIf(SKIP, SKIP)
class MultiCudaGraphs(MultiCase):
    def test_capture_and_replay_with_new_data(self):
        xs = make_list(500, seed=31)
        xs[17] = torch.zeros(2 * 4097 + 1, device="cuda")[::2]  # a step slice: its copy is captured too
        for nan in ("propagate", "ignore"):
            amax_tune.preload_multi(xs, nan=nan)
            amax_tune.preload_multi(xs, scale=True, nan=nan)
            hist = torch.zeros(2, len(xs), device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = amax_tune.amax_multi(xs, nan=nan)
                amax_tune.amax_multi(xs, nan=nan, out=hist[1])
                a, s, si = amax_tune.amax_multi_and_scale(xs, format="e5m2", nan=nan)
            rng = random.Random(nan)
            for trial in range(3):
                for i, x in enumerate(xs):
                    x.copy_(make_input(rng.choice(KINDS), x.dtype, x.numel(), seed=1000 * trial + i))
                g.replay()
                torch.cuda.synchronize()
                what = "replay %d, nan=%s" % (trial, nan)
                want = [reference_bits(x, nan) for x in xs]
                self.assertBits(y, want, xs, what)
                self.assertBits(hist[1], want, xs, what + " out=")
                self.assertBits(a, want, xs, what + " amax_multi_and_scale")
                rule = [_scale_reference(b, 57344.0) for b in want]
                self.assertBits(s, [r[0] for r in rule], xs, what + " scale")
                self.assertBits(si, [r[1] for r in rule], xs, what + " scale_inv")
            self.assertEqual(bits_list(hist[0]), [0] * len(xs))


@unittest.skipIf(SKIP, SKIP)
class MultiErrors(unittest.TestCase):
    def test_bad_inputs_name_the_index(self):
        good = torch.ones(4, device="cuda")
        with self.assertRaisesRegex(ValueError, r"amax_tune.amax_multi: tensors\[3\] is on device 'cpu'"):
            amax_tune.amax_multi([good, good, good, torch.ones(4)])
        with self.assertRaisesRegex(TypeError, r"tensors\[2\] has dtype torch.float64"):
            amax_tune.amax_multi([good, good, torch.ones(4, device="cuda", dtype=torch.float64)])
        with self.assertRaisesRegex(TypeError, r"tensors\[1\] has dtype torch.int32"):
            amax_tune.amax_multi((good, torch.ones(4, device="cuda", dtype=torch.int32)))
        with self.assertRaisesRegex(TypeError, r"tensors\[1\] must be a torch.Tensor or an array .* got str"):
            amax_tune.amax_multi([good, "x"])
        with self.assertRaisesRegex(TypeError, r"tensors must be a list or tuple of tensors, got Tensor"):
            amax_tune.amax_multi(good)
        with self.assertRaisesRegex(ValueError, r"nan='none' is not a NaN mode"):
            amax_tune.amax_multi([good], nan="none")
        with self.assertRaisesRegex(ValueError, r"out has 3 elements \(shape \(3,\)\); it must hold one per tensor, 2"):
            amax_tune.amax_multi([good, good], out=torch.empty(3, device="cuda"))
        with self.assertRaisesRegex(TypeError, r"out has dtype torch.float16"):
            amax_tune.amax_multi([good, good], out=torch.empty(2, device="cuda", dtype=torch.float16))
        with self.assertRaisesRegex(ValueError, r"out is not contiguous"):
            amax_tune.amax_multi([good, good], out=torch.empty(4, device="cuda")[::2])
        with self.assertRaisesRegex(ValueError, r"out is on device 'cpu' but the tensors are on 'cuda:0'"):
            amax_tune.amax_multi([good, good], out=torch.empty(2))
        with self.assertRaisesRegex(TypeError, r"out must be a torch.Tensor, got list"):
            amax_tune.amax_multi([good], out=[0.0])
        with self.assertRaisesRegex(ValueError, r"out has 1 elements"):
            amax_tune.amax_multi([], out=torch.empty(1, device="cuda"))
        if torch.cuda.device_count() > 1:
            with self.assertRaisesRegex(ValueError, r"tensors\[1\] is on device 'cuda:1' but tensors\[0\] is on "
                                                    r"'cuda:0'"):
                amax_tune.amax_multi([good, torch.ones(4, device="cuda:1")])

    def test_c_status_names_the_tensor(self):
        ctx = amax_tune.context(0)
        out = torch.empty(2, device="cuda")
        x = torch.ones(16, device="cuda", dtype=torch.float16)
        with self.assertRaises(amax_tune.Error) as cm:  # an odd address for 2-byte elements
            ctx.multi_compute([x.data_ptr(), x.data_ptr() + 1], [8, 8], amax_tune.DTYPE_FP16, out.data_ptr(), 0)
        self.assertIs(cm.exception.status, amax_tune.Status.MISALIGNED_POINTER)
        self.assertEqual(cm.exception.function, "amax_multi_compute")
        self.assertIn("tensors[1].data", cm.exception.message)
        with self.assertRaises(amax_tune.Error) as cm:
            ctx.multi_compute([x.data_ptr(), 0], [8, 8], [1, 1], out.data_ptr(), 0)
        self.assertIs(cm.exception.status, amax_tune.Status.NULL_POINTER)
        self.assertIn("tensors[1].data is NULL with n = 8", cm.exception.message)
        with self.assertRaises(amax_tune.Error) as cm:
            ctx.multi_compute([x.data_ptr(), x.data_ptr()], [8, 8], [1, 7], out.data_ptr(), 0)
        self.assertIs(cm.exception.status, amax_tune.Status.UNKNOWN_DTYPE)
        self.assertIn("tensors[1].dtype is 7", cm.exception.message)
        with self.assertRaises(amax_tune.Error) as cm:  # checked before anything is read or launched
            ctx.multi_compute_with_workspace([x.data_ptr()], [1 << 22], [1], out.data_ptr(), 0, 0, 0)
        self.assertIs(cm.exception.status, amax_tune.Status.WORKSPACE_TOO_SMALL)
        self.assertIn("workspace of 0 bytes (NULL) is too small for this list of 1 tensors", cm.exception.message)


@unittest.skipIf(SKIP, SKIP)
class MultiExplainAndCompile(MultiCase):
    def test_explain_multi(self):
        xs = [torch.empty(4096, device="cuda") for _ in range(500)]
        xs += [torch.empty(1 << 20, device="cuda", dtype=torch.bfloat16)] * 3
        e = amax_tune.explain_multi(xs)
        self.assertEqual(sorted(e), ["bf16", "fp32"])
        f = e["fp32"]
        self.assertEqual((f.dtype, f.tensors, f.total_bytes, f.largest_bytes), ("fp32", 500, 500 * 4096 * 4, 4096 * 4))
        self.assertEqual((e["bf16"].tensors, e["bf16"].largest_bytes), (3, 2 << 20))
        for x in e.values():
            self.assertRegex(x.label, r"^multi\.t\d+\.")
            self.assertIn(x.source, SOURCES)
            self.assertGreaterEqual(x.launches, 1)
            self.assertGreater(x.tensors_per_launch, 0)
            self.assertIn(x.label, str(x))
        shapes = [("fp32", 4096)] * 500 + [(torch.bfloat16, 1 << 20)] * 3
        self.assertEqual(amax_tune.explain_multi(shapes, device=0), e)
        counts, codes = [4096] * 500 + [1 << 20] * 3, [0] * 500 + [2] * 3
        self.assertEqual(amax_tune.context(0).multi_workspace_size(counts, codes),
                         max(4, *(x.workspace_bytes for x in e.values())))
        print("\nexplain_multi(500 x 4096 fp32 + 3 x 1 Mi bf16): %s" % "; ".join(str(x) for x in e.values()),
              file=sys.stderr)

    def test_fake_tensor_mode(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        mode = FakeTensorMode()
        fxs = [mode.from_tensor(torch.empty(10 + i, device="cuda", dtype=d)) for i, d in enumerate(DTYPES)]
        with mode:
            r = amax_tune.amax_multi(fxs)
        self.assertEqual((tuple(r.shape), r.dtype, r.device.type), ((3,), torch.float32, "cuda"))
        self.assertIsNot(type(r), torch.Tensor)

    def test_compile_fullgraph(self):
        torch._dynamo.reset()

        def f(xs, hist):
            a = amax_tune.amax_multi([x * 2 for x in xs])
            b = amax_tune.amax_multi(xs, nan="ignore")
            amax_tune.amax_multi([x[::2] for x in xs], out=hist[0])
            return a, b, hist

        def inputs(trial):
            return [make_input(("nan_middle", "random", "max_last")[(i + trial) % 3], dtype, n, seed=trial)
                    for i, (dtype, n) in enumerate(((torch.float32, 4096), (torch.bfloat16, 1 << 20),
                                                    (torch.float16, 65537), (torch.bfloat16, 0)))]

        explanation = torch._dynamo.explain(f)(inputs(0), torch.zeros(2, 4, device="cuda"))
        self.assertEqual(explanation.graph_break_count, 0, explanation.break_reasons)
        cf = torch.compile(f, fullgraph=True)
        for trial in range(3):
            xs = inputs(trial)
            hist = torch.zeros(2, 4, device="cuda")
            a, b, h = cf(xs, hist)
            self.assertMatchesTorch(a, [x * 2 for x in xs], "propagate", "compiled a, trial %d" % trial)
            self.assertMatchesTorch(b, xs, "ignore", "compiled b, trial %d" % trial)
            self.assertMatchesTorch(hist[0], [x[::2] for x in xs], "propagate", "compiled out=, trial %d" % trial)
            self.assertEqual(h.data_ptr(), hist.data_ptr())
            self.assertEqual(bits_list(hist[1]), [0] * 4)

    def test_compile_requires_grad_inputs_give_no_gradient(self):
        torch._dynamo.reset()
        w1 = torch.randn(1000, device="cuda", requires_grad=True)
        w2 = torch.randn(3000, device="cuda", dtype=torch.float32, requires_grad=True)
        self.assertFalse(amax_tune.amax_multi([w1, w2]).requires_grad)  # eager: a constant

        def loss(w1, w2):
            a = amax_tune.amax_multi([w1, w2])
            return (w1 * a[0]).sum() + (w2 * a[1]).sum()

        torch.compile(loss, fullgraph=True)(w1, w2).backward()  # d/dw (w * c).sum() = c
        self.assertEqual(bits(w1.grad[0]), bits(w1.detach().abs().amax()))
        self.assertEqual(bits(w2.grad[5]), bits(w2.detach().abs().amax()))

    def test_reduce_overhead_cudagraphs(self):
        torch._dynamo.reset()
        shapes = [(torch.bfloat16, 1 << 16), (torch.float32, 1000), (torch.float16, 0), (torch.bfloat16, 70000)]
        amax_tune.preload_multi([(d, n) for d, n in shapes])
        held = amax_tune.context(0).workspaces()
        cf = torch.compile(lambda xs: amax_tune.amax_multi([x.relu() for x in xs]), mode="reduce-overhead",
                           fullgraph=True)
        for trial in range(5):  # warm-up, recording, then replays with new data
            xs = [torch.randn(n, device="cuda", dtype=d) for d, n in shapes]
            for x in xs:
                if x.numel():
                    x[trial * 100] = 50.0 + trial
            want = [bits(torch.tensor(50.0 + trial)) if n else 0 for _, n in shapes]
            self.assertEqual(bits_list(cf(xs)), want, trial)
        self.assertEqual(amax_tune.context(0).workspaces(), held)  # no per-stream workspace taken


@unittest.skipIf(SKIP, SKIP)
class Allocations(unittest.TestCase):
    """The eager path allocates the result and nothing else per call: the stream's workspace is
    allocated once and reused (torch.cuda.memory_stats counts every allocation request)."""

    def allocations(self, fn, calls):
        fn()  # context, kernel and the stream's workspace, once
        torch.cuda.synchronize()
        before = torch.cuda.memory_stats()["allocation.all.allocated"]
        for _ in range(calls):
            fn()
        return torch.cuda.memory_stats()["allocation.all.allocated"] - before

    def test_one_allocation_per_call(self):
        out = torch.empty((), device="cuda")
        for dtype in DTYPES:
            for n in (1000, 1 << 22):
                x = make_input("max_middle", dtype, n)
                self.assertEqual(self.allocations(lambda: amax_tune.amax(x), 10), 10, (dtype, n))
                self.assertEqual(self.allocations(lambda: amax_tune.amax(x, nan="ignore"), 10), 10, (dtype, n))
                self.assertEqual(self.allocations(lambda: amax_tune.amax(x, out=out), 10), 0, (dtype, n))
                self.assertEqual(bits(out), reference_bits(x, "propagate"), (dtype, n))
                self.assertEqual(bits(amax_tune.amax(x)), reference_bits(x, "propagate"), (dtype, n))

    def test_multi_one_allocation_per_call(self):
        xs = [make_input("max_middle", d, n) for d, n in ((torch.float32, 1000), (torch.bfloat16, 1 << 20),
                                                           (torch.float16, 5), (torch.float32, 0))]
        out = torch.empty(4, device="cuda")
        self.assertEqual(self.allocations(lambda: amax_tune.amax_multi(xs), 10), 10)
        self.assertEqual(self.allocations(lambda: amax_tune.amax_multi(xs, nan="ignore"), 10), 10)
        self.assertEqual(self.allocations(lambda: amax_tune.amax_multi(xs, out=out), 10), 0)
        self.assertEqual(bits_list(out), [reference_bits(x, "propagate") for x in xs])

    def test_fast_path_checks(self):
        x = make_input("random", torch.float32, 5000)
        p = torch.nn.Parameter(torch.empty((), device="cuda"), requires_grad=False)
        self.assertIs(amax_tune.amax(x, out=p), p)  # an out that is a subclass: checked, then taken
        self.assertEqual(bits(p), reference_bits(x, "propagate"))
        with self.assertRaisesRegex(ValueError, r"nan=\['ignore'\] is not a NaN mode"):
            amax_tune.amax(x, nan=["ignore"])
        with self.assertRaisesRegex(TypeError, r"out must be a torch.Tensor, got float"):
            amax_tune.amax(x, out=1.0)
        with self.assertRaisesRegex(TypeError, r"out has dtype torch.bfloat16"):
            amax_tune.amax(x, out=torch.empty((), device="cuda", dtype=torch.bfloat16))


@unittest.skipIf(SKIP, SKIP)
class OtherProducers(unittest.TestCase):
    def test_cupy(self):
        try:
            import cupy
        except ImportError:
            self.skipTest("cupy is not importable")
        for dtype in (cupy.float32, cupy.float16):
            a = (cupy.random.standard_normal(1_000_003) * 3).astype(dtype)
            a[500_000] = -40.0
            r = amax_tune.amax(a)
            self.assertIsInstance(r, torch.Tensor)
            self.assertEqual(r.item(), 40.0)
            self.assertEqual(bits(r), reference_bits(torch.from_dlpack(a), "propagate"))
            self.assertEqual(float(cupy.from_dlpack(r)), 40.0)  # the result back in CuPy, zero-copy

            class OnlyCai:  # a producer with __cuda_array_interface__ and no __dlpack__
                def __init__(self, arr):
                    self.__cuda_array_interface__ = arr.__cuda_array_interface__

            self.assertEqual(amax_tune.amax(OnlyCai(a)).item(), 40.0)
            self.assertEqual(amax_tune.amax(a[::3]).item(), float(cupy.abs(a[::3]).max()))

    def test_jax(self):
        try:
            import jax
            import jax.numpy as jnp
            gpu = [d for d in jax.devices() if d.platform == "gpu"]
        except Exception as e:
            self.skipTest("jax with a GPU is not available (%s)" % e)
        if not gpu:
            self.skipTest("jax sees no GPU")
        a = jax.device_put(jnp.arange(-1000, 999, dtype=jnp.bfloat16), gpu[0])
        r = amax_tune.amax(a)
        self.assertEqual(r.item(), 1000.0)


@unittest.skipIf(SKIP, SKIP)
class FusedOps(MultiCase):
    """amax_and_scale and amax_multi_and_scale as custom ops: out=, torch.compile with no
    graph break, FakeTensorMode, CUDA-graph capture after preload(..., scale=True)."""

    def test_out_single(self):
        x = make_input("random", torch.bfloat16, 70001)
        want = [bits(t) for t in amax_tune.amax_and_scale(x, format="e5m2", epsilon=1e-3, force_pow2=True)]
        self.assertEqual(want[0], reference_bits(x, "propagate"))
        self.assertEqual(tuple(want[1:]), _scale_reference(want[0], 57344.0, 1e-3, True))
        hist = torch.zeros(4, device="cuda")
        scale, scale_inv = torch.zeros((), device="cuda"), torch.zeros(1, device="cuda")
        r = amax_tune.amax_and_scale(x, format="e5m2", epsilon=1e-3, force_pow2=True, out=(hist[2:3], scale, scale_inv))
        self.assertIs(r[1], scale)
        self.assertEqual([bits(hist[2]), bits(scale), bits(scale_inv)], want)
        self.assertEqual(bits_list(hist)[:2] + bits_list(hist)[3:], [0, 0, 0])
        a, s, si = amax_tune.amax_and_scale(x)  # three 0-d views of one (3,) tensor
        self.assertEqual([tuple(t.shape) for t in (a, s, si)], [(), (), ()])

    def test_out_errors(self):
        x = torch.ones(10, device="cuda")
        ok = torch.zeros(1, device="cuda")
        with self.assertRaisesRegex(TypeError, r"^amax_tune.amax_and_scale: out must be a tuple of three tensors "
                                               r"\(amax, scale, scale_inv\), got 2 items$"):
            amax_tune.amax_and_scale(x, out=(ok, ok))
        with self.assertRaisesRegex(TypeError, r"out\[scale\]: out has dtype torch.float16; it must be torch.float32"):
            amax_tune.amax_and_scale(x, out=(ok, ok.half(), torch.zeros(1, device="cuda")))
        with self.assertRaisesRegex(ValueError, r"out's three tensors share memory"):
            amax_tune.amax_and_scale(x, out=(ok, ok, torch.zeros(1, device="cuda")))
        xs = [x, x[:5]]
        three = torch.zeros(3, 2, device="cuda")
        with self.assertRaisesRegex(ValueError, r"amax_tune.amax_multi_and_scale: out\[amax\]: out has 3 elements"):
            amax_tune.amax_multi_and_scale(xs, out=(torch.zeros(3, device="cuda"), three[1], three[2]))
        r = amax_tune.amax_multi_and_scale(xs, out=tuple(three))
        torch.cuda.synchronize()
        self.assertEqual(bits_list(three[0]), [0x3F800000, 0x3F800000])
        self.assertEqual(r[0].data_ptr(), three[0].data_ptr())

    def test_out_multi(self):
        xs = make_list(300, seed=41)
        want = amax_tune.amax_multi_and_scale(xs, format="e4m3", epsilon=1e-4, nan_propagates=True)
        table = torch.full((4, len(xs)), 7.0, device="cuda")
        r = amax_tune.amax_multi_and_scale(xs, format="e4m3", epsilon=1e-4, nan_propagates=True,
                                           out=(table[0], table[2], table[3]))
        self.assertEqual(r[1].data_ptr(), table[2].data_ptr())
        for got, w in zip((table[0], table[2], table[3]), want):
            self.assertEqual(bits_list(got), bits_list(w))
        self.assertEqual(bits_list(table[1]), [0x40E00000] * len(xs))  # untouched row

    def test_compile_fullgraph_no_graph_break(self):
        torch._dynamo.reset()

        def f(x, xs, outs, mouts):
            a, s, si = amax_tune.amax_and_scale(x * 2, format="e5m2", epsilon=1e-6, force_pow2=True)
            amax_tune.amax_and_scale(x, nan="ignore", out=outs)
            ma, ms, msi = amax_tune.amax_multi_and_scale(xs, max=3.5, nan_propagates=True)
            amax_tune.amax_multi_and_scale(xs, format="e4m3", out=mouts)
            return a, s, si, ma, ms, msi

        def args(dtype, n):
            x = make_input("nan_middle", dtype, n)
            xs = make_list(40, seed=n)
            outs = tuple(torch.zeros(1, device="cuda") for _ in range(3))
            return x, xs, outs, tuple(torch.zeros(3, len(xs), device="cuda"))

        explanation = torch._dynamo.explain(f)(*args(torch.float32, 4096))
        self.assertEqual(explanation.graph_break_count, 0, explanation.break_reasons)
        cf = torch.compile(f, fullgraph=True)
        for dtype, n in ((torch.float32, 4096), (torch.bfloat16, 1 << 20)):
            x, xs, outs, mouts = args(dtype, n)
            a, s, si, ma, ms, msi = cf(x, xs, outs, mouts)
            wa = reference_bits(x * 2, "propagate")
            self.assertEqual([bits(a), bits(s), bits(si)], [wa, *_scale_reference(wa, 57344.0, 1e-6, True)])
            wi = reference_bits(x, "ignore")
            self.assertEqual([bits(t) for t in outs], [wi, *_scale_reference(wi, 448.0)])
            want = [reference_bits(t, "propagate") for t in xs]
            self.assertBits(ma, want, xs, "compiled amax_multi_and_scale")
            self.assertBits(ms, [_scale_reference(b, 3.5, nanp=True)[0] for b in want], xs, "compiled scale")
            self.assertBits(msi, [_scale_reference(b, 3.5, nanp=True)[1] for b in want], xs, "compiled scale_inv")
            self.assertBits(mouts[0], want, xs, "compiled out=")
            self.assertBits(mouts[1], [_scale_reference(b, 448.0)[0] for b in want], xs, "compiled out= scale")

    def test_fake_tensor_mode(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        mode = FakeTensorMode()
        fx = mode.from_tensor(torch.empty(1000, device="cuda", dtype=torch.bfloat16))
        fxs = [mode.from_tensor(torch.empty(n, device="cuda")) for n in (5, 0, 70)]
        with mode:
            a, s, si = amax_tune.amax_and_scale(fx, format="e5m2")
            ma, ms, msi = amax_tune.amax_multi_and_scale(fxs)
        self.assertEqual([(tuple(t.shape), t.dtype) for t in (a, s, si)], [((), torch.float32)] * 3)
        self.assertEqual([(tuple(t.shape), t.dtype) for t in (ma, ms, msi)], [((3,), torch.float32)] * 3)
        self.assertIsNot(type(a), torch.Tensor)

    def test_requires_grad_gives_constants(self):
        w = torch.randn(1000, device="cuda", requires_grad=True)
        torch._dynamo.reset()
        cf = torch.compile(lambda w: (w * amax_tune.amax_and_scale(w)[1]).sum(), fullgraph=True)
        cf(w).backward()  # the scale is a constant for autograd: d/dw (w * c).sum() = c
        _, s, _ = amax_tune.amax_and_scale(w.detach())
        self.assertEqual(bits(w.grad[0]), bits(s))

    def test_cuda_graph_after_preload_scale(self):
        for dtype, n, nan in ((torch.bfloat16, (1 << 20) + 3, "propagate"), (torch.float32, 777_777, "ignore")):
            amax_tune.preload([dtype], [n], scale=True, nan=nan)
            x = torch.zeros(n, device="cuda", dtype=dtype)
            outs = tuple(torch.zeros(1, device="cuda") for _ in range(3))
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                a, s, si = amax_tune.amax_and_scale(x, format="e4m3fnuz", epsilon=1e-5, nan=nan)
                amax_tune.amax_and_scale(x, format="e5m2", force_pow2=True, nan=nan, out=outs)
            for trial in range(3):
                x.copy_(make_input(KINDS[trial * 4], dtype, n, seed=trial))
                g.replay()
                torch.cuda.synchronize()
                w = reference_bits(x, nan)
                self.assertEqual([bits(a), bits(s), bits(si)], [w, *_scale_reference(w, 240.0, 1e-5)], (dtype, trial))
                self.assertEqual([bits(t) for t in outs], [w, *_scale_reference(w, 57344.0, 0.0, True)],
                                 (dtype, trial))

    def test_preload_scale_must_be_a_bool(self):
        with self.assertRaisesRegex(TypeError, r"^amax_tune.preload: scale=1 \(expected True or False\)$"):
            amax_tune.preload(["bf16"], [10], scale=1)


def torchao_scales_reference(weights, float8_dtype, eps=1e-12, reduce_amax=None):
    """torchao's precompute_float8_dynamic_scale_for_fsdp formula, on plain tensors, in torch (torchao
    main, torchao/float8/fsdp_utils.py): foreach inf-norm, stack, clamp to eps, fp8 max / amax in
    float64, the float16 clamp, float32."""
    amax = torch.stack(torch._foreach_norm(weights, ord=math.inf))
    if reduce_amax is not None:
        reduce_amax(amax)
    amax = torch.clamp(amax, eps)
    origin = amax.dtype
    scale = torch.finfo(float8_dtype).max / amax.to(torch.float64)
    if origin is torch.float16:
        scale = torch.clamp(scale, max=torch.finfo(torch.float16).max)
    return scale.to(torch.float32)


def nan_as_one(bits):
    """fp32 bits with every NaN (any sign, any payload) as 0x7fc00000."""
    return [0x7FC00000 if (b & 0x7F800000) == 0x7F800000 and b & 0x7FFFFF else b for b in bits]


def te_scaling_reference(xs, m, eps=0.0, pow2=False):
    """TransformerEngine current scaling (amax with NaNs skipped, then compute_scale_from_amax), in
    torch on the GPU: three fp32 tensors (amax, scale, scale_inv) of len(xs) elements."""
    zero = torch.zeros((), device="cuda")
    a = torch.stack([torch.where(torch.isnan(t.abs().float()), 0.0, t.abs().float()).amax() if t.numel() else zero
                     for t in xs])
    e = torch.where(a < eps, torch.full_like(a, eps), a)
    scale = torch.where((e == 0) | torch.isinf(e), torch.ones_like(e), torch.full_like(e, m) / e)
    scale = torch.where(torch.isinf(scale), torch.full_like(scale, torch.finfo(torch.float32).max), scale)
    if pow2:
        scale = (scale.view(torch.int32) & -0x800000).view(torch.float32)  # the mantissa bits cleared
    return a, scale, torch.reciprocal(scale)


@unittest.skipIf(SKIP, SKIP)
class Float8DropIns(MultiCase):
    """amax_tune.float8 against each recipe's formula computed by torch on the GPU, bit for bit."""

    # (read when the class is defined, also where the suite skips: no torch, or one without float8 dtypes)
    F8 = [] if SKIP else [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]

    def weights(self, dtype, seed, specials=True):
        """Weights of transformer shapes (smaller), plus the rule's cases: all zeros, +Inf, NaN, denormals."""
        g = torch.Generator().manual_seed(seed)
        shapes = [(256, 64), (64, 256), (512, 64), (96, 64), (64, 96), (1000, 3), (1, 7)] * 3
        ws = [(torch.randn(s, generator=g) * 10.0 ** float(torch.randint(-6, 4, (1,), generator=g))).to(dtype).cuda()
              for s in shapes]
        if specials:
            ws.append(torch.zeros(128, 64, dtype=dtype, device="cuda"))
            inf = torch.randn(64, 64, generator=g).to(dtype).cuda()
            inf[3, 5] = float("inf")
            nan = torch.randn(64, 64, generator=g).to(dtype).cuda()
            nan[60, 1] = float("nan")
            ws += [inf, nan, make_input("denormals", dtype, 4097)]
        return ws

    def test_fsdp_scales_match_torchao(self):
        from amax_tune import float8
        for dtype in (torch.bfloat16, torch.float32, torch.float16):
            ws = self.weights(dtype, seed=3)
            for f8 in self.F8:
                got = float8.fsdp_float8_scales(ws, f8)
                want = torchao_scales_reference(ws, f8)
                # a NaN's payload is the GPU's (the reference's NaN amax comes from another kernel)
                self.assertEqual(nan_as_one(bits_list(got)), nan_as_one(bits_list(want)), "%s %s" % (dtype, f8))
            got = bits_list(float8.fsdp_float8_scales(ws))
            self.assertEqual(got[-4], bits_list(torchao_scales_reference(ws[-4:-3], torch.float8_e4m3fn))[0])
            self.assertEqual(got[-3], 0)  # +Inf: 448 / inf = 0 (TE's rule gives 1)
            self.assertEqual(nan_as_one(got)[-2], 0x7FC00000)  # NaN
        mixed = self.weights(torch.bfloat16, 5, specials=False) + self.weights(torch.float32, 6, specials=False)
        self.assertBits(float8.fsdp_float8_scales(mixed), bits_list(torchao_scales_reference(mixed, torch.float8_e4m3fn)),
                        mixed, "bf16 + fp32 list")
        self.assertEqual(tuple(float8.fsdp_float8_scales([]).shape), (0,))

    def test_fsdp_scales_reduce_amax(self):
        from amax_tune import float8
        ws = self.weights(torch.bfloat16, seed=9, specials=False)
        calls = []

        def reduce(t):  # stands in for all_reduce(MAX): changes the amax in place, exactly
            calls.append((t.dtype, tuple(t.shape)))
            t.mul_(4.0)

        got = float8.fsdp_float8_scales(ws, reduce_amax=reduce)
        self.assertEqual(calls, [(torch.float32, (len(ws),))])
        want = torchao_scales_reference(ws, torch.float8_e4m3fn, reduce_amax=lambda t: t.mul_(4.0))
        self.assertBits(got, bits_list(want), ws, "reduce_amax")
        with self.assertRaisesRegex(TypeError, r"float8_dtype torch.float16 is not a float8 dtype"):
            float8.fsdp_float8_scales(ws, torch.float16)

    def test_te_current_scaling_matches_te(self):
        from amax_tune import float8
        m = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0, torch.float8_e4m3fnuz: 240.0,
             torch.float8_e5m2fnuz: 57344.0}
        for dtype in (torch.bfloat16, torch.float32, torch.float16):
            xs = self.weights(dtype, seed=11) + [make_input("nan_and_inf", dtype, 999), torch.empty(0, dtype=dtype,
                                                                                                   device="cuda")]
            for f8, fmax in m.items():
                for eps, pow2 in ((0.0, False), (1e-4, True), (1e-30, False)):
                    want = [bits_list(t) for t in te_scaling_reference(xs, fmax, eps, pow2)]
                    what = "%s %s eps=%g pow2=%s" % (dtype, f8, eps, pow2)
                    got = float8.te_current_scaling_multi(xs, f8, amax_epsilon=eps, force_pow_2_scales=pow2)
                    for g, w, name in zip(got, want, ("amax", "scale", "scale_inv")):
                        self.assertBits(g, w, xs, "multi %s %s" % (name, what))
                    for i in (0, len(xs) - 6, len(xs) - 5, len(xs) - 3, len(xs) - 1):
                        one = float8.te_current_scaling(xs[i], f8, amax_epsilon=eps, force_pow_2_scales=pow2)
                        self.assertEqual([bits(t) for t in one], [w[i] for w in want], "%s tensor %d" % (what, i))
        x = self.weights(torch.bfloat16, 12, specials=False)[0]
        outs = tuple(torch.zeros(1, device="cuda") for _ in range(3))
        r = float8.te_current_scaling(x, torch.float8_e5m2, amax_epsilon=1e-3, force_pow_2_scales=True, out=outs)
        self.assertEqual([t.data_ptr() for t in r], [t.data_ptr() for t in outs])
        self.assertEqual([bits(t) for t in outs], [bits_list(t)[0] for t in te_scaling_reference([x], 57344.0, 1e-3,
                                                                                                  True)])


@unittest.skipIf(SKIP, SKIP)
class TorchFields(MultiCase):
    """The C++ reader of tensor fields (amax_tune._torch_fields): built and loaded where the
    package was built against this torch; the same results as the Python path; declines (None) what
    the Python path must check or copy."""

    def setUp(self):
        from amax_tune import _torch
        self.layer = _torch
        if _torch._torch_fields is None:
            self.skipTest("amax_tune._torch_fields is not loaded (not built against torch %s): the package reads "
                          "fields through torch's Python API" % torch.__version__)
        self.fields = _torch._torch_fields

    def test_same_results_as_the_python_path(self):
        xs = make_list(500, seed=77)
        xs = [x if x.is_contiguous() else x.contiguous() for x in xs]
        with_reader = bits_list(amax_tune.amax_multi(xs))
        scaled = [bits_list(t) for t in amax_tune.amax_multi_and_scale(xs, format="e5m2", epsilon=1e-5)]
        saved = self.layer._tensor_list, self.layer._amax_args
        self.layer._tensor_list = self.layer._amax_args = None
        try:
            self.assertEqual(bits_list(amax_tune.amax_multi(xs)), with_reader)
            self.assertEqual([bits_list(t) for t in amax_tune.amax_multi_and_scale(xs, format="e5m2", epsilon=1e-5)],
                             scaled)
            python_path = [bits(amax_tune.amax(x)) for x in xs[:50]]
        finally:
            self.layer._tensor_list, self.layer._amax_args = saved
        self.assertEqual([bits(amax_tune.amax(x)) for x in xs[:50]], python_path)
        self.assertEqual(with_reader, [reference_bits(x, "propagate") for x in xs])

    def test_records_and_declines(self):
        x = torch.randn(1000, device="cuda", dtype=torch.bfloat16)
        e = torch.empty(0, device="cuda")
        dev, records = self.fields.tensor_list([x, x[1:], e])
        self.assertEqual(dev, x.get_device())
        self.assertEqual(amax_tune._C._records(records),
                         [(x.data_ptr(), 1000, amax_tune.DTYPE_BF16), (x.data_ptr() + 2, 999, amax_tune.DTYPE_BF16),
                          (e.data_ptr(), 0, amax_tune.DTYPE_FP32)])
        sub = x.as_subclass(type("Sub", (torch.Tensor,), {}))
        for bad in ([x, torch.ones(3)], [x[::2]], [x.double()], [sub], [], x, [1], (x, 2)):
            self.assertIsNone(self.fields.tensor_list(bad), repr(bad)[:80])
        r = self.fields.amax_args(x)
        self.assertEqual(r[:4], (x.get_device(), amax_tune.DTYPE_BF16, x.data_ptr(), 1000))
        self.assertEqual((tuple(r[4].shape), r[4].dtype, r[4].device, r[5]), ((), torch.float32, x.device,
                                                                               r[4].data_ptr()))
        for bad in (x[::2], x.cpu(), x.int(), 3):
            self.assertIsNone(self.fields.amax_args(bad))
        self.assertEqual(self.fields.TORCH_VERSION, torch.__version__)


if __name__ == "__main__":
    if NO_DEVICE:
        print("SKIP: %s" % NO_DEVICE)
        sys.exit(77)
    unittest.main(verbosity=2)
