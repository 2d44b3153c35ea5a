#!/usr/bin/env python3
"""amax-tune from Python against torch, in one process with the C++ bench's protocol: device
events around batches of back-to-back calls lasting >= 200 us, cold inputs (each call of a batch
reads another slice; the slices lie spread over a region of several GiB and together exceed 5x the
L2), the median of 15 interleaved rounds. Results are checked bit for bit against torch first.

Contenders, per (dtype, n): ``amax_tune.Context.compute`` on precomputed pointers (the binding's
floor), ``amax_tune.amax(x)`` (a new 0-d output per call, as a user calls it),
``amax_tune.amax(x, out=o)`` (a preallocated output), ``torch.empty`` of a 0-d fp32 tensor (the
cost of a new result, which amax pays and out= does not; host time only), ``torch.amax(x.abs())`` and
``torch.linalg.vector_norm(x, inf)``; for lists of 8 tensors: a loop of ``amax_tune.amax`` and
``amax_tune.amax_multi`` against ``torch._foreach_norm(xs, inf)``. Per call, three numbers (DESIGN.md
section 5, docs/tuning.md): the GPU time (device events around a batch held behind the C++ bench's timing
gate until the host has enqueued all of it: nvbench's blocking kernel, measure/include/amax/measure.hpp Gate,
loaded from the build tree's python/bench/_amax_gate module; what a CUDA graph or a GPU-bound training
step pays; columns gpu_us, gpu_q1_us, gpu_q3_us), the host-inclusive time (events around a batch
enqueued back to back while the GPU runs it: what an eager loop from Python pays; columns median_us,
q1_us, q3_us, and the Python targets of DESIGN.md section 7) and the host time of issuing it (perf_counter around the
batch's
launches: host_us). A gated batch whose gate timed out (the host took longer than the timeout to enqueue
it, or the launch queue filled up) is never used: the batch is retried with half as many calls, and a
contender whose single call still times out has no GPU time (an empty gpu_us).

Groups (--no-groups leaves them out): per group of N tensors of n elements (500 x 4096
fp32, 4096 x 16 Ki bf16, 64 x 1 Mi, 128 x 1 Mi, 512 x 64 Ki, 8 x 16 Mi bf16, 64 x 4096 fp32),
``amax_tune.amax_multi(xs)``, ``amax_multi(xs, out=o)``, a Python loop of ``amax_tune.amax(x,
out=o[i])`` and ``torch._foreach_norm(xs, inf)``, cold (each call reads another copy of the group;
the copies together exceed 5x the L2 where memory allows), each checked bit for bit against torch
(per tensor ``t.float().abs().amax()``; foreach_norm's results compared as float32) before timing.
Also the host time of the list itself: the package reading the tensors' fields (torch's Python
API) and the extension building the C array (timeit). Rows go to the same CSV with kind "group"
and the group in the ``group`` column; the table prints the speedup over foreach_norm and the
host-cost targets for the lists of 500 and 4096 tensors as met or missed.

usage: PYTHONPATH=BUILD/python python3 python/bench/bench_torch.py [-o OUT.csv] [--rounds 15]
       [--region-gib 4] [--quick] [--no-groups | --only-groups] [--gate-dir DIR | --no-gpu-time]
(the gate module is built by `cmake --build BUILD --target amax_tune_bench_gate` into BUILD/python/bench,
found there from the amax_tune package's location or named by --gate-dir)
Prints the tables and the targets (DESIGN.md section 7), each met or missed with its worst case: amax(x) >= 1.2x
and amax(x, out=o) >= 1.5x torch.linalg.vector_norm(x, inf) at every size <= 16 MiB; amax_multi of
500 tensors <= 50 us and of 4096 tensors <= 300 us per call from Python.
"""
import argparse
import csv
import math
import statistics
import sys
import time
import timeit

import torch

import amax_tune
from gpu_time import gated_calls, load_gate, one_batch

INF = float("inf")
FIELDS = ["kind", "dtype", "n", "tensors", "bytes", "contender", "median_us", "q1_us", "q3_us", "host_us", "batch",
          "samples", "inputs", "group", "gpu_us", "gpu_q1_us", "gpu_q3_us", "gpu_batch"]
#: (tensors, elements each, dtype) of the groups section
GROUPS = [(500, 4096, torch.float32), (4096, 16384, torch.bfloat16), (64, 1 << 20, torch.bfloat16),
          (128, 1 << 20, torch.bfloat16), (512, 65536, torch.bfloat16), (8, 16 << 20, torch.bfloat16),
          (64, 4096, torch.float32)]
#: the groups of --quick: the two of GROUPS of 64 tensors each
QUICK_GROUPS = [(64, 4096, torch.float32), (64, 1 << 20, torch.bfloat16)]


def contenders(out):
    ctx = amax_tune.context(out.get_device())
    codes = {torch.float32: amax_tune.DTYPE_FP32, torch.float16: amax_tune.DTYPE_FP16,
             torch.bfloat16: amax_tune.DTYPE_BF16}
    raw_stream = torch.cuda.current_stream(out.device).cuda_stream
    out_ptr = out.data_ptr()
    dev = out.device
    return {
        # the cost of a new result alone (what amax pays over out=): torch.empty of a 0-d fp32 tensor
        "torch_empty": lambda x: torch.empty((), dtype=torch.float32, device=dev),
        # the binding's floor: the C call alone (pointers and the stream handle precomputed)
        "amax_tune_raw": lambda x: ctx.compute(x.data_ptr(), codes[x.dtype], x.numel(), out_ptr, raw_stream),
        "amax_tune": lambda x: amax_tune.amax(x),
        "amax_tune_out": lambda x: amax_tune.amax(x, out=out),
        "torch_amax_abs": lambda x: torch.amax(x.abs()),
        "torch_vector_norm": lambda x: torch.linalg.vector_norm(x, INF),
    }


def list_contenders():
    return {"amax_tune_loop": lambda xs: [amax_tune.amax(x) for x in xs],
            "torch_foreach_norm": lambda xs: torch._foreach_norm(xs, INF),
            "amax_tune_multi": amax_tune.amax_multi}


GATE = None


def measure(fns, inputs, rounds):
    """{name: (host-inclusive samples, host samples, k, GPU-time samples, gated k)} with rounds
    interleaved over the contenders: per round one back-to-back batch of k calls (host-inclusive)
    and, with the gate loaded, one gated batch of gated k calls (GPU time) per contender."""
    ks, kgs, pos = {}, {}, 0
    for name, fn in fns.items():  # warm-up and batch length: >= 200 us of device time
        one_batch(fn, inputs, 0, 3)
        per_call, _ = one_batch(fn, inputs, 3, 20)
        ks[name] = max(20, min(5000, math.ceil(200.0 / max(per_call, 1e-3))))
        kgs[name] = gated_calls(fn, inputs, ks[name], GATE) if GATE is not None else 0
    samples = {name: ([], [], []) for name in fns}
    for r in range(rounds):
        names = list(fns)
        names = names[r % len(names):] + names[:r % len(names)]  # rotate the order per round
        for name in names:
            dev, host = one_batch(fns[name], inputs, pos, ks[name])
            pos += ks[name]
            samples[name][0].append(dev)
            samples[name][1].append(host)
            if kgs[name]:
                g = one_batch(fns[name], inputs, pos, kgs[name], GATE)
                pos += kgs[name]
                if g is not None:  # a timed-out gate: no sample this round
                    samples[name][2].append(g[0])
    return {name: (d, h, ks[name], g, kgs[name]) for name, (d, h, g) in samples.items()}


def gpu_fields(g, kg):
    """The CSV's GPU-time columns of GPU-time samples g (empty without samples)."""
    if not g:
        return {"gpu_us": "", "gpu_q1_us": "", "gpu_q3_us": "", "gpu_batch": kg}
    q1, m, q3 = quartiles(g)
    return {"gpu_us": "%.3f" % m, "gpu_q1_us": "%.3f" % q1, "gpu_q3_us": "%.3f" % q3, "gpu_batch": kg}


def gpu_median(g):
    return statistics.median(g) if g else float("nan")


def quartiles(v):
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return q[0], statistics.median(v), q[2]


def cold_slices(region, n, l2_bytes, max_slices=200000):
    """Views of n elements spread over the whole region, together > 5x L2 (or as many as fit)."""
    esize = region.element_size()
    stride = (n + 255) // 256 * 256
    fit = region.numel() // stride
    want = max(2, min(fit, max_slices, (5 * l2_bytes) // (stride * esize) + 2))
    spacing = region.numel() // want // 256 * 256
    spacing = max(spacing, stride)
    return [region[i * spacing:i * spacing + n] for i in range(want) if i * spacing + n <= region.numel()]


def bits(t):
    return int(t.reshape(()).float().view(torch.int32).item()) & 0xFFFFFFFF


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def elements(n):
    for unit, shift in (("Mi", 20), ("Ki", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def group_copies(count, n, dtype, l2, max_bytes):
    """Copies of a group (count contiguous views of n elements, one buffer per copy) to rotate over:
    together more than 5x the L2 where max_bytes allows, at least 2."""
    group_bytes = count * n * torch.tensor([], dtype=dtype).element_size()
    want = max(2, -(-5 * l2 // group_bytes) + 1)
    want = max(2, min(want, max_bytes // group_bytes))
    return [list(torch.randn(count * n, device="cuda", dtype=dtype).view(count, n).unbind(0)) for _ in range(want)]


def group_reference(xs):
    """torch alone: per tensor the fp32 amax (0 for an empty one), as int32 bits."""
    zero = torch.zeros((), device="cuda")
    return torch.stack([t.float().abs().amax() if t.numel() else zero for t in xs]).view(torch.int32)


def group_contenders(count):
    """{name: (fn(xs), result(value returned) -> 1-d fp32 tensor)} of the groups section."""
    out = torch.empty(count, device="cuda")
    loop_out = torch.empty(count, device="cuda")
    loop_outs = list(loop_out.unbind(0))  # 0-d views, made once
    amax, multi = amax_tune.amax, amax_tune.amax_multi

    def loop(xs):
        for x, o in zip(xs, loop_outs):
            amax(x, out=o)

    return {
        "amax_multi": (multi, lambda r: r),
        "amax_multi_out": (lambda xs: multi(xs, out=out), lambda r: out),
        "amax_loop_out": (loop, lambda r: loop_out),
        "torch_foreach_norm": (lambda xs: torch._foreach_norm(xs, INF), lambda r: torch.stack(r).float()),
    }


def host_breakdown(xs):
    """(us of the package reading the list's fields through torch's Python API, us of the extension
    building the C array from those columns, us of the C++ reader amax_tune._torch_fields building
    the records: None where it is not loaded), best of timeit repeats; Nones where the package's
    internals differ."""
    try:
        from amax_tune import _C, _torch
        fields = _torch._multi_fields
        _, _, ptrs, counts, codes = fields(xs, "bench", True)
    except (ImportError, AttributeError, TypeError):
        return None, None, None
    fns = [lambda: fields(xs, "bench", True), lambda: _C._tensor_list(ptrs, counts, codes)]
    reader = getattr(_torch, "_tensor_list", None)
    if reader is not None:
        fns.append(lambda: reader(xs))
    res = []
    for fn in fns:
        t = timeit.Timer(fn)
        k, _ = t.autorange()
        res.append(1e6 * min(t.repeat(5, k)) / k)
    return tuple(res) + (None,) * (3 - len(res))


def bench_groups(args, l2, rows):
    """The groups section (QUICK_GROUPS with --quick, else GROUPS): returns the table's lines' data."""
    table = []
    for count, n, dtype in QUICK_GROUPS if args.quick else GROUPS:
        label = "%dx%s:%s" % (count, elements(n), dtype_name(dtype))
        free, _ = torch.cuda.mem_get_info()
        copies = group_copies(count, n, dtype, l2, free // 2)
        want = group_reference(copies[0])
        fns = group_contenders(count)
        for name, (fn, result) in fns.items():  # equal results first
            got = result(fn(copies[0])).view(torch.int32)
            if not torch.equal(got, want):
                i = int((got != want).nonzero()[0].item())
                sys.exit("bench_torch: %s on group %s: tensors[%d] gives %#x, torch %#x" % (
                    name, label, i, int(got[i].item()) & 0xFFFFFFFF, int(want[i].item()) & 0xFFFFFFFF))
        res = measure({name: fn for name, (fn, _) in fns.items()}, copies, args.rounds)
        med, host, gpu = {}, {}, {}
        group_bytes = count * n * copies[0][0].element_size()
        for name, (d, h, k, g, kg) in res.items():
            q1, m, q3 = quartiles(d)
            med[name], host[name], gpu[name] = m, statistics.median(h), gpu_median(g)
            rows.append({"kind": "group", "dtype": dtype_name(dtype), "n": n, "tensors": count, "bytes": group_bytes,
                         "contender": name, "median_us": "%.3f" % m, "q1_us": "%.3f" % q1, "q3_us": "%.3f" % q3,
                         "host_us": "%.3f" % host[name], "batch": k, "samples": len(d), "inputs": len(copies),
                         "group": label, **gpu_fields(g, kg)})
        fields_us, build_us, cpp_us = host_breakdown(copies[0])
        table.append((label, count, n, dtype, group_bytes, len(copies), med, host, fields_us, build_us, cpp_us, gpu))
        del copies
        torch.cuda.empty_cache()
    return table


def print_groups(table):
    def us(v):
        return "-" if v is None else "%.2f" % v

    print("\ngroups: us per call, host-inclusive (device events around back-to-back calls, cold: copies rotated); "
          "speedup = torch._foreach_norm / amax_multi; GPU = GPU time (gated batches) of amax_multi / foreach_norm; host = us of host time per call; list = the list's fields through torch's Python API (py) "
          "/ the extension building the C array from them (C) / the C++ reader amax_tune._torch_fields (C++, what "
          "amax_multi uses where it is loaded; - where not) (timeit)")
    print("%-20s %10s %6s %10s %10s %12s %13s %9s %9s %10s %10s %9s %10s %9s %9s %9s" % (
        "group", "bytes", "copies", "amax_multi", "out=", "loop(out=)", "foreach_norm", "speedup", "out= sp.",
        "GPU multi", "GPU norm", "GPU sp.", "host multi", "list py", "list C", "list C++"))
    for label, count, n, dtype, nbytes, ncopies, med, host, fields_us, build_us, cpp_us, gpu in table:
        f = med["torch_foreach_norm"]
        print("%-20s %10d %6d %10.2f %10.2f %12.2f %13.2f %8.1fx %8.1fx %10.2f %10.2f %8.2fx %10.2f %9s %9s %9s" % (
            label, nbytes, ncopies, med["amax_multi"], med["amax_multi_out"], med["amax_loop_out"], f,
            f / med["amax_multi"], f / med["amax_multi_out"], gpu["amax_multi"], gpu["torch_foreach_norm"],
            gpu["torch_foreach_norm"] / gpu["amax_multi"], host["amax_multi"], us(fields_us), us(build_us),
            us(cpp_us)))
    # the host-cost targets (DESIGN.md section 7): amax_multi from Python, back-to-back, per call
    for label, count, n, dtype, nbytes, ncopies, med, host, fields_us, build_us, cpp_us, gpu in table:
        goal = {500: 50.0, 4096: 300.0}.get(count)
        if goal is not None:
            t = med["amax_multi"]
            print("target amax_multi of %d tensors (%s) <= %.0f us from Python: %s (%.2f us per call; out= %.2f us; "
                  "host %.2f us; the list's fields: C++ reader %s us, Python API %s us)" % (
                      count, label, goal, "met" if t <= goal else "missed", t, med["amax_multi_out"],
                      host["amax_multi"], us(cpp_us), us(fields_us)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", help="CSV file of every (dtype, n, contender) row")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--region-gib", type=float, default=4.0, help="size of the region inputs rotate over")
    ap.add_argument("--max-exp", type=int, default=28, help="largest size: 2^max_exp elements")
    ap.add_argument("--quick", action="store_true", help="3 rounds, sizes to 2^22, two groups (a smoke test)")
    ap.add_argument("--groups", action=argparse.BooleanOptionalAction, default=True,
                    help="the groups section: amax_multi against torch._foreach_norm and a loop of amax (default on)")
    ap.add_argument("--only-groups", action="store_true", help="the groups section alone")
    ap.add_argument("--gate-dir", help="directory of the _amax_gate module (default: BUILD/python/bench beside the "
                    "imported amax_tune package)")
    ap.add_argument("--no-gpu-time", action="store_true", help="no gated batches: host-inclusive times only")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.max_exp = 3, 22
    if not torch.cuda.is_available():
        sys.exit("bench_torch: torch sees no CUDA device")
    dev = torch.cuda.current_device()
    global GATE
    GATE = None if args.no_gpu_time else load_gate(args.gate_dir, "bench_torch")
    props = torch.cuda.get_device_properties(dev)
    l2 = props.L2_cache_size
    print("bench_torch: %s, torch %s, amax_tune %s, L2 %d MiB, %d rounds, region %.1f GiB, %s"
          % (props.name, torch.__version__, amax_tune.__version__, l2 >> 20, args.rounds, args.region_gib,
             "GPU time behind the gate (timeout %.0f ms)" % GATE.timeout_ms if GATE else "host-inclusive only"))
    out = torch.empty((), dtype=torch.float32, device="cuda")
    rows, summary = [], []
    t_start = time.time()
    for dtype in () if args.only_groups else (torch.float32, torch.bfloat16):
        esize = torch.tensor([], dtype=dtype).element_size()
        region = torch.randn(int(args.region_gib * (1 << 30)) // esize, dtype=dtype, device="cuda")
        for e in range(10, args.max_exp + 1, 2):
            n = 1 << e
            inputs = cold_slices(region, n, l2)
            x = inputs[0]
            want = bits(torch.amax(x.abs()))
            for name, fn in contenders(out).items():  # equal results first
                if name == "torch_empty":
                    continue  # no result: the cost of allocating one
                r = fn(x)
                got = bits(out if r is None else r)
                if got != want:
                    sys.exit("bench_torch: %s gives %#x, torch.amax(x.abs()) %#x (%s n=%d)" % (name, got, want, dtype, n))
            res = measure(contenders(out), inputs, args.rounds)
            med = {}
            for name, (d, h, k, g, kg) in res.items():
                q1, m, q3 = quartiles(d)
                med[name] = m
                rows.append({"kind": "tensor", "dtype": str(dtype).replace("torch.", ""), "n": n, "tensors": 1,
                             "bytes": n * esize, "contender": name, "median_us": "%.3f" % m, "q1_us": "%.3f" % q1,
                             "q3_us": "%.3f" % q3, "host_us": "%.3f" % statistics.median(h), "batch": k,
                             "samples": len(d), "inputs": len(inputs), **gpu_fields(g, kg)})
            host = {name: statistics.median(h) for name, (d, h, k, g, kg) in res.items()}
            gpu = {name: gpu_median(g) for name, (d, h, k, g, kg) in res.items()}
            best_torch = min(med["torch_amax_abs"], med["torch_vector_norm"])
            summary.append((dtype, n, n * esize, med, host, best_torch / med["amax_tune"],
                            best_torch / med["amax_tune_out"], gpu))
        # lists of 8 tensors: the per-tensor loop and amax_multi against torch._foreach_norm
        for e in (12, 16, 20):
            n = 1 << e
            singles = cold_slices(region, n, l2)
            lists = [singles[i:i + 8] for i in range(0, len(singles) - 7, 8)]
            fns = list_contenders()
            res = measure(fns, lists, args.rounds)
            for name, (d, h, k, g, kg) in res.items():
                q1, m, q3 = quartiles(d)
                rows.append({"kind": "list", "dtype": str(dtype).replace("torch.", ""), "n": n, "tensors": 8,
                             "bytes": 8 * n * esize, "contender": name, "median_us": "%.3f" % m, "q1_us": "%.3f" % q1,
                             "q3_us": "%.3f" % q3, "host_us": "%.3f" % statistics.median(h), "batch": k,
                             "samples": len(d), "inputs": len(lists), **gpu_fields(g, kg)})
        del region
        torch.cuda.empty_cache()
    groups = bench_groups(args, l2, rows) if args.groups or args.only_groups else []

    if summary:
        print_tensors(summary, rows)
    if groups:
        print_groups(groups)
    print("bench_torch: %.0f s" % (time.time() - t_start))
    if args.output:
        with open(args.output, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
        print("bench_torch: wrote %d rows to %s" % (len(rows), args.output))


def print_tensors(summary, rows):
    print("\nus per call, host-inclusive (device events around back-to-back calls); speedup = the faster torch "
          "contender / amax_tune.amax; GPU = GPU time (gated batches) of amax_tune.amax(x, out=o), "
          "torch.amax(x.abs()), torch.linalg.vector_norm(x, inf), GPU sp. = the faster torch / amax(out=); host = us of "
          "host time per call (raw: the C call alone; empty: torch.empty of the 0-d result alone)")
    print("%-9s %10s %10s %9s %9s %11s %12s %9s %9s %9s %9s %9s %8s %9s %9s %9s %9s %10s" % (
        "dtype", "n", "bytes", "amax", "out=", "amax(abs)", "vector_norm", "speedup", "out= sp.", "GPU out=",
        "GPU abs", "GPU norm", "GPU sp.", "host raw", "host amax", "host abs", "host norm", "host empty"))
    for dtype, n, nbytes, med, host, speedup, speedup_out, gpu in summary:
        best = min(gpu["torch_amax_abs"], gpu["torch_vector_norm"])
        print("%-9s %10d %10d %9.2f %9.2f %11.2f %12.2f %8.2fx %8.2fx %9.2f %9.2f %9.2f %7.2fx %9.2f %9.2f %9.2f "
              "%9.2f %10.2f" % (
            str(dtype).replace("torch.", ""), n, nbytes, med["amax_tune"], med["amax_tune_out"], med["torch_amax_abs"],
            med["torch_vector_norm"], speedup, speedup_out, gpu["amax_tune_out"], gpu["torch_amax_abs"],
            gpu["torch_vector_norm"], best / gpu["amax_tune_out"], host["amax_tune_raw"], host["amax_tune"],
            host["torch_amax_abs"], host["torch_vector_norm"], host["torch_empty"]))
    lists = [r for r in rows if r["kind"] == "list"]
    if lists:
        print("\nlists of 8 tensors (us per list, host-inclusive; GPU time; amax_tune_loop: one amax call per "
              "tensor, amax_tune_multi: amax_multi):")
        for r in lists:
            print("  %-9s n=%-8d %-20s %9s us  GPU %9s us  host %s us" % (
                r["dtype"], r["n"], r["contender"], r["median_us"], r["gpu_us"] or "-", r["host_us"]))
    # the targets (DESIGN.md section 7), against torch.linalg.vector_norm(x, inf), back-to-back from Python, this run
    small = [s for s in summary if s[2] <= 16 << 20]
    for what, key, goal in (("amax(x)", "amax_tune", 1.2), ("amax(x, out=o)", "amax_tune_out", 1.5)):
        ratios = [(s[3]["torch_vector_norm"] / s[3][key], s) for s in small]
        worst, s = min(ratios, key=lambda r: r[0])
        print("target %s >= %.1fx torch.linalg.vector_norm(x, inf) at every size <= 16 MiB: %s (worst %.2fx: %s "
              "n=%d; %d of %d sizes met)" % (what, goal, "met" if worst >= goal else "missed", worst,
                                              str(s[0]).replace("torch.", ""), s[1],
                                              sum(r >= goal for r, _ in ratios), len(ratios)))
    # GPU time: what a CUDA graph or a GPU-bound step pays, amax(x, out=o) against torch's faster contender
    gpu_ratios = [(min(s[7]["torch_amax_abs"], s[7]["torch_vector_norm"]) / s[7]["amax_tune_out"], s) for s in summary
                  if not math.isnan(s[7]["amax_tune_out"])]
    if gpu_ratios:
        worst, s = min(gpu_ratios, key=lambda r: r[0])
        geo = math.exp(sum(math.log(r) for r, _ in gpu_ratios) / len(gpu_ratios))
        print("GPU time: amax(x, out=o) against the faster of torch.amax(x.abs()) and vector_norm(x, inf): geometric "
              "mean %.2fx over %d sizes, worst %.2fx (%s n=%d)" % (geo, len(gpu_ratios), worst,
                                                                  str(s[0]).replace("torch.", ""), s[1]))


if __name__ == "__main__":
    main()
