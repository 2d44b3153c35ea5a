"""The package's minimum Python and torch versions: the one place they are stated. The package
metadata (python/amax_tune_build.py writes Requires-Python and the ``torch`` extra from these) and
the import-time check (amax_tune/__init__.py) both read them. No imports beyond the standard
library: the build backend loads this file by path, before anything is built."""
import re

#: the oldest Python the package supports (dataclasses, f-strings; pybind11 2.10's floor is lower)
PYTHON_MIN = (3, 9)
#: the oldest torch the torch layer supports: torch.library.custom_op, its register_fake and
#: register_autograd (torch 2.4), torch.compiler.is_compiling (2.3)
TORCH_MIN = (2, 4)
#: what the torch layer is, for messages: the calls that need torch >= TORCH_MIN
TORCH_CALLS = ("amax", "amax_and_scale", "amax_multi", "amax_multi_and_scale", "quantize", "explain(x) of a tensor",
               "preload_multi / explain_multi of tensors", "amax_tune.float8")


def dotted(version):
    """(2, 4) -> "2.4"."""
    return ".".join(str(v) for v in version)


def version_tuple(text):
    """(major, minor) of a version string such as "2.11.0+cu130", "1.13.1" or "2.5.0a0+git1234";
    None when it does not start with two dotted numbers."""
    m = re.match(r"\s*(\d+)\.(\d+)", str(text))
    return (int(m.group(1)), int(m.group(2))) if m else None
