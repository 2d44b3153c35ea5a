"""Builds the amax_tune package from the amax-tune source tree (the directory above this one).

    python3 -m pip install --no-build-isolation ./python       # from the repository root
    (a system python3 of Debian/Ubuntu outside a venv: add --target DIR, or --break-system-packages)

works offline from the interpreter's own setuptools, wheel and pybind11 (Debian 12:
python3-setuptools python3-wheel python3-pybind11 python3-dev; elsewhere the pybind11 pip package).
The extension is built by CMake as the target amax_tune_python_package of the whole project, in
$AMAX_TUNE_BUILD_DIR when set (an existing build tree is reused: only the Python target is added
and built), else in <repository>/build-python. The wheel holds the Python sources, the extension
_C, libamax_tune under its SONAME (found through _C's RPATH $ORIGIN) and the shipped database as
amax_tune/data/system.db.

Environment: AMAX_TUNE_BUILD_DIR (build tree), AMAX_TUNE_SOURCE_DIR (repository root, when this
file is not inside it), AMAX_TUNE_CMAKE_ARGS (extra configure arguments, split on spaces),
AMAX_TUNE_JOBS (parallel build jobs).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("AMAX_TUNE_SOURCE_DIR") or HERE.parent).resolve()


def project_version():
    cmakelists = ROOT / "CMakeLists.txt"
    try:
        m = re.search(r"project\(\s*amax_tune\s+VERSION\s+([0-9.]+)", cmakelists.read_text())
    except OSError:
        m = None
    if not m:
        sys.exit("amax_tune setup.py: %s is not amax-tune's top-level CMakeLists.txt (run pip on the python/ "
                 "folder of a source tree, or set AMAX_TUNE_SOURCE_DIR)" % cmakelists)
    return m.group(1)


def cmake_cache(build_dir):
    values = {}
    try:
        text = (build_dir / "CMakeCache.txt").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        m = re.match(r"([A-Za-z0-9_.-]+):[A-Z]+=(.*)", line)
        if m:
            values[m.group(1)] = m.group(2)
    return values


def run(cmd):
    print("amax_tune setup.py: " + " ".join(str(c) for c in cmd), flush=True)
    subprocess.check_call([str(c) for c in cmd])


class CMakeBuild(build_ext):
    """Builds amax_tune._C with CMake and copies the package's binaries next to it."""

    def build_extension(self, ext):
        build_dir = Path(os.environ.get("AMAX_TUNE_BUILD_DIR") or ROOT / "build-python").resolve()
        python = os.path.abspath(sys.executable)
        cache = cmake_cache(build_dir)
        args = ["-DAMAX_BUILD_PYTHON=ON", "-DPython3_EXECUTABLE=%s" % python]  # a venv's own, not resolved
        try:
            import pybind11
            if Path(pybind11.get_cmake_dir()).is_dir():
                args.append("-Dpybind11_DIR=%s" % pybind11.get_cmake_dir())
        except ImportError:
            pass  # CMake searches its default places (Debian: /usr/lib/cmake/pybind11)
        args += os.environ.get("AMAX_TUNE_CMAKE_ARGS", "").split()
        if cache is None:  # a fresh tree: the library and the package only
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            run(["cmake", "-S", ROOT, "-B", build_dir, *generator, "-DCMAKE_BUILD_TYPE=Release",
                 "-DAMAX_BUILD_TESTS=OFF", "-DAMAX_BUILD_BENCHMARKS=OFF", *args])
        elif (os.path.abspath(cache.get("Python3_EXECUTABLE", "/")) != python
              or cache.get("AMAX_BUILD_PYTHON") not in ("ON", "AUTO") or "pybind11_DIR" not in cache
              or cache.get("pybind11_DIR", "").endswith("NOTFOUND")):
            run(["cmake", build_dir, *args])  # an existing tree: add the package for this interpreter
        jobs = os.environ.get("AMAX_TUNE_JOBS") or str(os.cpu_count() or 2)
        run(["cmake", "--build", build_dir, "--target", "amax_tune_python_package", "-j", jobs])

        built = build_dir / "python" / "amax_tune"
        ext_path = Path(self.get_ext_fullpath(ext.name))
        module = built / ext_path.name
        if not module.is_file():
            sys.exit("amax_tune setup.py: %s was not built (the build tree's Python differs from %s? set "
                     "AMAX_TUNE_BUILD_DIR to a fresh directory)" % (module, python))
        dest = ext_path.parent
        (dest / "data").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(module, ext_path)
        for lib in built.glob("libamax_tune.so*"):
            shutil.copyfile(lib, dest / lib.name)
        if (built / "data" / "system.db").is_file():
            shutil.copyfile(built / "data" / "system.db", dest / "data" / "system.db")


setup(
    name="amax-tune",
    version=project_version(),
    description="amax = max|x| of GPU tensors with autotuned kernels: PyTorch custom ops, torch.compile, CUDA graphs",
    python_requires=">=3.9",
    packages=["amax_tune"],
    ext_modules=[Extension("amax_tune._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
