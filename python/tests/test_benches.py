"""CTest python.benches (label gpu): python/bench/bench_torch.py, bench_float8.py and bench_quantize.py in --quick mode,
each in its own interpreter, from the build tree's package and from a ``pip install --target`` copy
of it (offline, reusing BUILD) with ``--gate-dir BUILD/python/bench``. Each run must exit 0, and the
timing gate must have measured: bench_torch's CSV has a GPU time for every amax_tune.amax(x, out=o)
row, bench_float8's table one for the fused calls, bench_quantize's CSV one for torch's eager quantize at every size
(and amax_tune.quantize's bytes equal torch's, or the run exits 1). A run killed by a signal is then localised: the
gate alone, after torch, after torch and amax_tune, each in a fresh interpreter.

usage: python3 test_benches.py BUILD   (exit 77 = skipped: no torch with a device, or the package's
torch calls unavailable with this torch; the reason is printed)
"""
import csv
import os
import signal
import subprocess
import sys
import tempfile

BUILD = os.path.abspath(sys.argv[1])
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(SRC, "python", "bench")
GATE_DIR = os.path.join(BUILD, "python", "bench")
TIMEOUT_S = 240


def skip(why):
    print("SKIP: %s" % why)
    sys.exit(77)


def fail(why):
    print("FAIL: %s" % why)
    sys.exit(1)


def run(what, args, pythonpath):
    """Runs python args with PYTHONPATH=pythonpath; returns its output, failing (with the output and,
    for a signal, where the gate crashes) unless it exits 0."""
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-X", "faulthandler"] + args
    print("== %s: %s (PYTHONPATH=%s)" % (what, " ".join(cmd), pythonpath), flush=True)
    try:
        p = subprocess.run(cmd, env=env, cwd=BENCH, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        fail("%s: still running after %d s:\n%s" % (what, TIMEOUT_S, e.output or ""))
    print(p.stdout, flush=True)
    if p.returncode < 0:
        localise(pythonpath)
        fail("%s: killed by %s" % (what, signal.Signals(-p.returncode).name))
    if p.returncode != 0:
        fail("%s: exit status %d" % (what, p.returncode))
    return p.stdout


def localise(pythonpath):
    """Which construction of the timing gate crashes: alone, before torch, after torch, after torch and
    amax_tune; for the last, the symbols the gate module bound outside itself and the libraries it links."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([GATE_DIR, pythonpath]))
    gate = "import _amax_gate; g = _amax_gate.Gate(0, 1000.0); "
    for code in (gate, gate + "import torch; torch.cuda.init(); ", "import torch; torch.cuda.init(); " + gate,
                 "import torch, amax_tune; torch.cuda.init(); " + gate):
        p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code + "print('gate made')"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
        print("localise: %r -> exit %d\n%s" % (code, p.returncode, p.stdout[-2000:]), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-c", code], env=dict(env, LD_DEBUG="bindings",
                       LD_DEBUG_OUTPUT=os.path.join(tmp, "ld")), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=TIMEOUT_S)
        linked = ("/libc.so", "/libm.so", "/libstdc++.so", "/libgcc_s.so", "/libpython", "/python3", "/libfmt.so",
                  "/libspdlog.so", "/libcrypto.so", "/libamdhip64.so", "_amax_gate")
        for name in os.listdir(tmp):
            with open(os.path.join(tmp, name), errors="replace") as f:
                outside = [line.strip() for line in f if "binding file" in line
                           and "_amax_gate" in line.split(" to ")[0]
                           and not any(s in line.split(" to ")[-1].split(":")[0] for s in linked)]
            if outside:
                print("localise: %d bindings of _amax_gate to other libraries:%s" % (
                    len(outside), "".join("\n  " + line for line in outside[:60])), flush=True)


def check_torch_csv(path, what):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "tensor" and r["contender"] == "amax_tune_out"]
    if not rows:
        fail("%s: %s has no amax_tune_out rows" % (what, path))
    ungated = ["%s n=%s" % (r["dtype"], r["n"]) for r in rows if not r["gpu_us"]]
    if ungated:
        fail("%s: no GPU time (the gate measured nothing) for amax_tune.amax(x, out=o) at %s"
             % (what, ", ".join(ungated)))
    print("%s: GPU time at all %d amax_tune.amax(x, out=o) sizes" % (what, len(rows)))


def check_float8_table(out, what):
    # the table's line of llama3-8b: ... GPU torchao, GPU fsdp, GPU te_torch, GPU te_multi ("-" where none)
    lines = [line.split() for line in out.splitlines() if line.startswith("llama3-8b")]
    if len(lines) != 1:
        fail("%s: no table line for llama3-8b" % what)
    gpu_fsdp, gpu_te_multi = lines[0][-3], lines[0][-1]
    if gpu_fsdp == "-" or gpu_te_multi == "-":
        fail("%s: no GPU time for the fused calls (GPU fsdp %s, GPU te_multi %s)" % (what, gpu_fsdp, gpu_te_multi))
    print("%s: GPU time fsdp %s us, te_multi %s us" % (what, gpu_fsdp, gpu_te_multi))


def check_quantize_csv(path, what):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "tensor" and r["contender"] == "torch_eager"]
    if not rows:
        fail("%s: %s has no torch_eager rows" % (what, path))
    ungated = [r["n"] for r in rows if not r["gpu_us"]]
    if ungated:
        fail("%s: no GPU time for torch's eager quantize at n=%s" % (what, ", ".join(ungated)))
    print("%s: GPU time at all %d torch eager quantize sizes" % (what, len(rows)))


def benches(what, pythonpath, gate_args, tmp):
    csv_path = os.path.join(tmp, what.replace(" ", "_") + ".csv")
    run("bench_torch " + what, ["bench_torch.py", "--quick", "-o", csv_path] + gate_args, pythonpath)
    check_torch_csv(csv_path, "bench_torch " + what)
    check_float8_table(run("bench_float8 " + what, ["bench_float8.py", "--quick"] + gate_args, pythonpath),
                       "bench_float8 " + what)
    quantize_csv = os.path.join(tmp, what.replace(" ", "_") + "-quantize.csv")
    run("bench_quantize " + what, ["bench_quantize.py", "--quick", "-o", quantize_csv] + gate_args, pythonpath)
    check_quantize_csv(quantize_csv, "bench_quantize " + what)


def main():
    try:
        import torch
    except ImportError as e:
        skip("torch is not importable (%s)" % e)
    if not torch.cuda.is_available():
        skip("torch sees no CUDA device")
    sys.path.insert(0, os.path.join(BUILD, "python"))
    import amax_tune
    if amax_tune._torch is None:
        skip("the benches need the package's torch calls, unavailable here: %s" % amax_tune._torch_missing)
    if not os.path.isdir(GATE_DIR):
        fail("no %s: build the target amax_tune_bench_gate" % GATE_DIR)
    with tempfile.TemporaryDirectory() as tmp:
        benches("from the build tree", os.path.join(BUILD, "python"), [], tmp)
        site = os.path.join(tmp, "site")
        p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                            "--disable-pip-version-check", "--target", site, os.path.join(SRC, "python")],
                           env=dict(os.environ, AMAX_TUNE_BUILD_DIR=BUILD), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
        if p.returncode != 0:
            fail("pip install --target %s failed:\n%s" % (site, p.stdout[-3000:]))
        benches("from a pip-installed copy", site, ["--gate-dir", GATE_DIR], tmp)
    print("PASS: both benches ran to the end with GPU time, from the build tree and from an installed copy")


if __name__ == "__main__":
    main()
