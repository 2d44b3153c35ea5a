"""CPU tests of the amax_tune package (CTest python.cpu; plain unittest, pytest runs it too).

What a machine without a GPU can check: the import, the version, the bundled library and database,
the status table, argument errors named before any device work, and amax_tune.Error carrying
AMAX_STATUS_NO_DEVICE with the library's message. Where a GPU is present the no-GPU tests skip
(the GPU suite, test_gpu.py, covers that machine).
"""
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import unittest

import amax_tune
from amax_tune import _C


def _mapped_libraries(name):
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if name in line})


def _has_gpu():
    try:
        amax_tune.context(0)
        return True
    except amax_tune.Error as e:
        if e.status != amax_tune.Status.NO_DEVICE:
            raise
        return False


HAS_GPU = _has_gpu()
try:
    import torch
except ImportError:
    torch = None
#: why the package's torch calls are unavailable here (torch missing, older than TORCH_MIN, or its torch
#: layer failed to load: the package's own decision, which its ImportErrors name); None where they work
NO_TORCH_LAYER = None if amax_tune._torch is not None else amax_tune._torch_missing


class ImportAndVersion(unittest.TestCase):
    def test_version_is_the_library_version(self):
        self.assertEqual(amax_tune.__version__, _C.version())
        expected = os.environ.get("AMAX_EXPECTED_VERSION")
        if expected:  # set by CTest: the project's VERSION
            self.assertEqual(amax_tune.__version__, expected)
        self.assertRegex(amax_tune.__version__, r"^\d+\.\d+\.\d+$")

    def test_library_and_database_come_from_the_package(self):
        pkg = os.path.dirname(os.path.abspath(amax_tune.__file__))
        self.assertEqual(os.path.dirname(os.path.abspath(_C.__file__)), pkg)
        libs = _mapped_libraries("libamax_tune")
        self.assertEqual(libs, [os.path.join(pkg, "libamax_tune.so.0")], "loaded without LD_LIBRARY_PATH")
        db = amax_tune.system_db_path()
        if os.environ.get("AMAX_TUNE_SYSTEM_DB"):
            self.assertIsNone(db)
        else:
            self.assertEqual(db, os.path.join(pkg, "data", "system.db"))
            with open(db, "rb") as f:
                self.assertEqual(f.read(16), b"SQLite format 3\x00")

    def test_status_names_match_the_library(self):
        for s in amax_tune.Status:
            self.assertEqual(_C.status_string(int(s)), "AMAX_STATUS_" + s.name)
        self.assertEqual(int(amax_tune.Status.NO_DEVICE), 7)
        # Every status the library names is in the enum, and no other (the first unnamed number
        # ends the list).
        known = [n for n in range(64) if _C.status_string(n) != "AMAX_STATUS_UNKNOWN"]
        self.assertEqual(known, list(range(len(known))))
        self.assertEqual(sorted(int(s) for s in amax_tune.Status), known)

    def test_error_carries_status_name_number_and_message(self):
        e = amax_tune.Error(7, "no GPU device 0", "amax_context_create")
        self.assertIs(e.status, amax_tune.Status.NO_DEVICE)
        self.assertEqual(e.status_name, "AMAX_STATUS_NO_DEVICE")
        self.assertEqual(e.message, "no GPU device 0")
        self.assertEqual(str(e), "amax_context_create: AMAX_STATUS_NO_DEVICE (7): no GPU device 0")
        self.assertIsInstance(e, RuntimeError)
        unknown = amax_tune.Error(99, "later status")
        self.assertEqual(unknown.status, 99)
        self.assertEqual(str(unknown), "AMAX_STATUS_99 (99): later status")


class ArgumentErrors(unittest.TestCase):
    """Named before any device work, so the same on every machine."""

    def test_bad_nan_mode(self):
        with self.assertRaisesRegex(ValueError, r"nan='fast' is not a NaN mode; use 'propagate'"):
            amax_tune.explain(dtype="bf16", n=10, nan="fast")
        with self.assertRaisesRegex(ValueError, r"amax_tune.context: nan='IGNORE'"):
            amax_tune.context(0, nan="IGNORE")

    def test_bad_dtype(self):
        with self.assertRaisesRegex(TypeError, r"amax_tune.preload: dtype 'fp64' is not supported"):
            amax_tune.preload(["fp64"], [1024])
        with self.assertRaisesRegex(TypeError, r"amax_tune.explain: dtype 'int8' is not supported"):
            amax_tune.explain(dtype="int8", n=1)

    def test_explain_scale_must_be_a_bool(self):
        for bad in ("no", 1, None):
            with self.assertRaisesRegex(TypeError, r"^amax_tune.explain: scale=%s \(expected True or False\)$"
                                        % re.escape(repr(bad))):
                amax_tune.explain(dtype="bf16", n=10, scale=bad)

    def test_bad_sizes_and_devices(self):
        with self.assertRaisesRegex(ValueError, r"amax_tune.preload: n=-1 is not an element count"):
            amax_tune.preload(["bf16"], [-1])
        with self.assertRaisesRegex(ValueError, r"amax_tune.explain: n=2.5 is not an element count"):
            amax_tune.explain(dtype="fp32", n=2.5)
        with self.assertRaisesRegex(ValueError, r"amax_tune.context: device=-1 is not a device ordinal"):
            amax_tune.context(-1)
        with self.assertRaisesRegex(ValueError, r"give either x or dtype/n/device, not both"):
            amax_tune.explain(object(), dtype="fp32", n=1)

    def test_scale_format_and_max(self):
        from amax_tune import _core
        self.assertEqual(_core.scale_format("e4m3", None, "f"), (0, 0.0))
        self.assertEqual(_core.scale_format("e5m2", None, "f"), (1, 0.0))
        self.assertEqual(_core.scale_format("e4m3fnuz", None, "f"), (2, 0.0))
        self.assertEqual(_core.scale_format("e5m2fnuz", None, "f"), (3, 0.0))
        self.assertEqual(_core.scale_format(None, 1.5, "f"), (255, 1.5))
        self.assertEqual(_core.scale_format(None, None, "f"), (0, 0.0))  # the default: e4m3
        self.assertEqual(_core.scale_format("explicit", 2, "f"), (255, 2.0))
        with self.assertRaisesRegex(ValueError, r"f: format='e3m4' is not an FP8 format; use one of 'e4m3', "):
            _core.scale_format("e3m4", None, "f")
        with self.assertRaisesRegex(ValueError, r"f: max=1.0 is an explicit numerator; give format='explicit'"):
            _core.scale_format("e4m3", 1.0, "f")

    @unittest.skipUnless(NO_TORCH_LAYER, "the package's torch layer is loaded here")
    def test_amax_and_scale_without_torch_says_so(self):
        with self.assertRaisesRegex(ImportError, r"amax_tune.amax_and_scale needs PyTorch"):
            amax_tune.amax_and_scale(object())

    @unittest.skipUnless(NO_TORCH_LAYER, "the package's torch layer is loaded here")
    def test_amax_without_torch_says_so(self):
        # the reason: "torch is not installed here", or "torch 1.13.0 is older than 2.4, ..." beside an old torch
        with self.assertRaisesRegex(ImportError, r"^amax_tune.amax needs PyTorch >= 2.4 .*, and %s; without torch, "
                                                 r"amax_tune.Context computes" % re.escape(NO_TORCH_LAYER)):
            amax_tune.amax(object())


class TensorListColumns(unittest.TestCase):
    """The extension's conversion of a multi-tensor list (pointers, counts, dtypes columns) into the
    amax_tensor_t array, as Context.multi_* do it (_C._tensor_list runs it without a context)."""

    def test_lists_tuples_sequences_and_buffers(self):
        import array
        want = [(0x7F0000001000, 5, 2), (0, 0, 0), (0x7F0000002002, 1 << 40, 1)]
        ptrs, counts, codes = [w[0] for w in want], [w[1] for w in want], [w[2] for w in want]
        self.assertEqual(_C._tensor_list(ptrs, counts, codes, echo=True), want)
        self.assertEqual(_C._tensor_list(tuple(ptrs), tuple(counts), tuple(codes), echo=True), want)
        self.assertEqual(_C._tensor_list(array.array("Q", ptrs), array.array("q", counts), array.array("b", codes),
                                         echo=True), want)
        self.assertEqual(_C._tensor_list(memoryview(array.array("Q", ptrs)), range(5, 8), array.array("i", codes),
                                         echo=True), [(p, n, c) for p, n, c in zip(ptrs, range(5, 8), codes)])
        self.assertEqual(_C._tensor_list(ptrs, counts, 2, echo=True), [(p, n, 2) for p, n in zip(ptrs, counts)])
        self.assertEqual(_C._tensor_list(None, counts, codes, echo=True), [(0, n, c) for _, n, c in want])
        self.assertEqual(_C._tensor_list([], [], []), 0)
        self.assertEqual(_C._tensor_list([(1 << 64) - 1], [0], [0], echo=True), [((1 << 64) - 1, 0, 0)])

        class Index:  # an integer that is not an int (numpy's scalars)
            def __index__(self):
                return 12

        self.assertEqual(_C._tensor_list([Index()], [Index()], [Index()], echo=True), [(12, 12, 12)])
        n = 4096
        self.assertEqual(_C._tensor_list(list(range(0, 4 * n, 4)), [7] * n, [0, 1, 2, 0] * (n // 4)), n)

    def test_bad_columns_name_the_entry(self):
        import array
        with self.assertRaisesRegex(ValueError, r"^dtypes has 2 entries but counts has 3$"):
            _C._tensor_list([0, 0, 0], [1, 2, 3], [0, 0])
        with self.assertRaisesRegex(ValueError, r"^pointers has 1 entries but counts has 2$"):
            _C._tensor_list([0], [1, 2], 0)
        with self.assertRaisesRegex(TypeError, r"^counts\[1\] is 'x' \(not an int\)$"):
            _C._tensor_list(None, [1, "x"], 0)
        with self.assertRaisesRegex(TypeError, r"^counts\[0\] is 2.0 \(not an int\)$"):
            _C._tensor_list(None, [2.0], 0)
        with self.assertRaisesRegex(TypeError, r"^pointers\[0\] is True \(not an int\)$"):
            _C._tensor_list([True], [1], 0)
        with self.assertRaisesRegex(ValueError, r"^counts\[2\] is -1 \(not in 0 .. 2\*\*64 - 1\)$"):
            _C._tensor_list(None, [1, 2, -1], 0)
        with self.assertRaisesRegex(ValueError, r"^pointers\[0\] is 18446744073709551616 "):
            _C._tensor_list([1 << 64], [1], 0)
        with self.assertRaisesRegex(ValueError, r"^dtypes\[0\] is 4294967296 \(not a dtype code\)$"):
            _C._tensor_list(None, [1], [1 << 32])
        with self.assertRaisesRegex(ValueError, r"^dtypes\[0\] is -1 \(not a dtype code\)$"):
            _C._tensor_list(None, [1], -1)
        with self.assertRaisesRegex(ValueError, r"^counts\[1\] is -5 "):
            _C._tensor_list(None, array.array("q", [1, -5]), 0)
        with self.assertRaisesRegex(TypeError, r"^counts must be a list or tuple of ints.*got int$"):
            _C._tensor_list(None, 5, 0)
        with self.assertRaisesRegex(TypeError, r"^counts must be a list or tuple of ints.*got str$"):
            _C._tensor_list(None, "123", 0)
        with self.assertRaisesRegex(TypeError, r"^counts is a buffer of format 'd' with 1 dimensions"):
            _C._tensor_list(None, array.array("d", [1.0]), 0)
        with self.assertRaisesRegex(TypeError, r"^counts is a buffer of format 'B' with 2 dimensions"):
            _C._tensor_list(None, memoryview(bytes(8)).cast("B", [2, 4]), 0)


class TensorRecords(unittest.TestCase):
    """The records form of a list (amax_tensor_t structs in a buffer, what the C++ reader of torch
    fields, amax_tune._torch_fields, builds) as the extension reads it."""

    def test_layout_and_round_trip(self):
        import struct
        self.assertEqual(_C.TENSOR_RECORD_BYTES, struct.calcsize("PQi4x"))
        self.assertEqual(_C.TENSOR_RECORD_BYTES, 24)
        want = [(0x7F0000001000, 5, 2), (0, 0, 0), ((1 << 64) - 1, (1 << 40) - 1, 1)]
        records = b"".join(struct.pack("PQi4x", *w) for w in want)
        self.assertEqual(_C._records(records), want)
        self.assertEqual(_C._records(bytearray(records)), want)
        self.assertEqual(_C._records(b""), [])

    def test_bad_length_is_named(self):
        with self.assertRaisesRegex(ValueError, r"^records has 25 bytes, not a multiple of amax_tensor_t's 24$"):
            _C._records(bytes(25))
        with self.assertRaises(TypeError):
            _C._records([1, 2, 3])


class MultiArguments(unittest.TestCase):
    """The multi-tensor calls' argument errors that need no GPU (and, where marked, no torch)."""

    def test_list_type(self):
        from amax_tune import _core
        self.assertEqual(_core.multi_list([1], "f"), [1])
        self.assertEqual(_core.multi_list((), "f"), ())
        with self.assertRaisesRegex(TypeError, r"^f: tensors must be a list or tuple of tensors, got generator$"):
            _core.multi_list((x for x in []), "f")
        with self.assertRaisesRegex(TypeError, r"^amax_tune.preload_multi: tensors_or_shapes must be a list or tuple "
                                               r"of tensors, got str$"):
            amax_tune.preload_multi("bf16")

    def test_shapes(self):
        with self.assertRaisesRegex(TypeError, r"^amax_tune.preload_multi: tensors_or_shapes\[1\]: dtype 'fp64' is "
                                               r"not supported"):
            amax_tune.preload_multi([("bf16", 10), ("fp64", 10)])
        with self.assertRaisesRegex(ValueError, r"^amax_tune.explain_multi: tensors_or_shapes\[0\]: n=-1 is not an "
                                                r"element count"):
            amax_tune.explain_multi([("bf16", -1)])
        with self.assertRaisesRegex(TypeError, r"tensors_or_shapes\[2\] is \('bf16',\); give tensors or \(dtype, "
                                               r"n\) pairs"):
            amax_tune.preload_multi([("fp32", 1), ("fp16", 2), ("bf16",)])
        with self.assertRaisesRegex(TypeError, r"tensors_or_shapes\[0\]"):
            amax_tune.explain_multi([object()])
        with self.assertRaisesRegex(ValueError, r"amax_tune.preload_multi: nan='fast' is not a NaN mode"):
            amax_tune.preload_multi([("bf16", 10)], nan="fast")
        with self.assertRaisesRegex(ValueError, r"amax_tune.explain_multi: device=-2 is not a device ordinal"):
            amax_tune.explain_multi([("bf16", 10)], device=-2)

    def test_exported(self):
        for name in ("amax_multi", "amax_multi_and_scale", "preload_multi", "explain_multi", "MultiExplanation"):
            self.assertIn(name, amax_tune.__all__)
            self.assertTrue(callable(getattr(amax_tune, name)), name)
        self.assertIn("tensors[3] is on device 'cpu'", amax_tune.amax_multi.__doc__)

    @unittest.skipUnless(NO_TORCH_LAYER, "the package's torch layer is loaded here")
    def test_without_torch_says_so(self):
        with self.assertRaisesRegex(ImportError, r"amax_tune.amax_multi needs PyTorch .*, and %s;"
                                    % re.escape(NO_TORCH_LAYER or "")):
            amax_tune.amax_multi([])
        with self.assertRaisesRegex(ImportError, r"amax_tune.amax_multi_and_scale needs PyTorch"):
            amax_tune.amax_multi_and_scale([], format="e4m3")

    @unittest.skipIf(NO_TORCH_LAYER, "the package's torch calls are unavailable here: %s" % NO_TORCH_LAYER)
    def test_with_torch_before_any_device_work(self):
        with self.assertRaisesRegex(TypeError, r"amax_tune.amax_multi: tensors must be a list or tuple of tensors, "
                                               r"got Tensor"):
            amax_tune.amax_multi(torch.ones(3))
        with self.assertRaisesRegex(ValueError, r"amax_tune.amax_multi: nan='none' is not a NaN mode"):
            amax_tune.amax_multi([torch.ones(3)], nan="none")
        if not HAS_GPU:  # a CPU tensor is refused before anything reaches a device
            with self.assertRaisesRegex(ValueError, r"amax_tune.amax_multi: tensors\[0\] is on device 'cpu'"):
                amax_tune.amax_multi([torch.ones(3)])
        with self.assertRaisesRegex(ValueError, r"amax_tune.amax_multi_and_scale: format='e3m4' is not an FP8 "
                                                r"format"):
            amax_tune.amax_multi_and_scale([torch.ones(3)], format="e3m4")
        with self.assertRaisesRegex(ValueError, r"amax_tune.amax_multi_and_scale: max=1.0 is an explicit numerator"):
            amax_tune.amax_multi_and_scale([torch.ones(3)], format="e5m2", max=1.0)


def _run_with_torch(torch_init, code, warnings="always"):
    """Runs `code` in a fresh interpreter that finds a stand-in package `torch` (its __init__.py is
    torch_init; None: no torch at all) before anything else, and amax_tune where this process
    found it. Returns (exit code, stdout, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.dirname(os.path.dirname(os.path.abspath(amax_tune.__file__)))]
        if torch_init is not None:
            os.mkdir(os.path.join(tmp, "torch"))
            with open(os.path.join(tmp, "torch", "__init__.py"), "w") as f:
                f.write(textwrap.dedent(torch_init))
            paths.insert(0, tmp)
        else:  # a torch that is not there, even if this interpreter has one: a finder that refuses it
            with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
                f.write("import sys\nclass _NoTorch:\n    def find_spec(self, name, path=None, target=None):\n"
                        "        if name == 'torch':\n            raise ModuleNotFoundError(\"No module named 'torch'\", "
                        "name='torch')\nsys.meta_path.insert(0, _NoTorch())\n")
            paths.insert(0, tmp)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
        r = subprocess.run([sys.executable, "-W", warnings, "-c", textwrap.dedent(code)], env=env,
                           capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout, r.stderr


class TorchVersions(unittest.TestCase):
    """import amax_tune next to an older torch, a broken one or none: no traceback, one warning
    naming the version, the minimum and what is unavailable (stand-in torch packages)."""

    CHECK = """
        import amax_tune, warnings
        print("imported", amax_tune.__version__)
        print("torch layer", amax_tune._torch is not None)
        for fn, args in ((amax_tune.amax, (1,)), (amax_tune.amax_multi, ([],)), (amax_tune.amax_and_scale, (1,)),
                         (amax_tune.amax_multi_and_scale, ([],)), (amax_tune.quantize, (1,))):
            try:
                fn(*args)
            except ImportError as e:
                print("ImportError:", e)
        print("Context", amax_tune.Context.__name__, "explain", callable(amax_tune.explain))
        import amax_tune  # a second import says nothing more
    """

    def assertOneWarning(self, stderr, reason):
        self.assertNotIn("Traceback", stderr)
        lines = [l for l in stderr.splitlines() if "TorchVersionWarning" in l]
        self.assertEqual(len(lines), 1, stderr)
        self.assertIn("TorchVersionWarning: amax_tune: %s; unavailable: amax, amax_and_scale, amax_multi, "
                      "amax_multi_and_scale, quantize, explain(x) of a tensor, preload_multi / explain_multi of "
                      "tensors, amax_tune.float8 (they raise ImportError); available: Context on raw device pointers, "
                      "cuda_array_fields of __cuda_array_interface__ arrays (CuPy, Numba), explain / preload / "
                      "preload_multi / explain_multi by (dtype, n). torch >= 2.4 gives the rest (pip install "
                      "'amax-tune[torch]')" % reason, lines[0])

    def assertTorchCallsRaise(self, stdout, reason):
        self.assertIn("imported " + amax_tune.__version__, stdout)
        self.assertIn("torch layer False", stdout)
        for fn in ("amax", "amax_multi", "amax_and_scale", "amax_multi_and_scale", "quantize"):
            self.assertIn("ImportError: amax_tune.%s needs PyTorch >= 2.4 (its results are torch tensors and its "
                          "workspace comes from torch's caching allocator), and %s; without torch" % (fn, reason),
                          stdout)
        self.assertIn("Context Context explain True", stdout)

    def test_torch_1_13(self):
        rc, out, err = _run_with_torch('__version__ = "1.13.1"\n', self.CHECK)
        self.assertEqual(rc, 0, err)
        reason = "torch 1.13.1 is older than 2.4, the oldest amax_tune supports"
        self.assertOneWarning(err, reason)
        self.assertTorchCallsRaise(out, reason)

    def test_torch_without_a_version(self):
        rc, out, err = _run_with_torch("", self.CHECK)
        self.assertEqual(rc, 0, err)
        self.assertOneWarning(err, "torch None is older than 2.4, the oldest amax_tune supports")

    def test_torch_that_fails_to_import(self):
        rc, out, err = _run_with_torch('raise OSError("libtorch_cuda.so: cannot open shared object file")\n',
                                       self.CHECK)
        self.assertEqual(rc, 0, err)
        reason = "importing torch failed (OSError: libtorch_cuda.so: cannot open shared object file)"
        self.assertOneWarning(err, reason)
        self.assertTorchCallsRaise(out, reason)

    def test_new_enough_torch_without_what_the_layer_needs(self):
        # a version that passes the check but lacks torch.library.custom_op: the layer's own failure
        rc, out, err = _run_with_torch('__version__ = "2.4.0"\nclass Tensor: pass\n', self.CHECK)
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, r"TorchVersionWarning: amax_tune: amax_tune's torch layer failed to load with torch "
                              r"2.4.0 \((AttributeError|ImportError): ")
        self.assertNotIn("Traceback", err)
        self.assertIn("torch layer False", out)

    def test_no_torch_imports_without_a_warning(self):
        rc, out, err = _run_with_torch(None, self.CHECK, warnings="error")
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        self.assertTorchCallsRaise(out, "torch is not installed here")

    def test_float8_module_needs_torch(self):
        rc, out, err = _run_with_torch('__version__ = "2.1.0"\n', """
            try:
                import amax_tune.float8
            except ImportError as e:
                print("ImportError:", e)
        """)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "ImportError: amax_tune.float8 needs torch >= 2.4, and torch 2.1.0 is older than "
                                      "2.4, the oldest amax_tune supports")

    def test_minimums_are_exported(self):
        self.assertEqual(amax_tune.TORCH_MIN, (2, 4))
        self.assertEqual(amax_tune.PYTHON_MIN, (3, 9))
        from amax_tune import _requirements
        self.assertEqual(_requirements.version_tuple("2.11.0+cu130"), (2, 11))
        self.assertEqual(_requirements.version_tuple("2.5.0a0+git1234"), (2, 5))
        self.assertEqual(_requirements.version_tuple("1.13.1"), (1, 13))
        self.assertIsNone(_requirements.version_tuple("nightly"))
        self.assertIsNone(_requirements.version_tuple(None))


class CudaArrayFields(unittest.TestCase):
    """amax_tune.cuda_array_fields: a __cuda_array_interface__ array's pointer, dtype code and count
    for Context (no torch, no GPU needed to read the interface)."""

    class Array:
        def __init__(self, **cai):
            self.__cuda_array_interface__ = dict({"version": 3, "data": (0x7F0000001000, False)}, **cai)

    def test_fields(self):
        A = self.Array
        self.assertEqual(amax_tune.cuda_array_fields(A(shape=(3, 5), typestr="<f4", strides=None)),
                         (0x7F0000001000, _C.DTYPE_FP32, 15))
        f = amax_tune.cuda_array_fields(A(shape=(4, 6), typestr="<f2", strides=(2, 8)))  # a transpose
        self.assertEqual((f.pointer, f.dtype, f.n), (0x7F0000001000, _C.DTYPE_FP16, 24))
        self.assertEqual(amax_tune.cuda_array_fields(A(shape=(0,), typestr="<f4", strides=(8,))).n, 0)
        self.assertEqual(amax_tune.cuda_array_fields(A(shape=(), typestr="<f4")).n, 1)

    def test_errors_name_the_problem(self):
        A = self.Array
        with self.assertRaisesRegex(TypeError, r"^amax_tune.cuda_array_fields: a list has no __cuda_array_interface__"):
            amax_tune.cuda_array_fields([1.0])
        with self.assertRaisesRegex(TypeError, r"typestr '<f8' is not supported; supported: '<f4' \(float32\), '<f2'"):
            amax_tune.cuda_array_fields(A(shape=(2,), typestr="<f8"))
        with self.assertRaisesRegex(ValueError, r"the array is a strided view \(shape \(4, 3\), strides \(24, 8\) "
                                                r"bytes\); copy it first"):
            amax_tune.cuda_array_fields(A(shape=(4, 3), typestr="<f4", strides=(24, 8)))
        with self.assertRaisesRegex(ValueError, r"the array has a mask"):
            amax_tune.cuda_array_fields(A(shape=(2,), typestr="<f4", mask=object()))


@unittest.skipIf(HAS_GPU, "a GPU is present (python.gpu covers this machine)")
class QuantizeArguments(unittest.TestCase):
    """amax_tune.quantize's companions by (dtype, n, format): named before any device work."""

    def test_format_and_dtype_named(self):
        with self.assertRaisesRegex(ValueError, r"^amax_tune.preload_quantize: format='e3m4' is not an FP8 format; "
                                                r"use one of 'e4m3', 'e5m2', 'e4m3fnuz', 'e5m2fnuz'$"):
            amax_tune.preload_quantize(["bf16"], [1024], "e3m4")
        with self.assertRaisesRegex(ValueError, r"^amax_tune.explain_quantize: format='explicit' is not an FP8 format"):
            amax_tune.explain_quantize("bf16", 10, "explicit")
        with self.assertRaisesRegex(TypeError, r"amax_tune.explain_quantize: dtype 'fp64' is not supported"):
            amax_tune.explain_quantize("fp64", 10)
        with self.assertRaisesRegex(ValueError, r"amax_tune.preload_quantize: nan='fast' is not a NaN mode"):
            amax_tune.preload_quantize(["bf16"], [10], nan="fast")
        self.assertEqual(dict(amax_tune._C.CAST_RULES), {"transformer_engine": 0, "torchao": 1})

    def test_exported(self):
        for name in ("quantize", "preload_quantize", "explain_quantize"):
            self.assertIn(name, amax_tune.__all__)
            self.assertTrue(callable(getattr(amax_tune, name)), name)
        self.assertIn("torch.float8_e4m3fnuz", amax_tune.quantize.__doc__)

    @unittest.skipUnless(NO_TORCH_LAYER, "the package's torch layer is loaded here")
    def test_without_torch_says_so(self):
        with self.assertRaisesRegex(ImportError, r"^amax_tune.quantize needs PyTorch >= 2.4 .*, and %s;"
                                    % re.escape(NO_TORCH_LAYER)):
            amax_tune.quantize(object())


class WithoutGpu(unittest.TestCase):
    def assertNoDevice(self, fn, *args, **kwargs):
        with self.assertRaises(amax_tune.Error) as cm:
            fn(*args, **kwargs)
        e = cm.exception
        self.assertIs(e.status, amax_tune.Status.NO_DEVICE)
        self.assertEqual(e.function, "amax_context_create")
        self.assertTrue(e.message.startswith("no GPU device 0 ("), e.message)
        self.assertIn("amax_context_create: AMAX_STATUS_NO_DEVICE (7): no GPU device 0", str(e))
        return e

    def test_context(self):
        self.assertNoDevice(amax_tune.context, 0)
        self.assertNoDevice(amax_tune.Context, 0, 0)

    def test_explain_and_preload(self):
        self.assertNoDevice(amax_tune.explain, dtype="bf16", n=1 << 20)
        self.assertNoDevice(amax_tune.preload, ["fp32", "bf16"], [1000, 1 << 20])

    def test_quantize_preload_and_explain(self):
        self.assertNoDevice(amax_tune.preload_quantize, ["bf16"], [1 << 20], "e5m2")
        self.assertNoDevice(amax_tune.explain_quantize, "fp32", 1000, nan="ignore")

    def test_multi_preload_and_explain(self):
        self.assertNoDevice(amax_tune.preload_multi, [("bf16", 4096)] * 500)
        self.assertNoDevice(amax_tune.preload_multi, [("fp32", 0), ("fp16", 7)], True)
        self.assertNoDevice(amax_tune.explain_multi, [("fp32", 4096)] * 3, nan="ignore")

    def test_message_names_the_device_backends(self):
        e = self.assertNoDevice(amax_tune.Context, 0, 1, "", "", "")
        self.assertRegex(e.message, r"NVIDIA: |AMD: |without .*backend")


if __name__ == "__main__":
    unittest.main(verbosity=2)
