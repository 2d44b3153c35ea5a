#!/usr/bin/env python3
"""FP8 current scaling's quantize from Python (the Python half of `amax-tune bench --quantize`):
torch eager and a torchao-style FSDP2 float8 step against amax_tune.quantize, with bench_torch.py's
protocol (device events around batches of back-to-back calls, cold inputs rotated over a region that
exceeds 5x the L2, medians of interleaved rounds; GPU time behind the C++ bench's timing gate and
host-inclusive time), identical FP8 bytes checked first.

Single tensors (bf16 -> float8_e4m3fn, 2^11 .. 2^25 elements by 4x):
  torch_eager  a = x.abs().max().float(); TransformerEngine's scale rule in fp32 (448 / a; 1 for an amax
               of 0 or Inf; FLT_MAX for an infinite quotient); q = (x.float() * s).clamp(-448, 448)
               .to(float8_e4m3fn); scale_inv = 1 / s
  amax_tune    amax_tune.quantize(x, torch.float8_e4m3fn) -> (q, scale_inv), where the package has it
Lists (bf16): the 224 linear weights of Llama 3 8B (bench_float8.py's shapes) and an MoE expert list
(64 experts x w1, w3 (1408 x 2048) and w2 (2048 x 1408), DeepSeek-V2-Lite's routed experts: 192 weights):
  torchao      torchao's FSDP2 precompute (precompute_float8_dynamic_scale_for_fsdp's formula:
               _foreach_norm(ws, inf), clamp(1e-12), 448 / amax in float64, float32), then per weight
               to_fp8_saturated(w.float() * scale)
  amax_tune    amax_tune.quantize(w, torch.float8_e4m3fn, rule="torchao") per weight, where the package
               has it (the scale agrees with torchao's: 448 / amax in float64 rounded to float32 is the
               correctly rounded float32 quotient that amax_tune computes)
The FP8 bytes and scale_inv of amax_tune must equal the torch contender's (else exit 1 naming the first
difference); without amax_tune.quantize only the torch contenders are timed and the comparison lines say
so.

usage: PYTHONPATH=BUILD/python python3 python/bench/bench_quantize.py [-o OUT.csv] [--rounds 15]
       [--region-gib 4] [--quick] [--gate-dir DIR | --no-gpu-time]
"""
import argparse
import csv
import math
import statistics
import sys

import torch

import amax_tune
import bench_torch
from bench_float8 import torchao_scales, weight_shapes, MODELS
from gpu_time import load_gate

F8 = torch.float8_e4m3fn
F8_MAX = torch.finfo(F8).max
FLT_MAX = torch.finfo(torch.float32).max
#: DeepSeek-V2-Lite's routed experts: 64 x (w1, w3: 1408 x 2048; w2: 2048 x 1408)
MOE_SHAPES = [s for _ in range(64) for s in ((1408, 2048), (1408, 2048), (2048, 1408))]
FIELDS = ["kind", "what", "n", "bytes", "contender", "median_us", "gpu_us", "host_us", "speedup", "speedup_basis"]


def te_scale(a):
    """TransformerEngine's compute_scale_from_amax in fp32 (epsilon 0, e4m3)."""
    s = torch.where((a == 0) | torch.isinf(a) | torch.isnan(a), torch.ones_like(a), torch.full_like(a, F8_MAX) / a)
    return torch.where(torch.isinf(s), torch.full_like(s, FLT_MAX), s)


def torch_eager(x):
    s = te_scale(x.abs().max().float())
    return (x.float() * s).clamp(-F8_MAX, F8_MAX).to(F8), torch.reciprocal(s)


def amax_tune_quantize(x):
    return amax_tune.quantize(x, F8)


def torchao_step(ws):
    scales = torchao_scales(ws)
    return [((w.float() * scales[i]).clamp(-F8_MAX, F8_MAX).to(F8), torch.reciprocal(scales[i]))
            for i, w in enumerate(ws)]


def amax_tune_step(ws):
    return [amax_tune.quantize(w, F8, rule="torchao") for w in ws]


def first_difference(got, want):
    """None when every (FP8 tensor, scale_inv) pair is bit-identical, else a description."""
    for i, ((q, si), (wq, wsi)) in enumerate(zip(got, want)):
        if not torch.equal(q.view(torch.uint8), wq.view(torch.uint8)):
            j = int((q.view(torch.uint8).reshape(-1) != wq.view(torch.uint8).reshape(-1)).nonzero()[0])
            return "tensor %d: FP8 byte %d is %#x, want %#x" % (
                i, j, int(q.view(torch.uint8).reshape(-1)[j]), int(wq.view(torch.uint8).reshape(-1)[j]))
        if bench_torch.bits(si) != bench_torch.bits(wsi):
            return "tensor %d: scale_inv bits %#x, want %#x" % (i, bench_torch.bits(si), bench_torch.bits(wsi))
    return None


def summarize(res):
    """{contender: (host-inclusive median us, GPU median us or NaN, host us)} of bench_torch.measure's result."""
    out = {}
    for name, (d, h, _k, g, _kg) in res.items():
        out[name] = (bench_torch.quartiles(d)[1], bench_torch.gpu_median(g), statistics.median(h))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", help="CSV file of every row")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--region-gib", type=float, default=4.0, help="size of the region single tensors rotate over")
    ap.add_argument("--quick", action="store_true", help="3 rounds, sizes to 2^21 (a smoke test)")
    ap.add_argument("--gate-dir", help="directory of the _amax_gate module (default: BUILD/python/bench beside the "
                    "imported amax_tune package)")
    ap.add_argument("--no-gpu-time", action="store_true", help="no gated batches: host-inclusive times only")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_quantize: torch sees no CUDA device")
    bench_torch.GATE = None if args.no_gpu_time else load_gate(args.gate_dir, "bench_quantize")
    has_quantize = hasattr(amax_tune, "quantize")
    rounds, max_exp = (3, 21) if args.quick else (args.rounds, 25)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = props.L2_cache_size
    print("bench_quantize: %s, torch %s, amax_tune %s (%s), %d rounds" % (
        props.name, torch.__version__, amax_tune.__version__,
        "amax_tune.quantize" if has_quantize else "no amax_tune.quantize: torch contenders only", rounds))
    rows, failed = [], False

    def speedup(s, mine, theirs):
        """(theirs / mine, basis): in GPU time where both have it, else host-inclusive (a step of more
        launches than the launch queue holds behind the closed gate has no GPU time)."""
        if mine not in s:
            return float("nan"), ""
        if not (math.isnan(s[mine][1]) or math.isnan(s[theirs][1])):
            return s[theirs][1] / s[mine][1], "gpu"
        return s[theirs][0] / s[mine][0], "host-inclusive"

    def add(kind, what, n, nbytes, res, mine, theirs):
        s = summarize(res)
        x, basis = speedup(s, mine, theirs)
        for name, (med, gpu, host) in s.items():
            rows.append({"kind": kind, "what": what, "n": n, "bytes": nbytes, "contender": name,
                         "median_us": "%.3f" % med, "gpu_us": "" if math.isnan(gpu) else "%.3f" % gpu,
                         "host_us": "%.3f" % host, "speedup": "%.3f" % x if name == mine else "",
                         "speedup_basis": basis if name == mine else ""})
        return s, x, basis

    print("\nsingle tensors, bf16 -> float8_e4m3fn (us per call: GPU time behind the gate / host-inclusive)")
    print("%10s %10s %12s %12s %12s %12s %9s" % ("n", "bytes", "eager GPU", "eager incl.", "amax GPU", "amax incl.",
                                                 "speedup"))
    region = torch.randn(int(args.region_gib * (1 << 30)) // 2, dtype=torch.bfloat16, device="cuda")
    for e in range(11, max_exp + 1, 2):
        n = 1 << e
        inputs = bench_torch.cold_slices(region, n, l2)
        fns = {"torch_eager": torch_eager}
        if has_quantize:
            why = first_difference([amax_tune_quantize(inputs[0])], [torch_eager(inputs[0])])
            if why:
                print("bench_quantize: amax_tune.quantize differs from torch eager at n=%d: %s" % (n, why))
                failed = True
            else:
                fns["amax_tune"] = amax_tune_quantize
        s, x, basis = add("tensor", "bf16", n, 2 * n, bench_torch.measure(fns, inputs, rounds), "amax_tune",
                          "torch_eager")
        a = s.get("amax_tune", (float("nan"),) * 3)
        print("%10d %10d %12.2f %12.2f %12.2f %12.2f %8.2fx %s" % (n, 2 * n, s["torch_eager"][1], s["torch_eager"][0],
                                                                  a[1], a[0], x, basis))
    del region
    torch.cuda.empty_cache()

    lists = [("llama3-8b", weight_shapes(*MODELS["8b"][1:])), ("moe-64x3", MOE_SHAPES)]
    print("\nFSDP2 float8 step (precompute the scales, then cast every weight), bf16 (us per step)")
    print("%-12s %7s %12s %12s %12s %12s %12s %9s" % ("list", "weights", "bytes", "torchao GPU", "torchao incl.",
                                                      "amax GPU", "amax incl.", "speedup"))
    for name, shapes in lists:
        g = torch.Generator(device="cuda").manual_seed(1)
        ws = [torch.randn(sh, device="cuda", dtype=torch.bfloat16, generator=g) * 0.02 for sh in shapes]
        nbytes = sum(w.numel() * 2 for w in ws)
        fns = {"torchao": torchao_step}
        if has_quantize:
            why = first_difference(amax_tune_step(ws), torchao_step(ws))
            if why:
                print("bench_quantize: amax_tune.quantize differs from torchao's step on %s: %s" % (name, why))
                failed = True
            else:
                fns["amax_tune"] = amax_tune_step
        s, x, basis = add("list", name, len(ws), nbytes, bench_torch.measure(fns, [ws], rounds), "amax_tune",
                          "torchao")
        a = s.get("amax_tune", (float("nan"),) * 3)
        print("%-12s %7d %12d %12.1f %12.1f %12.1f %12.1f %8.2fx %s" % (name, len(ws), nbytes, s["torchao"][1],
                                                                       s["torchao"][0], a[1], a[0], x, basis))
        del ws
        torch.cuda.empty_cache()
    llama = [r for r in rows if r["what"] == "llama3-8b" and r["contender"] == "amax_tune" and r["speedup"]]
    print("\ntarget (DESIGN.md section 7): >= 1.3x torchao's precompute-then-cast over the 224 Llama-3-8B weights, identical "
          "FP8 bytes: %s" % ("%sx (%s), %s" % (llama[0]["speedup"], llama[0]["speedup_basis"],
                                               "met" if float(llama[0]["speedup"]) >= 1.3 else "missed")
                             if llama else "not measured (no amax_tune.quantize)"))
    if args.output:
        with open(args.output, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
