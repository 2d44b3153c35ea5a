"""The PEP 517 build backend of the amax_tune package (pyproject.toml names it, in-tree): builds the
wheel from amax-tune's CMake build without setuptools or the ``wheel`` module, so that

    python3 -m pip install ./python          # from the repository root; offline

works with any interpreter that has pip (Debian 12: python3-pip, python3-dev; pybind11 only when
the extension must be compiled: python3-pybind11 or the pybind11 pip package).

Which build tree (the first that applies; every choice is printed):
  1. $AMAX_TUNE_BUILD_DIR: that tree (created if missing). A relative path is relative to the
     directory pip was started in ($PWD, which the shell sets; pip runs this backend in python/).
  2. A configured tree of this source tree that already builds the package for an interpreter of
     the same ABI (extension suffix) as this one: $AMAX_BUILD_DIR (scripts/build.sh's variable,
     relative to the repository root), <root>/build, <root>/build-python. Only the target
     amax_tune_python_package is built: seconds when that tree is up to date.
  3. <root>/build-python, configured for this interpreter with the tests and benchmarks off.
A tree named by 1 or the package's own tree 3 is reconfigured for this interpreter when needed; a
tree found by 2 is never reconfigured (it stays what its owner made it).

Progress: every step and the build's [n/total] counter go to /dev/tty when there is one (pip shows
a build's own output only with -v) and to stderr (the log pip shows with -v or on failure).

The wheel holds the Python sources of amax_tune/, the extension _C (and _torch_fields, where the
build found torch: it reads tensor fields through torch's C++ API), libamax_tune under its SONAME
(found through _C's RPATH $ORIGIN) and the shipped database as amax_tune/data/system.db. Its
metadata (Requires-Python, the ``torch`` extra) comes from amax_tune/_requirements.py.

Environment: AMAX_TUNE_BUILD_DIR, AMAX_TUNE_SOURCE_DIR (repository root, when this file is not
inside it), AMAX_TUNE_CMAKE_ARGS (extra configure arguments, split on spaces), AMAX_TUNE_JOBS
(parallel build jobs), AMAX_TUNE_PROGRESS=0 (no /dev/tty output).
Hooks: get_requires_for_build_wheel, prepare_metadata_for_build_wheel, build_wheel (no sdist, no
editable install). Errors: SystemExit with a message naming the path or command that failed.
"""
import base64
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIST = "amax_tune"  # the distribution's name in file names (amax-tune normalized)


def _root():
    return Path(os.environ.get("AMAX_TUNE_SOURCE_DIR") or HERE.parent).resolve()


def _requirements():
    spec = importlib.util.spec_from_file_location("_amax_tune_requirements", HERE / "amax_tune" / "_requirements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _version():
    cmakelists = _root() / "CMakeLists.txt"
    try:
        m = re.search(r"project\(\s*amax_tune\s+VERSION\s+([0-9.]+)", cmakelists.read_text())
    except OSError:
        m = None
    if not m:
        sys.exit("amax_tune build: %s is not amax-tune's top-level CMakeLists.txt (run pip on the python/ folder of "
                 "a source tree, or set AMAX_TUNE_SOURCE_DIR)" % cmakelists)
    return m.group(1)


# ---- progress ----

_tty = None


def _open_tty():
    global _tty
    if _tty is None:
        _tty = False
        if os.environ.get("AMAX_TUNE_PROGRESS", "1") != "0" and not sys.stderr.isatty():
            try:
                _tty = open("/dev/tty", "w")
            except OSError:
                pass
    return _tty


def _say(message, transient=False):
    """A progress line on stderr and, where there is one, the terminal (transient: overwritten by the
    next line there, as the build counter is)."""
    if not transient:
        print("amax_tune build: " + message, file=sys.stderr, flush=True)
    tty = _open_tty()
    if tty:
        tty.write("\r\033[K  amax_tune build: " + message + ("" if transient else "\n"))
        tty.flush()


def _run(cmd, counter=False):
    """Runs cmd (a list), its output to stderr; with counter, ninja's / make's [n/total] shown as progress."""
    cmd = [str(c) for c in cmd]
    _say("$ " + " ".join(cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    for line in p.stdout:
        sys.stderr.write(line)
        if counter:
            m = re.match(r"\[\s*(\d+)/(\d+)\]\s*(.*)|\[\s*(\d+)%\]\s*(.*)", line)
            if m:
                done = "%s/%s" % (m.group(1), m.group(2)) if m.group(1) else "%s%%" % m.group(4)
                what = (m.group(3) or m.group(5) or "").strip()
                _say("[%s] %s" % (done, what[:70]), transient=True)
    if p.wait() != 0:
        if counter and _open_tty():
            _tty.write("\n")
        sys.exit("amax_tune build: `%s` failed (exit %d); its output is above (pip install -v shows it)"
                 % (" ".join(cmd), p.returncode))
    if counter and _open_tty():
        _tty.write("\r\033[K")


# ---- the build tree ----

def _cmake_cache(build_dir):
    """The CMakeCache.txt entries of build_dir, or None when it is not a configured tree."""
    try:
        text = (build_dir / "CMakeCache.txt").read_text()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        m = re.match(r"([A-Za-z0-9_.-]+):[A-Z]+=(.*)", line)
        if m:
            values[m.group(1)] = m.group(2)
    return values


def _ext_suffix(python):
    """EXT_SUFFIX of an interpreter (".cpython-311-x86_64-linux-gnu.so"), None if it does not run."""
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        return sysconfig.get_config_var("EXT_SUFFIX")
    try:
        return subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                              capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _tree_python(cache):
    return cache.get("Python3_EXECUTABLE") or cache.get("_Python3_EXECUTABLE")


def _fits(cache):
    """'' when a configured tree builds the package for an interpreter of this one's ABI, else why not."""
    if cache.get("AMAX_BUILD_PYTHON") == "OFF":
        return "AMAX_BUILD_PYTHON=OFF"
    if not cache.get("pybind11_DIR") or cache["pybind11_DIR"].endswith("NOTFOUND"):
        return "pybind11 was not found there"
    python = _tree_python(cache)
    if not python:
        return "no Python was found there"
    if _ext_suffix(python) != sysconfig.get_config_var("EXT_SUFFIX"):
        return "its Python %s differs in ABI from %s" % (python, sys.executable)
    return ""


def _same_source(cache, root):
    home = cache.get("CMAKE_HOME_DIRECTORY")
    try:
        return home is not None and Path(home).resolve() == root
    except OSError:
        return False


def _named_build_dir():
    """$AMAX_TUNE_BUILD_DIR resolved as the user meant it (relative to the directory pip was started
    in), or None."""
    named = os.environ.get("AMAX_TUNE_BUILD_DIR")
    if not named:
        return None
    path = Path(named).expanduser()
    if not path.is_absolute():
        start = os.environ.get("PWD")
        base = Path(start) if start and os.path.isabs(start) and os.path.isdir(start) else Path.cwd()
        path = base / path
    return path.resolve()


def _choose_build_dir(root):
    """(build dir, how it was chosen, reconfigure allowed)."""
    named = _named_build_dir()
    if named is not None:
        return named, "named by AMAX_TUNE_BUILD_DIR=%s" % os.environ["AMAX_TUNE_BUILD_DIR"], True
    candidates = []
    if os.environ.get("AMAX_BUILD_DIR"):
        candidates.append((root / os.environ["AMAX_BUILD_DIR"]).resolve())
    candidates += [root / "build", root / "build-python"]
    for d in candidates:
        cache = _cmake_cache(d)
        if cache is None:
            continue
        if not _same_source(cache, root):
            _say("not reusing %s: it was configured for the sources %s" % (d, cache.get("CMAKE_HOME_DIRECTORY")))
            continue
        why = _fits(cache)
        if why:
            _say("not reusing %s: %s" % (d, why))
            continue
        return d, "an existing build tree", d.name == "build-python"
    return root / "build-python", "the package's own build tree", True


def _configure_args():
    python = os.path.abspath(sys.executable)  # a venv's own interpreter, not resolved
    args = ["-DAMAX_BUILD_PYTHON=ON", "-DPython3_EXECUTABLE=%s" % python]
    try:
        import pybind11
        if Path(pybind11.get_cmake_dir()).is_dir():
            args.append("-Dpybind11_DIR=%s" % pybind11.get_cmake_dir())
    except ImportError:
        pass  # CMake searches its default places (Debian: /usr/lib/cmake/pybind11)
    return args + os.environ.get("AMAX_TUNE_CMAKE_ARGS", "").split()


def build_package_tree():
    """Configures (where needed) and builds the target amax_tune_python_package; returns the built
    package directory <build>/python/amax_tune."""
    root = _root()
    _version()  # the source tree is amax-tune's
    build_dir, how, may_configure = _choose_build_dir(root)
    _say("build tree %s (%s)" % (build_dir, how))
    cache = _cmake_cache(build_dir)
    started = time.monotonic()
    if cache is None:
        if not may_configure:  # pragma: no cover (a found tree is configured)
            sys.exit("amax_tune build: %s is not configured" % build_dir)
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        _say("configuring a tree for the library and the extension only (no tests, no benchmarks)")
        _run(["cmake", "-S", root, "-B", build_dir, *generator, "-DCMAKE_BUILD_TYPE=Release",
              "-DAMAX_BUILD_TESTS=OFF", "-DAMAX_BUILD_BENCHMARKS=OFF", *_configure_args()])
    elif may_configure and _fits(cache):
        _say("reconfiguring %s for %s (%s)" % (build_dir, sys.executable, _fits(cache)))
        _run(["cmake", build_dir, *_configure_args()])
    jobs = os.environ.get("AMAX_TUNE_JOBS") or str(os.cpu_count() or 2)
    _run(["cmake", "--build", build_dir, "--target", "amax_tune_python_package", "-j", jobs], counter=True)
    _say("built in %.0f s" % (time.monotonic() - started))
    return build_dir / "python" / "amax_tune"


# ---- the wheel ----

def _tag():
    """The wheel tag of this interpreter: cp311-cp311-linux_x86_64."""
    impl = sys.implementation.name
    major, minor = sys.version_info[:2]
    if impl == "cpython":
        interp = abi = "cp%d%d" % (major, minor)
        if sysconfig.get_config_var("Py_GIL_DISABLED"):
            abi += "t"
    else:
        interp = "%s%d%d" % ({"pypy": "pp"}.get(impl, impl), major, minor)
        abi = (sysconfig.get_config_var("SOABI") or "none").replace("-", "_").replace(".", "_")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (interp, abi, platform)


def _metadata():
    req = _requirements()
    return "\n".join([
        "Metadata-Version: 2.1",
        "Name: amax-tune",
        "Version: %s" % _version(),
        "Summary: amax = max|x| of GPU tensors with autotuned kernels: PyTorch custom ops, torch.compile, CUDA graphs",
        "Requires-Python: >=%s" % req.dotted(req.PYTHON_MIN),
        "Provides-Extra: torch",
        'Requires-Dist: torch>=%s; extra == "torch"' % req.dotted(req.TORCH_MIN),
        "", ""])


def _dist_info():
    return "%s-%s.dist-info" % (DIST, _version())


def _wheel_file():
    return "Wheel-Version: 1.0\nGenerator: amax_tune_build\nRoot-Is-Purelib: false\nTag: %s\n" % _tag()


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = Path(metadata_directory) / _dist_info()
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(_metadata())
    (d / "WHEEL").write_text(_wheel_file())
    return d.name


def _package_files(built):
    """[(path in the wheel, file on disk)]: the Python sources, the extension for this interpreter,
    libamax_tune under its SONAME, the database."""
    files = [("amax_tune/" + p.name, p) for p in sorted((HERE / "amax_tune").glob("*.py"))]
    ext = built / ("_C" + sysconfig.get_config_var("EXT_SUFFIX"))
    if not ext.is_file():
        sys.exit("amax_tune build: %s was not built (the build tree's Python differs from %s? set "
                 "AMAX_TUNE_BUILD_DIR to a fresh directory)" % (ext, sys.executable))
    files.append(("amax_tune/" + ext.name, ext))
    fields = built / ("_torch_fields" + sysconfig.get_config_var("EXT_SUFFIX"))  # where torch's headers were found
    if fields.is_file():
        files.append(("amax_tune/" + fields.name, fields))
    libs = sorted(built.glob("libamax_tune.so*"))
    if not libs:
        sys.exit("amax_tune build: %s holds no libamax_tune.so.*" % built)
    files += [("amax_tune/" + p.name, p) for p in libs]
    db = built / "data" / "system.db"
    if db.is_file():
        files.append(("amax_tune/data/system.db", db))
    return files


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    built = build_package_tree()
    name = "%s-%s-%s.whl" % (DIST, _version(), _tag())
    path = Path(wheel_directory) / name
    info = _dist_info()
    record = []

    def add(zf, arcname, data, mode=0o644):
        zi = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.external_attr = (0o100000 | mode) << 16
        zf.writestr(zi, data, compresslevel=1)  # seconds matter more than bytes (libamax_tune: ~30 MB with debug info)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    with zipfile.ZipFile(path, "w") as zf:
        for arcname, src in _package_files(built):
            add(zf, arcname, src.read_bytes(), 0o755 if ".so" in src.name else 0o644)
        add(zf, info + "/METADATA", _metadata().encode())
        add(zf, info + "/WHEEL", _wheel_file().encode())
        add(zf, info + "/top_level.txt", b"amax_tune\n")
        record.append(info + "/RECORD,,")
        zf.writestr(zipfile.ZipInfo(info + "/RECORD", date_time=(2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    _say("wrote %s" % name)
    return name
