#!/usr/bin/env python3
"""amax-tune from Python against torch, in one process with the C++ bench's protocol: device
events around batches of back-to-back calls lasting >= 200 us, cold inputs (each call of a batch
reads another slice; the slices lie spread over a region of several GiB and together exceed 5x the
L2), the median of 15 interleaved rounds. Results are checked bit for bit against torch first.

Contenders, per (dtype, n): ``amax_tune.Context.compute`` on precomputed pointers (the binding's
floor), ``amax_tune.amax(x)`` (a new 0-d output per call, as a user calls it),
``amax_tune.amax(x, out=o)`` (a preallocated output), ``torch.empty`` of a 0-d fp32 tensor (the
cost of a new result, which amax pays and out= does not; host time only), ``torch.amax(x.abs())`` and
``torch.linalg.vector_norm(x, inf)``; for lists of tensors: a loop of ``amax_tune.amax`` (or
``amax_tune.amax_multi`` where it exists) against ``torch._foreach_norm(xs, inf)``. Per call: the
device time (events) and the host time of issuing it (perf_counter around the batch's launches,
which a launch queue of this depth does not throttle).

usage: python3 python/bench/bench_torch.py [-o OUT.csv] [--rounds 15] [--region-gib 4] [--quick]
Prints a table and the target line (>= 1.5x the faster torch contender at every size <= 16 MB),
for amax(x) and for amax(x, out=o).
"""
import argparse
import csv
import math
import statistics
import sys
import time

import torch

import amax_tune

INF = float("inf")


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
    multi = getattr(amax_tune, "amax_multi", None)
    c = {"amax_tune_loop": lambda xs: [amax_tune.amax(x) for x in xs],
         "torch_foreach_norm": lambda xs: torch._foreach_norm(xs, INF)}
    if multi is not None:
        c["amax_tune_multi"] = multi
    return c


def one_batch(fn, inputs, start, k):
    """(device us per call, host us per call) of k back-to-back calls on inputs[start:]..."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    m = len(inputs)
    t0 = time.perf_counter()
    a.record()
    for i in range(k):
        fn(inputs[(start + i) % m])
    b.record()
    t1 = time.perf_counter()
    b.synchronize()
    return 1000.0 * a.elapsed_time(b) / k, 1e6 * (t1 - t0) / k


def measure(fns, inputs, rounds):
    """{name: (device samples, host samples, k)} with rounds interleaved over the contenders."""
    ks, pos = {}, 0
    for name, fn in fns.items():  # warm-up and batch length: >= 200 us of device time
        one_batch(fn, inputs, 0, 3)
        per_call, _ = one_batch(fn, inputs, 3, 20)
        ks[name] = max(20, min(5000, math.ceil(200.0 / max(per_call, 1e-3))))
    samples = {name: ([], []) for name in fns}
    for r in range(rounds):
        names = list(fns)
        names = names[r % len(names):] + names[:r % len(names)]  # rotate the order per round
        for name in names:
            dev, host = one_batch(fns[name], inputs, pos, ks[name])
            pos += ks[name]
            samples[name][0].append(dev)
            samples[name][1].append(host)
    return {name: (d, h, ks[name]) for name, (d, h) in samples.items()}


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", help="CSV file of every (dtype, n, contender) row")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--region-gib", type=float, default=4.0, help="size of the region inputs rotate over")
    ap.add_argument("--max-exp", type=int, default=28, help="largest size: 2^max_exp elements")
    ap.add_argument("--quick", action="store_true", help="3 rounds, sizes to 2^22 (a smoke test)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.max_exp = 3, 22
    if not torch.cuda.is_available():
        sys.exit("bench_torch: torch sees no CUDA device")
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    l2 = props.L2_cache_size
    print("bench_torch: %s, torch %s, amax_tune %s, L2 %d MiB, %d rounds, region %.1f GiB"
          % (props.name, torch.__version__, amax_tune.__version__, l2 >> 20, args.rounds, args.region_gib))
    out = torch.empty((), dtype=torch.float32, device="cuda")
    rows, summary = [], []
    t_start = time.time()
    for dtype in (torch.float32, torch.bfloat16):
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
            for name, (d, h, k) in res.items():
                q1, m, q3 = quartiles(d)
                med[name] = m
                rows.append({"kind": "tensor", "dtype": str(dtype).replace("torch.", ""), "n": n, "tensors": 1,
                             "bytes": n * esize, "contender": name, "median_us": "%.3f" % m, "q1_us": "%.3f" % q1,
                             "q3_us": "%.3f" % q3, "host_us": "%.3f" % statistics.median(h), "batch": k,
                             "samples": len(d), "inputs": len(inputs)})
            host = {name: statistics.median(h) for name, (d, h, k) in res.items()}
            best_torch = min(med["torch_amax_abs"], med["torch_vector_norm"])
            summary.append((dtype, n, n * esize, med, host, best_torch / med["amax_tune"],
                            best_torch / med["amax_tune_out"]))
        # lists of 8 tensors: the per-tensor loop (or amax_multi) against torch._foreach_norm
        for e in (12, 16, 20):
            n = 1 << e
            singles = cold_slices(region, n, l2)
            lists = [singles[i:i + 8] for i in range(0, len(singles) - 7, 8)]
            fns = list_contenders()
            res = measure(fns, lists, args.rounds)
            for name, (d, h, k) in res.items():
                q1, m, q3 = quartiles(d)
                rows.append({"kind": "list", "dtype": str(dtype).replace("torch.", ""), "n": n, "tensors": 8,
                             "bytes": 8 * n * esize, "contender": name, "median_us": "%.3f" % m, "q1_us": "%.3f" % q1,
                             "q3_us": "%.3f" % q3, "host_us": "%.3f" % statistics.median(h), "batch": k,
                             "samples": len(d), "inputs": len(lists)})
        del region
        torch.cuda.empty_cache()

    print("\nus per call (device events); speedup = the faster torch contender / amax_tune.amax; host = us "
          "of host time per call (raw: the C call alone; empty: torch.empty of the 0-d result alone)")
    print("%-9s %10s %10s %9s %9s %11s %12s %9s %9s %9s %9s %9s %9s %10s" % (
        "dtype", "n", "bytes", "amax", "out=", "amax(abs)", "vector_norm", "speedup", "out= sp.", "host raw",
        "host amax", "host abs", "host norm", "host empty"))
    for dtype, n, nbytes, med, host, speedup, speedup_out in summary:
        print("%-9s %10d %10d %9.2f %9.2f %11.2f %12.2f %8.2fx %8.2fx %9.2f %9.2f %9.2f %9.2f %10.2f" % (
            str(dtype).replace("torch.", ""), n, nbytes, med["amax_tune"], med["amax_tune_out"], med["torch_amax_abs"],
            med["torch_vector_norm"], speedup, speedup_out, host["amax_tune_raw"], host["amax_tune"],
            host["torch_amax_abs"], host["torch_vector_norm"], host["torch_empty"]))
    lists = [r for r in rows if r["kind"] == "list"]
    if lists:
        print("\nlists of 8 tensors (us per list)%s:" % (
            "" if getattr(amax_tune, "amax_multi", None) else "; amax_multi is not here yet (the C API has no "
            "multi-tensor call, issue 12): amax_tune_loop is one amax call per tensor, 8 launches against "
            "torch._foreach_norm's one"))
        for r in lists:
            print("  %-9s n=%-8d %-20s %9s us  host %s us" % (r["dtype"], r["n"], r["contender"], r["median_us"],
                                                              r["host_us"]))
    small = [s for s in summary if s[2] <= 16 << 20]
    worst = min(small, key=lambda s: s[5])
    print("\ntarget >= 1.5x the faster torch contender at every size <= 16 MB: %s (worst %.2fx: %s n=%d)"
          % ("met" if worst[5] >= 1.5 else "missed", worst[5], str(worst[0]).replace("torch.", ""), worst[1]))
    worst_out = min(small, key=lambda s: s[6])
    print("the same with out= (a preallocated result, e.g. an amax history; no torch.empty per call): %s "
          "(worst %.2fx: %s n=%d)" % ("met" if worst_out[6] >= 1.5 else "missed", worst_out[6],
                                      str(worst_out[0]).replace("torch.", ""), worst_out[1]))
    print("bench_torch: %.0f s" % (time.time() - t_start))
    if args.output:
        with open(args.output, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print("bench_torch: wrote %d rows to %s" % (len(rows), args.output))


if __name__ == "__main__":
    main()
